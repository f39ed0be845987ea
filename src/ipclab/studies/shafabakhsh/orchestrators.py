"""Kubernetes beside docker compose (issue 33): one Shafabakhsh cell per style, on both
orchestrators, in one sitting.

Shafabakhsh measured on Azure Kubernetes Service, the suite's references on local processes
and on docker compose. This puts the same three stacks (REST, gRPC, AMQP; the same
declaration, images and business logic) on ipclab's single-node cluster
(``ipclab.kubecluster``, the ``kubernetes`` backend) and on compose, at 50 users, five
repetitions each. The two backends' cells are shuffled together in each repetition (one
order seed), so a drift of the machine falls on both alike.

What it gives: per style and metric, the mean on each orchestrator and Kubernetes / compose
with its log-ratio interval (``ratio_table``, the runs are the unit), and whether the
orchestrator changes the comparison the study is about (``style_table``: each style over
REST on each orchestrator, and the ratio of the two, an interaction). No published claim is
about the orchestrator, so there are no verdicts here: the thesis's claims are judged on the
matrices.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ipclab import stats
from ipclab.atomic import write_json_atomic
from ipclab.experiments import Cell, Experiment, load_runs
from ipclab.results import StudyResults
from ipclab.runs import utcnow
from ipclab.stats import log_ratio_interval
from ipclab.studies.shafabakhsh import ratios
from ipclab.studies.shafabakhsh.performance import LANGUAGE_DEVIATION
from ipclab.studies.shafabakhsh.readme import LABELS, ci, machine_markdown, sitting_markdown
from ipclab.studies.shafabakhsh.stacks import COMPARED

BACKENDS = ("docker", "kubernetes")  # baseline, treated
FOLDER = "shafabakhsh-orchestrators-full"
METRICS = ("rps", "mean_ms", "stack_cpu_ms_per_request")
ORDER_SEED = 2020  # the matrices' order seed
USERS = 50
REPETITIONS = 5
DURATION_S = 70.0  # the TLS and Go matrices' window: 60 s measured after 10 s of warm-up
WARMUP_S = 10.0
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


def experiments(root: Path) -> dict[str, Experiment]:
    """The cell of each style at 50 users, on each orchestrator, under ``root/FOLDER``."""
    return {
        backend: Experiment(
            name=backend,
            stacks=[s.name for s in COMPARED],
            users=[USERS],
            repetitions=REPETITIONS,
            duration_s=DURATION_S,
            warmup_s=WARMUP_S,
            backend=backend,
            root=root / FOLDER,
            order_seed=ORDER_SEED,
        )
        for backend in BACKENDS
    }


def schedule(exps: dict[str, Experiment], seed: int = ORDER_SEED) -> list[tuple[str, Cell]]:
    """(backend, cell) in run order: per repetition, every style on every orchestrator,
    shuffled together."""
    rng = random.Random(seed)
    out: list[tuple[str, Cell]] = []
    by_rep: dict[int, list[tuple[str, Cell]]] = {}
    for backend, e in exps.items():
        for cell in e.cells():
            by_rep.setdefault(cell.repetition, []).append((backend, cell))
    for rep in sorted(by_rep):
        block = sorted(by_rep[rep], key=lambda bc: (bc[0], bc[1].key))
        rng.shuffle(block)
        out.extend(block)
    return out


def measure(root: Path, say: Callable[[str], None] = print) -> None:
    """Run every cell not yet done (resumable: a finished run is reused)."""
    exps = experiments(root)
    for e in exps.values():
        e.directory.mkdir(parents=True, exist_ok=True)
        described = {"name": e.name, "updated_at": utcnow(), **e.describe()}
        write_json_atomic(e.directory / "experiment.json", described)
    order = schedule(exps)
    for i, (backend, cell) in enumerate(order, 1):
        exps[backend].run_cell(cell, f"[{i}/{len(order)}] {backend}", say)


def runs_table(root: Path) -> pd.DataFrame:
    """One row per run of both orchestrators, the orchestrator in ``backend``."""
    parts = [
        stats.runs_table(load_runs(e.directory), warmup_s=WARMUP_S).assign(backend=backend)
        for backend, e in experiments(root).items()
        if e.directory.is_dir()
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


def analyse(root: Path) -> Analysis:
    table = runs_table(root)
    return Analysis(
        runs=table,
        ratios=ratios.ratio_table(table, METRICS, "kubernetes", "docker", factor="backend"),
        styles=style_table(table),
        machine=stats.machine_check(table, by=("backend", "style", "users")),
    )


def write_results(a: Analysis, results: StudyResults) -> None:
    results.deviations = DEVIATIONS
    results.parameters.update(
        orchestrators=list(BACKENDS), stacks=[s.name for s in COMPARED], users=USERS,
        repetitions=REPETITIONS, duration_s=DURATION_S, warmup_s=WARMUP_S, order_seed=ORDER_SEED,
        claims="none: no published claim is about the orchestrator",
    )  # fmt: skip
    results.table(
        a.ratios,
        RATIO,
        "Per style at 50 users: the mean over runs on docker compose and on Kubernetes, and "
        "Kubernetes / compose with its 95% log-ratio interval (the runs are the unit; both "
        "orchestrators' cells shuffled together in each repetition, one sitting).",
    )
    results.table(
        a.styles,
        "styles_by_orchestrator",
        "Does the orchestrator change the comparison of the styles? Each style over REST on "
        "compose and on Kubernetes, and Kubernetes's over compose's (1: unchanged), 95% "
        "log-ratio intervals.",
    )
    results.table(
        a.machine,
        "machine_state",
        "Was the machine comparable across each cell's repetitions, per orchestrator? Stack "
        "CPU ms per request (slowest over fastest: cost_ratio), other processes' CPU, steal.",
    )
    results.table(a.runs, "runs", "Every run (per-run metrics).", in_report=False)


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
                ci(rps.estimate, rps.low, rps.high, 0),
                ci(ms.estimate, ms.low, ms.high, 1),
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
        cells = [ci(r[b], r[f"{b}_low"], r[f"{b}_high"], 3) for b in BACKENDS]
        both = ci(r["interaction"], r["low"], r["high"], 3)
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
