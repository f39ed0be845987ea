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
module names no study. The core writes the results folder (``write``: a new
:class:`~ipclab.results.StudyResults` the part's ``fill`` fills) and adds the planner's runs
(``extend``: each to the experiment ``extended`` names).

A new study need implement none of that by hand: a :class:`DeclaredPart` declares its named
experiments (``declare``: name -> one :class:`~ipclab.experiments.Experiment` each) and
``analyse`` returns a core :class:`Analysis` (the claims, tables with their captions,
figures, deviations the runs showed, README blocks and notebook views); the core runs,
loads, describes, extends and writes it (docs/adding-a-study.md walks through a study so
made, kept outside the repository's package).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

import pandas as pd

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ipclab.experiments import Experiment
    from ipclab.planner import Need
    from ipclab.results import StudyResults
    from ipclab.runs import Run

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

    def write(self, analysis: Any, params: Parameters) -> StudyResults:
        """Tables, figures and claims into the declared results folder: a new one that
        :meth:`fill` fills."""
        results = self.new_results(params)
        self.fill(analysis, results)
        return results

    def fill(self, analysis: Any, results: StudyResults) -> None:
        """Write ``analysis``'s tables, figures and claims into ``results`` (what
        :meth:`write` calls; a part overrides this or ``write``)."""
        raise NotImplementedError(f"{self.results}: no writer of its results")

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

    def extended(self, plan: Any) -> Experiment | Mapping[str, Experiment]:
        """The experiment the planner adds runs to (cell ids ``<results>:<stack>@<users>``),
        or several by name (cell ids ``<results>:<name>:<stack>@<users>``)."""
        raise NotImplementedError(f"{self.results}: the planner cannot add runs here")

    def extend(
        self, plan: Any, runs: Sequence[tuple[str, int]], progress: Callable[[str], None]
    ) -> None:
        """Make the planned ``runs`` (cell id from :meth:`needs`, repetition number), in
        that order, each a run of the experiment :meth:`extended` names (finished ones
        reused)."""
        from ipclab.experiments import extend_cell

        target = self.extended(plan)
        for cell, repetition in runs:
            rest = cell.removeprefix(f"{self.results}:")
            if isinstance(target, Mapping):
                name, _, rest = rest.partition(":")
                extend_cell(target[name], rest, repetition, progress)
            else:
                extend_cell(target, rest, repetition, progress)


@dataclass(frozen=True)
class Table:
    """A table of the results folder: ``<name>.csv`` with its caption (the report shows it
    unless ``in_report`` is False)."""

    name: str
    frame: pd.DataFrame
    caption: str
    in_report: bool = True


@dataclass(frozen=True)
class Plot:
    """A figure of the results folder: ``<name>.png`` (and its vector twin) with its caption.
    ``figure``: the figure, or what draws it when it is written (a part with many figures
    draws each only then, one at a time; the core closes each once saved)."""

    name: str
    figure: Figure | Callable[[], Figure]
    caption: str

    def drawn(self) -> Figure:
        """The figure (drawn now when ``figure`` is what draws it)."""
        from matplotlib.figure import Figure

        return self.figure if isinstance(self.figure, Figure) else self.figure()


@dataclass(frozen=True)
class Analysis:
    """What a :class:`DeclaredPart`'s ``analyse`` returns, all the core needs to write it:
    the claims with their verdicts (``ipclab.claims.evaluate_claims``' table), the tables
    and figures with their captions, the deviations the runs showed (beside the declared
    ones), the README blocks of a reference folder (name -> Markdown, or what makes them:
    called only where the results folder has a README) and what the notebook shows beyond
    the tables (``views``). The claims' tables (``StudyResults.claims_table``)
    follow the tables unless ``claims_before`` names the first table after them; a claims
    frame without columns (nothing judged) writes none."""

    claims: pd.DataFrame
    tables: tuple[Table, ...] = ()
    figures: tuple[Plot, ...] = ()
    deviations: tuple[str, ...] = ()
    readme: Mapping[str, str] | Callable[[], Mapping[str, str]] = field(default_factory=dict)
    views: Mapping[str, Any] = field(default_factory=dict)
    claims_before: str | None = None

    def __getitem__(self, name: str) -> pd.DataFrame:
        """A table's frame by its name."""
        for t in self.tables:
            if t.name == name:
                return t.frame
        raise KeyError(f"no table {name!r}; tables: {', '.join(t.name for t in self.tables)}")

    def write(self, results: StudyResults) -> None:
        """Tables, figures and claims into ``results``; in a reference folder (a README
        beside the results) its README's generated blocks and findings too."""
        import matplotlib.pyplot as plt

        from ipclab.findings import fill_blocks, write_findings

        claimed = not len(self.claims.columns)  # nothing judged: no claims table
        for t in self.tables:
            if t.name == self.claims_before and not claimed:
                results.claims_table(self.claims)
                claimed = True
            results.table(t.frame, t.name, t.caption, t.in_report)
        if not claimed:
            results.claims_table(self.claims)
        for f in self.figures:
            fig = f.drawn()
            results.figure(fig, f.name, f.caption)
            plt.close(fig)
        readme = results.directory.parent / "README.md"
        if readme.is_file():
            blocks = self.readme() if callable(self.readme) else self.readme
            if blocks:
                fill_blocks(readme, blocks)
            label = f"{results.directory.name}/{results.claims}"
            if len(self.claims) and f"<!-- findings: {label} -->" in readme.read_text():
                # read back from its CSV, as the README test reads it
                write_findings(readme, pd.read_csv(results.directory / "claims.csv"), label)


# a declared part's plan and runs: experiment name -> the experiment, -> its runs
Plan = Mapping[str, "Experiment"]
Runs = Mapping[str, list["Run"]]


class DeclaredPart(StudyPart):
    """A part that declares its named experiments and returns a core :class:`Analysis`;
    the core does the rest (run, load, describe, deviations, write, extend, views).
    ``DEVIATIONS``: the deviations from the original setup the part declares."""

    DEVIATIONS: ClassVar[Sequence[str]] = ()
    ORDER_SEED: ClassVar[int] = 2017  # the order several experiments' cells run in
    INTERLEAVED: ClassVar[bool] = True  # False: the experiments run one after another

    @abstractmethod
    def declare(self, params: Parameters) -> Plan:
        """Every experiment of the part by name, built, none run."""

    @abstractmethod
    def analyse(self, runs: Runs, params: Parameters) -> Analysis:
        """The claims, tables and figures from the runs of each named experiment."""

    def experiments(self, params: Parameters) -> Plan:
        plan = dict(self.declare(params))
        if not plan:
            raise ValueError(f"{self.results}: declares no experiment")
        return plan

    def describe(self, plan: Plan) -> str:
        return "\n".join(
            f"{name}: {len(e.cells())} runs of {e.duration_s:g} s in {e.directory} "
            f"({', '.join(e.stacks)} at {', '.join(map(str, e.users))} users)"
            for name, e in plan.items()
        )

    def deviations(self, params: Parameters, analysis: Any = None) -> Sequence[str]:
        shown = analysis.deviations if isinstance(analysis, Analysis) else ()
        return [*self.DEVIATIONS, *shown]

    def run(self, plan: Plan) -> dict[str, list[Run]]:
        """Every cell of every experiment (finished ones reused). Several experiments run
        interleaved (``ipclab.experiments.run_interleaved``: their cells in one order
        shuffled by ``ORDER_SEED``, so no experiment runs all at one time of the session),
        unless one of them lends one stack to its cells (``share_stacks``) or the part runs
        them one after another, in the order declared (``INTERLEAVED`` False)."""
        from ipclab.experiments import interleaved, run_interleaved

        experiments = list(plan.values())
        one_by_one = not self.INTERLEAVED or any(e.share_stacks for e in experiments)
        if len(experiments) == 1 or one_by_one:
            return {name: e.run() for name, e in plan.items()}
        made = run_interleaved(experiments, self.ORDER_SEED)
        name_of = {id(e): name for name, e in plan.items()}
        out: dict[str, list[Run]] = {name: [] for name in plan}
        for (e, _), r in zip(interleaved(experiments, self.ORDER_SEED), made, strict=True):
            out[name_of[id(e)]].append(r)
        return out

    def load(self, plan: Plan) -> dict[str, list[Run]]:
        from ipclab.experiments import load_runs

        return {name: load_runs(e.directory) for name, e in plan.items()}

    def write(self, analysis: Analysis, params: Parameters) -> StudyResults:
        results = self.new_results(params)
        results.deviations = list(self.deviations(params, analysis))
        analysis.write(results)
        return results

    def extended(self, plan: Plan) -> Experiment | Plan:
        """Every named experiment (cell ids ``<results>:<name>:<stack>@<users>``); a part
        whose planner extends one of them alone may return it."""
        return plan

    def views(self, analysis: Analysis) -> Mapping[str, Any]:
        return analysis.views


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
