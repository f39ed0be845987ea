"""What a stack is: a domain, a front, a transport and its infrastructure, declared once.

A stack is a gateway plus the domain's services, bound to one transport (the IPC style
under study) and served to clients through one front. Each study declares its stacks in
its own folder (``ipclab/studies/<study>/stacks.py``); :func:`all_stacks` gathers them.
Everything a backend needs to start a stack comes from its :class:`StackSpec`: the roles,
how each role is started (:class:`Runtime`), the infrastructure (a broker), and the
environment each role receives (:meth:`StackSpec.role_env`). The services read only that
environment (``services/serve.py``); they import nothing from the harness.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from ipclab import gobuild

BROKER = "rabbitmq"  # infrastructure names a stack can declare
DATABASE = "postgres"
INFRASTRUCTURE = (BROKER, DATABASE)


@dataclass(frozen=True)
class Runtime:
    """How a stack's roles are built and started: the same command for every role, which
    learns what to be from its environment (``IPCLAB_ROLE`` and the rest of ``role_env``).

    A Python runtime runs ``python -m <module>``; a built one (``build`` set) runs the
    binary ``build()`` returns, building it first when its sources changed. ``fixture``:
    the roles load the domain's data from the file ``IPCLAB_FIXTURE`` names, which the
    backend writes with the domain's ``write_fixture`` before the roles start (so roles
    in another language serve the very records the Python generator makes)."""

    name: str
    module: str  # ``python -m <module>`` on the local backend; the image's command on docker
    image: str  # the image every role runs on the docker backend
    build: Callable[[], Path] | None = None  # returns the binary to run, built if needed
    fixture: bool = False
    missing: Callable[[], str | None] | None = None  # why it cannot be built here, or None

    def command(self) -> list[str]:
        """The command line that starts a role on the local backend."""
        if self.build is None:
            return [sys.executable, "-m", self.module]
        return [str(self.build())]

    def unavailable(self) -> str | None:
        """Why this runtime's roles cannot run on this machine (a missing toolchain)."""
        return self.missing() if self.missing is not None else None


PYTHON = Runtime("python", "ipclab_services.serve", "ipclab-services")
GO = Runtime(
    "go",
    "",
    "ipclab-services-go",  # services/go/Dockerfile: the services image plus the Go binary
    build=gobuild.go_binary,
    fixture=True,
    missing=gobuild.toolchain_missing,
)
RUNTIMES = {r.name: r for r in (PYTHON, GO)}


