"""Kubernetes beside docker compose (issue 33): one Shafabakhsh cell per style, on both
orchestrators, in one sitting.

Shafabakhsh measured on Azure Kubernetes Service, the suite's references on local processes
and on docker compose. This puts the same three stacks (REST, gRPC, AMQP; the same
declaration, images and business logic) on ipclab's single-node cluster
(``ipclab.kubecluster``, the ``kubernetes`` backend) and on compose, at 50 users, five
repetitions each. It is a part of the study protocol (``protocol.Orchestrators``, a section
of notebook 01): one experiment per orchestrator, their cells run by
``experiments.run_interleaved`` (each repetition's cells of both shuffled together, one
order seed), so a drift of the machine falls on both alike.

What it gives: per style and metric, the mean on each orchestrator and Kubernetes / compose
with its log-ratio interval (``ratio_table``, the runs are the unit), and whether the
orchestrator changes the comparison the study is about (``style_table``: each style over
REST on each orchestrator, and the ratio of the two, an interaction). No published claim is
about the orchestrator, so there are no verdicts here: the thesis's claims are judged on the
matrices.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ipclab import protocol, stats
from ipclab.experiments import Experiment
from ipclab.paths import from_repo
from ipclab.protocol import Table
from ipclab.runs import Run
from ipclab.stats import interval_text, log_ratio_interval
from ipclab.studies.shafabakhsh import ratios
from ipclab.studies.shafabakhsh.performance import LANGUAGE_DEVIATION
from ipclab.studies.shafabakhsh.readme import LABELS, machine_markdown, sitting_markdown
from ipclab.studies.shafabakhsh.stacks import COMPARED

BACKENDS = ("docker", "kubernetes")  # baseline, treated
FOLDER = "shafabakhsh-orchestrators-full"  # the full profile's (the committed reference)
METRICS = ("rps", "mean_ms", "stack_cpu_ms_per_request")
ORDER_SEED = 2020  # the matrices' order seed
USERS = 50


@dataclass(frozen=True)
class Profile:
    repetitions: int
    duration_s: float
    warmup_s: float


PROFILES = {
    # a first look (with the notebook's ``orchestrators`` set): 6 s a cell, 2 s of warm-up
    "quick": Profile(repetitions=3, duration_s=6.0, warmup_s=2.0),
    # the TLS and Go matrices' window: 60 s measured after 10 s of warm-up
    "full": Profile(repetitions=5, duration_s=70.0, warmup_s=10.0),
}
RATIO = ratios.ratio_column("kubernetes", "docker")
DEVIATIONS = [
    LANGUAGE_DEVIATION,
    "Shafabakhsh's clusters were three AKS clusters of three nodes each; here both "
    "orchestrators run on one 2-core VM: ipclab's single-node cluster (Kubernetes 1.34.4 "
    "built from its module sources, containerd 1.6, kube-proxy in iptables mode, no DNS: "
    "fixed ClusterIPs; docs/kubernetes.md) and docker compose (engine 20.10). The gateway "
    "is a NodePort on loopback on Kubernetes and a published port on compose.",
    "The load generator reaches the gateway differently on each: on compose through docker's "
    "userland proxy (docker-proxy, a process of the host, its CPU not the stack's), on "
    "Kubernetes through kube-proxy's iptables DNAT in the kernel. That path is part of what "
    "the orchestrator brings, so it is measured as it is.",
    "One load (50 users) and the Go and TLS matrices' window (60 s measured after 10 s of "
    "warm-up), five repetitions per style and orchestrator, both orchestrators' cells "
    "shuffled together in each repetition: 30 runs in one sitting.",
]


def profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; choose {', '.join(PROFILES)}") from None


def deviations(profile_name: str) -> list[str]:
    """The deviations: the sitting's (the full profile's), and another profile's load."""
    p = profile(profile_name)
    if p == PROFILES["full"]:
        return list(DEVIATIONS)
    return [*DEVIATIONS[:-1], (
        f"The {profile_name} profile: {p.repetitions} repetitions of {p.duration_s:g} s, the "
        f"first {p.warmup_s:g} s left out, per style and orchestrator (the sitting's: 5 of "
        "70 s, 10 s left out), both orchestrators' cells shuffled together in each repetition."
    )]  # fmt: skip


