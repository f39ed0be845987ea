"""The interface every backend implements; the harness only talks to these two protocols.

A running stack subclasses :class:`RunningStack` and so inherits the defaults of its optional
hooks (``load_env``, ``load_host``, ``load_pods``, ``info``, ``process_usage``): the load
runner and the manifest call them directly, and a backend overrides only those it has
something to say in.
"""

from __future__ import annotations

import importlib
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import psutil

from ipclab.stacks import StackSpec

RECONNECT_MODES = ("default", "tuned")  # as ipclab_services.reconnect.MODES
TLS_EDGE = "edge"  # StackOptions.tls: HTTPS to the gateway only (the thesis's configuration)
TLS_LEVELS = (None, False, True, TLS_EDGE)  # plain, plain, every hop, the edge only


@dataclass
class StackOptions:
    """Knobs that change the system under test, identical across styles."""

    seed: int = 42
    catalogue_size: int = 1000
    customers: int = 500
    sequential: bool = False  # gateway calls the five services one after another
    call_timeout_s: float = 2.0  # gateway -> service deadline; then 504
    cpus: float | None = None  # per-service CPU limit (docker backend)
    memory_mb: int | None = None  # per-service memory limit (docker backend)
    delay_ms: float = 0.0  # delay per container, each hop once (docker backend; netem.py)
    cpuset: str | None = None  # CPUs the stack runs on, e.g. "0" (the generator on others)
    # the clients' reconnect settings: None, each library's default; "tuned", short back-offs
    # (ipclab_services.reconnect; docs/availability.md, "Recovery, decomposed"). None rather
    # than "default" so that runs recorded before the option existed keep matching
    reconnect: str | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    # TLS on every hop (issue 32): the client to the gateway over HTTPS, each gateway ->
    # service hop over its style's TLS, AMQPS to the broker; a private authority per stack
    # start (ipclab.tls). None rather than False so that runs recorded before the option
    # existed keep matching (off then, off now). "edge" (issue 50): the gateway's listener
    # only, over HTTPS, as one of the studies ran it; the gateway's calls to the services
    # and the broker go in the clear (True keeps meaning every hop)
    tls: bool | str | None = None
    # where the shop's services read their data (issue 50): None, from the generator in
    # memory; "db", from their stores (FerretDB and MariaDB, started with the stack). None
    # rather than "memory" so that runs recorded before the option existed keep matching
    store: str | None = None

    def __post_init__(self) -> None:
        if self.reconnect is not None and self.reconnect not in RECONNECT_MODES:
            raise ValueError(
                f"reconnect {self.reconnect!r}: choose one of {', '.join(RECONNECT_MODES)}"
            )
        if self.store not in (None, "db"):
            raise ValueError(f"store {self.store!r}: None (in memory) or 'db'")
        if self.tls not in TLS_LEVELS:
            raise ValueError(f"tls {self.tls!r}: None (plain), True (every hop) or {TLS_EDGE!r}")

    @property
    def tls_edge(self) -> bool:
        """TLS on the load generator's hop to the gateway only (``tls="edge"``)."""
        return self.tls == TLS_EDGE

    def env(self) -> dict[str, str]:
        """The environment every service process of a stack receives."""
        env = {
            "IPCLAB_SEED": str(self.seed),
            "IPCLAB_CATALOGUE_SIZE": str(self.catalogue_size),
            "IPCLAB_CUSTOMERS": str(self.customers),
            "IPCLAB_SEQUENTIAL": "1" if self.sequential else "0",
            "IPCLAB_CALL_TIMEOUT_S": str(self.call_timeout_s),
            "IPCLAB_RECONNECT": self.reconnect or "default",
        }
        if self.store is not None:
            env["IPCLAB_STORE"] = self.store
        env.update(self.extra_env)
        return env

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class RunningStack(Protocol):
    """A started stack. ``stop`` is idempotent and removes everything the start created."""

    spec: StackSpec
    backend: str
    gateway_url: str

    def sample(self) -> list[dict[str, Any]]:
        """One resource sample per component: role, pid/container, cpu_percent, rss_bytes, ..."""
        ...

    def kill(self, role: str) -> None:
        """Kill one component abruptly (SIGKILL / docker kill)."""
        ...

    def restart(self, role: str) -> None:
        """Start a killed component again (same address)."""
        ...

    def logs(self) -> dict[str, str]:
        """Component name -> recent log text (kept in the run directory on failure)."""
        ...

    def stop(self) -> None: ...

    # --- optional hooks, with the defaults of a stack that has nothing to add ------------
    def load_env(self) -> dict[str, str]:
        """What the load generator's environment gets besides the usual knobs (a group of
        stacks: every target's address); nothing by default."""
        return {}

    def load_host(self) -> LoadHost | None:
        """Where the load generator runs when the stack gives it a host of its own (docker:
        a ``loadgen`` container's network namespace); None: this machine, at ``gateway_url``."""
        return None

    def load_pods(self) -> LoadPods | None:
        """Where a distributed load (``--workers N``) runs when the stack runs it itself
        (kubernetes: Locust's master and workers as pods beside the stack); None: as
        processes of this machine."""
        return None

    def info(self) -> dict[str, Any] | None:
        """What a run manifest records about this stack (``stack_info``: docker's project,
        images, limits, engine); None: nothing beyond the declaration and /healthz."""
        return None

    def process_usage(self, pid: int, cache: dict[int, psutil.Process]) -> dict[str, Any]:
        """CPU % and RSS of a process of this machine that works on this stack (the load
        generator, whichever network namespace it enters): its process tree, by psutil."""
        return process_tree_usage(pid, cache)


