"""The study protocol (``ipclab.protocol``) for notebooks 01, 02, 06, 07 and 08 and notebook
01's orchestrators section. Performance, languages, TLS, runtimes and orchestrators are
declared parts (``DeclaredPart``: their named experiments in, the core's ``Analysis`` of
``performance.declared``, ``languages.declared``, ``encryption.declared``,
``runtimes.declared`` and ``orchestrators.declared`` out); availability, whose plan is not
an ``Experiment`` (its methods' own runner), is an adapter over ``availability``'s
functions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import pandas as pd

from ipclab.experiments import Cell, Experiment, load_runs
from ipclab.planner import Need
from ipclab.protocol import Analysis, DeclaredPart, Parameters, Plan, Runs, StudyPart
from ipclab.results import StudyResults
from ipclab.runs import Run
from ipclab.studies.shafabakhsh import (
    availability,
    encryption,
    languages,
    orchestrators,
    performance,
    runtimes,
)


class Performance(DeclaredPart):
    """Notebook 01: the performance matrix and the think-time sensitivity run, one after
    the other."""

    DEVIATIONS = tuple(performance.DEVIATIONS)
    INTERLEAVED = False

    def declare(self, params: Parameters) -> Plan:
        matrix, think = performance.experiments(params.profile, params.backend, params.runs_root)
        return {"matrix": matrix, "think": think}

    def analyse(self, runs: Runs, params: Parameters) -> Analysis:
        a = performance.analyse(runs["matrix"], runs["think"], params.profile)
        return performance.declared(a, runs["matrix"])

    def needs(self, analysis: Analysis, params: Parameters) -> Sequence[Need]:
        matrix = load_runs(self.experiments(params)["matrix"].directory)
        return performance.needs(analysis.claims, analysis["runs"], matrix, self.results)

    def extended(self, plan: Plan) -> Experiment:
        return plan["matrix"]  # cell ids <results>:<stack>@<users>


@dataclass(frozen=True)
class AvailabilityAnalysis:
    """Notebook 02's analysis: the availability tables and the runs its writer reads beside
    them (the outage timeline is drawn from the outage runs' requests)."""

    analysis: availability.Analysis
    runs: availability.AvailabilityRuns

    @property
    def claims(self) -> pd.DataFrame:
        return self.analysis.claims


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
        return availability.deviations(params.backend)

    def run(self, plan: availability.AvailabilityExperiment) -> availability.AvailabilityRuns:
        return plan.run()

    def analyse(
        self, runs: availability.AvailabilityRuns, params: Parameters
    ) -> AvailabilityAnalysis:
        return AvailabilityAnalysis(availability.analyse(runs, params.profile), runs)

    def fill(self, analysis: AvailabilityAnalysis, results: StudyResults) -> None:
        availability.write_results(analysis.analysis, analysis.runs, results)

    def views(self, analysis: AvailabilityAnalysis) -> Mapping[str, Any]:
        return {
            "fault_injection": availability.readable(analysis.analysis.fault_injection),
            "until_failure": availability.readable(analysis.analysis.until_failure),
        }


class Languages(DeclaredPart):
    """Notebook 06: the performance matrix again on the Go stacks: notebook 01's matrix (its
    finished cells reused), the Go matrix and (full profile) the Python stacks in the Go
    sitting, one after another."""

    DEVIATIONS = tuple(languages.DEVIATIONS)
    INTERLEAVED = False

    def declare(self, params: Parameters) -> Plan:
        where = (params.profile, params.backend, params.runs_root)
        anchor = languages.anchor(*where)
        return {
            "python": performance.experiments(*where)[0],
            "go": languages.experiment(*where),
            **({"anchor": anchor} if anchor else {}),
        }

    def analyse(self, runs: Runs, params: Parameters) -> Analysis:
        a = languages.analyse(runs["python"], runs["go"], runs.get("anchor", []), params.profile)
        return languages.declared(a)


class Encryption(DeclaredPart):
    """Notebook 07: the performance matrix in the clear, with TLS on every hop and at the
    edge only; option ``runtime``: whose stacks (``python``; ``node``: plain and the edge)."""

    DEVIATIONS = tuple(encryption.DEVIATIONS)
    OPTIONS = MappingProxyType({"runtime": "python"})

    def declare(self, params: Parameters) -> Plan:
        where = (params.profile, params.backend, params.runs_root)
        return {"matrix": encryption.experiment(*where, runtime=params.options["runtime"])}

    def analyse(self, runs: Runs, params: Parameters) -> Analysis:
        return encryption.declared(encryption.analyse(runs["matrix"], params.profile))


class Runtimes(DeclaredPart):
    """Notebook 08: the matrix on the Node.js stacks (the thesis's runtime) beside the
    Python matrix (notebook 01's) and the Go matrix (notebook 06's), their finished cells
    reused, and (full profile) the Python and Go stacks once per cell in the Node.js
    sitting, interleaved with it; the thesis's claims judged per runtime."""

    DEVIATIONS = tuple(runtimes.DEVIATIONS)

    def declare(self, params: Parameters) -> Plan:
        where = (params.profile, params.backend, params.runs_root)
        anchor = runtimes.anchor(*where)
        return {
            "python": performance.experiments(*where)[0],
            "go": languages.experiment(*where),
            "node": runtimes.experiment(*where),
            **({"anchor": anchor} if anchor else {}),
        }

    #: the matrices notebooks 01 and 06 own: read where every cell has a run (whatever code
    #: made it: a committed reference is never remade here), else made
    REUSED = ("python", "go")

    def pending(self, plan: Plan) -> dict[str, list[Cell]]:
        """Per experiment, the cells ``run`` would make."""
        return {name: e.pending(current_only=name not in self.REUSED) for name, e in plan.items()}

    def run(self, plan: Plan) -> dict[str, list[Run]]:
        """The Python and Go matrices read (made only where a cell has no run at all: a
        fresh folder), then the Node.js matrix and the anchors, interleaved."""
        out = {}
        for name in self.REUSED:
            e = plan[name]
            out[name] = e.run() if e.pending(current_only=False) else load_runs(e.directory)
        own = {name: e for name, e in plan.items() if name not in self.REUSED}
        return {**out, **super().run(own)}

    def analyse(self, runs: Runs, params: Parameters) -> Analysis:
        a = runtimes.analyse(runs["python"], runs["go"], runs["node"], runs.get("anchor", []),
                             params.profile)  # fmt: skip
        return runtimes.declared(a)


class Orchestrators(DeclaredPart):
    """Notebook 01's section on Kubernetes beside docker compose (issue 33): one cell per
    style at 50 users on each orchestrator (an experiment each, named by its backend: the
    notebook's ``backend`` is not used), their cells interleaved (``run_interleaved``)."""

    ORDER_SEED = orchestrators.ORDER_SEED

    def declare(self, params: Parameters) -> Plan:
        return orchestrators.experiments(params.profile, params.runs_root)

    def deviations(self, params: Parameters, analysis: Any = None) -> Sequence[str]:
        return orchestrators.deviations(params.profile)

    def analyse(self, runs: Runs, params: Parameters) -> Analysis:
        return orchestrators.declared(orchestrators.analyse(runs, params.profile))

    def new_results(self, params: Parameters) -> StudyResults:
        """The results folder, recording the sitting's design (both orchestrators) rather
        than one backend."""
        results = super().new_results(params)
        results.parameters = orchestrators.parameters(params.profile)
        return results
