"""Table 2 (requests and response times) and the per-test-case view (Fig. 10), measured.

Every number is first computed per run over its measured window (the warm-up discarded,
``stats.run_metrics``'s window), then summarised over the runs of a (protocol, delay)
cell with a t interval (``docs/statistics.md``: the run is the unit of replication).
Table 2's columns as the thesis prints them (requests, mean, max, min, population SD) plus
req/s and p50/p95/p99.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ipclab import stats
from ipclab.runs import Run
from ipclab.stacks import resolve
from ipclab.studies.nyflott import published

TABLE2_METRICS = (
    "requests",
    "rps",
    "mean_ms",
    "max_ms",
    "min_ms",
    "sd_ms",
    "p50_ms",
    "p95_ms",
    "p99_ms",
)


def _window(run: Run, warmup_s: float) -> pd.DataFrame:
    req = run.requests()
    t = req["t"].astype(float)
    end = float((t + req["latency_ms"].astype(float) / 1000.0).max())
    return req[(t >= float(t.min()) + warmup_s) & (t <= end)]


def _identity(run: Run) -> dict[str, object]:
    stack = str(run.manifest.get("stack") or run.parameters.get("stack"))
    return {
        "run": run.path.name,
        "stack": stack,
        "style": resolve(stack).style,
        "delay_ms": float(run.parameters.get("options", {}).get("delay_ms", 0.0)),
        "repetition": run.parameters.get("repetition"),
    }


#: Fig. 16's range of "high" response times (ms), bounds excluded as the thesis's filter
SLOW_RANGE_MS = (80.0, 200.0)


def slow_per_1000(latency_ms: np.ndarray) -> float:
    """Requests with a response time inside Fig. 16's range, per 1000 requests."""
    lat = np.asarray(latency_ms, dtype=float)
    if not len(lat):
        return np.nan
    lo, hi = SLOW_RANGE_MS
    return float(1000.0 * np.count_nonzero((lat > lo) & (lat < hi)) / len(lat))


def run_rows(runs: Sequence[Run], warmup_s: float) -> pd.DataFrame:
    """One row per run: Table 2's numbers over its measured window, and Fig. 16's slow
    requests per 1000 (``slow_per_1000``)."""
    rows = []
    for run in runs:
        m = stats.run_metrics(run, warmup_s)
        lat = _window(run, warmup_s)["latency_ms"].astype(float).to_numpy()
        rows.append(
            {
                **_identity(run),
                **{k: m[k] for k in ("requests", "failures", "rps", "mean_ms", "max_ms")},
                **{k: m[k] for k in ("p50_ms", "p95_ms", "p99_ms", "duration_s")},
                "min_ms": float(lat.min()) if len(lat) else np.nan,
                "sd_ms": float(lat.std(ddof=0))
                if len(lat)
                else np.nan,  # population, as MariaDB STD
                "slow_per_1000": slow_per_1000(lat),
            }
        )
    return pd.DataFrame(rows)


def table2(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (style, delay): each metric's mean over runs with its 95% t interval, and the
    thesis's value beside it (requests scaled to the thesis's 600 s window as req/s)."""
    pub = published.load_requests().set_index(["style", "delay_ms"])
    out = []
    for (style, delay), g in rows.groupby(["style", "delay_ms"], sort=True):
        row: dict[str, object] = {"style": style, "delay_ms": delay, "runs": len(g)}
        for metric in TABLE2_METRICS:
            iv = stats.t_interval(g[metric].to_numpy(dtype=float))
            row[metric] = iv.estimate
            row[f"{metric}_low"], row[f"{metric}_high"] = iv.low, iv.high
        key = (style, int(delay))
        if key in pub.index:
            p = pub.loc[key]
            row.update(
                published_requests=int(p["requests"]),
                published_rps=float(p["requests"]) / float(p["duration_s"]),
                published_mean_ms=float(p["mean_ms"]),
                published_max_ms=float(p["max_ms"]),
                published_min_ms=float(p["min_ms"]),
                published_sd_ms=float(p["sd_ms"]),
            )
        out.append(row)
    return pd.DataFrame(out)


def per_test_case(runs: Sequence[Run], warmup_s: float) -> pd.DataFrame:
    """Fig. 10's data: per run and test case, count, mean, min and population SD (ms)."""
    parts = []
    for run in runs:
        w = _window(run, warmup_s)
        g = w.groupby("name")["latency_ms"]
        df = pd.DataFrame(
            {"count": g.size(), "mean_ms": g.mean(), "min_ms": g.min(), "sd_ms": g.std(ddof=0)}
        ).reset_index(names="test_case")
        for k, v in _identity(run).items():
            df[k] = v
        parts.append(df)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
