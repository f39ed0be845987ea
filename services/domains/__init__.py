"""Business logic and data, one package per domain, free of any transport or front.

A domain package provides

    def build_services() -> dict[str, ServiceDef]
        # every service of the domain, configured from the environment (its data seed, sizes)
    def gateway_handler(clients, services: tuple[str, ...], settings: GatewaySettings) -> Handler
        # what the gateway answers (a ``fronts.Handler``), calling services through ``clients``

or, when its roles are whole apps rather than services behind a front and a transport,

    async def serve_role(role, services, host, port, env) -> None
        # serve ``role`` on host:port until cancelled, configured by ``env``

``load(name)`` returns it; a stack names its domain in its declaration.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import pkgutil
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ipclab_services.errors import BadRequest, NotFound, ServiceError, Timeout, Unavailable


@dataclass(frozen=True)
class GatewaySettings:
    """The gateway's strategy, the same knobs in every domain and style."""

    timeout_s: float = 2.0  # per call to a service; then 504
    sequential: bool = False  # call the services one after another instead of at once

    @classmethod
    def from_env(cls) -> GatewaySettings:
        return cls(
            timeout_s=float(os.environ.get("IPCLAB_CALL_TIMEOUT_S", "2.0")),
            sequential=os.environ.get("IPCLAB_SEQUENTIAL", "0") == "1",
        )


def available() -> tuple[str, ...]:
    return tuple(m.name for m in pkgutil.iter_modules(__path__) if m.ispkg)


def load(domain: str) -> ModuleType:
    if domain not in available():
        raise ValueError(f"unknown domain {domain!r}; known: {', '.join(available())}")
    return importlib.import_module(f"{__name__}.{domain}")


# When several calls fail, a gateway reports the most telling error first.
_PRECEDENCE = (BadRequest, NotFound, Timeout, Unavailable, ServiceError)


def worst_error(errors: list[BaseException]) -> BaseException:
    """Of several failed calls, the most telling error (every domain's gateway)."""
    for cls in _PRECEDENCE:
        for e in errors:
            if isinstance(e, cls):
                return e
    return errors[0]


# calls a page stopped waiting for, held until they end: asyncio keeps tasks only weakly
_LEFT_RUNNING: set[asyncio.Future[Any]] = set()


def _settled(task: asyncio.Future[Any]) -> None:
    _LEFT_RUNNING.discard(task)
    if not task.cancelled():
        task.exception()  # a failure nobody waits for any more: retrieved, not logged


async def all_answers(calls: Iterable[Awaitable[Any]], timeout: float | None = None) -> list[Any]:
    """Every call's answer, in order, made at once. The first failure ends the wait: the
    most telling error among the calls ended by then is raised; past ``timeout`` (the
    page's deadline; None: each call's own timeouts only) without every answer,
    :class:`Timeout`.

    No call is ever cancelled, neither by another's failure nor by the caller's own
    cancellation: one the caller stops waiting for runs on to its own end (its answer or
    its own timeout) and its outcome is dropped. Cancelling calls in flight costs more than
    letting them end: grpcio's core keeps memory for every cancelled call
    (``bench/grpc_fault_memory.py``: +1.8 to +2.5 MiB per fault, docs/soak.md), and an HTTP
    call cancelled mid-request loses its pooled connection.
    """
    tasks = [asyncio.ensure_future(c) for c in calls]
    for t in tasks:
        _LEFT_RUNNING.add(t)
        t.add_done_callback(_settled)
    done, pending = await asyncio.wait(tasks, timeout=timeout, return_when=asyncio.FIRST_EXCEPTION)
    errors = [e for t in done if (e := t.exception()) is not None]
    if errors:
        raise worst_error(errors)
    if pending:
        raise Timeout(f"page deadline of {timeout:g} s passed")
    return [t.result() for t in tasks]


async def health(clients: Any, services: tuple[str, ...], timeout_s: float) -> tuple[int, Any]:
    """``/healthz``: 200 once every service answers a ping (within 1 s at most), else 503."""
    results = await asyncio.gather(
        *(clients.call(s, "ping", {}, min(timeout_s, 1.0)) for s in services),
        return_exceptions=True,
    )
    status = {
        s: "ok" if not isinstance(r, BaseException) else type(r).__name__
        for s, r in zip(services, results, strict=True)
    }
    ready = all(v == "ok" for v in status.values())
    return (200 if ready else 503), {"ready": ready, "services": status}
