"""The plausibility check's per-run table, read from run directories: what each run's
committed files say about its latency against CPU and delay, Little's law over its window,
and its failures against Locust's per-second counts (:mod:`ipclab.stats.plausibility`).

Only files a committed reference keeps are read: ``manifest.json``, ``summary.json``,
``events.jsonl``, ``locust_stats.csv``, ``locust_stats_history.csv`` and ``cycles.csv``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ipclab.paths import repo_relative
from ipclab.runs import Run, read_run
from ipclab.stats.plausibility import (
    CELL_COLUMNS,
    LIMITS,
    RUN_COLUMNS,
    PlausibilityLimits,
    explained_response_ms,
    little_error,
    plausibility_check,
)
from ipclab.stats.run_parameters import parse_think_time

#: a cycle status that is a failure (``ipclab.availability.tracker.CycleStatus``)
FAILED = ("recovered", "unrecovered")


def _aggregated(run: Run) -> pd.DataFrame:
    """Locust's per-second history, the ``Aggregated`` rows, by time."""
    h = run.history()
    if h.empty or "Name" not in h.columns:
        return pd.DataFrame()
    return h[h["Name"] == "Aggregated"].sort_values("Timestamp").reset_index(drop=True)


def _load_start(run: Run, history: pd.DataFrame) -> float | None:
    t = next((e.get("t") for e in run.events() if e.get("event") == "load_start"), None)
    if t is not None:
        return float(t)
    return float(history["Timestamp"].iloc[0]) if len(history) else None


def _identity(run: Run, root: Path | None) -> dict[str, Any]:
    """The run's name and cell; a method-1 run made before the current method is a cell of
    its own (variant ``superseded``: ``ipclab.availability.classify.superseded``), never
    pooled with current runs."""
    from ipclab.availability.classify import superseded

    p, m = run.parameters, run.manifest
    options = p.get("options") or {}
    reconnect = "superseded" if superseded(p) else (p.get("reconnect") or {}).get("mode")
    think = next((p[k] for k in ("think_time_s", "think_time", "wait_time") if k in p), None)
    name = run.path.relative_to(root).as_posix() if root is not None else run.path.name
    return {
        "path": repo_relative(run.path),
        "run": name,
        "kind": m.get("kind"),
        "method": p.get("method") or m.get("kind"),
        "experiment": p.get("experiment") or run.path.parent.name,
        "stack": m.get("stack") or p.get("stack"),
        "variant": p.get("variant") or (reconnect if reconnect not in (None, "default") else ""),
        "users": p.get("users"),
        "think_time_s": parse_think_time(think) if think not in (None, {}, "") else 0.0,
        "delay_ms": float(options.get("delay_ms") or 0.0),
    }


def path_delay_ms(run: Run) -> float:
    """The network delay a request's path holds where the run added one (0 otherwise): the
    request-weighted mean over request types of the fastest each was served in the run
    (Locust's minimum, at the lightest load of its ramp), which holds its path's round
    trips x the delay per hop and its own processing: a bound that errs long."""
    if not float((run.parameters.get("options") or {}).get("delay_ms") or 0.0):
        return 0.0
    p = run.path / "locust_stats.csv"
    if not p.exists():
        return float("nan")
    st = pd.read_csv(p)
    st = st[(st["Name"] != "Aggregated") & (st["Request Count"] > 0)]
    if st.empty:
        return float("nan")
    w = st["Request Count"].astype(float)
    return float((st["Min Response Time"].astype(float) * w).sum() / w.sum())


def _generator_share(summary: Mapping[str, Any]) -> float:
    """The load generator's busy share of its core, per process (one, or the mean worker)."""
    by = summary.get("loadgen_cpu_percent_by_process")
    if by:
        return min(float(np.mean([float(v) for v in by.values()])) / 100.0, 1.0)
    lg = summary.get("loadgen_cpu_percent") or {}
    mean = lg.get("mean") if isinstance(lg, dict) else None
    return min(float(mean) / 100.0, 1.0) if mean is not None else float("nan")


def _window_users(run: Run, history: pd.DataFrame, summary: Mapping[str, Any]) -> float:
    """The mean of Locust's user count over the summary's window (first request + warm-up,
    for its duration; the first request to the second of Locust's history): the users a ramp
    or a warm-up left in it, not the configured number."""
    users = float(run.parameters.get("users") or np.nan)
    dur = summary.get("duration_s")
    if not dur or history.empty or "User Count" not in history.columns:
        return users
    spawned = history.loc[history["User Count"] > 0, "Timestamp"]
    if spawned.empty:
        return users
    # the first request came in the second before the first row with a user
    t0 = float(spawned.iloc[0]) - 1.0 + float(summary.get("warmup_s") or 0.0)
    win = history[(history["Timestamp"] > t0) & (history["Timestamp"] <= t0 + float(dur))]
    return float(win["User Count"].mean()) if len(win) else users


