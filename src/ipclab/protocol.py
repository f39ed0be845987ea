"""The study protocol: what every notebook-part of a study implements, the same way.

A study's notebook drives one :class:`StudyPart` through its stages, one call each::

    params = part.parameters(profile=..., backend=..., runs_root=..., results_dir=...,
                             figures_dir=..., **part_options)
    plan = part.experiments(params)          # what will run, nothing run yet
    part.describe(plan)                      # the plan as the notebook shows it
    part.deviations(params)                  # from the original setup, as bullets
    runs = part.run(plan)                    # every run (finished ones reused)
    analysis = part.analyse(runs, params)    # an object with ``.claims``
    results = part.write(analysis, params)   # tables, figures, claims: a StudyResults
    part.views(analysis)                     # named displays beyond the analysis's tables

The registry (``ipclab.studies``) builds each part from its study's declaration
(``Notebook.part``): the results folder's name and the title come from there, never from
the notebook. A study implements a part as a thin adapter over its own functions; this
module names no study.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from ipclab.planner import Need
    from ipclab.results import StudyResults

# the stages a notebook calls, in order (``parameters`` makes the first argument)
STAGES = ("parameters", "experiments", "describe", "deviations", "run", "analyse", "write")
# what a notebook may call beside the stages: displays of what the stages returned
EXTRA = ("views",)
# the parameters every notebook has (papermill injects them; ``ipclab reproduce`` sets them)
COMMON = ("profile", "backend", "runs_root", "results_dir", "figures_dir")


@dataclass(frozen=True)
class Parameters:
    """One notebook's parameters: the common ones and the part's own ``options``."""

    profile: str = "quick"
    backend: str = "local"
    runs_root: Path = Path("data/runs")
    results_dir: Path = Path("out/results")
    figures_dir: Path = Path("figures")
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("runs_root", "results_dir", "figures_dir"):
            object.__setattr__(self, name, Path(getattr(self, name)))
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))

    def recorded(self) -> dict[str, Any]:
        """What the results folder records of them (``study.json``'s ``parameters``)."""
        return {"profile": self.profile, "backend": self.backend}


class StudyPart(ABC):
    """One notebook of a study as its stages. ``results`` (the results folder's name) and
    ``title`` come from the study's declaration; ``OPTIONS`` names the part's own
    parameters and their defaults (e.g. which methods to run, a shorter window)."""

    OPTIONS: ClassVar[Mapping[str, Any]] = MappingProxyType({})

    def __init__(self, results: str, title: str) -> None:
        self.results = results
        self.title = title

    def __repr__(self) -> str:
        return f"{type(self).__name__}(results={self.results!r}, title={self.title!r})"

    def parameters(
        self,
        profile: str = "quick",
        backend: str = "local",
        runs_root: str | Path = "data/runs",
        results_dir: str | Path | None = None,
        figures_dir: str | Path = "figures",
        **options: Any,
    ) -> Parameters:
        """The notebook's parameters; an option the part does not declare is an error."""
        unknown = set(options) - set(self.OPTIONS)
        if unknown:
            known = ", ".join(self.OPTIONS) or "none"
            raise TypeError(f"{self.results}: unknown options {sorted(unknown)}; known: {known}")
        return Parameters(
            profile=profile,
            backend=backend,
            runs_root=Path(runs_root),
            results_dir=Path(results_dir or Path("out/results") / self.results),
            figures_dir=Path(figures_dir),
            options={**self.OPTIONS, **options},
        )

    def new_results(self, params: Parameters) -> StudyResults:
        """An empty results folder as the declaration names it (what ``write`` fills)."""
        from ipclab.results import StudyResults

        return StudyResults(
            params.results_dir,
            self.results,
            self.title,
            parameters=params.recorded(),
            figures_dir=params.figures_dir,
        )

    @abstractmethod
    def experiments(self, params: Parameters) -> Any:
        """The plan: every experiment the part runs, built, none run."""

    @abstractmethod
    def describe(self, plan: Any) -> Any:
        """What the notebook shows of the plan (a text, or the plan's description)."""

    @abstractmethod
    def deviations(self, params: Parameters, analysis: Any = None) -> Sequence[str]:
        """The deviations from the original setup (with ``analysis``: also those its runs
        showed, where the part has any)."""

    @abstractmethod
    def run(self, plan: Any) -> Any:
        """Run (or reuse) every run of the plan; the runs, as ``analyse`` takes them."""

    @abstractmethod
    def analyse(self, runs: Any, params: Parameters) -> Any:
        """Every table of the part from its runs: an object with ``claims``."""

    @abstractmethod
    def write(self, analysis: Any, params: Parameters) -> StudyResults:
        """Tables, figures and claims into the declared results folder."""

    def views(self, analysis: Any) -> Mapping[str, Any]:
        """Named displays the notebook shows beyond the analysis's own tables (texts and
        tables derived from it, the published numbers' own checks); none by default."""
        return {}

    # --- the planner's (``ipclab plan``, ``ipclab.decide``): optional -------------------
    def load(self, plan: Any) -> Any:
        """The runs on disk for ``plan``, whatever code made them, none made (a committed
        reference), as ``analyse`` takes them."""
        raise NotImplementedError(f"{self.results}: no runs to load for the planner")

    def needs(self, analysis: Any, params: Parameters) -> Sequence[Need]:
        """Each undecided test's cells, runs and the runs it needs (``ipclab.planner``);
        none by default (a part the planner does not extend)."""
        return []

    def extend(
        self, plan: Any, runs: Sequence[tuple[str, int]], progress: Callable[[str], None]
    ) -> None:
        """Make the planned ``runs`` (cell id from :meth:`needs`, repetition number), in
        that order, each a run of the plan's experiment (finished ones reused)."""
        raise NotImplementedError(f"{self.results}: the planner cannot add runs here")


class Analysed:
    """An analysis, read through, with what ``write`` needs beside it (e.g. the runs a
    study's writer takes as well): adapters return it where the analysis alone is not
    enough to write the results."""

    def __init__(self, analysis: Any, **extra: Any) -> None:
        self.analysis = analysis
        self.extra = extra

    def __getattr__(self, name: str) -> Any:
        if name in ("analysis", "extra"):  # not set yet (e.g. while unpickling)
            raise AttributeError(name)
        return getattr(self.analysis, name)


def implements(part: object) -> list[str]:
    """What ``part`` lacks of the protocol: every stage it does not implement (an empty
    list: it implements them all)."""
    missing = [s for s in (*STAGES, *EXTRA) if not callable(getattr(part, s, None))]
    if not isinstance(part, StudyPart):
        missing.append("a StudyPart")
    else:
        missing += sorted(getattr(type(part), "__abstractmethods__", ()))
    for name in ("results", "title"):
        if not getattr(part, name, ""):
            missing.append(name)
    return missing
