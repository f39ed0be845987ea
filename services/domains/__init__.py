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


async def all_answers(calls: Iterable[Awaitable[Any]]) -> list[Any]:
    """Every call's answer, in order; when any failed, the most telling error is raised.

    Every call runs to its own end, its answer or its timeout: none is cancelled because
    another failed, and the answer waits for the last of them, as the Go gateway does
    (``services/go/gateway.go`` waits for its goroutines). Cancelling calls in flight costs
    more than it saves: grpcio's core keeps memory for every cancelled call
    (``bench/grpc_fault_memory.py``: +1.8 to +2.5 MiB per fault, docs/soak.md), and an
    HTTP call cancelled mid-request loses its pooled connection.
    """
    results = await asyncio.gather(*calls, return_exceptions=True)
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:
        raise worst_error(errors)
    return results


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
