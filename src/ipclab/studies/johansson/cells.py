"""Johansson's cells: the per-run tables summarised per cell (size, interface, load) over
runs with 95% t intervals (``stats.cell_summary``), as text (``mean [low, high]``), set
beside the thesis's tests 1-3, and the saturation throughput per size and interface.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from ipclab import stats
from ipclab.studies.johansson import published

CELL_METRICS = (
    "mean_ms", "p50_ms", "p95_ms", "min_ms", "max_ms", "server_ms", "outside_ms", "bytes",
    "gateway_cpu_ms", "stack_cpu_ms", "failures",
)  # fmt: skip
SATURATION_METRICS = ("rps", "mean_ms", "p95_ms", "gateway_cpu_ms", "stack_cpu_ms", "failures")


def summarise(table: pd.DataFrame, metrics: Sequence[str], by: Sequence[str]) -> pd.DataFrame:
    """Per cell of ``by`` and metric: n, mean and its 95% t interval over the rows (runs)."""
    if table.empty:
        return pd.DataFrame(columns=[*by, "metric", "n", "mean", "ci_low", "ci_high"])
    return stats.cell_summary(table, metrics, by=by)


#: ``mean [low, high]``; ``(1 run)`` without an interval; ``not measured`` without a mean
_interval = partial(stats.interval_text, missing="not measured", no_interval=" (1 run)")


def wide(cells: pd.DataFrame, metrics: Sequence[str], keys: Sequence[str]) -> pd.DataFrame:
    """One row per cell, ``metric`` as ``mean [low, high]`` text columns."""
    if cells.empty:
        return pd.DataFrame()
    c = cells[cells["metric"].isin(metrics)].copy()
    c["text"] = [
        _interval(m, lo, hi, ".3f" if abs(m) < 10 else ".1f") for m, lo, hi in
        zip(c["mean"], c["ci_low"], c["ci_high"], strict=True)
    ]  # fmt: skip
    out = c.pivot_table(index=list(keys), columns="metric", values="text", aggfunc="first")
    n = c.groupby(list(keys))["n"].max().rename("runs")
    return out.join(n).reset_index()[[*keys, "runs", *[m for m in metrics if m in out.columns]]]


def _cell(cells: pd.DataFrame, metric: str, **key: Any) -> pd.Series:
    sel = cells["metric"] == metric
    for k, v in key.items():
        sel &= cells[k] == v
    hit = cells[sel]
    return hit.iloc[0] if len(hit) else pd.Series({"mean": np.nan, "ci_low": np.nan,
                                                   "ci_high": np.nan, "n": 0})  # fmt: skip


def side_by_side(cells: pd.DataFrame, ratio_table: pd.DataFrame) -> pd.DataFrame:
    """Thesis tests 1-3 beside the measured thesis test: per size and interface the printed
    min / mean / max and the measured mean and p95 (95% t interval over runs), and the
    GraphQL / REST ratio of the means, printed and measured (log-ratio interval)."""
    pub = published.published_cells()
    rat = published.published_ratios().set_index("test")
    out = []
    for _, r in pub.iterrows():
        key = {"rows": int(r["rows"]), "style": r["style"], "sequential": False}
        mean = _cell(cells, "mean_ms", **key)
        p95 = _cell(cells, "p95_ms", **key)
        rr = ratio_table[
            (ratio_table["rows"] == r["rows"]) & (ratio_table["metric"] == "mean_ms")
            & ~ratio_table["sequential"].astype(bool)
        ]  # fmt: skip
        ratio = rr.iloc[0] if len(rr) else pd.Series({"ratio": np.nan, "ci_low": np.nan,
                                                       "ci_high": np.nan})  # fmt: skip
        out.append(
            {
                "test": int(r["test"]),
                "rows": int(r["rows"]),
                "style": r["style"],
                "published_min_ms": r["min_ms"],
                "published_mean_ms": r["mean_ms"],
                "published_max_ms": r["max_ms"],
                "measured_mean_ms": mean["mean"],
                "measured_mean_ci": _interval(mean["mean"], mean["ci_low"], mean["ci_high"], ".2f"),
                "measured_p95_ms": p95["mean"],
                "measured_p95_ci": _interval(p95["mean"], p95["ci_low"], p95["ci_high"], ".2f"),
                "runs": int(mean["n"]),
                "published_ratio": float(rat.loc[int(r["test"]), "ratio"]),
                "published_printed": rat.loc[int(r["test"]), "printed_as"],
                "measured_ratio": ratio["ratio"],
                "measured_ratio_ci": _interval(
                    ratio["ratio"], ratio["ci_low"], ratio["ci_high"], ".3f"
                ),
            }
        )
    return pd.DataFrame(out)


def saturation_summary(cells: pd.DataFrame) -> pd.DataFrame:
    """Per size and interface: the highest mean throughput over the loads run (the
    saturation throughput), with its load and 95% interval, and the latency there."""
    rps = cells[cells["metric"] == "rps"]
    out = []
    for (rows, style), g in rps.groupby(["rows", "style"], sort=True):
        best = g.loc[g["mean"].idxmax()]
        lat = _cell(cells, "mean_ms", rows=rows, style=style, users=best["users"])
        out.append(
            {
                "rows": int(rows), "style": style, "users": int(best["users"]),
                "rps": best["mean"], "rps_ci_low": best["ci_low"], "rps_ci_high": best["ci_high"],
                "mean_ms": lat["mean"], "runs": int(best["n"]),
            }
        )  # fmt: skip
    return pd.DataFrame(out)


def saturation_detected(saturation: pd.DataFrame) -> pd.DataFrame:
    """``stats.detect_saturation`` per size run at two loads or more, on the means over runs."""
    detected = []
    for rows, g in saturation.groupby("rows") if len(saturation) else ():
        if g["users"].nunique() < 2:  # saturation needs a step between two loads
            continue
        means = g.groupby(["style", "users"], as_index=False)[["rps", "mean_ms"]].mean()
        detected.append(stats.detect_saturation(means).assign(rows=rows))
    return pd.concat(detected, ignore_index=True) if detected else pd.DataFrame()
