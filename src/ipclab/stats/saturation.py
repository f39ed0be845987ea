"""Saturation: the load from which throughput stays flat while latency grows, per group
(style) of a cells table."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Saturation:
    """What saturation means here: between two loads, throughput grows by at most
    ``max_throughput_gain`` while latency grows by at least ``min_latency_growth``; the
    columns of the cells table to read (``group`` is the factor compared, e.g. the style)."""

    group: str = "style"
    load: str = "users"
    throughput: str = "rps"
    latency: str = "mean_ms"
    max_throughput_gain: float = 0.10
    min_latency_growth: float = 0.25


def saturation_steps(cells: pd.DataFrame, rule: Saturation | None = None) -> pd.DataFrame:
    """Between consecutive loads of each group: ``throughput_gain`` = X2/X1 - 1,
    ``latency_growth`` = R2/R1 - 1, ``load_growth`` = N2/N1 - 1, ``scaling_efficiency`` =
    throughput_gain / load_growth (1: throughput grows with load; 0: flat), and
    ``saturated`` = throughput_gain <= max_throughput_gain and latency_growth >=
    min_latency_growth (throughput flat while latency grows). Several rows per (group, load)
    (repetitions) are averaged first."""
    r = rule or Saturation()
    keys = [k for k in (r.group, r.load) if k in cells.columns]
    g = cells.groupby(keys, dropna=False)[[r.throughput, r.latency]].mean().reset_index()
    out = []
    for name, sub in g.groupby(r.group, dropna=False, sort=True):
        sub = sub.sort_values(r.load)
        vals = sub[[r.load, r.throughput, r.latency]].to_numpy(dtype=float)
        for (n1, x1, r1), (n2, x2, r2) in zip(vals[:-1], vals[1:], strict=True):
            tg, lg, ng = x2 / x1 - 1, r2 / r1 - 1, n2 / n1 - 1
            out.append(
                {
                    r.group: name,
                    "from_users": int(n1),
                    "to_users": int(n2),
                    "throughput_from": x1,
                    "throughput_to": x2,
                    "latency_from": r1,
                    "latency_to": r2,
                    "throughput_gain": tg,
                    "latency_growth": lg,
                    "load_growth": ng,
                    "scaling_efficiency": tg / ng if ng else np.nan,
                    "saturated": bool(tg <= r.max_throughput_gain and lg >= r.min_latency_growth),
                }
            )
    return pd.DataFrame(out)


def detect_saturation(cells: pd.DataFrame, rule: Saturation | None = None) -> pd.DataFrame:
    """Per group: ``saturated`` (every step from some load on is saturated, see
    :func:`saturation_steps`), ``onset_users`` (the lowest such load; the system is
    saturated at and above it), ``plateau_rps`` (mean throughput from the onset on),
    ``steps`` (how many consecutive-load steps were seen)."""
    r = rule or Saturation()
    steps = saturation_steps(cells, r)
    means = cells.groupby([r.group, r.load], dropna=False)[r.throughput].mean()
    out = []
    for name, sub in steps.groupby(r.group, dropna=False, sort=True):
        sub = sub.sort_values("from_users")
        flags = sub["saturated"].to_list()
        onset = None
        for i in range(len(flags)):
            if all(flags[i:]):
                onset = int(sub["from_users"].iloc[i])
                break
        plateau = (
            float(means[name][means[name].index >= onset].mean()) if onset is not None else np.nan
        )
        out.append(
            {
                r.group: name,
                "saturated": onset is not None,
                "onset_users": onset,
                "plateau_rps": plateau,
                "steps": len(flags),
            }
        )
    return pd.DataFrame(out)