def process_tree_usage(pid: int, cache: dict[int, psutil.Process]) -> dict[str, Any]:
    """CPU % (100 = one core, since the previous call) and RSS of a process and its children."""
    cpu = 0.0
    rss = 0
    try:
        root = psutil.Process(pid)
        members = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return {"cpu_percent": None, "rss_bytes": None}
    for p in members:
        proc = cache.setdefault(p.pid, p)
        try:
            with proc.oneshot():
                cpu += proc.cpu_percent(None)
                rss += proc.memory_info().rss
        except psutil.NoSuchProcess:
            cache.pop(p.pid, None)
    return {"cpu_percent": round(cpu, 1), "rss_bytes": rss}


class LoadPods(Protocol):
    """A distributed load that a stack runs itself (``RunningStack.load_pods``): the load
    runner gives it Locust's command lines and environments; it runs them, says when the
    master ended, and copies the run's files back (docs/distributed.md)."""

    url: str  # the gateway as the load's master and workers reach it
    results: str  # the master's folder for the run's files, where it runs
    master_address: str  # host:port the workers dial (after ``prepare``)
    master_port: int  # the port the master binds

    def locustfile(self, users_module: str) -> str: ...

    def prepare(self) -> None:
        """What must exist before the command lines can be written (``master_address``)."""
        ...

    def start(
        self,
        master: Sequence[str],
        env: Mapping[str, str],
        workers: Sequence[Sequence[str]],
        worker_envs: Sequence[Mapping[str, str]],
    ) -> None: ...

    def poll(self) -> int | None:
        """The master's exit status once it ended; None while it runs."""
        ...

    def worker_exits(self) -> list[int | None]: ...

    def stop(self) -> None:
        """End the master (it flushes its records) and wait for it."""
        ...

    def nodes(self) -> dict[str, str]:
        """Where each of the load's processes ran (component -> node)."""
        ...

    def sample(self) -> list[dict[str, Any]]:
        """The load's resource rows (kind ``loadgen``), one per process."""
        ...

    def collect(self, run_dir: Path) -> list[str]:
        """The run's files into ``run_dir`` as a Locust of this machine writes them."""
        ...


class Backend(Protocol):
    name: str

    def start(
        self,
        spec: StackSpec,
        options: StackOptions,
        logs_dir: Path | None = None,
        detached: bool = False,
    ) -> RunningStack:
        """Start every component, wait until the gateway's /healthz is ready, return.

        Component logs go to ``logs_dir`` when given. A detached stack outlives the
        harness and is stopped later by ``ipclab down``.
        """
        ...


