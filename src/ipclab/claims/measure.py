"""A claim's effect measured from runs: the compared cells' per-run values (pooled or by
sitting), the interval and p-value of their ratio, facts and stated values."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from ipclab.claims.rules import Effect, Rules
from ipclab.published import Claim
from ipclab.stats import (
    Interval,
    compare_samples,
    log_ratio_interval,
    log_ratio_interval_by_sitting,
    stratified_permutation_p,
    t_interval,
)
from ipclab.stats.design import stratified_floor


def _values(
    df: pd.DataFrame, metric: str, style: str, users: int | None, column: str = ""
) -> np.ndarray:
    """A cell's per-run values of ``metric`` (finite ones); with ``column``, that column's
    value of the same runs instead (their sittings)."""
    sel = df["style"] == style
    if users is not None:
        sel &= df["users"] == users
    x = pd.to_numeric(df.loc[sel, metric], errors="coerce").to_numpy(dtype=float)
    if column:
        return df.loc[sel, column].to_numpy()[np.isfinite(x)]
    return x[np.isfinite(x)]


def _by_sitting(
    e: Effect,
    claim: Claim,
    runs: pd.DataFrame,
    samples: list[np.ndarray],
    k: int,
    users_map: Mapping[int, int] | None,
    rules: Rules,
) -> Effect:
    """``e`` tested within sittings when its cells' runs come from more than one
    (``ipclab.stats.sittings``, docs/statistics.md section 7), by the stated rule and never a
    silent fallback to the pooled test: the sittings holding every compared cell give the
    estimate (none: inconclusive); where in those sittings a side is 0 in every run, or every
    cell gave one value per sitting, §3's exact permutation test decides on their runs,
    permuted within each sitting; where the within-sitting statistic or its variance is
    undefined, the claim is inconclusive and says why."""
    if "sitting" not in runs.columns or e.p_method not in ("t (log ratio)", "permutation"):
        return e
    cells, _, _ = _cells(claim, users_map)
    b_metric = claim.b_metric or claim.metric
    labels = [
        _values(runs, claim.metric if i < k else b_metric, s, u, column="sitting")
        for i, (s, u) in enumerate(cells)
    ]
    every = {int(x) for lab in labels for x in lab} - {-1}
    if len(every) <= 1:
        return e
    common = sorted(set.intersection(*({int(x) for x in lab} for lab in labels)) - {-1})
    if not common:
        return _undefined(
            e,
            f"runs of {len(every)} sittings, none holding every compared "
            "cell: no within-sitting estimate (docs/statistics.md section 7)",
        )
    if claim.test != "interaction" and k == 1 and len(samples) == 2:
        exact = _exact_by_sitting(e, samples, labels, common, rules)
        if exact is not None:
            return exact
    ci = log_ratio_interval_by_sitting(
        _terms(claim, samples, k), [g for _, g in _terms(claim, labels, k)], rules.confidence
    )
    if not (np.isfinite(ci.estimate) and np.isfinite(ci.low) and np.isfinite(ci.high)):
        return _undefined(
            e,
            f"the within-sitting estimate is undefined over the {len(common)} "
            "sitting(s) holding every compared cell (a cell without two "
            "positive runs in any sitting, or a sum of means of 0 in one)",
        )
    return replace(e, ratio=ci, p_value=ci.p_value, p_method="t (log ratio, by sitting)")


def _undefined(e: Effect, why: str) -> Effect:
    """``e`` with no estimate, interval or p-value, for the reason ``why`` (inconclusive)."""
    nan = float("nan")
    return replace(e, ratio=Interval(nan, nan, nan, e.n_min), p_value=nan, p_method="none",
                   missing=why)  # fmt: skip


def _exact_by_sitting(
    e: Effect,
    samples: list[np.ndarray],
    labels: list[np.ndarray],
    common: list[int],
    rules: Rules,
) -> Effect | None:
    """Two cells over the sittings holding both: §3's exact case (a side 0 in every run and
    the other not, or each cell one value per sitting) as the permutation test within
    sittings, on those sittings' runs; None when neither case holds there."""
    keep = [np.isin(lab.astype(int), common) for lab in labels]
    a, b = (x[m] for x, m in zip(samples, keep, strict=True))
    la, lb = (lab[m].astype(int) for lab, m in zip(labels, keep, strict=True))
    strata = [(a[la == s], b[lb == s]) for s in common]
    zero = _zero_side(a, b)
    constant = all(np.ptp(x) == 0 for pair in strata for x in pair if len(x))
    if zero is None and not constant:
        return None
    p = stratified_permutation_p(strata, seed=rules.seed)
    ma, mb = float(a.mean()), float(b.mean())
    point = zero if zero is not None else ma / mb if mb else math.inf if ma else math.nan
    method = "permutation (by sitting)"
    return replace(
        e, ratio=Interval(point, point, point, min(len(a), len(b)), method="exact"),
        measured_a=ma, measured_b=mb, n_min=min(len(a), len(b)),
        n_a=len(a), n_b=len(b), p_value=p, p_method=method, p_permutation=p,
        constant=constant, open_ended=point == math.inf,
        p_floor=stratified_floor([(len(x), len(y)) for x, y in strata]),
    )  # fmt: skip


