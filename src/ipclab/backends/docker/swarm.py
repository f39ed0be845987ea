"""The swarm backend: a stack deployed with ``docker stack deploy`` on a Docker Swarm.

The stack file is the stack's compose document (``compose_document``) with
``compose/common.yml`` resolved into it (``compose.resolved_services``), so image, limits,
labels, logging, dropped capabilities and each infrastructure plugin's login are compose's,
in the version-3 form ``docker stack deploy`` reads: limits under ``deploy.resources``, a
restart policy, the files a plugin's service reads as swarm configs (the broker's users
file: ``Infrastructure.swarm_configs``), and, when nodes carry the label
``ipclab.role=<role>``, a placement constraint that puts each role (broker included) on its
node; unlabelled, the swarm places tasks anywhere. Everything else is the docker backend's:
the same images, ownership labels, sampling, logs, network delay (exec'd into each task's
container) and watchdog; this module only deploys, finds task containers and tears down.

What differs from compose, forced by swarm on this kind of machine:

- Services are reached by DNS round robin (``endpoint_mode: dnsrr``), not through a virtual
  IP: the VIP load balancer needs IPVS, which this machine's kernel lacks (connections to a
  VIP failed with "No route to host"). With one task per service the two are equivalent.
- The gateway's port is published in ``host`` mode, which binds every address (swarm has no
  host address option); the ingress routing mesh, which would also bind every address,
  does not work here either. The overlay network (not attachable) has a VXLAN socket the
  kernel binds to every address. Both are ``ipclab.listeners.IMPOSED``; on a swarm the
  harness made, while a stack runs, the harness's filter (``dockerguard``: a chain first in
  ``DOCKER-USER`` and ``INPUT``) drops every packet to them that does not come from this
  host, and goes with the stack (docs/hardening.md).

On one machine the harness makes a single-node swarm if the engine is in none
(``docker swarm init``, management and gossip on 127.0.0.1), marks the node as made by
ipclab, and leaves it when the last ipclab stack on it stops or goes ``down``; a swarm it
did not make is never left.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ipclab import infrastructure
from ipclab.backends.docker import dockerguard
from ipclab.backends.docker.backend import (
    CONTAINER_PORT,
    DockerBackend,
    DockerStack,
    DockerStackError,
)
from ipclab.backends.docker.compose import (
    COMPOSE_DIR,
    compose_document,
    interpolate,
    resolved_services,
    write_logins,
)
from ipclab.backends.docker.ownership import PROJECT_LABEL, STACK_NAMESPACE, remove_project
from ipclab.stacks import StackSpec

STACK_LABEL = STACK_NAMESPACE
SERVICE_NAME_LABEL = "com.docker.swarm.service.name"
MADE_BY_IPCLAB = "ipclab.made-swarm"  # node label: this swarm was made by ipclab
ROLE_LABEL = "ipclab.role"  # node label a user sets to place a role on that node
RESTART_DELAY_S = 5.0  # the restart policy's delay: a killed task is back after about this
# A swarm the harness makes listens on loopback: management (2377) and the node gossip (7946,
# TCP and UDP, bound to the listen address). The overlay's VXLAN socket (4789/udp) is the
# kernel's and binds every address whatever is asked (docs/hardening.md, item 3).
SWARM_INIT_ARGS = ("--advertise-addr", "127.0.0.1", "--listen-addr", "127.0.0.1:2377")


def _docker(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=timeout, start_new_session=True
    )


# --------------------------------------------------------------------------- the swarm


def swarm_state(c: Any) -> str:
    return str(c.info().get("Swarm", {}).get("LocalNodeState", "inactive"))


class SwarmBusy(DockerStackError):
    """Making or leaving a swarm now would cut off running containers' published ports."""


def publishing_containers(c: Any) -> list[str]:
    """Running containers that publish a port on the host (swarm tasks excluded)."""
    out = []
    for ctr in c.containers.list(filters={"status": "running"}):
        if ctr.labels.get(STACK_LABEL):
            continue
        ports = (ctr.attrs.get("NetworkSettings") or {}).get("Ports") or {}
        if any(ports.values()):
            out.append(ctr.name)
    return sorted(out)


