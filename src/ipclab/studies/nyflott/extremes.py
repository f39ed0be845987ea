"""Response-time extremes against major GCs (Fig. 19), and the slow requests of Fig. 16.

The thesis (§4.4.2, on its profiling testbed: one client, 252,636 requests in 5 min, mean
1.18 ms) called a request an **extreme** when its response time was at least 30 ms, a
threshold "based on the distribution of response times", and found 53 of them, all but one
(38 ms) coinciding with one of the 29 + 25 major GCs of its two Californium adapters.

**Threshold, per run.** A fixed 30 ms means nothing here: at 5 ms of added delay per host
every request takes more than 20 ms. The thesis's 30 ms kept 53 of 252,636 requests, the
slowest 0.021 %; the same share of each run's measured requests is taken as its extremes
(:data:`EXTREME_SHARE`: the response time at the 1 - 53/252,636 quantile, and every request
at or above it), so every run is judged on its own distribution, as the thesis's rule says,
and on the thesis's share of it. ``threshold_ms`` overrides it (a sensitivity check).

**Coincidence.** A request coincides with a GC when the GC's pause overlaps the request:
the GC started while the request was in flight, or started before it and its pause lasted
into it (``[gc start, gc start + pause]`` meets ``[request start, request end]``, each end
widened by :data:`SLACK_S` for the clocks' resolution). GCs of any role count (the
gateway, the services, the adapters). Because a long pause overlaps many requests by
chance, the same share among the run's **other** requests is reported beside it
(``baseline_fraction``): extremes are explained by GCs only as far as they coincide more
often than ordinary requests do.

GCs come from ``logs/<role>.log`` (``gcevents``; the docker backend writes every
container's log whenever the stack stops); a run without role logs (one recorded before
that) gives NaN counts, not zero.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ipclab import stats
from ipclab.runs import Run
from ipclab.studies.nyflott import gcevents, tables

#: the thesis's extremes: 53 of 252,636 requests (>= 30 ms), 52 with a major GC (§4.4.2)
THESIS = {"requests": 252_636, "extremes": 53, "with_gc": 52, "threshold_ms": 30.0,
          "gc_http_gateway": 29, "gc_coap_gateway": 25, "mean_ms": 1.18, "sd_ms": 0.96}  # fmt: skip
EXTREME_SHARE = THESIS["extremes"] / THESIS["requests"]
SLACK_S = 0.001
_GC_STATS = ("gc_mean_ms", "gc_max_ms")  # per-run columns that are not counts


def threshold(latency_ms: np.ndarray, share: float = EXTREME_SHARE) -> float:
    """The response time at or above which the slowest ``share`` of requests lie."""
    lat = np.asarray(latency_ms, dtype=float)
    if not len(lat):
        return float("nan")
    return float(np.quantile(lat, 1.0 - share, method="higher"))


def coincides(
    start_s: np.ndarray, latency_ms: np.ndarray, gc_t: np.ndarray, gc_ms: np.ndarray
) -> np.ndarray:
    """For each request, the index of the first GC whose pause overlaps it, or -1."""
    start = np.asarray(start_s, dtype=float)
    end = start + np.asarray(latency_ms, dtype=float) / 1000.0
    g0 = np.asarray(gc_t, dtype=float)
    g1 = g0 + np.asarray(gc_ms, dtype=float) / 1000.0
    out = np.full(len(start), -1, dtype=int)
    if not len(g0) or not len(start):
        return out
    order = np.argsort(g0, kind="stable")
    g0s, g1s = g0[order], g1[order]
    longest = float((g1s - g0s).max())
    # the GCs that can overlap a request start at most ``longest`` before it
    lo = np.searchsorted(g0s, start - longest - SLACK_S, side="left")
    hi = np.searchsorted(g0s, end + SLACK_S, side="right")
    for i in np.nonzero(hi > lo)[0]:
        j = np.arange(lo[i], hi[i])
        hit = j[(g0s[j] <= end[i] + SLACK_S) & (g1s[j] >= start[i] - SLACK_S)]
        if len(hit):
            out[i] = int(order[hit[0]])
    return out


def episodes(start_s: np.ndarray, latency_ms: np.ndarray) -> int:
    """How many separate episodes the requests make: requests in flight at the same time
    (their intervals overlap, or chain through others that do) are one episode."""
    start = np.asarray(start_s, dtype=float)
    if not len(start):
        return 0
    order = np.argsort(start, kind="stable")
    s, e = start[order], start[order] + np.asarray(latency_ms, dtype=float)[order] / 1000.0
    reach = np.maximum.accumulate(e)
    return int(1 + np.count_nonzero(s[1:] > reach[:-1]))


def has_role_logs(run: Run) -> bool:
    """Whether the run kept its roles' logs (the load generator's alone does not count)."""
    return any(p.stem != "locust" for p in (run.path / "logs").glob("*.log"))


def run_extremes(
    run: Run, warmup_s: float, share: float = EXTREME_SHARE, threshold_ms: float | None = None
) -> tuple[dict[str, object], pd.DataFrame, pd.DataFrame]:
    """One run's extremes against its GCs over the measured window: the summary row, the
    extreme requests (with the GC each coincides with) and the GCs in the window."""
    w = tables.measured_requests(run, warmup_s)
    t = w["t"].astype(float).to_numpy()
    lat = w["latency_ms"].astype(float).to_numpy()
    start = float(t.min()) if len(t) else np.nan
    end = float((t + lat / 1000.0).max()) if len(t) else np.nan
    logs = has_role_logs(run)
    gc = gcevents.read_gc_events(run.path)
    in_window = (gc["t"] + gc["ms"] / 1000.0 >= start) & (gc["t"] <= end)
    gc = gc[in_window].reset_index(drop=True) if len(t) else gc[:0]
    thr = float(threshold_ms) if threshold_ms is not None else threshold(lat, share)
    ext = lat >= thr if len(lat) else np.zeros(0, bool)
    hit = coincides(t, lat, gc["t"].to_numpy(float), gc["ms"].to_numpy(float))
    nan = float("nan")
    row: dict[str, object] = {
        "run": tables.run_label(run),
        "requests": len(lat),
        "threshold_ms": thr,
        "extremes": int(ext.sum()),
        "episodes": episodes(t[ext], lat[ext]),
        "with_gc": int((hit[ext] >= 0).sum()) if logs else nan,
        "fraction": float((hit[ext] >= 0).mean()) if logs and ext.any() else nan,
        "baseline_fraction": float((hit[~ext] >= 0).mean()) if logs and (~ext).any() else nan,
        "role_logs": logs,
        "gc_events": len(gc) if logs else nan,
        "gc_mean_ms": float(gc["ms"].mean()) if logs and len(gc) else nan,
        "gc_max_ms": float(gc["ms"].max()) if logs and len(gc) else nan,
    }
    for role, n in gc["role"].value_counts().sort_index().items():
        row[f"gc_{role}"] = int(n)
    x = w[ext].copy()
    x["gc_role"] = [gc["role"].iloc[k] if k >= 0 else "" for k in hit[ext]]
    x["gc_t"] = [float(gc["t"].iloc[k]) if k >= 0 else nan for k in hit[ext]]
    x["t_rel"] = (x["t"].astype(float) - start).round(6)
    x.insert(0, "run", tables.run_label(run))
    cols = ["run", "t", "t_rel", "name", "latency_ms", "gc_role", "gc_t"]
    gc_out = gc.assign(run=tables.run_label(run), t_rel=gc["t"] - start)
    return row, x[cols].reset_index(drop=True), gc_out[["run", "role", "t", "t_rel", "ms"]]


def extremes_tables(
    runs: Sequence[Run], warmup_s: float, threshold_ms: float | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """:func:`run_extremes` of every run: per-run rows, extreme requests, GC events."""
    rows, ext, gcs = [], [], []
    for run in runs:
        r, x, g = run_extremes(run, warmup_s, threshold_ms=threshold_ms)
        rows.append(r)
        ext.append(x)
        gcs.append(g)
    cat = lambda parts: pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()  # noqa: E731
    per_run = pd.DataFrame(rows)
    gc_cols = sorted(c for c in per_run.columns if c.startswith("gc_") and c not in _GC_STATS)
    if gc_cols:  # a role without GCs in a run with role logs had 0
        logs = per_run["role_logs"].astype(bool)
        per_run.loc[logs, gc_cols] = per_run.loc[logs, gc_cols].fillna(0)
    return per_run, cat(ext), cat(gcs)


def extremes_cells(per_run: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """Per cell: runs, extremes and how many coincide with a GC (summed over runs, and the
    share per run as a mean with its 95% t interval), the share among the other requests
    (the chance level), the threshold and the GCs per run of every role; ``rows`` (the
    per-run table) gives each run's cell."""
    if per_run.empty or rows.empty:
        return pd.DataFrame()
    keys = [k for k in ("adapters", "style", "delay_ms") if k in rows.columns]
    df = per_run.merge(rows[["run", *keys]], on="run", how="inner")
    gc_cols = [c for c in df.columns if c.startswith("gc_") and c not in _GC_STATS]
    out = []
    for k, g in df.groupby(keys, sort=True):
        row: dict[str, object] = dict(zip(keys, k if isinstance(k, tuple) else (k,), strict=True))
        with_logs = g[g["role_logs"].astype(bool)]
        f = stats.t_interval(with_logs["fraction"].to_numpy(float))
        b = stats.t_interval(with_logs["baseline_fraction"].to_numpy(float))
        row.update(
            runs=len(g),
            runs_with_logs=len(with_logs),
            requests=int(g["requests"].sum()),
            threshold_ms=float(g["threshold_ms"].mean()),
            extremes=int(g["extremes"].sum()),
            episodes=int(g["episodes"].sum()),
            with_gc=float(with_logs["with_gc"].sum()) if len(with_logs) else np.nan,
            fraction=f.estimate, fraction_low=f.low, fraction_high=f.high,
            baseline_fraction=b.estimate, baseline_low=b.low, baseline_high=b.high,
            gc_max_ms=float(with_logs["gc_max_ms"].max()) if len(with_logs) else np.nan,
        )  # fmt: skip
        for c in gc_cols:
            row[f"{c}_per_run"] = float(with_logs[c].mean()) if len(with_logs) else np.nan
        out.append(row)
    return pd.DataFrame(out)


def slow_requests(runs: Sequence[Run], warmup_s: float) -> pd.DataFrame:
    """Fig. 16's points: every measured request with a response time inside
    ``tables.SLOW_RANGE_MS`` (80 to 200 ms, bounds excluded), with its time since the
    measured window began."""
    lo, hi = tables.SLOW_RANGE_MS
    parts = []
    for run in runs:
        w = tables.measured_requests(run, warmup_s)
        if w.empty:
            continue
        lat = w["latency_ms"].astype(float)
        s = w[(lat > lo) & (lat < hi)]
        parts.append(
            pd.DataFrame(
                {  # rounded to 1 us and 10 us: a committed reference keeps these rows
                    "run": tables.run_label(run),
                    "t_rel": (s["t"].astype(float) - float(w["t"].min())).round(6),
                    "name": s["name"],
                    "latency_ms": s["latency_ms"].astype(float).round(2),
                }
            )
        )
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["run", "t_rel", "name", "latency_ms"])  # fmt: skip