def _load_rules(run: Run, history: pd.DataFrame) -> dict[str, Any]:
    """The latency and Little's-law inputs of a load run (nothing for other kinds)."""
    s = run.summary
    lat = s.get("latency_ms") or {}
    if run.manifest.get("kind") != "load" or not s.get("rps") or not lat:
        return {}
    p = run.parameters
    options = p.get("options") or {}
    think = _identity(run, None)["think_time_s"]
    users = float(p.get("users") or 1)
    delay = path_delay_ms(run)
    cores = float((run.manifest.get("environment") or {}).get("cpu_cores_logical") or 1)
    cpu = {k: v for k, v in (s.get("cpu_percent_mean") or {}).items() if k != "host"}
    explained, by = explained_response_ms(
        cpu, s.get("host_cpu_percent"), float(s["rps"]), cores, users, think,
        0.0 if delay != delay else delay, options.get("cpus"),
    )  # fmt: skip
    n_window = _window_users(run, history, s)
    return {
        "p50_ms": lat.get("p50"),
        "mean_ms": lat.get("mean"),
        "rps": s.get("rps"),
        "explained_ms": explained,
        "explained_by": by,
        "path_delay_ms": delay,
        "users_window": n_window,
        "little_error": little_error(n_window, s["rps"], lat.get("mean"), think),
        "loadgen_utilisation": _generator_share(s),
    }


def _failures_between(history: pd.DataFrame, a: float, b: float) -> float:
    """Failed requests Locust counted in (a, b], to its per-second resolution (the whole
    seconds around: a row holds the count at its second)."""
    if history.empty:
        return float("nan")
    t = history["Timestamp"].to_numpy(dtype=float)
    f = history["Total Failure Count"].to_numpy(dtype=float)
    i = int(np.searchsorted(t, np.floor(a), side="right")) - 1
    j = min(int(np.searchsorted(t, np.ceil(b), side="left")), len(f) - 1)
    return float(f[j] - (f[i] if i >= 0 else 0.0))


def ramp_end(run: Run, history: pd.DataFrame) -> float | None:
    """When every user was spawned: load start + users / spawn rate (a rate of None spawns
    all users in the first second, as ``ipclab.availability.runner`` starts Locust)."""
    start = _load_start(run, history)
    if start is None:
        return None
    p = run.parameters
    users = float(p.get("users") or 0)
    rate = (p.get("plan") or {}).get("spawn_rate") or p.get("spawn_rate") or users or 1.0
    return start + (users / float(rate) if users else 0.0)


def _cycle_rules(run: Run, history: pd.DataFrame, limits: PlausibilityLimits) -> dict[str, Any]:
    """The failure rules over a run's ``cycles.csv``: failures with no injected fault and no
    failed request after the cycle's start; failures before the load was up."""
    path = run.path / "cycles.csv"
    if not path.exists():
        return {}
    cycles = pd.read_csv(path)
    failed = cycles[cycles["status"].isin(FAILED)]
    if "kind" in failed.columns:  # a detector that classes start-up failures apart
        failed = failed[~failed["kind"].astype(str).str.lower().str.startswith("start")]
    criteria = (run.parameters.get("common") or {}).get("criteria") or {}
    window = float(criteria.get("window_s") or limits.window_s)
    start, up = _load_start(run, history), ramp_end(run, history)
    phantom, early, notes = 0, 0, []
    for _, c in failed.iterrows():
        t_fail = float(c["t_fail"])
        t_det = float(c["t_fail_detected"]) if pd.notna(c.get("t_fail_detected")) else t_fail
        if pd.notna(c.get("t_ramp_end")):  # a detector that records the ramp's end
            up = float(c["t_ramp_end"])
        rel = t_fail - start if start is not None else t_fail
        if not pd.notna(c.get("faults")) or int(c["faults"]) == 0:
            seen = _failures_between(history, float(c["t_up"]), t_det + limits.evidence_slack_s)
            if seen == 0:
                phantom += 1
                notes.append(f"{run.path.name} cycle {int(c['index'])} at {rel:.1f} s: "
                             "no failed request")  # fmt: skip
        if up is not None and t_fail < up + window:
            early += 1
            notes.append(f"{run.path.name} failed at {rel:.1f} s, load up at "
                         f"{up + window - (start or 0):.1f} s")  # fmt: skip
    return {"failures": len(failed), "failures_without_evidence": phantom,
            "failures_at_startup": early, "failure_notes": "; ".join(notes)}  # fmt: skip