def _cells(
    claim: Claim, users_map: Mapping[int, int] | None
) -> tuple[list[tuple[str, int | None]], str, int]:
    """The (style, load) cells a claim compares, how to print its loads, and how many of the
    cells belong to its ``a`` side (the rest are ``b``)."""
    um = dict(users_map or {})

    def m(u: int) -> int:
        return um.get(u, u)

    if claim.test == "interaction":
        assert claim.from_users is not None and claim.to_users is not None
        f, t = m(claim.from_users), m(claim.to_users)
        cells = [(claim.a_style, f), (claim.a_style, t), (claim.b_style, f), (claim.b_style, t)]
        return cells, f"{f}->{t}", 2
    ua: list[int | None] = [m(u) for u in claim.a_users] or [None]
    ub: list[int | None] = [m(u) for u in claim.b_users] or [None]
    cells = [(claim.a_style, u) for u in ua] + [(claim.b_style, u) for u in ub]
    users_txt = "+".join(str(u) for u in ua) if ua != [None] else "all"
    if ub != ua:
        users_txt += " vs " + ("+".join(str(u) for u in ub) if ub != [None] else "all")
    return cells, users_txt, len(ua)


def measure(
    claim: Claim,
    runs: pd.DataFrame,
    rules: Rules,
    users_map: Mapping[int, int] | None = None,
    facts: Collection[str] = (),
) -> Effect:
    """The measured effect of one (non-``compare``) claim on a per-run table. With fewer than
    ``rules.min_repetitions`` runs in a compared cell the estimate stands alone: no interval
    and no p-value (docs/statistics.md sections 2-3), so none enters the Holm family. A
    claim on metrics in ``facts`` (fixed by construction) is a fact: the value alone."""
    if claim.test == "value":
        return _measure_value(claim, runs, rules, users_map)
    samples, users_txt, k, why = _samples(claim, runs, users_map)
    if why:
        return Effect.unmeasured(why)
    if is_fact(claim, facts):
        return _fact(claim, samples, k, users_txt)
    e = _measure(claim, samples, k, users_txt, rules)
    if e.n_min >= rules.min_repetitions:
        return _by_sitting(e, claim, runs, samples, k, users_map, rules)
    nan = float("nan")
    alone = Interval(e.ratio.estimate, nan, nan, e.ratio.n, e.ratio.confidence, "none")
    return replace(
        e, ratio=alone, p_value=nan, p_method="none", p_welch=nan, p_mannwhitney=nan,
        p_permutation=nan,
        cliffs_delta=None,
    )  # fmt: skip


def _measure_value(
    claim: Claim, runs: pd.DataFrame, rules: Rules, users_map: Mapping[int, int] | None
) -> Effect:
    """A ``value`` claim on per-run values: the Student-t interval of the cell's mean over
    the stated number, and the one-sample t test of the mean against it."""
    number = claim.published_number
    if claim.metric not in runs.columns:
        return Effect.unmeasured(f"metric {claim.metric!r} not measured")
    if not number:
        return Effect.unmeasured("no stated number to compare with")
    cell = _cells(claim, users_map)[0][0]  # one cell: the a side (a value has no b)
    users_txt = "all" if cell[1] is None else str(cell[1])
    x = _values(runs, claim.metric, *cell)
    if len(x) == 0:
        return Effect.unmeasured(_no_values(runs, claim.metric, [cell]))
    ci = t_interval(x, rules.confidence)
    nan = float("nan")
    if len(x) < rules.min_repetitions:
        ratio, p = Interval(ci.estimate / number, nan, nan, len(x), method="none"), nan
    else:
        ratio = Interval(ci.estimate / number, ci.low / number, ci.high / number, len(x),
                         rules.confidence, "t")  # fmt: skip
        # constant runs: no spread, no test (never a p of 0; the verdict's own rule)
        p = float(sps.ttest_1samp(x, number).pvalue) if np.ptp(x) > 0 else nan
        p = p if np.isfinite(p) else nan
    return Effect(ratio, ci.estimate, number, len(x), len(x), 0, p, "t (one sample)",
                  users=users_txt, constant=bool(len(x) >= 2 and np.ptp(x) == 0))  # fmt: skip


