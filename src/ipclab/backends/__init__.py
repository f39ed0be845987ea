"""Backends run a stack: ``local`` (processes on this machine), ``docker`` (compose),
``swarm`` (``docker stack deploy`` on a Docker Swarm) or ``kubernetes`` (Deployments and
Services on a cluster).

The registry is filled by looking, as the studies' is: every module of this package that
declares ``BACKEND = BackendPlugin(...)`` is a backend (``local.py``), and a subpackage
declares its own in its ``__init__`` (``docker/``: ``docker`` and ``swarm``, as
``PLUGINS``; ``kubernetes/``: ``kubernetes``, as ``BACKEND``). A new backend is one such
module, or, kept outside this package, an entry point of the group ``ipclab.backends``
whose object is its ``BackendPlugin``
(``[project.entry-points."ipclab.backends"] name = "pkg.module:BACKEND"``);
``get_backend`` and ``BACKENDS`` (the ``--backend`` choices, in the plugins' ``order``)
follow from it, and ``ipclab down`` and the stack options ask the plugin (``down``,
``supports``). Modules are found with ``pkgutil`` and imported by name, so this package
names none of them.

The other modules here declare no backend: ``base.py`` (the protocols and
``BackendPlugin``), ``described.py`` (what a manifest records of a started stack),
``memory.py`` (memory sampling for memory runs), and the private instances the local
backend starts for an infrastructure plugin (``ipclab.infrastructure``): ``broker.py``
(a RabbitMQ node), ``postgres.py`` (a PostgreSQL cluster), ``ferretdb.py``, ``mariadb.py``
with ``storedir.py`` and ``mongowire.py`` (the stores).
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import pkgutil
from typing import Any

from ipclab.backends.base import Backend, BackendPlugin, RunningStack, StackOptions

ENTRY_POINTS = "ipclab.backends"  # the entry-point group of installed backends


@functools.cache
def all_backends() -> dict[str, BackendPlugin]:
    """Every backend a module (or subpackage) of this package declares, by name, in their
    ``order``. Only this package's modules and its subpackages' ``__init__`` are read (a
    subpackage declares its backends there, made by "module:name" on first use), so
    listing the backends imports no engine client nor pandas; then the installed packages'
    entry points (group ``ipclab.backends``), each a ``BackendPlugin`` of its name."""
    found: list[BackendPlugin] = []
    for info in pkgutil.iter_modules(__path__, prefix=f"{__name__}."):
        module = importlib.import_module(info.name)
        declared = (getattr(module, "BACKEND", None), *getattr(module, "PLUGINS", ()))
        found += [p for p in declared if isinstance(p, BackendPlugin)]
    for ep in importlib.metadata.entry_points(group=ENTRY_POINTS):
        plugin = ep.load()
        if not isinstance(plugin, BackendPlugin) or plugin.name != ep.name:
            raise TypeError(f"entry point {ep.name} = {ep.value}: no BackendPlugin {ep.name!r}")
        found.append(plugin)
    names = [p.name for p in found]
    if len(set(names)) != len(names):
        raise ValueError(f"a backend is declared twice: {sorted(names)}")
    return {p.name: p for p in sorted(found, key=lambda p: (p.order, p.name))}


def get_backend(name: str) -> Backend:
    backends = all_backends()
    if name not in backends:
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(backends)}")
    return backends[name].backend()


def __getattr__(name: str) -> Any:
    """``BACKENDS``: the registered backends' names, found on first use (PEP 562)."""
    if name == "BACKENDS":
        return tuple(all_backends())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BACKENDS",
    "Backend",
    "BackendPlugin",
    "RunningStack",
    "StackOptions",
    "all_backends",
    "get_backend",
]
