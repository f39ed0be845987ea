"""The registry of studies: one folder per published study, found by looking.

A study is a package ``ipclab/studies/<name>/`` whose ``__init__.py`` defines
``STUDY = Study(...)``: its stacks, its notebooks and what they need. Nothing else has to
know it exists: ``ipclab studies`` lists it, ``ipclab reproduce`` runs its notebooks, its
stacks join ``ipclab stacks`` and the contract tests. The harness core never names a study.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from dataclasses import dataclass

# the declarations, below this registry (``ipclab.stacks``, which gathers every study's
# stacks, sits above it: importing it here would close a cycle)
from ipclab.stackspec import StackSpec


@dataclass(frozen=True)
class Notebook:
    """A notebook of a study, run by ``ipclab reproduce`` into ``<out>/results/<results>``."""

    file: str  # under notebooks/
    results: str  # results folder name
    needs: tuple[str, ...] = ()  # what this machine must have, e.g. ("rabbitmq",)
    # the committed full-profile result of this notebook: a folder under data/runs/reference
    # whose results/ the report leads with, the fresh run placed beside it
    reference: str = ""


@dataclass(frozen=True)
class Study:
    name: str
    title: str  # e.g. "Shafabakhsh 2020: REST vs gRPC vs RabbitMQ"
    stacks: tuple[StackSpec, ...]
    notebooks: tuple[Notebook, ...]


@functools.cache
def all_studies() -> dict[str, Study]:
    """Every study package under ``ipclab/studies/``, in name order."""
    out: dict[str, Study] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not info.ispkg:
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        study = getattr(module, "STUDY", None)
        if not isinstance(study, Study):
            raise TypeError(f"{module.__name__} defines no STUDY = Study(...)")
        out[study.name] = study
    return out


class UnknownStudy(ValueError):
    pass


def get_study(name: str) -> Study:
    studies = all_studies()
    if name not in studies:
        raise UnknownStudy(f"unknown study {name!r}; known studies: {', '.join(studies)}")
    return studies[name]