def value_effect(
    claim: Claim,
    estimate: float,
    low: float,
    high: float,
    n: int,
    p: float,
    method: str,
    users: str = "",
) -> Effect:
    """A ``value`` claim's effect from an interval a study computed itself (e.g. an MTTF
    from failures and censored runs: ``high`` may be inf, ``estimate`` inf with no
    failure), for :func:`evaluate_claims`'s ``effects``."""
    number = claim.published_number
    if not number:
        return Effect.unmeasured("no stated number to compare with")
    ratio = Interval(estimate / number, low / number, high / number, n, 0.95, method)
    return Effect(ratio, estimate, number, n, n, 0, p, method, users=users, open_ended=True)


def is_fact(claim: Claim, facts: Collection[str]) -> bool:
    """Whether a claim compares values fixed by construction (every metric it reads is one
    of ``facts``)."""
    return claim.test != "compare" and {claim.metric, claim.b_metric or claim.metric} <= set(facts)


def _samples(
    claim: Claim, runs: pd.DataFrame, users_map: Mapping[int, int] | None
) -> tuple[list[np.ndarray], str, int, str]:
    """Each compared cell's per-run values, how to print its loads, how many cells are the
    ``a`` side, and why the claim cannot be measured ("" when it can)."""
    b_metric = claim.b_metric or claim.metric
    for metric in dict.fromkeys((claim.metric, b_metric)):
        if metric not in runs.columns:
            return [], "", 0, f"metric {metric!r} not measured"
    cells, users_txt, k = _cells(claim, users_map)
    samples = [
        _values(runs, claim.metric if i < k else b_metric, s, u) for i, (s, u) in enumerate(cells)
    ]
    empty = [(s, u) for (s, u), x in zip(cells, samples, strict=True) if len(x) == 0]
    if empty:
        return [], "", 0, _no_values(runs, claim.metric, empty)
    return samples, users_txt, k, ""


def _no_values(runs: pd.DataFrame, metric: str, cells: Sequence[tuple[str, int | None]]) -> str:
    """Why cells give no value of ``metric``: no runs at all, or runs without the value
    (a cell with runs is never said to have none)."""
    none, blank = [], []
    for s, u in cells:
        name = f"{s}@{u}" if u is not None else s
        sel = runs["style"] == s if "style" in runs else pd.Series(False, index=runs.index)
        if u is not None and "users" in runs:
            sel &= runs["users"] == u
        n = int(sel.sum())
        (blank if n else none).append(f"{name} ({n} runs)" if n else name)
    said = [f"no runs for {', '.join(none)}"] if none else []
    said += [f"no value of {metric} in the runs of {', '.join(blank)}"] if blank else []
    return "; ".join(said) + (f" ({metric})" if none and not blank else "")


def _terms(claim: Claim, samples: list[np.ndarray], k: int) -> list[tuple[int, list[Any]]]:
    """The claim's statistic as :func:`ipclab.stats.log_ratio_interval` terms."""
    if claim.test == "interaction":  # (a@to / a@from) / (b@to / b@from)
        s = samples
        return [(1, [s[1]]), (-1, [s[0]]), (-1, [s[3]]), (1, [s[2]])]
    return [(1, samples[:k]), (-1, samples[k:])]


def _fact(claim: Claim, samples: list[np.ndarray], k: int, users_txt: str) -> Effect:
    """A comparison of values fixed by construction: every run of a cell must give the same
    value; the ratio is then exact (no interval, no p-value, no family)."""
    n_min = min(len(x) for x in samples)
    n_a, n_b = min(len(x) for x in samples[:k]), min(len(x) for x in samples[k:])
    if any(np.ptp(x) > 0 for x in samples):
        return Effect.unmeasured(
            f"declared a fact ({claim.metric} fixed by construction) but its runs differ"
        )
    r = log_ratio_interval(_terms(claim, samples, k)).estimate
    if claim.test == "interaction":
        ma = float(samples[1][0] / samples[0][0]) if samples[0][0] else float("nan")
        mb = float(samples[3][0] / samples[2][0]) if samples[2][0] else float("nan")
    else:
        ma = float(np.mean([x[0] for x in samples[:k]]))
        mb = float(np.mean([x[0] for x in samples[k:]]))
    nan = float("nan")
    return Effect(Interval(r, nan, nan, n_min, method="fact"), ma, mb, n_min, n_a, n_b, nan,
                  "fact", users=users_txt, constant=True, fact=True)  # fmt: skip