def ensure_swarm(c: Any) -> bool:
    """Make a single-node swarm if the engine is in none; True if this call made it.

    ``docker swarm init`` and ``leave`` rewrite the engine's NAT rules: measured here, a
    compose stack's published port refused connections for seconds while they ran (179 of
    410 requests failed). So the harness does neither while a container publishes a port."""
    if swarm_state(c) == "active":
        return False
    busy = publishing_containers(c)
    if busy:
        raise SwarmBusy(
            "making a swarm now would cut off the published ports of running containers "
            f"({', '.join(busy[:6])}{' ...' if len(busy) > 6 else ''}): stop them first, or "
            "make the swarm yourself (docker swarm init " + " ".join(SWARM_INIT_ARGS) + ")"
        )
    r = _docker("swarm", "init", *SWARM_INIT_ARGS)
    if r.returncode != 0 and swarm_state(c) != "active":
        raise DockerStackError(f"docker swarm init failed: {r.stderr.strip()}")
    node = c.info()["Swarm"]["NodeID"]
    _docker("node", "update", "--label-add", f"{MADE_BY_IPCLAB}=1", node)
    return True


def down(stack: str | None = None) -> list[str]:
    """``ipclab down`` on the docker backends: remove the detached projects of ``stack``
    (``ownership.down``), then leave the swarm if ipclab made it and nothing of ipclab is
    left on it, as a run's ``stop`` does."""
    from ipclab.backends.docker.ownership import client
    from ipclab.backends.docker.ownership import down as remove_detached

    c = client()
    removed = remove_detached(stack, c=c)
    dockerguard.remove(removed)
    if swarm_state(c) == "active":  # also when a watchdog removed the stack before
        for project in removed:  # the tasks and the network go a little after the services
            _wait_project_gone(c, project, 60)
        leave_if_ours_and_idle(c)
    return removed


def _wait_project_gone(c: Any, project: str, timeout_s: float) -> None:
    flt = {"label": f"{PROJECT_LABEL}={project}"}
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not c.containers.list(all=True, filters=flt) and not c.networks.list(filters=flt):
            return
        time.sleep(0.5)


def made_by_ipclab(c: Any) -> bool:
    with contextlib.suppress(Exception):
        node = c.nodes.get(c.info()["Swarm"]["NodeID"])
        return MADE_BY_IPCLAB in (node.attrs["Spec"].get("Labels") or {})
    return False


def leave_if_ours_and_idle(c: Any) -> bool:
    """Leave the swarm when ipclab made it and no ipclab service is left on it."""
    if swarm_state(c) != "active" or not made_by_ipclab(c):
        return False
    if c.services.list(filters={"label": PROJECT_LABEL}):
        return False
    if len(c.nodes.list()) > 1:  # other machines joined: not a private swarm any more
        return False
    if publishing_containers(c):  # leaving now would cut them off; a later stop leaves
        return False
    left = _docker("swarm", "leave", "--force").returncode == 0
    if left:  # docker keeps the swarm's bridge after leaving; unused, it goes too (in use: kept)
        _docker("network", "rm", "docker_gwbridge")
    return left


def labelled_roles(c: Any) -> set[str]:
    """Roles some node is labelled for (``docker node update --label-add ipclab.role=X``)."""
    roles: set[str] = set()
    for node in c.nodes.list():
        role = (node.attrs["Spec"].get("Labels") or {}).get(ROLE_LABEL)
        if role:
            roles.add(role)
    return roles


# --------------------------------------------------------------------------- stack file


