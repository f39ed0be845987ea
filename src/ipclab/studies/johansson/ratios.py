"""GraphQL over REST, and sequential over concurrent service calls, as ratios of means with
95% intervals on the log scale (docs/statistics.md): between runs (:func:`ratios`), within
each interleaved run (:func:`paired_ratios`), and the sweep's sensitivity to sequential
calls (:func:`sequential_effect`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pandas as pd
import scipy.stats as sps

from ipclab import stats
from ipclab.studies.johansson.experiment import STYLES


def _no_interval_alone(ci: stats.Interval) -> stats.Interval:
    """A ratio from one run per side is an estimate alone: no interval, no p-value (a
    single value has no spread to make one from; docs/statistics.md)."""
    if ci.n >= 2:
        return ci
    return dataclasses.replace(ci, low=float("nan"), high=float("nan"), p_value=float("nan"))


def ratios(
    table: pd.DataFrame,
    metrics: Sequence[str] = ("mean_ms", "p95_ms", "server_ms", "gateway_cpu_ms", "bytes"),
    by: Sequence[str] = ("sequential", "rows"),
    a: str = "graphql",
    b: str = "rest",
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Per cell of ``by`` and metric: the ratio of ``a``'s mean to ``b``'s over runs, with
    its t interval on the log scale and the p-value against 1 (docs/statistics.md)."""
    out = []
    keys = [k for k in by if k in table.columns]
    for key, g in table.groupby(keys, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        for m in metrics:
            xa = g.loc[g["style"] == a, m].to_numpy(dtype=float)
            xb = g.loc[g["style"] == b, m].to_numpy(dtype=float)
            ci = _no_interval_alone(stats.log_ratio_interval([(1, [xa]), (-1, [xb])], confidence))
            out.append(
                {
                    **dict(zip(keys, key, strict=True)),
                    "metric": m,
                    "a": a,
                    "b": b,
                    "n": ci.n,
                    "mean_a": float(np.nanmean(xa)) if len(xa) else np.nan,
                    "mean_b": float(np.nanmean(xb)) if len(xb) else np.nan,
                    "ratio": ci.estimate,
                    "ci_low": ci.low,
                    "ci_high": ci.high,
                    "p": ci.p_value,
                }
            )
    return pd.DataFrame(out)


def paired_ratios(
    table: pd.DataFrame,
    metrics: Sequence[str] = ("mean_ms", "p95_ms", "server_ms"),
    by: Sequence[str] = ("sequential", "rows"),
    a: str = "graphql",
    b: str = "rest",
    confidence: float = 0.95,
) -> pd.DataFrame:
    """The within-run ratio of the interleaved experiments: each run measures both
    interfaces, so a / b of that run is one per-run value; its geometric mean over runs with
    the Student-t interval of the logs (the run the unit, docs/statistics.md sections 1-2),
    and the p-value of the t test of log ratio = 0. Drifts between runs cancel in it."""
    out = []
    keys = [k for k in by if k in table.columns]
    for key, g in table.groupby(keys, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        for m in metrics:
            wide = g.pivot_table(index="run", columns="style", values=m, aggfunc="first")
            if a not in wide or b not in wide:
                continue
            logs = np.log((wide[a] / wide[b]).to_numpy(dtype=float))
            logs = logs[np.isfinite(logs)]
            ci = stats.t_interval(logs, confidence)
            p = (
                float(sps.ttest_1samp(logs, 0.0).pvalue)
                if len(logs) > 1 and np.ptp(logs) > 0 else np.nan
            )  # fmt: skip
            out.append(
                {
                    **dict(zip(keys, key, strict=True)), "metric": m, "a": a, "b": b,
                    "n": len(logs), "ratio": float(np.exp(ci.estimate)),
                    "ci_low": float(np.exp(ci.low)), "ci_high": float(np.exp(ci.high)), "p": p,
                }
            )  # fmt: skip
    return pd.DataFrame(out)


def sequential_effect(sweep: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """At every size run both ways: sequential over concurrent service calls, per interface
    (mean client time and the gateway's own time), with log-ratio intervals."""
    out = []
    seq_rows = sorted(sweep.loc[sweep["sequential"], "rows"].unique()) if len(sweep) else []
    for rows in seq_rows:
        at = sweep[sweep["rows"] == rows]
        for style in STYLES:
            for m in ("mean_ms", "server_ms"):
                s = at.loc[at["sequential"] & (at["style"] == style), m].to_numpy(dtype=float)
                c = at.loc[~at["sequential"] & (at["style"] == style), m].to_numpy(dtype=float)
                ci = _no_interval_alone(stats.log_ratio_interval([(1, [s]), (-1, [c])], confidence))
                out.append(
                    {
                        "rows": int(rows), "style": style, "metric": m, "n": ci.n,
                        "sequential": float(np.mean(s)) if len(s) else np.nan,
                        "concurrent": float(np.mean(c)) if len(c) else np.nan,
                        "ratio": ci.estimate, "ci_low": ci.low, "ci_high": ci.high,
                        "p": ci.p_value,
                    }
                )  # fmt: skip
    return pd.DataFrame(out)
