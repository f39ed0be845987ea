"""A stack's compose file, generated from its declaration (``StackSpec``).

Every role runs its runtime's image (``ipclab-services``, or ``ipclab-services-go`` for
the Go stacks) with the environment ``StackSpec.role_env`` gives it; the parts every
stack shares (image, limits, labels, logging, dropped capabilities, the broker's and the
database's healthchecks) come from ``compose/common.yml`` through ``extends``. The
infrastructure a stack declares is each plugin's service (``ipclab.infrastructure``: the
broker, the database with its volume), with the files it reads written beside the compose
file (``write_logins``). ``ipclab compose STACK``
prints the file, to run a stack by hand with ``docker-compose -p NAME -f FILE up -d``. The
swarm backend's stack file is this document with ``extends`` resolved here
(``resolved_services``), so the two cannot drift apart.
Each plugin brings its own login (``write_files``; ``by_hand`` for a file run by hand): the
broker's in ``ipclab.infrastructure.rabbitmq``, the database's in ``.postgres``.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ipclab import infrastructure
from ipclab.paths import REPO_ROOT
from ipclab.stacks import LOADGEN, PYTHON, StackSpec
from ipclab.tls import CONTAINER_DIR as TLS_CONTAINER_DIR
from ipclab.tls import StackTls

COMPOSE_DIR = REPO_ROOT / "compose"
COMMON = COMPOSE_DIR / "common.yml"
CONTAINER_PORT = 8000
SIDECAR_PORT = 8002  # an adapter sidecar's, in the network namespace of its host's container


def extends(service: str) -> dict[str, Any]:
    """A service that ``extends`` one of ``compose/common.yml``'s."""
    return {"extends": {"file": str(COMMON), "service": service}}


_extends = extends


@functools.cache
def common_services() -> dict[str, dict[str, Any]]:
    """``compose/common.yml``'s services, as written (``${...}`` not substituted)."""
    return dict(yaml.safe_load(COMMON.read_text())["services"])


_VARIABLE = re.compile(r"\$\{(\w+)(?:(:?-)([^}]*))?\}")


def interpolate(value: Any, variables: dict[str, str]) -> Any:
    """Compose's ``${VAR}``, ``${VAR-default}`` and ``${VAR:-default}`` in every string of
    ``value`` (``$$`` is left for ``docker stack deploy``, which unescapes it)."""
    if isinstance(value, dict):
        return {k: interpolate(v, variables) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, variables) for v in value]
    if not isinstance(value, str):
        return value

    def one(m: re.Match[str]) -> str:
        name, op, default = m.group(1), m.group(2), m.group(3) or ""
        got = variables.get(name)
        if got is None or (op == ":-" and got == ""):
            return default if op else ""
        return got

    return _VARIABLE.sub(one, value)


# Keys whose mappings ``extends`` merges (the local entries win); every other key the local
# service sets replaces the shared one (Compose's rules for extends).
_MERGED = ("environment", "labels")


def resolved_services(doc: dict[str, Any], variables: dict[str, str]) -> dict[str, Any]:
    """``doc``'s services with ``extends`` of common.yml resolved and ``${...}`` substituted
    from ``variables``: what compose itself runs, for a tool that reads no ``extends``."""
    out: dict[str, Any] = {}
    for name, svc in doc["services"].items():
        svc = dict(svc)
        ext = svc.pop("extends", None)
        base = dict(common_services()[ext["service"]]) if ext else {}
        for key in _MERGED:
            if key in base and key in svc:
                svc[key] = {**base[key], **svc[key]}
        out[name] = interpolate({**base, **svc}, variables)
    return out


# What setting a network delay inside a container needs (netem.py): NET_ADMIN for tc netem
# or iptables NFQUEUE, SYS_NICE for the NFQUEUE delayer's priority. Given only when asked.
DELAY_CAPABILITIES = ["NET_ADMIN", "SYS_NICE"]


PROJECT_LABELS = {
    "ipclab.project": "${IPCLAB_PROJECT:-manual}",
    "ipclab.harness": "${IPCLAB_HARNESS:-}",
}