def stack_document(
    spec: StackSpec,
    variables: dict[str, str],
    port: int,
    net_admin: bool = False,
    placed: set[str] | None = None,
    logins: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``docker stack deploy`` file of ``spec``: its compose document
    (``compose_document``) with common.yml's ``extends`` resolved and ``${...}`` substituted
    from ``variables`` (the environment the docker backend gives compose), then put in the
    version-3 form: limits under ``deploy.resources``, the swarm's restart policy, endpoint
    mode and placement, the gateway published in host mode, a non-attachable overlay.
    ``logins``: as ``compose_document``'s; a plugin turns the files its service
    reads into swarm configs (``Infrastructure.swarm_configs``), which reach any node."""
    if spec.adapters:
        raise ValueError(
            f"{spec.name}: its adapter sidecars share their host's network namespace, which "
            "swarm services cannot; use the docker (compose) or local backend"
        )
    if spec.load_host:
        raise ValueError(
            f"{spec.name}: its load generator runs in a load host's network namespace, which "
            "the swarm backend does not make; use the docker (compose) backend"
        )
    plugins = infrastructure.of(spec.infrastructure)
    for plugin in plugins:
        if why := plugin.unavailable("swarm"):
            raise ValueError(f"{spec.name}: {why}; use the docker (compose) or local backend")
    given = dict(logins or {})
    compose = compose_document(spec, net_admin, logins=given)  # refuses what compose refuses
    placed = placed or set()
    services: dict[str, Any] = {}
    for role, svc in resolved_services(compose, variables).items():
        services[role] = _for_swarm(role, svc, role in placed, port)
    labels = interpolate(compose["networks"]["default"]["labels"], variables)
    doc: dict[str, Any] = {
        "version": "3.8",
        "services": services,
        # Not attachable: only the stack's own tasks join it (no `docker run --network`).
        "networks": {"default": {"driver": "overlay", "attachable": False, "labels": labels}},
    }
    for plugin in plugins:  # the files each service reads, as swarm configs
        if plugin.name in given and plugin.component in services:
            configs = plugin.swarm_configs(services[plugin.component], given[plugin.name])
            doc.setdefault("configs", {}).update(configs)
    return doc


def _for_swarm(role: str, svc: dict[str, Any], placed: bool, port: int) -> dict[str, Any]:
    """One resolved compose service in the form ``docker stack deploy`` reads."""
    svc = dict(svc)
    svc.pop("depends_on", None)  # nothing orders a swarm's start (see ``_wait_healthy``)
    limits = {}
    for key, limit in (("cpus", "cpus"), ("mem_limit", "memory")):
        value = str(svc.pop(key, "0"))
        if value not in ("0", ""):
            limits[limit] = value
    env_file = svc.get("env_file")
    if isinstance(env_file, str) and not Path(env_file).is_absolute():
        svc["env_file"] = str(COMPOSE_DIR / env_file)  # compose reads it from compose/
    if svc.pop("ports", None):  # the gateway; swarm publishes on every address (docs)
        svc["ports"] = [
            {"target": CONTAINER_PORT, "published": port, "protocol": "tcp", "mode": "host"}
        ]
    deploy: dict[str, Any] = {
        "endpoint_mode": "dnsrr",
        "labels": svc.get("labels", {}),
        "restart_policy": {"condition": "any", "delay": f"{RESTART_DELAY_S:g}s"},
    }
    if limits:
        deploy["resources"] = {"limits": limits}
    if placed:
        deploy["placement"] = {"constraints": [f"node.labels.{ROLE_LABEL} == {role}"]}
    svc["deploy"] = deploy
    return svc


# --------------------------------------------------------------------------- backend


class SwarmBackend(DockerBackend):
    """Start stacks with ``docker stack deploy`` (see the module docstring)."""

    name = "swarm"
    stack_class: type[DockerStack]  # set below

    def __init__(self, *args: Any, health_timeout_s: float = 180.0, **kw: Any):
        super().__init__(*args, health_timeout_s=health_timeout_s, **kw)

    def _tls_unavailable(self, detached: bool) -> str | None:
        return "--tls on the swarm backend: its stack file carries no TLS files yet (docker)"


class SwarmStack(DockerStack):
    """A deployed swarm stack (implements ``RunningStack``)."""

    backend = "swarm"

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        try:
            # A stack swarm refuses (ValueError) is refused before any swarm is made.
            stack_document(self.spec, self.env, self.port, self.net_admin)
            self.made_swarm = ensure_swarm(self.client)
        except BaseException:  # SwarmBusy: nothing started yet, but the workdir exists
            shutil.rmtree(self._tmp, ignore_errors=True)
            raise
        self.placed = labelled_roles(self.client)
        logins = write_logins(self.spec, Path(self._tmp), self.options.env())
        doc = stack_document(
            self.spec, self.env, self.port, self.net_admin, self.placed, logins=logins
        )
        self.stack_path = Path(self._tmp) / f"{self.spec.name}.stack.yml"
        self.stack_path.write_text(json.dumps(doc, indent=2) + "\n")

    def _guard(self) -> str:
        """The filter against other machines (``dockerguard``: the gateway's port and
        4789/udp), before anything is published: what the manifest says of it."""
        if not made_by_ipclab(self.client):
            return "not installed: a swarm ipclab did not make (its firewall is its own)"
        why = dockerguard.install(self.project, self.port)
        if why is None:
            return "installed"
        print(f"ipclab: the swarm's filter is not installed ({why}): the gateway's port "
              f"{self.port} and 4789/udp are open to other machines", file=sys.stderr)  # fmt: skip
        return f"not installed: {why}"

    def _up(self, health_timeout_s: float) -> None:
        self.guard = self._guard()
        r = _docker("stack", "deploy", "--prune", "-c", str(self.stack_path), self.project)
        if r.returncode != 0:
            raise DockerStackError(f"docker stack deploy failed:\n{r.stderr.strip()[-3000:]}")
        self._wait_tasks(health_timeout_s)
        self.sample()  # the stats followers start while the stack gets healthy
        self._wait_healthy(health_timeout_s)
        if self.delay_ms > 0:
            self.set_delay(self.delay_ms)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if all(r.get("status") != "starting" for r in self.sample()):
                break
            time.sleep(0.2)

    def _refresh_containers(self) -> None:
        """The running container of each role's task (the newest, after a restart)."""
        flt = {"label": f"{STACK_LABEL}={self.project}", "status": "running"}
        found: dict[str, Any] = {}
        prefix = f"{self.project}_"
        for ctr in sorted(
            self.client.containers.list(filters=flt), key=lambda x: x.attrs.get("Created", "")
        ):
            service = ctr.labels.get(SERVICE_NAME_LABEL, "")
            if service.startswith(prefix):
                found[service[len(prefix) :]] = ctr
        self._containers = found

    def _wait_tasks(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            self._refresh_containers()
            missing = set(self.components) - set(self._containers)
            if not missing:
                return
            if time.monotonic() > deadline:
                raise DockerStackError(f"no running task for {sorted(missing)} in {timeout_s}s")
            time.sleep(0.5)

    def _wait_healthy(self, timeout_s: float) -> None:
        """Tasks may exit and be replaced while the broker starts, and nothing orders the
        services' start: ready is the gateway answering a whole page (its first probe path)."""
        import urllib.request

        deadline = time.monotonic() + timeout_s
        last = ""
        page = self.spec.probe_paths[0] if self.spec.probe_paths else "/healthz"
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.gateway_url}{page}", timeout=5) as r:
                    if r.status == 200:
                        self._refresh_containers()
                        return
            except Exception as e:  # noqa: BLE001 - not up yet
                last = f"{type(e).__name__}: {e}"
            time.sleep(0.5)
        raise DockerStackError(f"gateway not healthy after {timeout_s:.0f}s ({last})")

    def restart(self, role: str) -> None:
        """The swarm's restart policy replaces a killed task; wait for the new one (or ask
        the swarm to restart the service if its task still runs)."""
        old = self._containers.get(role)
        old_id = old.id if old is not None else None
        with contextlib.suppress(Exception):
            old.reload()
            if old.status == "running":
                _docker("service", "update", "--force", "--detach", f"{self.project}_{role}")
        deadline = time.monotonic() + 90
        while True:
            self._refresh_containers()
            new = self._containers.get(role)
            if new is not None and new.id != old_id:
                break
            if time.monotonic() > deadline:
                raise DockerStackError(f"the swarm started no new task for {role} in 90 s")
            time.sleep(0.25)
        from ipclab.backends.docker import netem

        if self.delay_ms > 0:
            netem.set_delay(new, self.delay_ms)
        self._wait_container_healthy(new, role)

    def stop(self) -> None:
        with self._stop_lock:
            if self._stopped:
                return
            self._stopped = True
        from ipclab.backends.docker.backend import _LIVE, _LIVE_LOCK, _no_sigint

        with _no_sigint():
            try:
                if self.logs_dir is not None and self._containers:
                    with contextlib.suppress(Exception):
                        self.write_logs(self.logs_dir)
                with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                    _docker("stack", "rm", self.project, timeout=120)
                with contextlib.suppress(Exception):
                    self._wait_gone(60)
                with contextlib.suppress(Exception):
                    remove_project(self.client, self.project)
                with contextlib.suppress(Exception):
                    dockerguard.remove([self.project])
                with contextlib.suppress(Exception):
                    leave_if_ours_and_idle(self.client)
            finally:
                self._sampler.close()
                shutil.rmtree(self._tmp, ignore_errors=True)
                if self._watchdog is not None:
                    with contextlib.suppress(OSError):
                        self._watchdog.kill()
                        self._watchdog.wait(5)
                with _LIVE_LOCK:
                    _LIVE.discard(self)

    def _wait_gone(self, timeout_s: float) -> None:
        """``docker stack rm`` returns before the tasks and the network are gone."""
        flt = {"label": f"{STACK_LABEL}={self.project}"}
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.client.containers.list(all=True, filters=flt) and not (
                self.client.networks.list(filters=flt)
            ):
                return
            time.sleep(0.5)

    def info(self) -> dict[str, Any]:
        out = super().info()
        out.update(
            {
                "compose": "docker stack deploy",
                "compose_file": f"generated from the {self.spec.name} declaration (swarm)",
                "swarm": {
                    "made_by_this_run": self.made_swarm,
                    "nodes": len(self.client.nodes.list()),
                    "placed_roles": sorted(self.placed),
                    "endpoint_mode": "dnsrr",
                    "publish_mode": "host",
                },
            }
        )
        return out

    def __repr__(self) -> str:
        return f"SwarmStack({self.spec.name}, project={self.project}, url={self.gateway_url})"


SwarmBackend.stack_class = SwarmStack


def swarm_leftovers(project: str) -> dict[str, list[str]]:
    """Services, containers, networks, configs and secrets of ``project`` still there."""
    from ipclab.backends.docker.ownership import client

    c = client()
    out: dict[str, list[str]] = {"services": [], "containers": [], "networks": []}
    out["configs"], out["secrets"] = [], []
    flt = {"label": f"{STACK_LABEL}={project}"}
    if swarm_state(c) == "active":
        out["services"] = [s.name for s in c.services.list(filters=flt)]
        out["configs"] = [x.name for x in c.configs.list(filters=flt)]
        out["secrets"] = [x.name for x in c.secrets.list(filters=flt)]
    out["containers"] = [x.name for x in c.containers.list(all=True, filters=flt)]
    out["networks"] = [x.name for x in c.networks.list(filters=flt)]
    return out


def _main(argv: list[str]) -> int:
    """``leave-if-idle``: leave a swarm ipclab made once nothing of ipclab's is on it (the
    docker watchdog runs this after removing a killed harness's swarm stack)."""
    from ipclab.backends.docker.ownership import client

    if argv[:1] != ["leave-if-idle"]:
        print("usage: python -m ipclab.backends.docker.swarm leave-if-idle", file=sys.stderr)
        return 2
    return 0 if leave_if_ours_and_idle(client()) else 1


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
