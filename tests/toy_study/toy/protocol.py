"""The toy study's part of the study protocol, with its analysis: does throughput grow
from 1 to 4 closed-loop users? One claim, judged by ``ipclab.claims``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ipclab.claims import evaluate_claims
from ipclab.experiments import Experiment
from ipclab.paths import from_repo
from ipclab.protocol import Parameters, StudyPart
from ipclab.published import Claim
from ipclab.results import StudyResults
from ipclab.runs import Run
from ipclab.stats import runs_table

from . import STACK  # the study's own folder, wherever it is

WARMUP_S = 2.0
CLAIM = Claim(
    claim_id="T01",
    statement_id="T01",
    document="paper",
    section="1",
    page="1",
    quote="More users serve more pages.",
    scope="performance",
    metric="rps",
    test="direction",
    relation=">",
    a_style="rest",
    a_users=(4,),
    b_style="rest",
    b_users=(1,),
    from_users=None,
    to_users=None,
    published_value="",
    published_unit="",
    table_value="",
    published_ratio=None,
    band_low=None,
    band_high=None,
    note="a toy claim",
)


@dataclass
class Analysis:
    runs: pd.DataFrame  # one row per run
    claims: pd.DataFrame


class Toy(StudyPart):
    def experiments(self, params: Parameters) -> Experiment:
        return Experiment(
            name=f"toy-{params.profile}-{params.backend}",
            stacks=(STACK.name,),
            users=(1, 4),
            duration_s=6.0 + WARMUP_S,
            warmup_s=WARMUP_S,
            backend=params.backend,
            root=from_repo(params.runs_root),
        )

    def describe(self, plan: Experiment) -> str:
        return f"{plan.directory}: {len(plan.cells())} runs of {plan.duration_s:g} s"

    def deviations(self, params: Parameters, analysis: Any = None) -> Sequence[str]:
        return ["A toy: no published setup to deviate from; 6 s windows, one repetition."]

    def run(self, plan: Experiment) -> list[Run]:
        return plan.run()

    def analyse(self, runs: list[Run], params: Parameters) -> Analysis:
        table = runs_table(runs, warmup_s=WARMUP_S)
        claims = evaluate_claims(table, [CLAIM], scope="performance", family="toy")
        return Analysis(table, claims)

    def write(self, analysis: Analysis, params: Parameters) -> StudyResults:
        results = self.new_results(params)
        results.deviations = list(self.deviations(params))
        shown = ["stack", "style", "users", "requests", "rps", "mean_ms", "p95_ms"]
        results.table(analysis.runs[shown], "runs", "One row per run: throughput and latency")
        results.claims_table(analysis.claims)
        return results
