"""The study protocol (``ipclab.protocol``) for notebooks 01, 02, 06 and 07: thin adapters
over ``performance``, ``availability``, ``languages`` and ``encryption``, which keep their
own functions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ipclab.experiments import Experiment, load_runs
from ipclab.planner import Need
from ipclab.protocol import Analysed, Analysis, DeclaredPart, Parameters, Plan, Runs, StudyPart
from ipclab.results import StudyResults
from ipclab.runs import Run
from ipclab.studies.shafabakhsh import availability, encryption, languages, performance


class Performance(StudyPart):
    """Notebook 01: the performance matrix and the think-time sensitivity run."""

    def experiments(self, params: Parameters) -> tuple[Experiment, Experiment]:
        return performance.experiments(params.profile, params.backend, params.runs_root)

    def describe(self, plan: tuple[Experiment, Experiment]) -> dict[str, Any]:
        return plan[0].describe()

    def deviations(self, params: Parameters, analysis: Any = None) -> Sequence[str]:
        return performance.DEVIATIONS

    def run(self, plan: tuple[Experiment, Experiment]) -> tuple[list[Run], list[Run]]:
        return plan[0].run(), plan[1].run()

    def analyse(self, runs: tuple[list[Run], list[Run]], params: Parameters) -> Analysed:
        perf_runs, think_runs = runs
        return Analysed(performance.analyse(perf_runs, think_runs, params.profile), runs=perf_runs)

    def fill(self, analysis: Analysed, results: StudyResults) -> None:
        performance.write_results(analysis.analysis, analysis.extra["runs"], results)

    def load(self, plan: tuple[Experiment, Experiment]) -> tuple[list[Run], list[Run]]:
        return load_runs(plan[0].directory), load_runs(plan[1].directory)

    def needs(self, analysis: Analysed, params: Parameters) -> Sequence[Need]:
        return performance.needs(analysis.analysis, analysis.extra["runs"], self.results)

    def extended(self, plan: tuple[Experiment, Experiment]) -> Experiment:
        return plan[0]


class Availability(StudyPart):
    """Notebook 02: the outage experiment, fault injection and method 1, per style."""

    # the notebook's order: the outage first, method 1 (which restarts everything) last
    OPTIONS = MappingProxyType({"methods": ("outage", "fault_injection", "until_failure")})

    def experiments(self, params: Parameters) -> availability.AvailabilityExperiment:
        methods = tuple(params.options["methods"])
        return availability.experiments(params.profile, params.backend, params.runs_root, methods)

    def describe(self, plan: availability.AvailabilityExperiment) -> str:
        criteria = plan.profile.common.criteria.as_dict()
        return f"Runs go to `{plan.directory}`; criteria: `{criteria}`"

    def deviations(self, params: Parameters, analysis: Any = None) -> Sequence[str]:
        return availability.DEVIATIONS

    def run(self, plan: availability.AvailabilityExperiment) -> availability.AvailabilityRuns:
        return plan.run()

    def analyse(self, runs: availability.AvailabilityRuns, params: Parameters) -> Analysed:
        return Analysed(availability.analyse(runs, params.profile), runs=runs)

    def fill(self, analysis: Analysed, results: StudyResults) -> None:
        availability.write_results(analysis.analysis, analysis.extra["runs"], results)

    def views(self, analysis: Analysed) -> Mapping[str, Any]:
        return {
            "fault_injection": availability.readable(analysis.fault_injection),
            "until_failure": availability.readable(analysis.until_failure),
        }


@dataclass(frozen=True)
class LanguagesPlan:
    python: Experiment  # notebook 01's matrix (its finished cells reused)
    go: Experiment
    anchor: Experiment | None  # the Python stacks in the Go sitting (full profile)


class Languages(StudyPart):
    """Notebook 06: the performance matrix again on the Go stacks."""

    def experiments(self, params: Parameters) -> LanguagesPlan:
        where = (params.profile, params.backend, params.runs_root)
        return LanguagesPlan(
            performance.experiments(*where)[0],
            languages.experiment(*where),
            languages.anchor(*where),
        )

    def describe(self, plan: LanguagesPlan) -> dict[str, Any]:
        return plan.go.describe()

    def deviations(self, params: Parameters, analysis: Any = None) -> Sequence[str]:
        return languages.DEVIATIONS

    def run(self, plan: LanguagesPlan) -> tuple[list[Run], list[Run], list[Run]]:
        python_runs = plan.python.run()
        go_runs = plan.go.run()
        return python_runs, go_runs, plan.anchor.run() if plan.anchor else []

    def analyse(
        self, runs: tuple[list[Run], list[Run], list[Run]], params: Parameters
    ) -> languages.Analysis:
        return languages.analyse(*runs, params.profile)

    def fill(self, analysis: languages.Analysis, results: StudyResults) -> None:
        languages.write_results(analysis, results)

    def views(self, analysis: languages.Analysis) -> Mapping[str, Any]:
        return {"tables": languages.markdown_tables(analysis)}


class Encryption(DeclaredPart):
    """Notebook 07: the performance matrix in the clear and with TLS on every hop."""

    DEVIATIONS = tuple(encryption.DEVIATIONS)

    def declare(self, params: Parameters) -> Plan:
        return {"matrix": encryption.experiment(params.profile, params.backend, params.runs_root)}

    def analyse(self, runs: Runs, params: Parameters) -> Analysis:
        return encryption.declared(encryption.analyse(runs["matrix"], params.profile))
