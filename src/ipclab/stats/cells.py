"""Per-cell tables of a per-run table: each cell's (style x users x think time) summary
over its repetitions with its interval, and every pair of styles compared at each load."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ipclab.stats.comparisons import compare_samples
from ipclab.stats.intervals import bootstrap_ci, interval_text, t_interval
from ipclab.stats.samples import _clean

#: Per-run metrics that :func:`cell_summary` reports by default.
CELL_METRICS = ("rps", "mean_ms", "p50_ms", "p95_ms", "p99_ms", "failure_rate")

#: Columns that identify a cell in a per-run table.
CELL_KEYS = ("style", "users", "think_time_s")


def cell_summary(
    runs: pd.DataFrame,
    metrics: Sequence[str] = CELL_METRICS,
    by: Sequence[str] = CELL_KEYS,
    *,
    confidence: float = 0.95,
    n_resamples: int = 9999,
    method: str = "t",
    seed: int = 0,
) -> pd.DataFrame:
    """Per cell and metric, over repetitions: ``n, mean, sd, median, min, max, ci_low,
    ci_high, ci_method`` (by default the Student-t interval of the mean of the per-run
    values, docs/statistics.md; ``method`` "percentile" or "BCa" gives a bootstrap one, for
    comparison). Long format: one row per (cell, metric). Keys of ``by`` absent from
    ``runs`` are ignored."""
    keys = [k for k in by if k in runs.columns]
    out = []
    for cell, g in runs.groupby(keys, dropna=False, sort=True):
        cell = cell if isinstance(cell, tuple) else (cell,)
        for m in metrics:
            if m not in g.columns:
                continue
            x = _clean(g[m])
            ci = (
                t_interval(x, confidence)
                if method == "t"
                else bootstrap_ci(
                    x, confidence=confidence, n_resamples=n_resamples, method=method, seed=seed
                )
            )
            out.append(
                {
                    **dict(zip(keys, cell, strict=True)),
                    "metric": m,
                    "n": len(x),
                    "mean": float(x.mean()) if len(x) else np.nan,
                    "sd": float(x.std(ddof=1)) if len(x) > 1 else np.nan,
                    "median": float(np.median(x)) if len(x) else np.nan,
                    "min": float(x.min()) if len(x) else np.nan,
                    "max": float(x.max()) if len(x) else np.nan,
                    "ci_low": ci.low,
                    "ci_high": ci.high,
                    "ci_method": ci.method,
                }
            )
    return pd.DataFrame(out)


def cell_table(summary: pd.DataFrame, metric: str, digits: int = 1) -> pd.DataFrame:
    """A wide view of one metric of :func:`cell_summary`: rows = users, columns = style,
    cells = ``"mean [low, high]"`` text, for a notebook or a report."""
    s = summary[summary["metric"] == metric]

    def fmt(r: pd.Series) -> str:
        return interval_text(
            r["mean"], r["ci_low"], r["ci_high"], f".{digits}f", no_interval=f" (n={int(r['n'])})"
        )

    return s.assign(text=s.apply(fmt, axis=1)).pivot_table(
        index="users", columns="style", values="text", aggfunc="first"
    )


def compare_styles(
    runs: pd.DataFrame,
    metric: str,
    *,
    by: Sequence[str] = ("users", "think_time_s"),
    styles: Sequence[str] | None = None,
    confidence: float = 0.95,
    n_resamples: int = 9999,
    seed: int = 0,
) -> pd.DataFrame:
    """Every pair of styles at every load (and think time): ``n_a, n_b, mean_a, mean_b,
    diff, ratio, ratio_low, ratio_high, mannwhitney_u, mannwhitney_p, welch_t, welch_p,
    cliffs_delta, cliffs_low, cliffs_high``. Pairs are ordered as in ``styles`` (default:
    sorted), a before b."""
    keys = [k for k in by if k in runs.columns]
    order = list(styles) if styles is not None else sorted(runs["style"].dropna().unique())
    out = []
    for cell, g in runs.groupby(keys, dropna=False, sort=True):
        cell = cell if isinstance(cell, tuple) else (cell,)
        for i, sa in enumerate(order):
            for sb in order[i + 1 :]:
                xa = g.loc[g["style"] == sa, metric]
                xb = g.loc[g["style"] == sb, metric]
                if xa.empty or xb.empty:
                    continue
                c = compare_samples(
                    xa, xb, confidence=confidence, n_resamples=n_resamples, seed=seed
                )
                out.append(
                    {
                        **dict(zip(keys, cell, strict=True)),
                        "metric": metric,
                        "a": sa,
                        "b": sb,
                        "n_a": c.n_a,
                        "n_b": c.n_b,
                        "mean_a": c.mean_a,
                        "mean_b": c.mean_b,
                        "diff": c.diff,
                        "ratio": c.ratio.estimate,
                        "ratio_low": c.ratio.low,
                        "ratio_high": c.ratio.high,
                        "mannwhitney_u": c.mannwhitney_u,
                        "mannwhitney_p": c.mannwhitney_p,
                        "welch_t": c.welch_t,
                        "welch_p": c.welch_p,
                        "permutation_p": c.permutation_p,
                        "p": c.p,
                        "cliffs_delta": c.cliffs_delta.estimate,
                        "cliffs_low": c.cliffs_delta.low,
                        "cliffs_high": c.cliffs_delta.high,
                    }
                )
    return pd.DataFrame(out)