@dataclass(frozen=True)
class StackSpec:
    """One stack, declared once: everything else (processes, compose file, tests) follows."""

    name: str
    domain: str  # business logic and data: services/domains/<domain>
    front: str  # the gateway's client-facing protocol: services/fronts/<front>.py
    transport: str  # gateway -> services: services/transports/<transport>.py (the style)
    services: tuple[str, ...]
    users: str  # Locust user module, e.g. "ipclab.studies.<study>.users"
    probe_paths: tuple[str, ...]  # pages the availability probe asks for, in turn
    probe_required: tuple[str, ...]  # keys a complete answer holds (the probe's "complete")
    infrastructure: tuple[str, ...] = ()  # e.g. (BROKER,)
    settings: Mapping[str, str] = field(default_factory=dict)  # fixed role environment
    runtime: Runtime = PYTHON
    gateway: str = "gateway"
    description: str = ""
    # what the stack stands for in its study's comparison (recorded in every manifest);
    # by default its transport, e.g. "rest"; a study that compares fronts names the front
    style: str = ""
    # services that also listen on plain HTTP/1.1 (the REST transport), for calls between
    # services that stay HTTP/1.1 whatever the transport under study (e.g. AcmeAir's auth)
    http_peers: tuple[str, ...] = ()
    roles: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        unknown = set(self.infrastructure) - set(INFRASTRUCTURE)
        if unknown:
            raise ValueError(f"{self.name}: unknown infrastructure {sorted(unknown)}")
        object.__setattr__(self, "roles", (*self.services, self.gateway))
        stray = set(self.http_peers) - set(self.services)
        if stray:
            raise ValueError(f"{self.name}: http_peers {sorted(stray)} are not its services")
        if not self.style:
            object.__setattr__(self, "style", self.transport)
        object.__setattr__(self, "settings", MappingProxyType(dict(self.settings)))

    @property
    def needs_broker(self) -> bool:
        return BROKER in self.infrastructure

    @property
    def needs_database(self) -> bool:
        """A SQL database the harness starts, creates and fills (the domain's
        ``database_sql``) before the services; they find it at ``IPCLAB_DATABASE_URL``."""
        return DATABASE in self.infrastructure

    def declaration(self) -> dict[str, object]:
        """What the stack is made of, as recorded in every run's manifest (``stack_spec``)."""
        return {
            "domain": self.domain,
            "front": self.front,
            "transport": self.transport,
            "services": list(self.services),
            "infrastructure": list(self.infrastructure),
            "settings": dict(self.settings),
            "runtime": self.runtime.name,
            **({"http_peers": list(self.http_peers)} if self.http_peers else {}),
        }

    def role_env(
        self,
        role: str,
        addresses: Mapping[str, str],
        amqp_url: str = "",
        options: Mapping[str, str] | None = None,
        database_url: str = "",
        http_addresses: Mapping[str, str] | None = None,
    ) -> dict[str, str]:
        """The environment of ``role``: what it is, where its peers are, and the knobs.

        ``addresses``: service role -> ``host:port`` as the gateway reaches it; ``options``:
        the run's knobs (``StackOptions.env()``), under the stack's fixed ``settings``;
        ``http_addresses``: each of ``http_peers`` -> ``host:port`` of its HTTP/1.1 listener
        (every role learns them as ``IPCLAB_HTTP_ADDR_<PEER>``; the peer itself listens on
        that port, ``IPCLAB_HTTP_PORT``).
        """
        if role not in self.roles:
            raise ValueError(f"unknown role {role!r} for stack {self.name}; roles: {self.roles}")
        env = {
            **(options or {}),
            **self.settings,
            "IPCLAB_STACK": self.name,
            "IPCLAB_ROLE": role,
            "IPCLAB_DOMAIN": self.domain,
            "IPCLAB_FRONT": self.front,
            "IPCLAB_TRANSPORT": self.transport,
            "IPCLAB_SERVICES": ",".join(self.services),
            "IPCLAB_GATEWAY": self.gateway,
        }
        if amqp_url:
            env["IPCLAB_AMQP_URL"] = amqp_url
        if database_url and role != self.gateway:
            env["IPCLAB_DATABASE_URL"] = database_url
        if role == self.gateway and not self.needs_broker:
            env.update({addr_env(s): addresses[s] for s in self.services})
        if self.http_peers:
            missing = [p for p in self.http_peers if p not in (http_addresses or {})]
            if missing:
                raise ValueError(f"{self.name}: no HTTP/1.1 address for {missing}")
            assert http_addresses is not None
            env.update({http_addr_env(p): http_addresses[p] for p in self.http_peers})
            if role in self.http_peers:
                env["IPCLAB_HTTP_PORT"] = http_addresses[role].rpartition(":")[2]
        return env


def addr_env(role: str) -> str:
    """The variable that gives the gateway a service's address, e.g. ``IPCLAB_ADDR_CART``."""
    return "IPCLAB_ADDR_" + role.upper().replace("-", "_")


def http_addr_env(role: str) -> str:
    """The variable that gives every role a peer's HTTP/1.1 address, ``IPCLAB_HTTP_ADDR_AUTH``."""
    return "IPCLAB_HTTP_ADDR_" + role.upper().replace("-", "_")


class UnknownStack(ValueError):
    pass


def all_stacks() -> dict[str, StackSpec]:
    """Every stack every registered study declares, by name."""
    from ipclab.studies import all_studies

    out: dict[str, StackSpec] = {}
    for study in all_studies().values():
        for spec in study.stacks:
            if spec.name in out and out[spec.name] != spec:
                raise ValueError(f"stack {spec.name!r} is declared twice, differently")
            out[spec.name] = spec
    return out


def resolve(name: str) -> StackSpec:
    stacks = all_stacks()
    try:
        return stacks[name]
    except KeyError:
        raise UnknownStack(
            f"unknown stack {name!r}; known stacks: {', '.join(sorted(stacks))}"
        ) from None
