"""The study protocol (``ipclab.protocol``) for notebook 03: a thin adapter over
``experiment`` (the matrix, one experiment per delay) and ``analysis``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from ipclab import claims as claims_mod
from ipclab.experiments import Experiment, load_runs, run_interleaved
from ipclab.planner import Need
from ipclab.protocol import Parameters, StudyPart
from ipclab.results import StudyResults
from ipclab.runs import Run
from ipclab.studies.nyflott import analysis, experiment, profiling, verdicts


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
        runs = run_interleaved(plan, 2017)
        if plan and self._profiles(plan):  # the profiling testbed beside the full matrix
            profiling.ensure_profile(plan[0].directory.parent / "profiling")
        return runs

    @staticmethod
    def _profiles(plan: list[Experiment]) -> bool:
        """Whether the plan's profile, as its experiments carry it (never read from a
        folder's name), makes the profiling testbed (the full profile: the quick one's
        minutes go to the matrix)."""
        named = {e.profile_name for e in plan}
        if len(named) != 1:
            raise ValueError(f"one profile per plan, not {sorted(named)}")
        return experiment.profile(named.pop()).profiling

    def analyse(self, runs: list[Run], params: Parameters) -> analysis.Analysis:
        # a committed reference keeps its per-run tables, not its request records: read
        # back for the runs that have none (ipclab.studies.nyflott.reference)
        base = experiment.directory(params.profile, params.backend, params.runs_root)
        kept = base / "results"
        return analysis.analyse(
            runs, cached=kept if kept.is_dir() else None, profiling=base / "profiling"
        )

    def fill(self, analysis_: analysis.Analysis, results: StudyResults) -> None:
        analysis.write_results(analysis_, results)

    def load(self, plan: list[Experiment]) -> list[Run]:
        return [r for e in plan for r in load_runs(e.directory)]

    def needs(self, analysis_: analysis.Analysis, params: Parameters) -> Sequence[Need]:
        runs = self.load(self.experiments(params))
        hours = claims_mod.run_hours([r.manifest for r in runs])
        rows = analysis_.runs
        primary = rows[rows["adapters"] == analysis.PRIMARY] if len(rows) else rows
        return verdicts.needs(primary, analysis_.claims, hours, self.results)

    def extended(self, plan: list[Experiment]) -> dict[str, Experiment]:
        return {e.name: e for e in plan}

    def views(self, analysis_: analysis.Analysis) -> Mapping[str, Any]:
        return {
            "summary": analysis.summary_markdown(analysis_),
            "hosts": analysis.hosts_text(analysis_.hosts),
            "adapters": analysis.adapters_text(analysis_.adapters),
        }
