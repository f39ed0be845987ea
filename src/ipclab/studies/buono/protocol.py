"""The study protocol (``ipclab.protocol``) for notebook 05: a thin adapter over
``experiment`` (the procedure, memory and throughput experiments, end to end)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ipclab.experiments import Experiment, load_runs
from ipclab.planner import Need
from ipclab.protocol import Parameters, StudyPart
from ipclab.results import StudyResults
from ipclab.studies.buono import evolution, experiment, planning, published, sizes


class Protobuf(StudyPart):
    """Notebook 05: JSON against Protocol Buffers between two services."""

    def experiments(self, params: Parameters) -> experiment.Experiments:
        return experiment.experiments(params.profile, params.backend, params.runs_root)

    def describe(self, plan: experiment.Experiments) -> str:
        e = plan.procedure
        return (
            f"{e.directory} - {len(e.cells())} procedure runs of {e.group.requests} requests"
            f" each\n{plan.memory_root} - {len(plan.memory_plan.cells())} memory runs"
        )

    def deviations(self, params: Parameters, analysis: Any = None) -> Sequence[str]:
        return experiment.DEVIATIONS

    def run(self, plan: experiment.Experiments) -> experiment.Runs:
        return experiment.run(plan)  # procedure, memory, throughput

    def analyse(self, runs: experiment.Runs, params: Parameters) -> experiment.Analysis:
        return experiment.analyse(*runs)

    def fill(self, analysis: experiment.Analysis, results: StudyResults) -> None:
        experiment.write_results(analysis, results)

    def load(self, plan: experiment.Experiments) -> experiment.Runs:
        return experiment.load(plan)

    def needs(self, analysis: experiment.Analysis, params: Parameters) -> Sequence[Need]:
        plan = self.experiments(params)
        group = "+".join(plan.procedure.stacks)
        return planning.needs(analysis, load_runs(plan.procedure.directory), self.results, group)

    def extended(self, plan: experiment.Experiments) -> Experiment:
        return plan.procedure

    def views(self, analysis: experiment.Analysis) -> Mapping[str, Any]:
        return {
            "summary": experiment.summary_markdown(analysis),
            # the thesis's own numbers, checked against each other
            "printed_checks": published.printed_checks(),
            # sizes without a network, for more counts
            "sizes": sizes.size_table((5, 50, 650)).drop(columns="thesis"),
            "evolution": evolution.render(),
        }
