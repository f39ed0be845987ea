"""One module per IPC style (gateway -> services); ``load(name)`` returns it.

Each module provides ``serve(service, ServeConfig)`` and ``connect(services, ConnectConfig)``
(see ``base.py``). Adding a style is one module here; a stack names it in its declaration.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def available() -> tuple[str, ...]:
    return tuple(m.name for m in pkgutil.iter_modules(__path__) if m.name != "base")


def load(style: str) -> ModuleType:
    if style not in available():
        raise ValueError(f"unknown transport {style!r}; known: {', '.join(available())}")
    return importlib.import_module(f"{__name__}.{style}")
