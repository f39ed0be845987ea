"""How many runs a claim's test needs (power, the design check), what a pilot must add,
and which undecided tests are underpowered within the budget."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ipclab.claims.measure import _cells, _values, is_fact
from ipclab.claims.rules import INCONCLUSIVE, UNDERPOWERED, Effect, Rules, test_key
from ipclab.published import Claim
from ipclab.stats import (
    pooled_cv2,
    repetitions_needed_log_ratio,
    sittings,
)
from ipclab.stats.design import Design, design


def repetitions(
    claims: Sequence[Claim],
    runs: pd.DataFrame,
    rules: Rules | None = None,
    users_map: Mapping[int, int] | None = None,
    facts: Collection[str] = (),
) -> pd.DataFrame:
    """Per distinct single-load test or interaction with a published ratio: the runs per cell
    that its primary test (the t test of the log ratio or interaction) needs to detect the
    published effect with 80% power at alpha / (family size), the
    strictest Holm step (docs/statistics.md section 7), beside the runs there are.

    ``claims`` are one family's (what one :func:`evaluate_claims` call adjusts together):
    the family size is their distinct tests, facts (``facts``) and code claims apart."""
    rules = rules or Rules()
    family = _family_size(claims, facts)
    if "sitting" not in runs.columns and "started_at" in runs.columns and len(runs):
        runs = runs.assign(sitting=sittings(runs["started_at"]))
    rows = []
    for c, cells, xs in _planned_cells(claims, runs, facts, users_map):
        users_txt = _cells(c, users_map)[1]
        g = [float(x.mean()) for x in xs]
        if not all(g):  # no ratio to plan for (the metric was not measured: zeros)
            continue
        # the primary test (section 3): the t test of the log ratio, from the cells' CVs,
        # within sittings where the runs span several (section 7)
        need = repetitions_needed_log_ratio(
            [_cv(runs, c.metric, s, u, x) for (s, u), x in zip(cells, xs, strict=True)],
            float(c.published_ratio), rules.alpha / family,
        )  # fmt: skip
        measured = (g[1] / g[0]) / (g[3] / g[2]) if c.test == "interaction" else g[0] / g[1]
        rows.append(
            {
                "claim_id": c.claim_id,
                "comparison": c.describe(),
                "users": users_txt,
                "published_ratio": c.published_ratio,
                "measured_ratio": measured,
                "runs_per_cell": int(min(len(x) for x in xs)),
                "runs_needed": need,
                "alpha": rules.alpha / family,
            }
        )
    return pd.DataFrame(rows)


def _cv(runs: pd.DataFrame, metric: str, style: str, users: int | None, x: np.ndarray) -> float:
    """A cell's per-run coefficient of variation: pooled within sittings when its runs come
    from several (``ipclab.stats.sittings``), else over all its runs."""
    if "sitting" in runs.columns:
        labels = _values(runs, metric, style, users, column="sitting")
        if len(set(labels.tolist()) - {-1}) > 1:
            cv2, df = pooled_cv2(x, labels)
            if df:
                return math.sqrt(cv2)
    return float(x.std(ddof=1)) / float(x.mean())


def _plannable(claims: Sequence[Claim], runs: pd.DataFrame, facts: Collection[str]) -> list[Claim]:
    """The single-load tests and interactions with a published ratio to plan runs for."""
    return [
        c
        for c in claims
        if not is_fact(c, facts)
        and (
            c.test == "interaction"
            or (c.test in ("direction", "ratio") and len(c.a_users) <= 1 and len(c.b_users) <= 1)
        )
        and c.published_ratio is not None
        and np.isfinite(c.published_ratio)
        and c.metric in runs.columns
    ]


def _planned_cells(
    claims: Sequence[Claim],
    runs: pd.DataFrame,
    facts: Collection[str],
    users_map: Mapping[int, int] | None,
) -> Iterator[tuple[Claim, list[tuple[str, int | None]], list[np.ndarray]]]:
    """Each distinct plannable test (its first claim), its cells and their per-run values,
    where every cell has two runs or more."""
    seen = set()
    for c in _plannable(claims, runs, facts):
        if test_key(c) in seen:
            continue
        seen.add(test_key(c))
        cells = _cells(c, users_map)[0]
        xs = [_values(runs, c.metric, s, u) for s, u in cells]
        if min(len(x) for x in xs) >= 2:
            yield c, cells, xs


def _family_size(
    claims: Sequence[Claim], facts: Collection[str], effects: Sequence[Effect] = ()
) -> int:
    """The number of distinct tests of a family: facts (declared in ``facts``, or measured
    as such in ``effects``) and code measures apart."""
    fact = [e.fact for e in effects] if effects else [False] * len(claims)
    keys = {
        test_key(c)
        for c, f in zip(claims, fact, strict=True)
        if c.test != "compare" and not f and not is_fact(c, facts)
    }
    return len(keys) or 1


#: the kinds whose "reproduced" needs a significant p-value (docs/statistics.md section 4)
P_KINDS = ("direction", "interaction", "ratio", "differ")


def design_of(e: Effect, rules: Rules, family: int) -> Design | None:
    """The design check of one measured test (docs/statistics.md section 3): the smallest
    p its test can reach at its runs against its Holm level, alpha / ``family``; None for
    what is no test (a fact, a code measure, an unmeasured effect)."""
    if e.fact or e.missing or not e.p_method or e.p_method in ("exact", "fact", "none"):
        return None
    return design(e.p_method, e.n_a, e.n_b, rules.alpha, family, e.p_floor)


def by_design(c: Claim, e: Effect, v: str, reason: str, d: Design | None) -> tuple[str, str]:
    """An undecided test whose runs could not have passed its Holm level whatever they
    measured is underpowered (docs/statistics.md sections 3 and 7), with the runs that could."""
    if v != INCONCLUSIVE or d is None or d.can_pass or c.test not in P_KINDS:
        return v, reason
    return UNDERPOWERED, f"underpowered {d.text(e.p_method, e.n_a, e.n_b)}; {reason}"


def design_column(c: Claim, d: Design | None) -> str:
    """The claims table's ``design`` column: whether the test's runs can pass its level."""
    if d is None or c.test not in P_KINDS:
        return ""
    if not d.known:
        return "floor unknown"
    if d.can_pass:
        return "can pass"
    could = f"{d.runs} runs per cell could" if d.runs else "no runs up to 1,000 per cell could"
    return f"cannot pass: floor {d.floor:.2g} >= level {d.level:.2g}; {could}"


def pilot_needs(
    claims: Sequence[Claim],
    runs: pd.DataFrame,
    undecided: Collection[str],
    rules: Rules | None = None,
    users_map: Mapping[int, int] | None = None,
    facts: Collection[str] = (),
) -> list[dict[str, Any]]:
    """Per undecided test (a claim id in ``undecided``) of one family: its cells (style,
    load), the runs each has, and the runs per cell the primary test needs at the family's
    strictest Holm level, sized from the runs made as an internal pilot (their blinded
    variance only, ``ipclab.stats.pilot``; None beyond its most runs per cell)."""
    from ipclab.stats.pilot import runs_needed

    rules = rules or Rules()
    alpha = rules.alpha / _family_size(claims, facts)
    out = []
    for c, cells, xs in _planned_cells(claims, runs, facts, users_map):
        if c.claim_id not in undecided:
            continue
        out.append(
            {
                "claim_id": c.claim_id,
                "comparison": c.describe(),
                "cells": [(s, u) for s, u in cells],
                "have": int(min(len(x) for x in xs)),
                "need": runs_needed(xs, float(c.published_ratio or math.nan), alpha),
                "alpha": alpha,
            }
        )
    return out


def mark_underpowered(
    table: pd.DataFrame, power: pd.DataFrame, run_hours: float, rules: Rules | None = None
) -> pd.DataFrame:
    """``table`` with its undecided tests that no affordable number of runs would decide
    marked ``underpowered`` (docs/statistics.md section 7): an inconclusive test whose row of
    ``power`` (:func:`repetitions`) needs more runs per cell than a cell gets
    (``rules.max_runs``, 25), or than ``rules.budget_h`` machine-hours can add at
    ``run_hours`` a run (the mean wall time of the runs it was measured with), or more than
    1,000. Its reason then starts with the runs it needs and their hours; a decided test is
    never changed, nor one the cap and the budget can decide."""
    rules = rules or Rules()
    if table.empty or power is None or power.empty or "test_key" not in table.columns:
        return table
    out = table.copy()
    key_of = dict(zip(out["claim_id"], out["test_key"], strict=True))
    for _, p in power.iterrows():
        rows = (out["test_key"] == key_of.get(p["claim_id"])) & (out["verdict"] == INCONCLUSIVE)
        if "family" in power.columns and "family" in out.columns:
            rows &= out["family"] == p["family"]
        if not rows.any():
            continue
        cells = 4 if (out.loc[rows, "test"] == "interaction").any() else 2
        have, need = int(p["runs_per_cell"]), p["runs_needed"]
        hours = math.inf if pd.isna(need) else max(int(need) - have, 0) * cells * run_hours
        capped = not pd.isna(need) and int(need) > rules.max_runs  # more than a cell gets
        if hours <= rules.budget_h and not capped:  # more runs can decide it: say how many
            if not pd.isna(need) and int(need) > have:
                more = (
                    f"; {int(need):,} runs per cell for 80% power at alpha "
                    f"{float(p['alpha']):.2g} ({have} made, {hours:,.1f} more machine-hours, "
                    f"within the {rules.budget_h:g} h budget)"
                )
                out.loc[rows, "reason"] = out.loc[rows, "reason"].astype(str) + more
            continue
        needs = (
            "more than 1,000 runs per cell" if pd.isna(need)
            else f"{int(need):,} runs per cell, {hours:,.0f} more machine-hours"
            if hours > rules.budget_h
            else f"{int(need):,} runs per cell, more than the {rules.max_runs} a cell gets "
            f"({hours:,.1f} more machine-hours)"
        )  # fmt: skip
        why = (
            f"underpowered: {needs} for 80% power at alpha {float(p['alpha']):.2g} "
            f"({have} made, budget {rules.budget_h:g} h); "
        )
        out.loc[rows, "reason"] = why + out.loc[rows, "reason"].astype(str)
        out.loc[rows, "verdict"] = UNDERPOWERED
    return out


def run_hours(manifests: Sequence[Mapping[str, Any]]) -> float:
    """The mean wall time of runs in hours, from their manifests' ``started_at`` and
    ``ended_at`` (runs without both left out; 0 without any)."""
    spans = []
    for m in manifests:
        start, end = m.get("started_at"), m.get("ended_at")
        if start and end:
            spans.append((pd.Timestamp(end) - pd.Timestamp(start)).total_seconds() / 3600)
    return float(np.mean(spans)) if spans else 0.0
