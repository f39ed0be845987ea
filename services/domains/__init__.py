"""Business logic and data, one package per domain, free of any transport or front.

A domain package provides

    def build_services() -> dict[str, ServiceDef]
        # every service of the domain, configured from the environment (its data seed, sizes)
    def gateway_handler(clients, services: tuple[str, ...], settings: GatewaySettings) -> Handler
        # what the gateway answers (a ``fronts.Handler``), calling services through ``clients``

``load(name)`` returns it; a stack names its domain in its declaration.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from dataclasses import dataclass
from types import ModuleType


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
