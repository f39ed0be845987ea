"""The stacks: every stack the registered studies declare, found by name.

What a stack is (:class:`StackSpec`, :class:`Runtime`, the infrastructure and role names)
is declared in ``ipclab.stackspec``, below the study registry: each study's ``stacks.py``
imports it from there. This module sits above the registry and gathers what the studies
declare (:func:`all_stacks`, :func:`resolve`), so the imports run one way only:
``ipclab.stacks`` -> ``ipclab.studies`` -> ``ipclab.stackspec``. It also re-exports the
declarations, so a caller imports a stack's name and its type from one place.
"""

from __future__ import annotations

from ipclab.stackspec import (
    ADAPTER_SETS,
    BROKER,
    DATABASE,
    EGRESS,
    GO,
    INFRASTRUCTURE,
    INGRESS,
    LOADGEN,
    NODE,
    PYTHON,
    RUNTIMES,
    Runtime,
    StackSpec,
    addr_env,
)
from ipclab.studies import all_studies

__all__ = [
    "ADAPTER_SETS",
    "BROKER",
    "DATABASE",
    "EGRESS",
    "GO",
    "INFRASTRUCTURE",
    "INGRESS",
    "LOADGEN",
    "NODE",
    "PYTHON",
    "RUNTIMES",
    "Runtime",
    "StackSpec",
    "UnknownStack",
    "addr_env",
    "all_stacks",
    "resolve",
]


class UnknownStack(ValueError):
    pass


def all_stacks() -> dict[str, StackSpec]:
    """Every stack every registered study declares, by name."""
    out: dict[str, StackSpec] = {}
    for study in all_studies().values():
        for spec in study.stacks:
            if spec.name in out and out[spec.name] != spec:
                raise ValueError(f"stack {spec.name!r} is declared twice, differently")
            out[spec.name] = spec
    return out


def resolve(name: str) -> StackSpec:
    stacks = all_stacks()
    try:
        return stacks[name]
    except KeyError:
        raise UnknownStack(
            f"unknown stack {name!r}; known stacks: {', '.join(sorted(stacks))}"
        ) from None