def directory(profile_name: str, root: Path) -> Path:
    """Where a profile's runs go: one folder per orchestrator below it."""
    return from_repo(root) / f"shafabakhsh-orchestrators-{profile_name}"


def experiments(profile_name: str, root: Path) -> dict[str, Experiment]:
    """The cell of each style at 50 users, on each orchestrator (its name the experiment's),
    under ``root/shafabakhsh-orchestrators-<profile>``."""
    p = profile(profile_name)
    return {
        backend: Experiment(
            name=backend,
            stacks=[s.name for s in COMPARED],
            users=[USERS],
            repetitions=p.repetitions,
            duration_s=p.duration_s,
            warmup_s=p.warmup_s,
            backend=backend,
            root=directory(profile_name, root),
            order_seed=ORDER_SEED,
            profile_name=profile_name,
        )
        for backend in BACKENDS
    }


def parameters(profile_name: str) -> dict[str, Any]:
    """What the results folder records of the sitting (``study.json``'s ``parameters``)."""
    p = profile(profile_name)
    return {
        "profile": profile_name, "orchestrators": list(BACKENDS),
        "stacks": [s.name for s in COMPARED], "users": USERS, "repetitions": p.repetitions,
        "duration_s": p.duration_s, "warmup_s": p.warmup_s, "order_seed": ORDER_SEED,
        "claims": "none: no published claim is about the orchestrator",
    }  # fmt: skip


def runs_table(runs: Mapping[str, list[Run]], warmup_s: float) -> pd.DataFrame:
    """One row per run of both orchestrators (``runs``: per orchestrator), the orchestrator
    in ``backend``, the first ``warmup_s`` of each left out."""
    parts = [
        stats.runs_table(made, warmup_s=warmup_s).assign(backend=backend)
        for backend, made in runs.items()
        if made
    ]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def style_table(runs: pd.DataFrame, metrics: Iterable[str] = METRICS) -> pd.DataFrame:
    """Per style but REST and metric: style / REST on compose and on Kubernetes, and the
    ratio of the two (an interaction; 1: the orchestrator leaves the comparison as it is)."""
    rows = []

    def sample(backend: str, style: str, metric: str) -> list[float]:
        cell = runs[(runs["backend"] == backend) & (runs["style"] == style)]
        return cell[metric].dropna().astype(float).tolist()

    for style in sorted(set(runs["style"]) - {"rest"}):
        for metric in metrics:
            row: dict[str, object] = {"style": style, "metric": metric}
            for backend in BACKENDS:
                r = log_ratio_interval(
                    [(1, [sample(backend, style, metric)]), (-1, [sample(backend, "rest", metric)])]
                )
                row |= {backend: r.estimate, f"{backend}_low": r.low, f"{backend}_high": r.high}
            docker, kube = BACKENDS
            r = log_ratio_interval(
                [
                    (1, [sample(kube, style, metric)]), (-1, [sample(kube, "rest", metric)]),
                    (-1, [sample(docker, style, metric)]), (1, [sample(docker, "rest", metric)]),
                ]
            )  # fmt: skip
            rows.append(row | {"interaction": r.estimate, "low": r.low, "high": r.high})
    return pd.DataFrame(rows)


@dataclass
class Analysis:
    runs: pd.DataFrame
    ratios: pd.DataFrame
    styles: pd.DataFrame
    machine: pd.DataFrame


def analyse(runs: Mapping[str, list[Run]], profile_name: str) -> Analysis:
    """The tables from each orchestrator's runs (``runs``: orchestrator -> its runs)."""
    table = runs_table(runs, profile(profile_name).warmup_s)
    return Analysis(
        runs=table,
        ratios=ratios.ratio_table(table, METRICS, "kubernetes", "docker", factor="backend"),
        styles=style_table(table),
        machine=stats.machine_check(table, by=("backend", "style", "users")),
    )


