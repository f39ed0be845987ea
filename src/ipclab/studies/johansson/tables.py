"""Johansson's per-run tables: one row per run (and interface, for the interleaved group
runs) from its request records, resource samples and summary, the request series the
thesis's Figs. 7.1, 7.3 and 7.5 plot, and the machine check over every experiment.

A run's size is its ``IPCLAB_BUNDLE_ROWS`` option (rows per table) and whether the
gateways called the services sequentially (``_run_rows``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ipclab import stats
from ipclab.paths import repo_relative
from ipclab.runs import Run
from ipclab.stacks import resolve
from ipclab.studies.johansson.experiment import ROWS_ENV, STYLES
from ipclab.studies.johansson.schedule import WARMUP


def _run_rows(run: Run) -> tuple[int, bool]:
    """Rows per table and whether the gateways called the services sequentially."""
    opts = run.parameters.get("options") or {}
    rows = (opts.get("extra_env") or {}).get(ROWS_ENV)
    if rows is None:
        raise ValueError(f"{run.path}: no {ROWS_ENV} in its options; not a bundle run")
    return int(rows), bool(opts.get("sequential", False))


def _cpu_seconds(res: pd.DataFrame, components: Sequence[str]) -> float:
    """CPU seconds used by ``components`` over a run, from its samples: each row's CPU % is
    the mean since the previous sample of its component, so it weighs by that interval (the
    first row of a component by the usual 1 s step)."""
    if res.empty:
        return float("nan")
    sel = res[res["component"].isin(components)].dropna(subset=["cpu_percent"])
    if sel.empty:
        return float("nan")
    total = 0.0
    for _, g in sel.groupby("component"):
        t = g["t"].to_numpy(dtype=float)
        order = np.argsort(t, kind="stable")
        dt = np.diff(t[order], prepend=t[order][0] - 1.0)
        total += float((g["cpu_percent"].to_numpy(dtype=float)[order] * dt).sum()) / 100.0
    return total


def _latency_row(lat: np.ndarray) -> dict[str, float]:
    if not len(lat):
        return dict.fromkeys(("mean_ms", "p50_ms", "p95_ms", "min_ms", "max_ms", "sd_ms"), np.nan)
    return {
        "mean_ms": float(lat.mean()),
        "p50_ms": float(np.percentile(lat, 50)),
        "p95_ms": float(np.percentile(lat, 95)),
        "min_ms": float(lat.min()),
        "max_ms": float(lat.max()),
        "sd_ms": float(lat.std(ddof=1)) if len(lat) > 1 else np.nan,
    }


def style_runs(runs: Sequence[Run]) -> pd.DataFrame:
    """One row per group run and interface (the thesis and sweep experiments): its measured
    requests' client time (mean, p50, p95, min, max), the gateway's own time
    (``server_ms``), what lies outside it (``outside_ms``: HTTP, client, loopback), body
    bytes, and CPU per request of the gateway and of the whole stack (gateway, services,
    database; warm-up included, as the CPU is). ``users`` repeats ``rows`` for the claims
    machinery (its users columns hold sizes in this study)."""
    out = []
    for run in runs:
        if not run.complete:
            continue
        rows, sequential = _run_rows(run)
        req = run.requests()
        res = run.resources()
        params = run.parameters
        for stack in (params.get("group") or {}).get("stacks", []):
            style = resolve(stack).style
            sel = req[req["name"] == style]
            sent = int((req["name"] == style).sum() + (req["name"] == WARMUP + style).sum())
            lat = sel["latency_ms"].to_numpy(dtype=float)
            server = pd.to_numeric(sel.get("server_ms"), errors="coerce").to_numpy(dtype=float)
            comps = [] if res.empty else [c for c in res["component"].unique()
                                          if str(c).startswith(f"{stack}/")]  # fmt: skip
            gw = _cpu_seconds(res, [f"{stack}/gateway"])
            total = _cpu_seconds(res, comps)
            out.append(
                {
                    "run": run.path.name,
                    "experiment": params.get("experiment"),
                    "repetition": params.get("repetition"),
                    "variant": params.get("variant"),
                    "started_at": run.manifest.get("started_at"),
                    "rows": rows,
                    "users": rows,
                    "sequential": sequential,
                    "pause_s": float(params["profile"]["think_time_s"]),
                    "style": style,
                    "requests": len(sel),
                    "failures": int((~sel["ok"].astype(bool)).sum()),
                    **_latency_row(lat),
                    "server_ms": float(np.nanmean(server)) if np.isfinite(server).any()
                    else np.nan,
                    "server_p95_ms": float(np.nanpercentile(server, 95))
                    if np.isfinite(server).any() else np.nan,
                    "outside_ms": float(np.nanmean(lat - server)) if np.isfinite(server).any()
                    else np.nan,
                    "bytes": float(sel["bytes"].mean()) if len(sel) else np.nan,
                    "gateway_cpu_ms": 1000 * gw / sent if sent else np.nan,
                    "stack_cpu_ms": 1000 * total / sent if sent else np.nan,
                    # the machine while the run ran (both stacks share it): ipclab.summary
                    "other_cpu_percent": run.summary.get("other_cpu_percent", np.nan),
                    "steal_percent": run.summary.get("steal_percent", np.nan),
                }
            )  # fmt: skip
    return pd.DataFrame(out)


def machine_state(
    thesis: pd.DataFrame, sweep: pd.DataFrame, saturation: pd.DataFrame
) -> pd.DataFrame:
    """``stats.machine_check`` per cell of every experiment (column ``experiment``): how
    much a request cost across a cell's repetitions, and what else the machine ran."""
    parts = []
    for name, df, by in (
        ("thesis", thesis, ("style", "rows")),
        ("sweep", sweep, ("style", "rows", "sequential")),
        ("saturation", saturation, ("style", "rows", "users")),
    ):
        if len(df):
            m = stats.machine_check(
                df.rename(columns={"stack_cpu_ms": "stack_cpu_ms_per_request"}), by=by
            )
            parts.append(m.assign(experiment=name))
    if not parts:
        return pd.DataFrame()
    out = pd.concat(parts, ignore_index=True)
    return out[["experiment", *[c for c in out.columns if c != "experiment"]]]


