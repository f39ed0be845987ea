"""The study's part of the study protocol: two named cells, the shop over HTTP/1.1 and over
h2c at 10 closed-loop users, and an analysis that judges the study's two claims with
``ipclab.claims`` and returns the core's ``Analysis``; the core runs, loads, writes and
reports it (``ipclab.protocol.DeclaredPart``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from ipclab.claims import evaluate_claims
from ipclab.experiments import Experiment
from ipclab.paths import from_repo
from ipclab.protocol import Analysis, DeclaredPart, Parameters, Plan, Plot, Runs, Table
from ipclab.published import claims
from ipclab.stats import runs_table

STACKS = {"rest": "shop-rest", "h2c": "shop-h2c"}  # style -> an existing stack of ipclab
USERS = 10
CLAIMS = claims(Path(__file__).with_name("claims.csv"), styles=tuple(STACKS))
# profile -> repetitions, measured window (s), warm-up (s)
PROFILES = {"quick": (1, 6.0, 2.0), "full": (5, 60.0, 10.0)}
SHOWN = ["stack", "style", "users", "repetition", "requests", "failures", "rps", "mean_ms",
         "p95_ms"]  # fmt: skip


class H2Study(DeclaredPart):
    """The notebook h2study.ipynb: HTTP/1.1 against h2c at 10 users."""

    DEVIATIONS = (
        "No publication: the two claims are the study's own hypotheses (document = hypothesis).",
        f"Closed loop, {USERS} users, no think time; the shop's product page on one machine.",
    )

    def declare(self, params: Parameters) -> Plan:
        if params.profile not in PROFILES:
            raise ValueError(f"profile {params.profile!r}: one of {', '.join(PROFILES)}")
        repetitions, measured_s, warmup_s = PROFILES[params.profile]
        name = f"h2study-{params.profile}-{params.backend}"
        return {
            "matrix": Experiment(
                name=name,
                stacks=tuple(STACKS.values()),
                users=(USERS,),
                repetitions=repetitions,
                duration_s=measured_s + warmup_s,
                warmup_s=warmup_s,
                backend=params.backend,
                root=from_repo(params.runs_root),
            )
        }

    def analyse(self, runs: Runs, params: Parameters) -> Analysis:
        warmup_s = PROFILES[params.profile][2]
        table = runs_table(runs["matrix"], warmup_s=warmup_s)
        verdicts = evaluate_claims(table, CLAIMS, scope="performance", family="h2study")
        styles = table.groupby("style")[["rps", "mean_ms", "p95_ms"]].mean().reset_index()
        return Analysis(
            claims=verdicts,
            tables=(
                Table("runs", table[SHOWN], "One row per run: throughput and latency"),
                Table("styles", styles, f"Mean over the runs per style at {USERS} users"),
            ),
            figures=(Plot("h2study_latency", _figure(styles), "Mean latency per style"),),
            views={"summary": _summary(styles)},
        )


def _figure(styles: pd.DataFrame) -> Figure:
    fig = Figure(figsize=(4, 3))
    ax = fig.subplots()
    ax.bar(styles["style"], styles["mean_ms"])
    ax.set_ylabel("mean latency (ms)")
    ax.set_title(f"{USERS} users")
    return fig


def _summary(styles: pd.DataFrame) -> str:
    return "\n".join(
        f"- {r.style}: {r.rps:.0f} requests/s, mean {r.mean_ms:.1f} ms" for r in styles.itertuples()
    )
