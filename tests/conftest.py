"""Shared fixtures: real stacks on the local backend (real processes, a real RabbitMQ node)."""

from __future__ import annotations

import fcntl
import os
import re
import sys
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psutil
import pytest

from ipclab.backends import StackOptions, get_backend
from ipclab.backends.base import Backend
from ipclab.backends.local import LocalStack
from ipclab.load import forkserver
from ipclab.procs import PORT_RANGE_ENV, port_range
from ipclab.stacks import all_stacks, resolve

pytest_plugins = ["tests.module_times"]

# Every stack of the shop domain, from the registry: a new one is tested with no edit here;
# stacks whose runtime cannot be built here (no Go toolchain) are left out, and
# tests/test_runtimes.py skips naming the missing toolchain.
SHOP_STACKS = tuple(
    name
    for name, s in all_stacks().items()
    if s.domain == "shop" and s.runtime.unavailable() is None
)

# Stacks left out (their runtime cannot be built here), with the reason naming the toolchain.
LEFT_OUT = {
    name: why
    for name, s in all_stacks().items()
    if s.domain == "shop" and (why := s.runtime.unavailable()) is not None
}


def pytest_collection_finish(session: pytest.Session) -> None:
    """No test module may import Locust (or a Locust user module): Locust patches the whole
    process with gevent, and grpc's threads in later tests then hang for ever."""
    if "locust" in sys.modules:
        raise pytest.UsageError(
            "a test module imported Locust (e.g. a stack's user module): take what it needs "
            "from a module without Locust; the gevent patching hangs the grpc tests"
        )


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Say at the top of the session which shop stacks are not tested, and why."""
    if not LEFT_OUT:
        return [f"shop stacks tested: {', '.join(SHOP_STACKS)}"]
    return [f"NOT tested: {name}: {why}" for name, why in LEFT_OUT.items()]


# Every process this test session starts inherits this variable (directly or through the
# CLI), so the leak checks see only this session's processes, not another user's. Under
# pytest-xdist (`make test`: two workers) each worker's mark is the session's with the
# worker's id, set here before the worker starts anything: a worker's leak checks see its
# own processes only, never those of a test the other worker runs at the same time.
SESSION_MARK = "IPCLABTEST_SESSION"
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1" under xdist; else ""
_SESSION = os.environ.setdefault(SESSION_MARK, uuid.uuid4().hex)
if WORKER and not _SESSION.endswith(f"-{WORKER}"):
    os.environ[SESSION_MARK] = f"{_SESSION}-{WORKER}"
# ...and each worker its own slice of the harness's port range: the other worker's stack,
# starting at the same time, can never be handed a port this one chose but has not bound.
if WORKER and PORT_RANGE_ENV not in os.environ and (_PORTS := port_range()):
    _COUNT, _INDEX = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")), int(WORKER[2:])
    _SLICE = _PORTS[_INDEX * len(_PORTS) // _COUNT : (_INDEX + 1) * len(_PORTS) // _COUNT]
    os.environ[PORT_RANGE_ENV] = f"{_SLICE[0]}-{_SLICE[-1]}"

# --- two workers: which tests may run beside which ------------------------------------------
# `make test` runs `pytest -n 2 --dist loadgroup`: a test module runs whole on one worker
# (its module-scoped stacks start once), two modules at a time. What must not run beside
# each other is one group, "serial", that one worker runs one test after another, with why.
# The groups are made here by path, in the controller's scheduler (pytest_xdist_make_scheduler
# below): pytest-xdist's own loadgroup reads `xdist_group` marks into the tests' ids, which
# pytest 9.2's ids no longer take (xdist 3.8 sets `item._nodeid`), so no mark is used.
SERIAL = {
    "docker": "build and share the images ipclab-services*:latest (two builds at once race) "
    "and the engine's networks, iptables guard chains and swarm",
    "kubernetes": "one cluster, its namespaces and its host routes",
    "test_forkserver.py": "CPU affinity and the run time of forked Locusts",
    "test_pinning.py": "CPU affinity of a stack's threads",
    "test_reference_rebuild.py": "copies the source tree and rebuilds every reference (CPU)",
}
# Tests marked `alone` (pyproject.toml) run with nothing else at all, on either worker: the
# other worker waits between its tests (a flock: every test holds it shared, one alone
# exclusively).
ALONE_LOCK = Path(__file__).resolve().parents[1] / "build" / "pytest-workers.lock"


def xdist_scope(nodeid: str) -> str:
    """The work unit of a test under `make test`: "serial" for the paths of :data:`SERIAL`
    (the first folder or file under tests/), else its module."""
    module = nodeid.split("::", 1)[0]
    parts = Path(module).parts
    under_tests = parts[1:] if parts[:1] == ("tests",) else parts
    return "serial" if under_tests[:1] and under_tests[0] in SERIAL else module


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: unknown without it
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup``: pytest-xdist's scope scheduler on :func:`xdist_scope` (a work
    unit whole on one worker; the largest, "serial", handed out first)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleOrSerial(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_scope(nodeid)

    return ModuleOrSerial(config, log)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """Under xdist, a test marked `alone` holds the workers' lock exclusively, every other
    test shared: nothing runs beside the first (it asserts what a machine-wide sweep finds,
    and every stack start sweeps)."""
    if not WORKER:
        return (yield)
    ALONE_LOCK.parent.mkdir(parents=True, exist_ok=True)
    alone = item.get_closest_marker("alone") is not None
    with ALONE_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        return (yield)


def _postmaster(name: str, cmd: str) -> bool:
    """A private cluster's postmaster (``postgres -D .../ipclab-postgres/...``). Its children
    (``postgres: checkpointer`` ...) overwrite their environment with their process title,
    so they lose the session mark: they are found as the postmaster's children."""
    return name == "postgres" and "ipclab-postgres" in cmd