# the stack options a backend may or may not honour (``BackendPlugin.supports``), by the
# name of the ``ipclab`` flag that sets each: what a backend that does not honour one
# refuses rather than ignores
OPTIONS = ("cpus", "memory", "delay-ms", "pin", "tls", "detach", "store")


@dataclass(frozen=True)
class BackendPlugin:
    """A backend as its module or package declares it (``BACKEND = BackendPlugin(...)``, or
    several as ``PLUGINS``; an installed package: an entry point of the group
    ``ipclab.backends``), found by the registry in ``ipclab.backends``: its name
    (``--backend``), how to make one, its place in the list of choices (``order``: the
    default, ``local``, first), why this machine cannot run it, how ``ipclab down`` stops a
    stack it left running (``down``) and which stack options it honours (``supports``)."""

    name: str
    # the backend's class (or any callable making one), or its "module:name", imported only
    # when a backend is made: the registry reads every declaration at ``ipclab --help``
    make: Callable[[], Backend] | str
    order: int = 100
    description: str = ""
    # why this machine cannot run stacks on it (docker: no client, no engine); None: it can
    missing: Callable[[], str | None] | None = None
    # ``ipclab down STACK``: stop what ``ipclab up --detach`` left of the stack (a callable
    # taking the stack's name, or its "module:name"); truthy when something was up
    stop_detached: Callable[[str], Any] | str | None = None
    # the options of OPTIONS it honours (each flag's name)
    options: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        unknown = set(self.options) - set(OPTIONS)
        if unknown:
            raise ValueError(f"backend {self.name}: unknown options {sorted(unknown)}")
        object.__setattr__(self, "options", frozenset(self.options))

    def unavailable(self) -> str | None:
        return self.missing() if self.missing is not None else None

    def supports(self, option: str) -> bool:
        """Whether stacks on it honour ``option`` (a flag of OPTIONS, e.g. ``cpus``)."""
        if option not in OPTIONS:
            raise ValueError(f"unknown stack option {option!r}; known: {', '.join(OPTIONS)}")
        return option in self.options

    def backend(self) -> Backend:
        """A new backend of this kind."""
        return _loaded(self.make)()

    def down(self, stack: str) -> bool:
        """Stop what ``ipclab up --detach`` left of ``stack`` on this backend; False when
        nothing was up."""
        if self.stop_detached is None:
            raise ValueError(f"the {self.name} backend leaves no stack running: nothing to stop")
        return bool(_loaded(self.stop_detached)(stack))


def _loaded(target: Callable[..., Any] | str) -> Callable[..., Any]:
    """A callable, or the one a "module:name" names (imported now)."""
    if isinstance(target, str):
        module, _, attr = target.partition(":")
        loaded: Callable[..., Any] = getattr(importlib.import_module(module), attr)
        return loaded
    return target


class LoadHostError(RuntimeError):
    """The load generator cannot enter its load host (not root, or no nsenter)."""


@dataclass(frozen=True)
class LoadHost:
    """Where a stack's load generator runs when the stack gives it a host of its own
    (``StackSpec.load_host``; a running stack's ``load_host()`` hook): the network namespace
    its processes enter (``netns``, e.g. ``/proc/<pid>/ns/net`` of a container's process) and
    the gateway's URL as seen from there (``url``; a host process there resolves no container
    names, so an address)."""

    netns: str
    url: str

    def enter(self) -> list[str]:
        """The command prefix that runs a command of this machine in ``netns``: ``nsenter
        --net=<netns> --`` (the process keeps this machine's files; only its network moves)."""
        if os.geteuid() != 0:
            raise LoadHostError(
                f"the load generator runs in its load host's network namespace ({self.netns}), "
                "which only root can enter (nsenter): run the harness as root"
            )
        nsenter = shutil.which("nsenter")
        if nsenter is None:
            raise LoadHostError("nsenter (util-linux) is missing: the load host cannot be entered")
        return [nsenter, f"--net={self.netns}", "--"]
