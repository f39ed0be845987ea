"""What a stack is: a domain, a front, a transport and its infrastructure, declared once.

A stack is a gateway plus the domain's services, bound to one transport (the IPC style
under study) and served to clients through one front. Each study declares its stacks in
its own folder (``ipclab/studies/<study>/stacks.py``), importing these declarations from
here; ``ipclab.stacks.all_stacks`` gathers them. This module sits below the study registry
and imports neither it nor ``ipclab.stacks``, so the registry can name ``StackSpec``.
Everything a backend needs to start a stack comes from its :class:`StackSpec`: the roles,
how each role is started (:class:`Runtime`), the infrastructure (a broker, a database: the
plugins of ``ipclab.infrastructure``, by name), and the
environment each role receives (:meth:`StackSpec.role_env`). The services read only that
environment (``services/serve.py``); they import nothing from the harness.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from ipclab import gobuild, infrastructure, javabuild, nodebuild

STORES = ("ferretdb", "mariadb")  # the infrastructure --store db adds to a stack
BROKER = "rabbitmq"  # infrastructure names a stack can declare: the plugins' of
DATABASE = "postgres"  # ipclab.infrastructure, one module each
INFRASTRUCTURE = infrastructure.names()
ADAPTER_SETS = ("python", "native")  # the protocol adapters' implementations
EGRESS = "egress"  # the adapter sidecar beside the gateway
INGRESS = "-ingress"  # the adapter sidecar beside a service: "<service>-ingress"
LOADGEN = "loadgen"  # the load generator's component (resources.csv) and its host's name


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
    # the command of its containers when it is not the image's own (an image several
    # runtimes share: the Java image holds the Californium adapters and the payload services)
    docker_command: tuple[str, ...] = ()
    # what its runs record of the software it runs (the manifest's ``stack_spec``), if any
    versions: Callable[[], Mapping[str, str]] | None = None

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
#: services/java/Dockerfile: the services image, a JRE, the Java builds
JAVA_IMAGE = "ipclab-services-java"
#: the JVM roles (the payload services on Quarkus, services/java/payload): the data they serve
#: is drawn by a port of the Python generator's random numbers, so they need no fixture
JVM = Runtime(
    "jvm",
    "",
    JAVA_IMAGE,
    build=javabuild.payload_launcher,
    missing=javabuild.toolchain_missing,
    docker_command=(f"/opt/ipclab/java/payload/{javabuild.LAUNCHER}",),
)
#: services/node/Dockerfile: the services image plus node and the ``npm ci`` build
NODE = Runtime(
    "node",
    "",
    "ipclab-services-node",
    build=nodebuild.launcher,
    fixture=True,
    missing=nodebuild.toolchain_missing,
    versions=nodebuild.versions,
)
RUNTIMES = {r.name: r for r in (PYTHON, GO, JVM, NODE)}
TLS_TRANSPORTS = ("rest", "grpc", "amqp", "h2c")  # the transports with TLS (--tls)
TLS_DOMAINS = ("shop",)  # the domains whose roles all take it


@dataclass(frozen=True)
class AdapterRuntime:
    """What a native adapter beyond the services image needs: a build on the host
    (``build`` returns its folder, building it when its sources changed), which its sidecars
    find under the variable ``env`` on the local backend, and the image its sidecar
    containers run on docker (the services image plus that build)."""

    name: str
    env: str
    image: str
    build: Callable[[], Path]
    missing: Callable[[], str | None]


CALIFORNIUM = AdapterRuntime(
    "californium",
    "IPCLAB_CALIFORNIUM_CLASSPATH",
    JAVA_IMAGE,
    build=javabuild.classpath,
    missing=javabuild.toolchain_missing,
)
#: the native adapter set's transports that run on a built runtime (nginx and nghttpx are
#: Debian packages, in the services image already)
NATIVE_RUNTIMES = {"coap": CALIFORNIUM}


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
    # protocol adapter sidecars (``services/adapters``): "" none; "python" or "native" (nginx,
    # nghttpx): an ``egress`` role on the gateway's host and a ``<service>-ingress`` role on
    # each service's host carry the gateway's HTTP/1.1 calls over the stack's transport
    adapters: str = ""
    # the load generator runs on a host of its own, delayed like every other (docker: in the
    # network namespace of a ``loadgen`` container); otherwise where the harness runs
    load_host: bool = False
    # its services read their records from the stores with ``--store db`` (``IPCLAB_STORE=db``,
    # the URLs of the ``STORES`` plugins in their environment): the declaration of a stack
    # whose runtime implements that (the shop's, in Python, Go and Node.js)
    stores: bool = False
    roles: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        unknown = set(self.infrastructure) - set(infrastructure.names())
        if unknown:
            raise ValueError(f"{self.name}: unknown infrastructure {sorted(unknown)}")
        if self.adapters not in ("", *ADAPTER_SETS):
            raise ValueError(f"{self.name}: adapters must be one of {ADAPTER_SETS} or empty")
        sidecars = (EGRESS, *(s + INGRESS for s in self.services)) if self.adapters else ()
        object.__setattr__(self, "roles", (*self.services, self.gateway, *sidecars))
        if LOADGEN in self.roles:
            raise ValueError(f"{self.name}: {LOADGEN!r} names the load generator, not a role")
        if not self.style:
            object.__setattr__(self, "style", self.transport)
        object.__setattr__(self, "settings", MappingProxyType(dict(self.settings)))

    @property
    def adapter_runtime(self) -> AdapterRuntime | None:
        """The built runtime this stack's adapter sidecars need, if any."""
        return NATIVE_RUNTIMES.get(self.transport) if self.adapters == "native" else None

    def store_unavailable(self) -> str | None:
        """Why this stack cannot run with ``--store db`` (None: it can): its services read
        no store (it does not declare ``stores``), or protocol adapters stand between them."""
        if not self.stores:
            return f"{self.name}: --store db: its services read no store (it declares none)"
        if self.adapters:
            return f"{self.name}: --store db: not with its {self.adapters} protocol adapters"
        return None

    def infrastructure_with(self, store: str | None) -> tuple[str, ...]:
        """The infrastructure a start runs: the declaration's, and the ``STORES`` with
        ``--store db`` (``store="db"``)."""
        stores = tuple(s for s in STORES if s not in self.infrastructure)
        return (*self.infrastructure, *stores) if store == "db" else self.infrastructure

    def tls_unavailable(self, edge: bool = False) -> str | None:
        """Why this stack cannot run with ``--tls`` (None: it can): TLS is built for the
        shop's stacks whose every hop is HTTP/1.1, gRPC, AMQP or HTTP/2, Python or Go; its
        ``edge`` level (the gateway's listener only) for the shop's gateways in Node.js too."""
        if self.transport not in TLS_TRANSPORTS:
            return (
                f"{self.name}: no TLS for its transport {self.transport!r} "
                f"(TLS: {', '.join(TLS_TRANSPORTS)}; CoAP would need DTLS, which aiocoap "
                "serves no server side of)"
            )
        if self.adapters:
            return f"{self.name}: its {self.adapters} protocol adapters have no TLS"
        runtimes = ("python", "go", "node") if edge else ("python", "go")
        if self.domain not in TLS_DOMAINS or self.runtime.name not in runtimes:
            node = ", and Node.js's" if edge else " (and Node.js's gateway, --tls-hops edge)"
            return f"{self.name}: TLS is built for the shop's Python and Go stacks{node}"
        return None

    def unavailable(self) -> str | None:
        """Why this stack cannot run on this machine (a missing toolchain), or None."""
        adapter = self.adapter_runtime
        return self.runtime.unavailable() or (adapter.missing() if adapter else None)

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
            **({"versions": dict(self.runtime.versions())} if self.runtime.versions else {}),
            **({"adapters": self.adapters, "hosts": self.hosts()} if self.adapters else {}),
            **({"load_host": True} if self.load_host else {}),
        }

    def host_of(self, role: str) -> str:
        """The role whose host (network namespace) ``role`` runs on: an adapter sidecar's
        gateway or service, every other role itself."""
        if role == EGRESS and self.adapters:
            return self.gateway
        if role.endswith(INGRESS) and role.removesuffix(INGRESS) in self.services:
            return role.removesuffix(INGRESS)
        return role

    def hosts(self) -> dict[str, str]:
        """Every role and the host it runs on (``host_of``)."""
        return {r: self.host_of(r) for r in self.roles}

    def is_sidecar(self, role: str) -> bool:
        return self.host_of(role) != role

    def role_env(
        self,
        role: str,
        addresses: Mapping[str, str],
        reach: Mapping[str, str] | None = None,
        options: Mapping[str, str] | None = None,
    ) -> dict[str, str]:
        """The environment of ``role``: what it is, where its peers are, and the knobs.

        ``addresses``: role -> ``host:port`` as its peers reach it (the services' for a
        stack without adapters, where only the gateway learns them; every role's for a stack
        with adapters, where every role learns every address); ``reach``: what the role
        learns of the stack's infrastructure (``ipclab.infrastructure.role_env``: each
        plugin's URL in its variable, e.g. ``IPCLAB_AMQP_URL``); ``options``: the run's knobs
        (``StackOptions.env()``), under the stack's fixed ``settings``.
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
        env.update(reach or {})
        if self.adapters:
            missing = [r for r in self.roles if r not in addresses]
            if missing:
                raise ValueError(f"{self.name}: no address for {missing}")
            env.update({addr_env(r): addresses[r] for r in self.roles})
            env["IPCLAB_ADAPTERS"] = self.adapters
            if self.is_sidecar(role):
                env["IPCLAB_ADAPTER"] = "egress" if role == EGRESS else "ingress"
        elif role == self.gateway and not self.needs_broker:
            env.update({addr_env(s): addresses[s] for s in self.services})
        return env


def addr_env(role: str) -> str:
    """The variable that gives the gateway a service's address, e.g. ``IPCLAB_ADDR_CART``."""
    return "IPCLAB_ADDR_" + role.upper().replace("-", "_")