def _native_proxy(cmd: str) -> bool:
    """A native protocol adapter's proxy (nginx, nghttpx) run from its private directory.
    nginx overwrites its environment with its process title (no session mark): its master
    is known by that directory, its workers as the master's children."""
    return "/ipclab-native-" in cmd


_ADAPTER_PID = re.compile(r"/ipclab-native-(\d+)-")


def _in_our_pid_namespace(pid: int) -> bool:
    """Whether ``pid`` shares this process's PID namespace: a container's nginx (a docker
    test's native adapters, on the other worker) names its adapter by a pid of the
    container's own namespace, which means nothing here (pid 8 in CI: none, read as a
    leak)."""
    try:
        return os.readlink(f"/proc/{pid}/ns/pid") == os.readlink("/proc/self/ns/pid")
    except OSError:
        return False


def _proxy_of_this_session(cmd: str) -> bool:
    """A native proxy (no mark of its own) is this session's when the adapter that started
    it (its pid is in the private directory's name) carries this session's mark; one whose
    adapter is gone outlived it: a leak, counted whoever's it is."""
    found = _ADAPTER_PID.search(cmd)
    if found is None:
        return True
    try:
        adapter_mark = psutil.Process(int(found[1])).environ().get(SESSION_MARK)
    except psutil.NoSuchProcess:  # the adapter is gone (a zombie too)
        return True
    except psutil.Error:
        return False
    return adapter_mark == os.environ[SESSION_MARK]


def command_line(p: psutil.Process) -> str:
    """A listed process's command line, or "" once it has exited: a process found alive can
    die (or turn zombie) before it is asked, which is no error for a leak check."""
    try:
        return " ".join(p.cmdline())
    except psutil.Error:
        return ""


def _forkserver_family(p: psutil.Process) -> tuple[bool, bool]:
    """(is the Locust fork server, is a Locust it forked): both show the server's command
    line (``load/forkserver.py``); a forked Locust's parent is the server."""
    if forkserver.MODULE not in command_line(p):
        return False, False
    try:
        parent = p.parent()
    except psutil.Error:
        parent = None
    forked = parent is not None and forkserver.MODULE in command_line(parent)
    return not forked, forked


