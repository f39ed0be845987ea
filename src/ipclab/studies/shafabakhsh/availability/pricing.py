"""Machine-hours per cell (docs/statistics.md sections 6 and 7): the runs a test still needs,
each cell's priced at the mean wall time of that cell's own runs (a 200-user run of method 1
that outlives its 900 s cap takes four times a 300-user run that fails at once), and the
underpowered marking at that price (``ipclab.claims.mark_underpowered``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ipclab import claims as claims_mod
from ipclab.published import Claim
from ipclab.runs import Run

Cell = tuple[str, int]


def _hours(run: Run) -> float:
    start, end = run.manifest.get("started_at"), run.manifest.get("ended_at")
    if not (start and end):
        return math.nan
    return (pd.Timestamp(end) - pd.Timestamp(start)).total_seconds() / 3600


def cell_hours(runs: Sequence[Run]) -> dict[Cell, float]:
    """The mean wall time in hours of each (style, users) cell's runs (from manifests)."""
    spans: dict[Cell, list[float]] = {}
    for r in runs:
        h = _hours(r)
        if math.isfinite(h):
            key = (str(r.manifest.get("style")), int(r.parameters.get("users", 0)))
            spans.setdefault(key, []).append(h)
    return {k: float(np.mean(v)) for k, v in spans.items()}


def hours_more(
    claim: Claim,
    need: float,
    runs_per_cell: Mapping[Cell, int],
    hours: Mapping[Cell, float],
    users_map: Mapping[int, int] | None,
    fallback_h: float,
) -> float:
    """The machine-hours the runs ``claim``'s test still needs take: per compared cell, the
    runs it lacks (``need`` less those it has) x that cell's mean wall time (a cell with no
    runs: ``fallback_h``, the family's mean). NaN ``need``: inf."""
    if not np.isfinite(need):
        return math.inf
    cells = claims_mod._cells(claim, users_map)[0]
    total = 0.0
    for s, u in dict.fromkeys(cells):
        key = (s, int(u or 0))
        total += max(int(need) - runs_per_cell.get(key, 0), 0) * hours.get(key, fallback_h)
    return total


def price(
    power: pd.DataFrame,
    claims: Sequence[Claim],
    runs: Sequence[Run],
    users_map: Mapping[int, int] | None,
) -> pd.DataFrame:
    """``power`` (one family's rows) with ``hours_more``: each row's missing runs priced per
    cell at that cell's own runs (:func:`hours_more`)."""
    if power.empty:
        return power.assign(hours_more=pd.Series(dtype=float))
    by_id = {c.claim_id: c for c in claims}
    hours = cell_hours(runs)
    have: dict[Cell, int] = {}
    for r in runs:
        key = (str(r.manifest.get("style")), int(r.parameters.get("users", 0)))
        have[key] = have.get(key, 0) + 1
    fallback = claims_mod.run_hours([r.manifest for r in runs])
    more = [
        hours_more(by_id[cid], float(need), have, hours, users_map, fallback)
        if cid in by_id else math.nan
        for cid, need in zip(power["claim_id"], power["runs_needed"], strict=True)
    ]  # fmt: skip
    return power.assign(hours_more=more)


def mark_underpowered(table: pd.DataFrame, power: pd.DataFrame) -> pd.DataFrame:
    """``ipclab.claims.mark_underpowered`` row by row of ``power``, each at the price of its
    own cells (``hours_more``): the flat price per run that makes (need - have) x cells x it
    equal those hours."""
    out = table
    for _, p in power.iterrows():
        need, have = p["runs_needed"], int(p["runs_per_cell"])
        rows = out[out["claim_id"] == p["claim_id"]]
        cells = 4 if len(rows) and (rows["test"] == "interaction").any() else 2
        missing = (int(need) - have) * cells if pd.notna(need) else 0
        more = float(p.get("hours_more", math.nan))
        flat = more / missing if missing > 0 and np.isfinite(more) else 0.0
        out = claims_mod.mark_underpowered(out, p.to_frame().T, flat)
    return out