def _zero_side(a: np.ndarray, b: np.ndarray) -> float | None:
    """The ratio of two non-negative samples one of which is 0 in every run and the other
    not: exactly 0 or unbounded, whatever the other side's values, so no log-scale interval
    exists and the exact permutation test decides (docs/statistics.md section 3); None
    when neither side is so."""
    if len(a) < 2 or len(b) < 2 or (a < 0).any() or (b < 0).any():
        return None
    if not a.any() and b.any():
        return 0.0
    if a.any() and not b.any():
        return math.inf
    return None


def _measure(
    claim: Claim, samples: list[np.ndarray], k: int, users_txt: str, rules: Rules
) -> Effect:
    a, b = samples[:k], samples[k:]
    n_min = min(len(x) for x in samples)
    n_a, n_b = min(len(x) for x in a), min(len(x) for x in b)
    constant = n_min >= 2 and all(np.ptp(x) == 0 for x in samples)
    if claim.test == "interaction":
        ci = log_ratio_interval(_terms(claim, samples, k), rules.confidence)
        ga = samples[1].mean() / samples[0].mean()
        gb = samples[3].mean() / samples[2].mean()
        return Effect(ci, float(ga), float(gb), n_min, n_a, n_b, ci.p_value, "t (log ratio)",
                      users=users_txt, constant=constant)  # fmt: skip
    if k == 1 and len(b) == 1:
        c = compare_samples(samples[0], samples[1], confidence=rules.confidence, seed=rules.seed)
        # the primary test is the one the interval inverts (docs/statistics.md section 3):
        # p < alpha exactly when the interval excludes 1; constant samples: permutation
        candidates = {
            "t (log ratio)": c.ratio.p_value,
            "welch": c.welch_p,
            "permutation": c.permutation_p,
        }
        primary = next((m for m, v in candidates.items() if np.isfinite(v)), "permutation")
        ratio, zero = c.ratio, _zero_side(samples[0], samples[1])
        if zero is not None:  # no log scale: the ratio is exact (0 or unbounded), the test
            # is the permutation test
            primary, ratio = "permutation", Interval(zero, zero, zero, n_min, method="exact")
        if rules.test == "mannwhitney":
            primary = "mannwhitney"
        p = candidates.get(primary, c.mannwhitney_p)
        return Effect(
            ratio,
            c.mean_a,
            c.mean_b,
            n_min,
            c.n_a,
            c.n_b,
            p,
            primary,
            p_welch=c.welch_p,
            p_mannwhitney=c.mannwhitney_p,
            p_permutation=c.permutation_p,
            cliffs_delta=c.cliffs_delta,
            users=users_txt,
            constant=constant,
            open_ended=zero == math.inf,
        )
    ci = log_ratio_interval(_terms(claim, samples, k), rules.confidence)  # mean over loads
    ma = float(np.mean([x.mean() for x in a]))
    mb = float(np.mean([x.mean() for x in b]))
    return Effect(ci, ma, mb, n_min, n_a, n_b, ci.p_value, "t (log ratio)", users=users_txt,
                  constant=constant)  # fmt: skip


def measure_compare(claim: Claim, complexity: pd.DataFrame | None) -> Effect:
    """A ``compare`` claim on a per-style table (index or column ``style``) of code measures,
    e.g. a study's per-style code-size table."""
    nan = float("nan")
    if complexity is None or claim.metric not in complexity.columns:
        return Effect.unmeasured(f"{claim.metric!r} not measured (no complexity table)")
    t = complexity.set_index("style") if "style" in complexity.columns else complexity
    if claim.a_style not in t.index or claim.b_style not in t.index:
        return Effect.unmeasured(f"no code measured for {claim.a_style} or {claim.b_style}")
    a, b = float(t.loc[claim.a_style, claim.metric]), float(t.loc[claim.b_style, claim.metric])
    if b == 0:
        return Effect(
            Interval(nan, nan, nan, 1),
            a,
            b,
            1,
            1,
            1,
            nan,
            "",
            missing=f"{claim.b_style} has no code yet ({claim.metric} = 0)",
        )
    r = a / b
    return Effect(Interval(r, r, r, 1, method="exact"), a, b, 1, 1, 1, nan, "exact")
