"""Buono on Kubernetes beside compose (issue 51, must-show 4): the JVM's memory and
procedure runs in pods with the 400 MB limit, and the same runs on docker compose.

Buono and Petrović ran their services on KIND, in pods limited to 400 MB; the committed
reference (``buono-full-docker``) runs them on compose with the same ``mem_limit``. Here
the JVM's runs of the full profile are made again on the kubernetes backend
(``python -m ipclab.studies.buono.remeasure --backend kubernetes``: the procedure on the
JVM, ``procedure-jvm/``, and the JVM's memory cells under each heap policy, ``memory/``,
into ``buono-full-kubernetes``), each container a pod's with the 400 MB limit (requested
as limited) and the JVM sized from it as on compose (``stacks.jvm_flags``), its memory read
from the pod's cgroup and an OOM kill from the kubelet's record (``backends.memory``).

This reads both folders and writes, into ``buono-full-kubernetes/results/``:

- ``memory_beside_compose.csv``: per memory cell (format, count, heap policy) and
  orchestrator, the runs, how many completed, were killed by the kernel (the limit) or ended
  on a full heap, and the median peaks (the cgroup's usage, the committed heap);
- ``procedure_beside_compose.csv``: per procedure cell, the mean response time on each and
  Kubernetes / compose with its log-ratio interval (the runs are the unit);
- ``verdicts_beside_compose.csv``: every claim judged on the JVM's runs of each orchestrator
  (as the reference's ``claims_jvm``) and whether the verdicts agree.

``python -m ipclab.studies.buono.orchestrators [--root data/runs/reference]``. No claim is
about the orchestrator: the verdicts are the thesis's claims read on each.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ipclab.experiments import load_runs
from ipclab.paths import from_repo
from ipclab.runs import Run
from ipclab.stats import interval_text, log_ratio_interval
from ipclab.studies.buono import analysis, experiment
from ipclab.studies.buono.stacks import BY_RUNTIME, ENCODERS

BACKENDS = ("docker", "kubernetes")  # baseline (compose), treated
PROFILE = "full"
ROOT = Path("data/runs/reference")
JVM = ENCODERS["jvm"][0]
MEMORY_KEYS = ["fmt", "structure", "count", "heap"]
PROCEDURE_KEYS = ["gzip", "cache", "structure", "method", "count", "fmt"]
FOLDER = f"buono-{PROFILE}-kubernetes"  # the JVM's runs in 400 MB pods
RESULTS = ("memory_beside_compose", "procedure_beside_compose", "verdicts_beside_compose")


def jvm_runs(backend: str, root: Path = ROOT) -> tuple[list[Run], list[Run]]:
    """The JVM's procedure and memory runs of the full profile on ``backend`` under
    ``root`` (complete runs; none where the folder is not there)."""
    e = experiment.experiments(PROFILE, backend, from_repo(root))
    stack = BY_RUNTIME["jvm"].name
    procedure = e.procedure_jvm
    proc = load_runs(procedure.directory) if procedure and procedure.directory.is_dir() else []
    mem = load_runs(e.memory_root) if e.memory_root.is_dir() else []
    return proc, [r for r in mem if r.manifest.get("stack") == stack]


def memory_beside(mem: pd.DataFrame) -> pd.DataFrame:
    """Per memory cell and orchestrator (``analysis.memory_table`` rows of both): runs,
    outcomes and median peaks (MiB)."""
    if mem.empty:
        return pd.DataFrame()
    g = mem[~mem["traced"]].groupby([*MEMORY_KEYS, "backend"], sort=True)
    out = g.agg(
        runs=("run", "size"),
        limit_mb=("limit_mb", "first"),
        completed=("completed", "sum"),
        kernel_killed=("kernel_killed", "sum"),
        heap_exhausted=("heap_exhausted", "sum"),
        peak_usage_mb=("peak_usage_mb", "median"),
        cgroup_peak_mb=("cgroup_peak_mb", "median"),
        heap_committed_mb=("heap_committed_mb", "median"),
        elapsed_s=("elapsed_s", "median"),
    ).reset_index()
    for column in ("completed", "kernel_killed", "heap_exhausted"):
        out[column] = out[column].astype(int)
    return out.round(1)


def procedure_beside(cells: pd.DataFrame) -> pd.DataFrame:
    """Per procedure cell: each orchestrator's mean of its runs' mean response times and
    Kubernetes / compose with its 95 % log-ratio interval (``analysis.cell_table`` rows of
    both, with a ``backend`` column)."""
    if cells.empty:
        return pd.DataFrame()
    rows = []
    for key, cell in cells.groupby(PROCEDURE_KEYS, sort=True):
        by = {b: cell.loc[cell["backend"] == b, "response_ms"].dropna() for b in BACKENDS}
        row = dict(zip(PROCEDURE_KEYS, key, strict=True))
        for b in BACKENDS:
            row[f"{b}_runs"] = len(by[b])
            row[f"{b}_ms"] = round(float(by[b].mean()), 3) if len(by[b]) else np.nan
        if all(len(v) for v in by.values()):
            ci = log_ratio_interval([(1, [by["kubernetes"]]), (-1, [by["docker"]])])
            row["kubernetes_over_docker"] = round(ci.estimate, 3)
            row["interval"] = interval_text(ci.estimate, ci.low, ci.high, ".3f")
        else:
            row["kubernetes_over_docker"], row["interval"] = np.nan, ""
        rows.append(row)
    return pd.DataFrame(rows)


def claims_beside(verdicts: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per claim, its verdict on each orchestrator's JVM runs and whether they agree."""
    parts = [
        v[["claim_id", "comparison", "verdict"]].rename(columns={"verdict": b})
        for b, v in verdicts.items()
        if not v.empty
    ]
    if len(parts) < len(BACKENDS):
        return pd.DataFrame()
    both = parts[0].merge(parts[1].drop(columns="comparison"), on="claim_id", how="outer")
    both["agree"] = both[BACKENDS[0]] == both[BACKENDS[1]]
    return both