def request_series(runs: Sequence[Run], rows: int, sequential: bool = False) -> pd.DataFrame:
    """The measured requests of every run at ``rows``: ``repetition, style, seq`` (1..n
    per interface, in sending order), ``latency_ms, server_ms, bytes`` (thesis Figs. 7.1,
    7.3, 7.5 plot such a series)."""
    parts = []
    for run in runs:
        if not run.complete or _run_rows(run) != (rows, sequential):
            continue
        req = run.requests().sort_values("t", kind="stable")
        req = req[req["name"].isin(STYLES)].copy()
        req["style"] = req["name"]
        req["seq"] = req.groupby("style").cumcount() + 1
        req["repetition"] = run.parameters.get("repetition")
        parts.append(req[["repetition", "style", "seq", "latency_ms", "server_ms", "bytes"]])
    if not parts:
        return pd.DataFrame(
            columns=["repetition", "style", "seq", "latency_ms", "server_ms", "bytes"]
        )
    return pd.concat(parts, ignore_index=True)


def saturation_runs(runs: Sequence[Run], warmup_s: float) -> pd.DataFrame:
    """One row per saturation run (:func:`ipclab.stats.runs_table`) with ``rows`` and the
    gateway's CPU per request (``gateway_cpu_ms``) beside the whole stack's."""
    done = [r for r in runs if r.complete]
    table = stats.runs_table(done, warmup_s=warmup_s)
    if table.empty:
        return table
    by_path = {repo_relative(r.path): r for r in done}
    rows, gw = [], []
    for _, r in table.iterrows():
        run = by_path[r["path"]]
        rows.append(_run_rows(run)[0])
        cpu = (run.summary.get("cpu_percent_mean") or {}).get("gateway")
        gw.append(10.0 * cpu / r["rps"] if cpu is not None and r["rps"] else np.nan)
    table.insert(table.columns.get_loc("users") + 1, "rows", rows)
    table["gateway_cpu_ms"] = gw
    table = table.rename(columns={"stack_cpu_ms_per_request": "stack_cpu_ms"})
    return table
