"""The study protocol (``ipclab.protocol``) for notebook 04: an adapter over ``experiment``
(the three experiments and the serialisation micro-benchmark, which is no ``Experiment``:
measured afresh by ``run``, read back from the reference's results by ``load``, so the part
keeps its own plan and runs) whose ``analyse`` returns the core's ``Analysis``
(``analysis.declared``), written and shown by the core."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ipclab import claims as claims_mod
from ipclab.experiments import Experiment, load_runs
from ipclab.planner import Need
from ipclab.protocol import Analysis, Parameters, StudyPart
from ipclab.results import StudyResults
from ipclab.runs import Run
from ipclab.studies.johansson import analysis, experiment, verdicts


@dataclass(frozen=True)
class Plan:
    experiments: experiment.Experiments
    profile: str  # the serialisation micro-benchmark's rounds come from it


@dataclass(frozen=True)
class Runs:
    runs: dict[str, list[Run]]  # experiment name -> its runs
    serialisation: pd.DataFrame  # per process, round, format and size


class Graphql(StudyPart):
    """Notebook 04: a REST gateway against a GraphQL gateway."""

    def experiments(self, params: Parameters) -> Plan:
        built = experiment.experiments(params.profile, params.backend, params.runs_root)
        return Plan(built, params.profile)

    def describe(self, plan: Plan) -> str:
        return "\n".join(
            f"{e.name} {e.describe()['repetitions']} repetition(s), {len(e.cells())} runs"
            for e in plan.experiments.all()
        )

    def deviations(self, params: Parameters, analysis_: Any = None) -> Sequence[str]:
        return experiment.DEVIATIONS

    def run(self, plan: Plan) -> Runs:
        runs = {e.name: e.run() for e in plan.experiments.all()}
        # in fresh processes, each one replicate of interleaved rounds
        return Runs(runs, experiment.measure_serialisation(plan.profile))

    def analyse(self, runs: Runs, params: Parameters) -> Analysis:
        return analysis.declared(analysis.analyse(runs.runs, params.profile, runs.serialisation))

    def fill(self, analysis_: Analysis, results: StudyResults) -> None:
        results.deviations = list(experiment.DEVIATIONS)
        analysis_.write(results)

    def load(self, plan: Plan) -> Runs:
        """The experiments' runs on disk; the serialisation processes' rounds as the
        reference keeps them (its results' table), measured again only by ``run``."""
        runs = {e.name: load_runs(e.directory) for e in plan.experiments.all()}
        kept = plan.experiments.thesis.directory.parent / "results" / "serialisation_rounds.csv"
        return Runs(runs, pd.read_csv(kept) if kept.exists() else pd.DataFrame())

    def needs(self, analysis_: Analysis, params: Parameters) -> Sequence[Need]:
        if not any(t.name == "thesis_runs" for t in analysis_.tables):
            return []  # no thesis runs to size a test's runs from
        thesis = self.experiments(params).experiments.thesis
        hours = claims_mod.run_hours([r.manifest for r in load_runs(thesis.directory)])
        group = "+".join(thesis.stacks)
        return verdicts.needs(
            analysis_["thesis_runs"], analysis_.claims, hours, self.results, group
        )

    def extended(self, plan: Plan) -> Experiment:
        return plan.experiments.thesis

    def views(self, analysis_: Analysis) -> Mapping[str, Any]:
        return analysis_.views