def declared(a: Analysis) -> protocol.Analysis:
    """The core's :class:`~ipclab.protocol.Analysis` of ``a``: its tables with their
    captions, no claims (none is about the orchestrator) and the reference README's
    blocks."""
    return protocol.Analysis(
        claims=pd.DataFrame(),
        tables=(
            Table(RATIO, a.ratios,
              "Per style at 50 users: the mean over runs on docker compose and on Kubernetes, "
              "and Kubernetes / compose with its 95% log-ratio interval (the runs are the unit; "
              "both orchestrators' cells shuffled together in each repetition, one sitting)."),
            Table("styles_by_orchestrator", a.styles,
              "Does the orchestrator change the comparison of the styles? Each style over REST "
              "on compose and on Kubernetes, and Kubernetes's over compose's (1: unchanged), 95% "
              "log-ratio intervals."),
            Table("machine_state", a.machine,
              "Was the machine comparable across each cell's repetitions, per orchestrator? "
              "Stack CPU ms per request (slowest over fastest: cost_ratio), other processes' "
              "CPU, steal."),
            Table("runs", a.runs, "Every run (per-run metrics).", in_report=False),
        ),
        readme=lambda: readme_blocks(a),
        views={"means": means_markdown(a.runs), "styles": styles_markdown(a.styles),
               "flagged": flagged_markdown(a.machine)},
    )  # fmt: skip


def means_markdown(runs: pd.DataFrame) -> str:
    """Each style's mean [95% t] on each orchestrator: req/s and mean response time."""
    lines = [
        "| style | orchestrator | runs | req/s | mean response time (ms) | failures |",
        "|---|---|---|---|---|---|",
    ]
    for style in [s for s in LABELS if s in set(runs["style"])]:
        for backend in BACKENDS:
            g = runs[(runs["style"] == style) & (runs["backend"] == backend)]
            if g.empty:
                continue
            rps, ms = (stats.t_interval(g[m].dropna().to_numpy(float)) for m in ("rps", "mean_ms"))
            req_s, mean = (
                interval_text(rps.estimate, rps.low, rps.high, ".0f"),
                interval_text(ms.estimate, ms.low, ms.high, ".1f"),
            )
            failures = int(g["failures"].sum())
            lines.append(
                f"| {LABELS[style]} | {backend} | {len(g)} | {req_s} | {mean} | {failures} |"
            )
    return "\n".join(lines)


def styles_markdown(styles: pd.DataFrame) -> str:
    lines = [
        "| style / REST | metric | compose | Kubernetes | Kubernetes's / compose's |",
        "|---|---|---|---|---|",
    ]
    for _, r in styles.iterrows():
        cells = [interval_text(r[b], r[f"{b}_low"], r[f"{b}_high"], ".3f") for b in BACKENDS]
        both = interval_text(r["interaction"], r["low"], r["high"], ".3f")
        lines.append(f"| {LABELS.get(r['style'], r['style'])} | {r['metric']} | "
                     f"{' | '.join(cells)} | {both} |")  # fmt: skip
    return "\n".join(lines)


def flagged_markdown(machine: pd.DataFrame) -> str:
    """Which styles' ratios rest on a cell the machine check flags, on either orchestrator."""
    off = machine[machine["comparable"].astype(str) == "False"]
    if off.empty:
        return "Every cell passed the machine check on both orchestrators."
    lines = [
        f"{LABELS.get(r['style'], r['style'])} on {r['backend']}: {r['why']}"
        for _, r in off.sort_values(["style", "backend"]).iterrows()
    ]
    return (
        "The machine check flags a cell behind these styles' ratios (its runs' cost per "
        "request drifted, so the ratio mixes the orchestrator with the machine's state): "
        + "; ".join(lines)
        + "."
    )


def readme_blocks(a: Analysis) -> dict[str, str]:
    """The generated blocks of the reference's README (``ipclab.findings.fill_blocks``)."""
    machine = [
        f"{backend}:\n\n" + machine_markdown(m.drop(columns="backend"), f"the {backend} runs")
        for backend, m in a.machine.groupby("backend")
    ]
    kube = int((a.runs["backend"] == "kubernetes").sum())
    return {
        "sitting": sitting_markdown(a.runs, f"{len(a.runs)} runs ({kube} on Kubernetes)"),
        "means": means_markdown(a.runs),
        "ratios": ratios.ratios_markdown(a.ratios, METRICS, RATIO)
        + "\n\n"
        + flagged_markdown(a.machine),
        "styles": styles_markdown(a.styles),
        "machine": "\n\n".join(machine),
    }