def is_locust(p: psutil.Process) -> bool:
    """A Locust process: started as ``python -m locust`` or forked by the fork server."""
    return "-m locust" in command_line(p) or _forkserver_family(p)[1]


def harness_children() -> set[int]:
    """This test process's live descendants, less its Locust fork server: that waits idle
    between loads and lives as long as the process that started it."""
    out = set()
    for p in psutil.Process().children(recursive=True):
        try:
            if p.status() != psutil.STATUS_ZOMBIE and not _forkserver_family(p)[0]:
                out.add(p.pid)
        except psutil.NoSuchProcess:
            continue
    return out


def _store(name: str, cmd: str) -> bool:
    """A private store's server (FerretDB from build/ferretdb, MariaDB in its store dir)."""
    return (name == "ferretdb" and "/ferretdb/" in cmd) or (
        name == "mariadbd" and "ipclab-mariadb-" in cmd
    )


def ipclab_processes() -> list[psutil.Process]:
    """Processes a stack or run may have started: services, Locust, a private broker, a
    private PostgreSQL cluster, a native adapter's proxy."""
    out = []
    for p in psutil.process_iter(["pid", "name", "cmdline", "environ"]):
        try:
            cmd = " ".join(p.info["cmdline"] or [])
            env = p.info["environ"] or {}
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        mark = env.get(SESSION_MARK)
        ours = mark == os.environ[SESSION_MARK] or (
            mark is None
            and _native_proxy(cmd)
            and _in_our_pid_namespace(p.pid)
            and _proxy_of_this_session(cmd)
        )
        if p.pid == os.getpid() or not ours:
            continue
        if (
            "ipclab_services.serve" in cmd
            or "ipclab-services-go" in cmd
            or (bool(env.get("IPCLAB_ROLE")) and cmd.endswith("/app/main.js"))  # a Node.js role
            or "-m locust" in cmd
            or (forkserver.MODULE in cmd and _forkserver_family(p)[1])
            or env.get("RABBITMQ_NODENAME", "").startswith("ipclab")
            or _postmaster(p.info["name"] or "", cmd)
            or _native_proxy(cmd)
            or _store(p.info["name"] or "", cmd)
        ):
            try:
                parent = _postmaster(p.name(), cmd) or _native_proxy(cmd)
                family = [p, *(p.children(recursive=True) if parent else [])]
                out.extend(c for c in family if c.status() != psutil.STATUS_ZOMBIE)
            except psutil.NoSuchProcess:
                continue
    return out


@pytest.fixture(scope="module")
def shop_stacks() -> Iterator[dict[str, LocalStack]]:
    """The three product-page stacks, up for one test module (then nothing is left)."""
    yield from started_together(get_backend("local"), SHOP_STACKS, StackOptions(call_timeout_s=1.0))


def started_together(
    backend: Backend, names: tuple[str, ...], options: StackOptions, at_once: int = 2
) -> Iterator[dict[str, Any]]:
    """The stacks ``names`` on ``backend``, started ``at_once`` at a time (a start waits on
    its components' health for much of its time, so two overlap well on two cores), then
    stopped as many at a time, whatever happened. A start that failed fails the
    fixture once every start has ended, and the stacks that did start are stopped."""
    stacks: dict[str, Any] = {}
    try:
        with ThreadPoolExecutor(max_workers=at_once) as pool:
            futures = {n: pool.submit(backend.start, resolve(n), options) for n in names}
            errors = []
            for name, future in futures.items():
                try:
                    stacks[name] = future.result()
                except Exception as e:  # noqa: BLE001 - every start ends before one is raised
                    errors.append(e)
        if errors:
            raise errors[0]
        yield stacks
    finally:  # stopped together as well: a stop waits on compose and its containers' exits
        with ThreadPoolExecutor(max_workers=at_once) as pool:
            list(pool.map(lambda stack: stack.stop(), stacks.values()))
