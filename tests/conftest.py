"""Shared fixtures: real stacks on the local backend (real processes, a real RabbitMQ node)."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psutil
import pytest

from ipclab.backends import StackOptions, get_backend
from ipclab.backends.base import Backend
from ipclab.backends.local import LocalStack
from ipclab.load import forkserver
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
# CLI), so the leak checks see only this session's processes, not another user's.
SESSION_MARK = "IPCLABTEST_SESSION"
os.environ.setdefault(SESSION_MARK, uuid.uuid4().hex)


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
        ours = mark == os.environ[SESSION_MARK] or (mark is None and _native_proxy(cmd))
        if p.pid == os.getpid() or not ours:
            continue
        if (
            "ipclab_services.serve" in cmd
            or "ipclab-services-go" in cmd
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
