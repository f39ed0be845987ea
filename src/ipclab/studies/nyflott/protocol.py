"""The study protocol (``ipclab.protocol``) for notebook 03: a thin adapter over
``experiment`` (the matrix, one experiment per delay) and ``analysis``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from ipclab.experiments import Experiment, run_interleaved
from ipclab.protocol import Parameters, StudyPart
from ipclab.results import StudyResults
from ipclab.runs import Run
from ipclab.studies.nyflott import analysis, experiment


class Protocols(StudyPart):
    """Notebook 03: HTTP/1.1, h2c and CoAP under added delay."""

    # a shorter measured window and warm-up (the ramp included), other runs per cell:
    # deviations the results state
    OPTIONS = MappingProxyType({"measured_s": None, "warmup_s": None, "repetitions": None})

    def experiments(self, params: Parameters) -> list[Experiment]:
        return experiment.experiments(
            params.profile,
            params.backend,
            params.runs_root,
            measured_s=params.options["measured_s"],
            warmup_s=params.options["warmup_s"],
            repetitions=params.options["repetitions"],
        )

    def describe(self, plan: list[Experiment]) -> str:
        return "\n".join(
            f"{e.directory} - {len(e.cells())} runs: {', '.join(e.stacks)}" for e in plan
        )

    def deviations(self, params: Parameters, analysis_: Any = None) -> Sequence[str]:
        """The declared deviations and, once analysed, those the runs showed (the window)."""
        return analysis.DEVIATIONS if analysis_ is None else analysis_.deviations

    def run(self, plan: list[Experiment]) -> list[Run]:
        # every delay's runs in one interleaved random order (experiment.run_experiments)
        return run_interleaved(plan, 2017)

    def analyse(self, runs: list[Run], params: Parameters) -> analysis.Analysis:
        return analysis.analyse(runs)

    def write(self, analysis_: analysis.Analysis, params: Parameters) -> StudyResults:
        results = self.new_results(params)
        analysis.write_results(analysis_, results)
        return results

    def views(self, analysis_: analysis.Analysis) -> Mapping[str, Any]:
        return {
            "summary": analysis.summary_markdown(analysis_),
            "hosts": analysis.hosts_text(analysis_.hosts),
            "adapters": analysis.adapters_text(analysis_.adapters),
        }