def whole_service(
    image: Any, component: str, port: int, volumes: list[str], net_admin: bool
) -> dict[str, Any]:
    """An infrastructure plugin's compose service, whole (nothing of ``compose/common.yml``):
    the plugin's image (``image``, its ``ImageRecipe``: the pinned id in its variable), the
    host name ``component``, the project's labels (what the ownership sweep goes by), no
    capability (a delay's with ``net_admin``), its files mounted (``volumes``) and a health
    check that waits for ``port`` to answer (its first boot's seeding done before it
    listens). No port is published: it answers on the project network alone."""
    svc: dict[str, Any] = {
        "image": f"${{{image.env}:-{image.tag}}}",
        "hostname": component,
        "labels": dict(PROJECT_LABELS),
        "cap_drop": ["ALL"],
        "volumes": list(volumes),
        "healthcheck": {
            "test": ["CMD", "bash", "-c", f"exec 3<>/dev/tcp/127.0.0.1/{port}"],
            "interval": "1s",
            "timeout": "2s",
            "retries": 240,
        },
        "stop_grace_period": "10s",
        "logging": {"driver": "json-file", "options": {"max-size": "10m", "max-file": "2"}},
    }
    if net_admin:
        svc["cap_add"] = DELAY_CAPABILITIES
    return svc


def _runnable(spec: StackSpec, names: tuple[str, ...]) -> list[Any]:
    """The plugins ``names``, once the stack's roles have an image and each plugin can run
    on docker here (else a clear error)."""
    if not spec.runtime.image:
        raise ValueError(
            f"{spec.name}: its {spec.runtime.name} roles have no image yet; "
            "run it on the local backend"
        )
    plugins = infrastructure.of(names)
    for plugin in plugins:
        if why := plugin.unavailable("docker"):
            raise ValueError(f"{spec.name}: {why}; use the local backend")
    return plugins


def compose_document(
    spec: StackSpec,
    net_admin: bool = False,
    logins: Mapping[str, Any] | None = None,
    tls_dir: Path | None = None,
    tls_edge: bool = False,
    infra: tuple[str, ...] | None = None,
) -> dict[str, Any]:
    """The compose document of ``spec``: its infrastructure (each plugin's service: the
    broker, the database), its services and its gateway. ``net_admin``: the containers get
    the capabilities a network delay needs. ``logins``: infrastructure name -> the login its
    plugin's ``write_files`` made; a plugin without one gets its ``by_hand`` placeholders,
    for a file run by hand. ``tls_dir``: ``--tls``, the stack's TLS files (ipclab.tls) in
    every role's container and the broker's (AMQPS); ``tls_edge``: the gateway's alone.
    ``infra``: the infrastructure to run, when not the declaration's (``--store db`` adds the
    stores: ``StackSpec.infrastructure_with``)."""
    names = spec.infrastructure if infra is None else infra
    plugins = _runnable(spec, names)
    given = dict(logins or {})
    login = {p.name: given.get(p.name) or p.by_hand() for p in plugins}
    urls = {p.name: p.url(login[p.name]) for p in plugins}
    addresses = {r: f"{spec.host_of(r)}:{port_of(spec, r)}" for r in spec.roles}
    services: dict[str, Any] = {
        p.component: p.compose_service(login[p.name], net_admin) for p in plugins
    }
    if tls_dir is not None and not tls_edge:  # each plugin's TLS listener, and its URL
        urls = {p.name: p.add_tls(services[p.component], urls[p.name], tls_dir) for p in plugins}
    healthy = {p.component: {"condition": "service_healthy"} for p in plugins}
    carried = any(p.carries_calls for p in plugins)  # the gateway calls through a broker
    for role in spec.roles:
        reach = infrastructure.role_env(names, urls, role == spec.gateway)
        env = spec.role_env(role, addresses, reach)
        mount = _tls_mount(env, tls_dir, role == spec.gateway, tls_edge)
        svc = {**_extends("app"), "environment": env, **mount}
        if spec.is_sidecar(role):  # shares its host's network namespace (eth0 and loopback)
            env["IPCLAB_PORT"] = str(SIDECAR_PORT)
            svc["network_mode"] = f"service:{spec.host_of(role)}"
            svc["depends_on"] = [spec.host_of(role)]
            if spec.adapter_runtime is not None:  # a built native adapter (Californium)
                image = spec.adapter_runtime.image
                svc["image"] = f"${{IPCLAB_ADAPTER_IMAGE:-{image}:latest}}"
            elif spec.runtime.image != PYTHON.image:
                svc["image"] = f"${{IPCLAB_IMAGE:-{spec.runtime.image}:latest}}"
            services[role] = svc
            continue
        if spec.runtime.image != PYTHON.image:  # common.yml's default is the Python image
            svc["image"] = f"${{IPCLAB_IMAGE:-{spec.runtime.image}:latest}}"
        if spec.runtime.docker_command:
            svc["command"] = list(spec.runtime.docker_command)
        if net_admin:
            svc["cap_add"] = DELAY_CAPABILITIES
        if role == spec.gateway and not carried:  # after the services it calls
            peers = [r for r in spec.roles if spec.host_of(r) != role]
            started = {r: {"condition": "service_started"} for r in peers}
            svc["depends_on"] = {**healthy, **started} if healthy else peers
        elif healthy:  # the services start once their infrastructure answers
            svc["depends_on"] = healthy
        if role == spec.gateway:
            svc["ports"] = [f"127.0.0.1:${{IPCLAB_GATEWAY_PORT-8080}}:{CONTAINER_PORT}"]
        services[role] = svc
    if spec.load_host:
        services[LOADGEN] = load_host_service(net_admin)
    volumes = {k: v for p in plugins for k, v in p.compose_volumes().items()}
    doc: dict[str, Any] = {
        "services": services,
        **({"volumes": volumes} if volumes else {}),
        "networks": {"default": {"labels": dict(PROJECT_LABELS)}},
    }
    return doc


