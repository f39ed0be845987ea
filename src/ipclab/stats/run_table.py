"""The per-run table: one row per run directory (what it was, and its throughput and
latency over the analysed window), the input of every other table of :mod:`ipclab.stats`.

The unit of replication is the run (docs/statistics.md, section 1): later tables summarise
these rows, never the requests of one run."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from ipclab.paths import repo_relative
from ipclab.runs import Run
from ipclab.stats.run_parameters import parse_seconds, parse_think_time


def _style_of(stack: str | None) -> str | None:
    if not stack:
        return None
    try:
        from ipclab.stacks import resolve

        return resolve(stack).style
    except Exception:  # unknown stack: fall back to the name's last part
        return stack.rsplit("-", 1)[-1]


_THINK_KEYS = ("think_time_s", "think_time", "wait_time", "wait")

_REP_KEYS = ("repetition", "rep", "repeat", "replicate")

#: summary.json's machine state of a run (see ipclab.summary.machine_load)
MACHINE_COLUMNS = ("stack_cpu_ms_per_request", "other_cpu_percent", "steal_percent")


def run_metrics(
    run: Run, warmup_s: float = 0.0, cooldown_s: float = 0.0, latency_of: str = "all"
) -> dict[str, Any]:
    """One run's row of :func:`runs_table`.

    The analysed window is ``[first request + warmup_s, end of last request - cooldown_s]``;
    requests are counted by their start time. ``latency_of`` is ``"all"`` (as Locust and
    JMeter report, failures included) or ``"ok"``. Without request records the summary's
    numbers are used and the warm-up cannot be discarded (``source == "summary"``).
    """
    if latency_of not in ("all", "ok"):
        raise ValueError("latency_of must be 'all' or 'ok'")
    row = _run_identity(run)
    row.update(warmup_s=float(warmup_s), cooldown_s=float(cooldown_s))
    summary = run.summary
    row["loadgen_saturated"] = summary.get("loadgen_saturated")
    for key in MACHINE_COLUMNS:  # runs written before these existed give None
        row[key] = summary.get(key)
    req = run.requests()
    if len(req):
        row.update(_window_metrics(run, req, warmup_s, cooldown_s, latency_of))
    else:
        row.update(_summary_metrics(summary, run.parameters))
    reqs, fails = row.get("requests"), row.get("failures")
    row["failure_rate"] = fails / reqs if reqs and fails is not None else np.nan
    return row


def _run_identity(run: Run) -> dict[str, Any]:
    """What a run was: its stack, style, load, think time, repetition, variant."""
    params = run.parameters
    man = run.manifest
    stack = man.get("stack") or params.get("stack")
    think_raw = next((params[k] for k in _THINK_KEYS if k in params), None)
    rep = next((params[k] for k in _REP_KEYS if k in params), None)
    users = params.get("users", params.get("num_users"))
    return {
        "run": run.path.name,
        "path": repo_relative(run.path),
        "status": run.status,
        "stack": stack,
        "style": params.get("style") or _style_of(stack),
        "users": int(users) if users is not None else None,
        "spawn_rate": params.get("spawn_rate"),
        "think_time_s": parse_think_time(think_raw),
        "repetition": int(rep) if rep is not None else None,
        "variant": params.get("variant"),
        "experiment": params.get("experiment"),
        "started_at": man.get("started_at"),
    }


def _window_metrics(
    run: Run, req: pd.DataFrame, warmup_s: float, cooldown_s: float, latency_of: str
) -> dict[str, Any]:
    """Throughput and latency over the analysed window, from the per-request records."""
    t = req["t"].astype(float).to_numpy()
    lat = req["latency_ms"].astype(float).to_numpy()
    ok = req["ok"].astype(bool).to_numpy()
    start = float(t.min()) + warmup_s
    end = float(np.max(t + lat / 1000.0)) - cooldown_s
    if end <= start:
        raise ValueError(
            f"{run.path}: warm-up {warmup_s} s + cool-down {cooldown_s} s leave no window "
            f"(run spans {float(np.max(t + lat / 1000.0) - t.min()):.1f} s)"
        )
    keep = (t >= start) & (t <= end)
    lat_w, ok_w = lat[keep], ok[keep]
    sel = lat_w if latency_of == "all" else lat_w[ok_w]
    n = int(keep.sum())
    window = end - start
    out: dict[str, Any] = {
        "source": "requests",
        "duration_s": window,
        "requests": n,
        "failures": int((~ok_w).sum()),
        "rps": n / window,
        "ok_rps": int(ok_w.sum()) / window,
    }
    if len(sel):
        out.update(
            mean_ms=float(sel.mean()),
            p50_ms=float(np.percentile(sel, 50)),
            p95_ms=float(np.percentile(sel, 95)),
            p99_ms=float(np.percentile(sel, 99)),
            max_ms=float(sel.max()),
        )
    else:
        out.update(mean_ms=np.nan, p50_ms=np.nan, p95_ms=np.nan, p99_ms=np.nan, max_ms=np.nan)
    return out


def _summary_metrics(summary: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """The same numbers from ``summary.json`` (the warm-up already left out at run time)."""
    lat_s = summary.get("latency_ms", {}) or {}
    reqs = summary.get("requests")
    fails = summary.get("failures")
    dur = summary.get("duration_s") or parse_seconds(params.get("duration"))
    rps = summary.get("rps")
    if rps is None and reqs is not None and dur:
        rps = reqs / dur
    return {
        "source": "summary",
        "duration_s": dur,
        "requests": reqs,
        "failures": fails,
        "rps": rps,
        "ok_rps": (reqs - fails) / dur if reqs is not None and fails is not None and dur else None,
        "mean_ms": lat_s.get("mean"),
        "p50_ms": lat_s.get("p50"),
        "p95_ms": lat_s.get("p95"),
        "p99_ms": lat_s.get("p99"),
        "max_ms": lat_s.get("max"),
    }


def runs_table(
    runs: Iterable[Run],
    warmup_s: float = 0.0,
    cooldown_s: float = 0.0,
    latency_of: str = "all",
    complete_only: bool = True,
) -> pd.DataFrame:
    """A tidy table, one row per run: ``run, path, status, stack, style, users, spawn_rate,
    think_time_s, repetition, variant, experiment, started_at, duration_s, requests, failures,
    failure_rate, rps, ok_rps, mean_ms, p50_ms, p95_ms, p99_ms, max_ms, source,
    loadgen_saturated`` and the machine state of :data:`MACHINE_COLUMNS` (see
    :func:`run_metrics` for the window). Runs whose manifest is not ``complete`` are left out
    unless ``complete_only`` is False. Missing repetition numbers are assigned 1, 2, ... by
    start time within each cell.
    """
    rows = [
        run_metrics(r, warmup_s, cooldown_s, latency_of)
        for r in runs
        if r.complete or not complete_only
    ]
    cols = [
        "run",
        "path",
        "status",
        "stack",
        "style",
        "users",
        "spawn_rate",
        "think_time_s",
        "repetition",
        "variant",
        "experiment",
        "started_at",
        "warmup_s",
        "cooldown_s",
        "source",
        "duration_s",
        "requests",
        "failures",
        "failure_rate",
        "rps",
        "ok_rps",
        "mean_ms",
        "p50_ms",
        "p95_ms",
        "p99_ms",
        "max_ms",
        "loadgen_saturated",
        *MACHINE_COLUMNS,
    ]
    df = pd.DataFrame(rows, columns=cols)
    if df.empty:
        return df
    df = df.sort_values(["style", "users", "think_time_s", "started_at"], kind="stable")
    missing = df["repetition"].isna()
    if missing.any():
        order = df.groupby(["style", "users", "think_time_s"], dropna=False).cumcount() + 1
        df.loc[missing, "repetition"] = order[missing]
    df["repetition"] = df["repetition"].astype(int)
    return df.reset_index(drop=True)
