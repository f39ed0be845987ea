"""The registry of studies: one folder per published study, found by looking.

A study is a package ``ipclab/studies/<name>/`` whose ``__init__.py`` defines
``STUDY = Study(...)``: its stacks, its notebooks and what they need. Nothing else has to
know it exists: ``ipclab studies`` lists it, ``ipclab reproduce`` runs its notebooks, its
stacks join ``ipclab stacks`` and the contract tests. The harness core never names a study.

Each notebook of a study names the object that implements the study protocol for it
(``Notebook.part``, see ``ipclab.protocol``); :func:`part` hands it out, built with the
results folder's name and the title declared here. Folders named in ``IPCLAB_STUDIES_PATH``
(separated like ``PATH``) are searched for study packages too: a study kept outside the
repository (one folder: its declaration, analysis and notebook) joins every listing. An
installed package joins them the same way through an entry point of the group
``ipclab.studies`` whose object is its ``Study`` (``name = "pkg:STUDY"``).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.metadata
import os
import pkgutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipclab.paths import REPO_ROOT

# the declarations, below this registry (``ipclab.stacks``, which gathers every study's
# stacks, sits above it: importing it here would close a cycle)
from ipclab.stackspec import StackSpec

NOTEBOOK_DIR = REPO_ROOT / "notebooks"
STUDIES_PATH = "IPCLAB_STUDIES_PATH"  # more folders holding study packages
ENTRY_POINTS = "ipclab.studies"  # the entry-point group of installed studies

# the folders of IPCLAB_STUDIES_PATH join this package's: their packages import as
# ``ipclab.studies.<name>`` (in the notebooks' kernels and the load generator's processes
# too, which inherit the environment, made absolute here: they run in other folders)
_EXTRA = [os.path.abspath(d) for d in os.environ.get(STUDIES_PATH, "").split(os.pathsep) if d]
if _EXTRA:
    os.environ[STUDIES_PATH] = os.pathsep.join(_EXTRA)
__path__ = [*__path__, *_EXTRA]  # noqa: F821 - the package's own path, set by the import system


@dataclass(frozen=True)
class Notebook:
    """A notebook of a study, run by ``ipclab reproduce`` into ``<out>/results/<results>``."""

    file: str  # under notebooks/, or beside the study's __init__.py
    results: str  # results folder name
    needs: tuple[str, ...] = ()  # what this machine must have, e.g. ("rabbitmq",)
    # the committed full-profile result of this notebook: a folder under data/runs/reference
    # whose results/ the report leads with, the fresh run placed beside it
    reference: str = ""
    # further committed references of this notebook the report shows after ``reference``
    # (another backend's, say), not compared with the fresh run
    also_references: tuple[str, ...] = ()
    # the class implementing the study protocol for this notebook (ipclab.protocol), as
    # "module:Class"; a module starting with "." is relative to the study's package
    part: str = ""
    title: str = ""  # the results' title; by default the study's
    # where ``file`` is: set by the registry (the study's folder when it holds the file)
    directory: Path = NOTEBOOK_DIR

    @property
    def path(self) -> Path:
        return self.directory / self.file


@dataclass(frozen=True)
class Section:
    """A part of a study with no notebook of its own: a section of one of the study's
    notebooks (``notebook``, its file) shows it, run only when that notebook's boolean
    parameter named ``results`` is set (it needs what a quick run of the notebook does
    not have: another orchestrator, an hour). Its part and title as a notebook's."""

    results: str  # results folder name, and the notebook's parameter that runs the section
    notebook: str  # the file of the notebook that shows it
    part: str  # the class implementing the study protocol for it, as "module:Class"
    title: str = ""  # the results' title; by default the study's


@dataclass(frozen=True)
class Study:
    name: str
    title: str  # e.g. "Shafabakhsh 2020: REST vs gRPC vs RabbitMQ"
    stacks: tuple[StackSpec, ...]
    notebooks: tuple[Notebook, ...]
    package: str = ""  # the study's package, set by the registry
    # parts shown as a section of one of the notebooks (no notebook of their own)
    sections: tuple[Section, ...] = ()

    def results_names(self) -> tuple[str, ...]:
        """Every results name the study writes: its notebooks', then its sections'."""
        return (*(nb.results for nb in self.notebooks), *(s.results for s in self.sections))

    def part(self, results: str | None = None) -> Any:
        """The protocol object (an ``ipclab.protocol.StudyPart``; not imported here, as
        the protocol's results import the stacks, which import this registry) of the
        notebook or section writing ``results`` (of the only notebook when None), built
        with its results folder and title."""
        chosen: list[Notebook | Section] = [
            nb for nb in self.notebooks if results in (None, nb.results)
        ]
        chosen += [s for s in self.sections if results == s.results]
        if len(chosen) != 1:
            names = ", ".join(self.results_names())
            raise UnknownStudy(f"study {self.name}: name one part of {names} (not {results!r})")
        made = chosen[0]
        if not made.part:
            raise TypeError(f"study {self.name}: {made.results} names no part")
        module_name, _, attribute = made.part.partition(":")
        module = importlib.import_module(module_name, package=self.package or None)
        return getattr(module, attribute)(made.results, made.title or self.title)


def _located(study: Study, package: str, folder: Path) -> Study:
    """``study`` with its package and the folder of each notebook kept beside it."""
    notebooks = tuple(
        dataclasses.replace(nb, directory=folder) if (folder / nb.file).is_file() else nb
        for nb in study.notebooks
    )
    return dataclasses.replace(study, package=package, notebooks=notebooks)


@functools.cache
def all_studies() -> dict[str, Study]:
    """Every study package under ``ipclab/studies/`` (and the folders of
    ``IPCLAB_STUDIES_PATH``) and every installed study (entry points of ``ENTRY_POINTS``),
    in name order."""
    out: dict[str, Study] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not info.ispkg:
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        study = getattr(module, "STUDY", None)
        if not isinstance(study, Study):
            raise TypeError(f"{module.__name__} defines no STUDY = Study(...)")
        folder = Path(module.__file__ or "").parent
        out[study.name] = _located(study, module.__name__, folder)
    for ep in importlib.metadata.entry_points(group=ENTRY_POINTS):
        study = ep.load()
        if not isinstance(study, Study) or study.name != ep.name or study.name in out:
            raise TypeError(f"entry point {ep.name} = {ep.value}: no new Study {ep.name!r}")
        module = importlib.import_module(ep.module)  # its package: what ".x" parts are in
        folder = Path(module.__file__ or "").parent
        out[study.name] = _located(study, module.__package__ or module.__name__, folder)
    return dict(sorted(out.items()))


class UnknownStudy(ValueError):
    pass


def get_study(name: str) -> Study:
    studies = all_studies()
    if name not in studies:
        raise UnknownStudy(f"unknown study {name!r}; known studies: {', '.join(studies)}")
    return studies[name]


def part(study: str, results: str | None = None) -> Any:
    """The protocol object of a study's notebook (see :meth:`Study.part`): what a notebook
    calls, one stage at a time."""
    return get_study(study).part(results)