def tables(root: Path = ROOT) -> dict[str, pd.DataFrame]:
    """:data:`RESULTS` from the runs of both orchestrators under ``root``."""
    mems, cells, verdicts = [], [], {}
    for backend in BACKENDS:
        proc, mem = jvm_runs(backend, root)
        m = analysis.memory_table(mem)
        c = analysis.cell_table(analysis.requests_frame(proc))
        c = c.assign(backend=backend) if not c.empty else c
        table = analysis.runs_table(c, m if not m.empty else None, JVM)
        verdicts[backend] = analysis.evaluate(table) if len(table) else pd.DataFrame()
        mems.append(m)
        cells.append(c)
    every_mem = pd.concat([m for m in mems if not m.empty] or [pd.DataFrame()])
    every_cell = pd.concat([c for c in cells if not c.empty] or [pd.DataFrame()])
    return {
        "memory_beside_compose": memory_beside(every_mem),
        "procedure_beside_compose": procedure_beside(every_cell),
        "verdicts_beside_compose": claims_beside(verdicts),
    }


def rebuild(root: Path = ROOT) -> Path:
    """Write :data:`RESULTS` into ``<root>/buono-full-kubernetes/results/``; that folder."""
    out = from_repo(root) / FOLDER / "results"
    out.mkdir(parents=True, exist_ok=True)
    for name, table in tables(root).items():
        table.to_csv(out / f"{name}.csv", index=False)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("--root", type=Path, default=ROOT)
    a = p.parse_args(argv)
    print(rebuild(a.root))
    return 0


__all__ = ["claims_beside", "memory_beside", "procedure_beside", "rebuild", "tables"]

if __name__ == "__main__":
    raise SystemExit(main())
