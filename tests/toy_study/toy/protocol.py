"""The toy study's part of the study protocol, with its analysis: does throughput grow
from 1 to 4 closed-loop users? One claim, judged by ``ipclab.claims``; the core runs,
writes and reports it (``ipclab.protocol.DeclaredPart``)."""

from __future__ import annotations

from ipclab.claims import evaluate_claims
from ipclab.experiments import Experiment
from ipclab.paths import from_repo
from ipclab.protocol import Analysis, DeclaredPart, Parameters, Plan, Runs, Table
from ipclab.published import claim
from ipclab.stats import runs_table

from . import STACK  # the study's own folder, wherever it is

WARMUP_S = 2.0
CLAIM = claim(
    claim_id="T01", statement_id="T01", document="paper", section="1", page="1",
    quote="More users serve more pages.", scope="performance", metric="rps", test="direction",
    relation=">", a_style="rest", a_users=(4,), b_style="rest", b_users=(1,), note="a toy claim",
)  # fmt: skip
SHOWN = ["stack", "style", "users", "requests", "rps", "mean_ms", "p95_ms"]


class Toy(DeclaredPart):
    DEVIATIONS = ("A toy: no published setup to deviate from; 6 s windows, one repetition.",)

    def declare(self, params: Parameters) -> Plan:
        return {
            "loads": Experiment(
                name=f"toy-{params.profile}-{params.backend}",
                stacks=(STACK.name,),
                users=(1, 4),
                duration_s=6.0 + WARMUP_S,
                warmup_s=WARMUP_S,
                backend=params.backend,
                root=from_repo(params.runs_root),
            )
        }

    def analyse(self, runs: Runs, params: Parameters) -> Analysis:
        table = runs_table(runs["loads"], warmup_s=WARMUP_S)
        claims = evaluate_claims(table, [CLAIM], scope="performance", family="toy")
        return Analysis(claims, tables=(Table("runs", table[SHOWN], "One row per run: "
                                              "throughput and latency"),))  # fmt: skip
