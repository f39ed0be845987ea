"""Shared fixtures: real stacks on the local backend (real processes, a real RabbitMQ node)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import psutil
import pytest

from ipclab.backends import StackOptions, get_backend
from ipclab.backends.local import LocalStack
from ipclab.stacks import all_stacks, resolve

# Every stack of the shop domain, from the registry: a new one is tested with no edit here.
SHOP_STACKS = tuple(name for name, s in all_stacks().items() if s.domain == "shop")

# Every process this test session starts inherits this variable (directly or through the
# CLI), so the leak checks see only this session's processes, not another user's.
SESSION_MARK = "IPCLABTEST_SESSION"
os.environ.setdefault(SESSION_MARK, uuid.uuid4().hex)


def ipclab_processes() -> list[psutil.Process]:
    """Processes a stack or run may have started: services, Locust, a private broker."""
    out = []
    for p in psutil.process_iter(["pid", "cmdline", "environ"]):
        try:
            cmd = " ".join(p.info["cmdline"] or [])
            env = p.info["environ"] or {}
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if p.pid == os.getpid() or env.get(SESSION_MARK) != os.environ[SESSION_MARK]:
            continue
        if (
            "ipclab_services.serve" in cmd
            or "-m locust" in cmd
            or env.get("RABBITMQ_NODENAME", "").startswith("ipclab")
        ):
            try:
                if p.status() != psutil.STATUS_ZOMBIE:
                    out.append(p)
            except psutil.NoSuchProcess:
                continue
    return out


@pytest.fixture(scope="module")
def shop_stacks() -> Iterator[dict[str, LocalStack]]:
    """The three product-page stacks, up for one test module (then nothing is left)."""
    backend = get_backend("local")
    stacks: dict[str, LocalStack] = {}
    try:
        for name in SHOP_STACKS:
            stacks[name] = backend.start(resolve(name), StackOptions(call_timeout_s=1.0))
        yield stacks
    finally:
        for stack in stacks.values():
            stack.stop()