def image_variables(
    spec: StackSpec, imgs: dict[str, str], infra: tuple[str, ...] | None = None
) -> dict[str, str]:
    """Each infrastructure plugin's image id in its recipe's variable (``IPCLAB_BROKER_IMAGE``),
    which its compose service names; "" for a plugin the stack does not run (its declaration's,
    or ``infra``)."""
    names = spec.infrastructure if infra is None else infra
    out: dict[str, str] = {}
    for plugin in infrastructure.all_infrastructure().values():
        if plugin.recipe is not None:
            declared = plugin.name in names
            out[plugin.recipe.env] = imgs.get(plugin.recipe.name, "") if declared else ""
    return out


def load_host_service(net_admin: bool = False) -> dict[str, Any]:
    """The ``loadgen`` container of a stack with a load host (``StackSpec.load_host``). It
    runs nothing: it owns a network namespace whose ``eth0`` is delayed and counted like
    every host's, and the load generator, a harness process, enters it
    (``DockerStack.load_host``)."""
    svc = {**_extends("app"), "command": ["sleep", "infinity"]}
    if net_admin:
        svc["cap_add"] = DELAY_CAPABILITIES
    return svc


def port_of(spec: StackSpec, role: str) -> int:
    """The port ``role`` listens on in its container's network namespace."""
    return SIDECAR_PORT if spec.is_sidecar(role) else CONTAINER_PORT


def compose_text(
    spec: StackSpec, net_admin: bool = False, logins: Mapping[str, Any] | None = None
) -> str:
    """The document as text (JSON, which YAML 1.2 and every compose version read);
    ``logins`` as :func:`compose_document` takes them (:func:`write_logins`)."""
    header = f"# {spec.name}: generated from its declaration by `ipclab compose {spec.name}`\n"
    doc = compose_document(spec, net_admin, logins=logins)
    return header + json.dumps(doc, indent=2) + "\n"


def write_logins(
    spec: StackSpec,
    directory: Path,
    options: Mapping[str, str] | None = None,
    infra: tuple[str, ...] | None = None,
) -> dict[str, Any]:
    """Each infrastructure plugin's files in ``directory`` (new passwords; the database's
    data for the run's knobs ``options``, as the local backend loads it), by name
    (``infra``: the plugins run, when not the declaration's)."""
    env = {**os.environ, **(options or {}), **spec.settings}
    names = spec.infrastructure if infra is None else infra
    return {p.name: p.write_files(directory, env, spec.domain) for p in infrastructure.of(names)}


def _tls_mount(
    env: dict[str, str], tls_dir: Path | None, gateway: bool, edge: bool
) -> dict[str, Any]:
    """``--tls``: a role's environment names the stack's files where its container sees them
    (``env`` updated in place), and the folder is mounted there read-only (``edge``: the
    gateway's container alone)."""
    if tls_dir is None or (edge and not gateway):
        return {}
    env.update(StackTls(tls_dir).role_env(gateway, edge, inside=TLS_CONTAINER_DIR))
    return {"volumes": [f"{tls_dir}:{TLS_CONTAINER_DIR}:ro"]}


def write_compose(
    spec: StackSpec,
    directory: Path,
    net_admin: bool = False,
    options: Mapping[str, str] | None = None,
    tls_dir: Path | None = None,
    tls_edge: bool = False,
    infra: tuple[str, ...] | None = None,
) -> Path:
    """The stack's compose file in ``directory``, with its infrastructure's new logins and
    files beside it (``options``: the run's knobs, ``StackOptions.env()``; ``tls_dir``: the
    stack's TLS files with ``--tls``; ``infra``: the infrastructure run, when not the
    declaration's)."""
    logins = write_logins(spec, directory, options, infra)
    header = f"# {spec.name}: generated from its declaration for one stack\n"
    path = directory / f"{spec.name}.yml"
    doc = compose_document(
        spec, net_admin, logins=logins, tls_dir=tls_dir, tls_edge=tls_edge, infra=infra
    )
    path.write_text(header + json.dumps(doc, indent=2) + "\n")
    return path