@functools.lru_cache(maxsize=4096)
def _row_cached(path: str, stamp: float, root: str | None, limits: PlausibilityLimits) -> tuple:
    run = read_run(path)
    history = _aggregated(run)
    row = {
        **dict.fromkeys(RUN_COLUMNS),
        **_identity(run, Path(root) if root else None),
        **_load_rules(run, history),
        **_cycle_rules(run, history, limits),
    }
    return tuple(row[c] for c in RUN_COLUMNS)


def run_row(
    run: Run, root: Path | None = None, limits: PlausibilityLimits = LIMITS
) -> dict[str, Any]:
    """One run's row of the per-run table (:data:`RUN_COLUMNS`), ``run`` named relative to
    ``root`` (its reference folder) when given."""
    files = [run.path / f for f in ("manifest.json", "summary.json", "cycles.csv")]
    stamp = max((f.stat().st_mtime for f in files if f.exists()), default=0.0)
    key = str(root) if root is not None else None
    return dict(zip(RUN_COLUMNS, _row_cached(str(run.path), stamp, key, limits), strict=True))


def runs_frame(
    runs: Iterable[Run], root: Path | None = None, limits: PlausibilityLimits = LIMITS
) -> pd.DataFrame:
    """The per-run table of ``runs`` (complete runs only)."""
    rows = [run_row(r, root, limits) for r in runs if r.complete]
    return pd.DataFrame(rows, columns=list(RUN_COLUMNS))


def folder_runs(folder: Path) -> list[Run]:
    """Every complete run under a reference folder (any depth)."""
    runs = [read_run(m.parent) for m in sorted(Path(folder).rglob("manifest.json"))]
    return [r for r in runs if r.complete]


def check_runs(
    runs: Iterable[Run], root: Path | None = None, limits: PlausibilityLimits = LIMITS
) -> pd.DataFrame:
    """The plausibility table (one row per cell) of ``runs``."""
    frame = runs_frame(runs, root, limits)
    return plausibility_check(frame, limits) if len(frame) else pd.DataFrame()


def run_flags(runs: Sequence[Run], limits: PlausibilityLimits = LIMITS) -> dict[Path, str | None]:
    """Each run's cell verdict: "" when its cell passes, the cell's ``why`` when it fails,
    None when no rule applied."""
    done = [r for r in runs if r.complete]
    frame = runs_frame(done, None, limits)
    if frame.empty:
        return {}
    cells = plausibility_check(frame, limits)  # its rows in the groups' sorted order
    group = frame.groupby(list(CELL_COLUMNS), dropna=False, sort=True).ngroup()
    out: dict[Path, str | None] = {}
    for run, g in zip(done, group, strict=True):
        ok, why = cells["plausible"].iloc[g], cells["why"].iloc[g]
        out[run.path] = None if ok is None or ok != ok else ("" if ok else str(why))
    return out


def annotate(
    table: pd.DataFrame, runs: Sequence[Run], limits: PlausibilityLimits = LIMITS
) -> pd.DataFrame:
    """``table`` (a per-run table whose ``path`` or ``run`` column names run directories)
    with a ``plausibility`` column: its run's cell verdict (:func:`run_flags`), which
    ``ipclab.claims.evaluate_claims`` gathers per claim. Rows naming no run of ``runs`` get
    None; a table naming none is returned unchanged."""
    cols = [c for c in ("path", "run") if c in table.columns]
    if not cols or table.empty:
        return table
    flags = run_flags(runs, limits)
    by_suffix: dict[str, list[str | None]] = {}
    for path, flag in flags.items():
        parts = Path(path).resolve().parts
        for k in (1, 2, 3):
            by_suffix.setdefault("/".join(parts[-k:]), []).append(flag)

    def flag_of(row: pd.Series) -> str | None:
        name = next((row[c] for c in cols if isinstance(row[c], str) and row[c]), "")
        parts = Path(name).parts
        found = next((by_suffix[k] for k in ("/".join(parts[-n:]) for n in (3, 2, 1))
                      if k in by_suffix), [])  # fmt: skip
        texts = [f for f in found if f is not None]
        return "; ".join(sorted({f for f in texts if f})) if texts else None

    return table.assign(plausibility=[flag_of(r) for _, r in table[cols].iterrows()])
