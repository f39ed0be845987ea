"""Every claim of a study judged: effects measured, p-values Holm-adjusted over the family
of distinct tests, the design check, the machine and plausibility checks, one row per claim."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ipclab.claims.measure import _cells, measure, measure_compare
from ipclab.claims.planning import _family_size, by_design, design_column, design_of
from ipclab.claims.rules import (
    CODE,
    FACT,
    SENSITIVITY,
    TEST,
    Effect,
    Rules,
    _ci,
    band_of,
    published_consistent,
    size_words,
    test_key,
    verdict,
)
from ipclab.published import Claim
from ipclab.stats import (
    holm,
    sittings,
)
from ipclab.stats.design import Design


def evaluate_claims(
    runs: pd.DataFrame,
    claims: Sequence[Claim],
    *,
    rules: Rules | None = None,
    scope: str | Sequence[str] = ("performance", "complexity"),
    users_map: Mapping[int, int] | None = None,
    complexity: pd.DataFrame | None = None,
    think_time_s: float | None = None,
    facts: Collection[str] = (),
    family: str = "",
    effects: Mapping[str, Effect] | None = None,
) -> pd.DataFrame:
    """The claims table of one family (one experiment: its p-values are Holm-adjusted
    together, docs/statistics.md section 3): one row per claim with the published and the
    measured effect, the p-value, Cliff's delta, the verdict and its reason, and the
    verdicts of its size word at other bands (``verdict_5pct`` ...).

    ``facts``: metrics fixed by construction (bytes of seeded data): claims on them are
    compared as facts (``evidence`` = "fact"), with no p-value and outside the family.
    ``family``: the experiment's label (column ``family``; default the scopes).
    ``effects``: claim id -> an :class:`Effect` a study computed itself (a statistic no claim
    kind expresses, with its interval and raw p-value); such a claim joins this family's
    Holm adjustment and gets the verdict of its kind like every other.

    ``runs`` is a per-run table (:func:`ipclab.stats.runs_table`, or any frame with
    ``style``, ``users`` and the claims' metric columns: ``rps``, ``mean_ms``; availability
    claims read ``mttf_s``, ``mttr_s``, ``availability``, ``outage_failure_fraction``).
    ``users_map`` maps a published load to the load measured in its place (e.g. the quick
    profile's ``{50: 5, 100: 10, 200: 20}``). ``complexity`` is the per-style code table for
    the ``compare`` claims. When ``runs`` holds several think times, pick one with
    ``think_time_s``.
    """
    rules = rules or Rules()
    cl = list(claims)
    wanted = (scope,) if isinstance(scope, str) else tuple(scope)
    cl = [c for c in cl if c.scope in wanted]
    df = runs
    if "sitting" not in df.columns and "started_at" in df.columns and len(df):
        df = df.assign(sitting=sittings(df["started_at"]))  # runs of several sittings
    if "think_time_s" in df.columns and len(df):
        if think_time_s is not None:
            df = df[np.isclose(df["think_time_s"].astype(float), think_time_s)]
        elif df["think_time_s"].nunique(dropna=False) > 1:
            raise ValueError(
                "runs hold several think times "
                f"({sorted(df['think_time_s'].unique())}); pass think_time_s"
            )
    given = dict(effects or {})
    measured = [
        given[c.claim_id]
        if c.claim_id in given
        else measure_compare(c, complexity)
        if c.test == "compare"
        else measure(c, df, rules, users_map, facts)
        for c in cl
    ]
    adj = adjusted_p(cl, measured, rules)
    label = family or "+".join(wanted)
    size = _family_size(cl, facts, measured) if rules.p_adjust == "holm" else 1
    rows = [
        _claim_row(c, e, float(p), rules, label, design_of(e, rules, size))
        for c, e, p in zip(cl, measured, adj, strict=True)
    ]
    checks = _cell_checks(df)
    for row, c in zip(rows, cl, strict=True):
        row["machine_check"] = machine_check_of(c, checks, users_map)
        row["plausibility"] = plausibility_of(c, _plausibility_flags(df, c.metric), users_map)
    return pd.DataFrame(rows)


def _cell_checks(runs: pd.DataFrame) -> dict[tuple[str, int], tuple[Any, str]]:
    """Per (style, load) cell of ``runs``: whether its runs pass the machine check
    (``ipclab.stats.machine_check``: True, False, None when unrecorded) and why not."""
    from ipclab.stats.machine import machine_check

    wanted = {"style", "users", "stack_cpu_ms_per_request", "other_cpu_percent", "steal_percent"}
    if runs.empty or not wanted <= set(runs.columns):
        return {}
    table = machine_check(runs, by=("style", "users"))
    return {(str(r["style"]), int(r["users"])): (r["comparable"], str(r["why"]))
            for _, r in table.iterrows()}  # fmt: skip


def machine_check_of(
    claim: Claim,
    checks: Mapping[tuple[str, int], tuple[Any, str]],
    users_map: Mapping[int, int] | None = None,
) -> str:
    """Whether the cells a claim compares pass the machine check (docs/statistics.md
    section 1): ``pass``, ``fail: <cell>: <why>``, ``unrecorded``, or "" (not a claim on
    runs, or runs without machine state)."""
    if not checks or claim.test == "compare":
        return ""
    cells, _, _ = _cells(claim, users_map)
    found = [(f"{s}@{u}", checks.get((s, u))) for s, u in cells if u is not None]
    if not found or any(c is None for _, c in found):
        return ""
    failed = [f"{name}: {why}" for name, (ok, why) in found if ok is False]
    if failed:
        return "fail: " + "; ".join(failed)
    return "pass" if all(ok is True for _, (ok, _) in found) else "unrecorded"


def _plausibility_flags(
    runs: pd.DataFrame, metric: str | None = None
) -> dict[tuple[str, int], str | None]:
    """Per (style, load) cell of ``runs`` (those that measured ``metric``): its runs'
    plausibility verdicts (the column ``ipclab.stats.plausibility_runs.annotate`` adds): ""
    when they pass, why when their cell is flagged, None when the check read none of them."""
    if runs.empty or not {"style", "users", "plausibility"} <= set(runs.columns):
        return {}
    if metric in runs.columns:  # a table of several methods: the runs of this measure
        runs = runs[runs[metric].notna()]
    out: dict[tuple[str, int], str | None] = {}
    for (style, users), g in runs.dropna(subset=["users"]).groupby(["style", "users"]):
        said = [v for v in g["plausibility"] if isinstance(v, str)]
        out[(str(style), int(users))] = "; ".join(sorted({v for v in said if v})) if said else None
    return out


def plausibility_of(
    claim: Claim,
    flags: Mapping[tuple[str, int], str | None],
    users_map: Mapping[int, int] | None = None,
) -> str:
    """Whether the cells a claim rests on pass the plausibility check (docs/statistics.md
    section 9): ``pass``, ``flagged: <cell>: <why>`` (the verdict stands, and says what it
    rests on), or "" (not a claim on runs, or cells the check did not read)."""
    if not flags or claim.test == "compare":
        return ""
    cells, _, _ = _cells(claim, users_map)
    found = [(f"{s}@{u}", flags.get((s, u))) for s, u in cells if u is not None]
    found += [(f"{s}@{u}", why) for s, none in cells if none is None  # every load of s
              for (st, u), why in sorted(flags.items()) if st == s]  # fmt: skip
    bad = [f"{name}: {why}" for name, why in found if why]
    if bad:
        return "flagged: " + "; ".join(bad)
    return "pass" if found and all(why is not None for _, why in found) else ""


def adjusted_p(claims: Sequence[Claim], effects: Sequence[Effect], rules: Rules) -> np.ndarray:
    """Each claim's p-value, Holm-adjusted over the family of distinct tests (``test_key``)
    when ``rules.p_adjust == "holm"``."""
    raw = np.array([e.p_value for e in effects], dtype=float)
    if rules.p_adjust != "holm":
        return raw
    first: dict[tuple[Any, ...], int] = {}
    for i, c in enumerate(claims):
        first.setdefault(test_key(c), i)
    keys = list(first)
    family = holm(raw[[first[k] for k in keys]])
    by_key = dict(zip(keys, family, strict=True))
    return np.array([by_key[test_key(c)] for c in claims], dtype=float)


def evidence_of(c: Claim, e: Effect) -> str:
    """``code`` (a measure of ipclab's own code), ``fact`` (fixed by construction) or
    ``test`` (measured, with a p-value)."""
    return CODE if c.test == "compare" else FACT if e.fact else TEST


def sensitivity(
    c: Claim, e: Effect, p: float, rules: Rules, d: Design | None = None
) -> dict[str, str]:
    """The verdict of a size-word claim again with its band at +-5, 10 and 20% (empty for a
    claim without a size word, or with a band its sentence states; ``d``: its design check,
    which no band changes)."""
    word = size_words(c)
    stated = c.test in ("equal", "differ", "value") and not c.magnitude and c.band_low is not None
    out = {}
    for x in SENSITIVITY:
        band = (1 / (1 + x), 1 + x)
        out[f"verdict_{round(x * 100)}pct"] = (
            by_design(c, e, *verdict(c, e, p, rules, band), d)[0] if word and not stated else ""
        )
    return out


def _claim_row(
    c: Claim, e: Effect, p: float, rules: Rules, family: str, d: Design | None = None
) -> dict[str, Any]:
    """One claim's row of the claims table: the claim, its measured effect, its verdict
    (and ``d``, its design check)."""
    v, reason = by_design(c, e, *verdict(c, e, p, rules), d)
    cd = e.cliffs_delta
    bl, bh = band_of(c, rules)
    own = (
        c.band_low is not None
        and c.test in ("ratio", "equal", "differ", "value")
        and not c.magnitude
    )
    return {
        "claim_id": c.claim_id,
        "statement_id": c.statement_id,
        "source": c.source,
        "document": c.document,
        "section": c.section,
        "page": c.page,
        "quote": c.quote,
        "scope": c.scope,
        "test": c.test,
        "relation": c.relation,
        "comparison": c.describe(),
        "measured_users": e.users,
        "published_value": c.published_value,
        "published_unit": c.published_unit,
        "published_ratio": c.published_ratio if c.published_ratio is not None else math.nan,
        "published_consistent": published_consistent(c, rules),
        "band_low": bl if size_words(c) or c.test == "ratio" else math.nan,
        "band_high": bh if size_words(c) or c.test == "ratio" else math.nan,
        "measured_a": e.measured_a,
        "measured_b": e.measured_b,
        "n_a": e.n_a,
        "n_b": e.n_b,
        "measured_ratio": e.ratio.estimate,
        "ci_low": e.ratio.low,
        "ci_high": e.ratio.high,
        "measured": "" if e.missing else _ci(e.ratio),
        "p_value": p,
        "p_raw": e.p_value,
        "p_method": e.p_method,
        "p_welch": e.p_welch,
        "p_mannwhitney": e.p_mannwhitney,
        "p_permutation": e.p_permutation,
        "p_floor": d.floor if d is not None else math.nan,
        "p_level": d.level if d is not None else math.nan,
        "design": design_column(c, d),
        "magnitude": c.magnitude,
        "test_key": "|".join(str(x) for x in test_key(c)),
        "cliffs_delta": cd.estimate if cd else math.nan,
        "cliffs_low": cd.low if cd else math.nan,
        "cliffs_high": cd.high if cd else math.nan,
        "verdict": v,
        "reason": reason,
        "evidence": evidence_of(c, e),
        "family": family if evidence_of(c, e) == TEST else "",  # facts join no family
        "size_word": size_words(c),
        "band": f"[{bl:.4g}, {bh:.4g}] ({'stated' if own else 'standard'})"
        if size_words(c) or c.test == "ratio"
        else "",
        **sensitivity(c, e, p, rules, d),
        "note": c.note,
    }
