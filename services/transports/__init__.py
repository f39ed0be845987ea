"""One module per IPC style; ``load(style)`` returns it.

Each module provides ``serve(service, ServeConfig)`` and ``connect(services, ConnectConfig)``
(see ``base.py``). Adding a style is one module here plus a registry entry in
``ipclab.stacks``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

STYLES = ("rest", "grpc", "amqp")


def load(style: str) -> ModuleType:
    if style not in STYLES:
        raise ValueError(f"unknown transport style {style!r}; known: {', '.join(STYLES)}")
    return importlib.import_module(f"ipclab_services.transports.{style}")
