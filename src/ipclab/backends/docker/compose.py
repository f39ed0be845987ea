"""A stack's compose file, generated from its declaration (``StackSpec``).

Every role runs its runtime's image (``ipclab-services``, or ``ipclab-services-go`` for
the Go stacks) with the environment ``StackSpec.role_env`` gives it; the parts every
stack shares (image, limits, labels, logging, the broker's healthcheck)
come from ``compose/common.yml`` through ``extends``. ``ipclab compose STACK`` prints the
file, to run a stack by hand with ``docker-compose -p NAME -f FILE up -d``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ipclab.paths import REPO_ROOT
from ipclab.stacks import LOADGEN, PYTHON, StackSpec

COMPOSE_DIR = REPO_ROOT / "compose"
COMMON = COMPOSE_DIR / "common.yml"
CONTAINER_PORT = 8000
SIDECAR_PORT = 8002  # an adapter sidecar's, in the network namespace of its host's container
BROKER_URL = "amqp://guest:guest@broker:5672/"


def _extends(service: str) -> dict[str, Any]:
    return {"extends": {"file": str(COMMON), "service": service}}


# What setting a network delay inside a container needs (netem.py): NET_ADMIN for tc netem
# or iptables NFQUEUE, SYS_NICE for the NFQUEUE delayer's priority. Given only when asked.
DELAY_CAPABILITIES = ["NET_ADMIN", "SYS_NICE"]


def compose_document(spec: StackSpec, net_admin: bool = False) -> dict[str, Any]:
    """The compose document of ``spec``: its broker (if any), its services and its gateway.
    ``net_admin``: the containers get the capabilities a network delay needs."""
    if not spec.runtime.image:
        raise ValueError(
            f"{spec.name}: its {spec.runtime.name} roles have no image yet; "
            "run it on the local backend"
        )
    if spec.needs_database:
        raise ValueError(
            f"{spec.name} needs a database, which the docker backend does not run yet; "
            "use the local backend"
        )
    addresses = {r: f"{spec.host_of(r)}:{port_of(spec, r)}" for r in spec.roles}
    amqp_url = BROKER_URL if spec.needs_broker else ""
    services: dict[str, Any] = {}
    if spec.needs_broker:
        services["broker"] = _extends("broker")
        if net_admin:
            services["broker"]["cap_add"] = DELAY_CAPABILITIES
    for role in spec.roles:
        env = spec.role_env(role, addresses, amqp_url)
        svc = {**_extends("app"), "environment": env}
        if spec.is_sidecar(role):  # shares its host's network namespace (eth0 and loopback)
            env["IPCLAB_PORT"] = str(SIDECAR_PORT)
            svc["network_mode"] = f"service:{spec.host_of(role)}"
            svc["depends_on"] = [spec.host_of(role)]
            if spec.runtime.image != PYTHON.image:
                svc["image"] = f"${{IPCLAB_IMAGE:-{spec.runtime.image}:latest}}"
            services[role] = svc
            continue
        if spec.runtime.image != PYTHON.image:  # common.yml's default is the Python image
            svc["image"] = f"${{IPCLAB_IMAGE:-{spec.runtime.image}:latest}}"
        if net_admin:
            svc["cap_add"] = DELAY_CAPABILITIES
        if spec.needs_broker:
            svc["depends_on"] = {"broker": {"condition": "service_healthy"}}
        elif role == spec.gateway:
            svc["depends_on"] = [r for r in spec.roles if spec.host_of(r) != role]
        if role == spec.gateway:
            svc["ports"] = [f"127.0.0.1:${{IPCLAB_GATEWAY_PORT-8080}}:{CONTAINER_PORT}"]
        services[role] = svc
    if spec.load_host:
        services[LOADGEN] = load_host_service(net_admin)
    return {
        "services": services,
        "networks": {
            "default": {
                "labels": {
                    "ipclab.project": "${IPCLAB_PROJECT:-manual}",
                    "ipclab.harness": "${IPCLAB_HARNESS:-}",
                }
            }
        },
    }


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


def compose_text(spec: StackSpec, net_admin: bool = False) -> str:
    """The document as text (JSON, which YAML 1.2 and every compose version read)."""
    header = f"# {spec.name}: generated from its declaration by `ipclab compose {spec.name}`\n"
    return header + json.dumps(compose_document(spec, net_admin), indent=2) + "\n"


def write_compose(spec: StackSpec, directory: Path, net_admin: bool = False) -> Path:
    path = directory / f"{spec.name}.yml"
    path.write_text(compose_text(spec, net_admin))
    return path
