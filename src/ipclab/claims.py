"""Published claims against measured runs: the effect, its CI and p-value, and a verdict.

A verdict is computed from data by the rules of docs/statistics.md (the same for every
study), never written by hand. Effects are ratios (a / b of per-run means), so hardware that
is faster overall does not change them; the published absolute numbers (43 requests, 200 ms)
are shown beside them but are not judged. In short:

* the run is the unit of replication; every compared cell needs ``min_repetitions`` runs,
  else **inconclusive**;
* **facts**: a claim on values fixed by construction (bytes of seeded data, the same in
  every run) is compared as a value: the claim holds or it does not, with no p-value, no
  interval and outside every family (``evidence`` = "fact", counted apart);
* p-values: the t test of the log ratio (delta method, Welch-Satterthwaite df), the same
  statistic as the interval, so p < 0.05 exactly when the interval excludes 1 (the exact
  permutation test where samples are constant); Holm-adjusted over the family of distinct
  tests of one call (one experiment; a comparison that several sentences make is one test);
* ``direction`` and ``interaction``: **reproduced** when the estimate is on the claimed side
  of 1 and the adjusted p < alpha; **not reproduced** when significant on the other side;
  otherwise **inconclusive** (a direction is judged on its direction, never on its size);
  where every run of every compared cell gave one value (constant samples), a point not on
  the claimed side, or equal sides (0 against 0 too), is **not reproduced**;
* size words, each with its standard band (a claim's own band only where its sentence states
  a number): "slightly" (``magnitude == "slight"``): the interval also inside [0.8, 1.25];
  "considerable(ly)", "much" (``magnitude == "considerable"``, on ``direction`` or
  ``differ``): entirely outside [0.64, 1.5625] (**not reproduced** when entirely inside);
  ``equal`` ("the same", "similar"): inside [0.8, 1.25];
* ``ratio`` (a stated size, e.g. +22%): **not reproduced** when the CI lies entirely outside
  the claim's band; **reproduced** when it overlaps the band and the direction is
  significant; otherwise inconclusive;
* ``equal``: **reproduced** when the CI lies inside the band, **not reproduced** when
  entirely outside, otherwise inconclusive;
* ``differ``: **reproduced** when significant and the CI lies entirely outside the band,
  **not reproduced** when the CI lies inside it, otherwise inconclusive;
* every size-word verdict again at +-5, 10 and 20% (``verdict_5pct`` ...; the
  band-sensitivity table, :func:`band_sensitivity`);
* ``compare`` (deterministic code measures of ipclab's own code, reported in a section of
  their own): **reproduced** when the relation holds, **not reproduced** when it does not;
* ``value`` (a cell's metric against the number a sentence states): as ``equal``, on the
  measured value over the stated number; an interval open at one end (an MTTF with no
  failure in its runs: a lower bound only) is read as it stands.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from ipclab.published import Claim
from ipclab.stats import (
    Interval,
    compare_samples,
    holm,
    log_ratio_interval,
    log_ratio_interval_by_sitting,
    pooled_cv2,
    repetitions_needed_log_ratio,
    sittings,
    stratified_permutation_p,
    t_interval,
)
from ipclab.stats.design import Design, design, stratified_floor
from ipclab.stats.pilot import MAX_RUNS_PER_CELL

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
# not decided, and its runs cannot decide it: more than a cell gets or the budget allows,
# or by design (its test's smallest p not below its Holm level; docs/statistics.md §3, §7)
UNDERPOWERED = "underpowered"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, UNDERPOWERED, INCONCLUSIVE)
# the machine-hours more runs of one test may take before it is called underpowered
BUDGET_H = 24.0

RULES = __doc__

# The equivalence margin: a ratio within 80-125% (the margin of average bioequivalence, the
# most used equivalence margin on a ratio scale) counts as "the same"; a "slight" difference
# is a real one no larger than that margin.
EQUAL_BAND = (0.8, 1.25)
# "Considerable": at least twice the equivalence margin on the log scale (1.25 ** 2).
CONSIDERABLE_BAND = (0.64, 1.5625)
# The band-sensitivity table: each size-word verdict again with the band at +-5, 10, 20%
# (symmetric on the log scale: [1 / (1 + x), 1 + x]).
SENSITIVITY = (0.05, 0.10, 0.20)
FACT, TEST, CODE = "fact", "test", "code"


@dataclass(frozen=True)
class Rules:
    """The knobs of the verdict rules (see the module docstring)."""

    alpha: float = 0.05
    min_repetitions: int = 3
    test: str = "welch"  # "welch" or "mannwhitney": the p-value of single-load comparisons
    p_adjust: str = "holm"  # "holm" (over the distinct tests of one claims table) or "none"
    # the standard bands of the size words (docs/statistics.md section 4); a claim's own
    # band replaces them only where its sentence states a number
    equal: tuple[float, float] = EQUAL_BAND  # "equal", "similar": the ratio stays inside
    slight: tuple[float, float] = EQUAL_BAND  # "slightly": significant, and inside
    considerable: tuple[float, float] = CONSIDERABLE_BAND  # "considerable": entirely outside
    confidence: float = 0.95
    n_resamples: int = 9999
    seed: int = 0
    budget_h: float = BUDGET_H  # machine-hours: more than this to decide is underpowered
    max_runs: int = MAX_RUNS_PER_CELL  # runs a cell gets at most: a test needing more is too

    def __post_init__(self) -> None:
        if self.test not in ("welch", "mannwhitney"):
            raise ValueError("Rules.test must be 'welch' or 'mannwhitney'")
        if self.p_adjust not in ("none", "holm"):
            raise ValueError("Rules.p_adjust must be 'none' or 'holm'")
        if not 0 < self.alpha < 1:
            raise ValueError("Rules.alpha must be in (0, 1)")


@dataclass(frozen=True)
class Effect:
    """What the data say about one claim, before the verdict."""

    ratio: Interval  # the statistic compared with 1 (a/b, or growth a / growth b)
    measured_a: float
    measured_b: float
    n_min: int
    n_a: int
    n_b: int
    p_value: float
    p_method: str
    p_welch: float = float("nan")
    p_mannwhitney: float = float("nan")
    p_permutation: float = float("nan")
    cliffs_delta: Interval | None = None
    users: str = ""
    missing: str = ""  # why the effect could not be measured, if it could not
    constant: bool = False  # every run of every compared cell gave one value (no spread)
    fact: bool = False  # fixed by construction (seeded bytes): compared as a value, untested
    # an interval end of 0 or inf is a real bound, not a failed estimate (censored data: an
    # MTTF with no failure in its runs lies above a bound only)
    open_ended: bool = False
    # the smallest p-value the test can reach at its runs (docs/statistics.md section 3's
    # design check); NaN: the one its p_method has (``ipclab.stats.design.floor_of``)
    p_floor: float = float("nan")

    @classmethod
    def unmeasured(cls, why: str) -> Effect:
        """No effect: nothing to compare, for the reason ``why``."""
        nan = float("nan")
        return cls(Interval(nan, nan, nan, 0), nan, nan, 0, 0, 0, nan, "", missing=why)


# --------------------------------------------------------------------------- verdict rules


def _fmt(x: float) -> str:
    """4 significant digits; an open end of an interval (censored data) reads inf."""
    return f"{x:.4g}" if np.isfinite(x) else "nan" if np.isnan(x) else str(x)


def _ci(r: Interval) -> str:
    if np.isnan(r.low) and np.isnan(r.high) and np.isfinite(r.estimate):
        return _fmt(r.estimate)  # the estimate alone (too few runs for an interval)
    return f"{_fmt(r.estimate)} [{_fmt(r.low)}, {_fmt(r.high)}]"


def size_words(claim: Claim) -> str:
    """The size word a claim's verdict hangs on: ``equal``, ``differ``, ``slight``,
    ``considerable``, or "" (a direction, a stated ratio, a code measure)."""
    if claim.magnitude:
        return claim.magnitude
    if claim.test == "value":  # "about seven minutes": equal to a stated number
        return "equal"
    return claim.test if claim.test in ("equal", "differ") else ""


def band_of(claim: Claim, rules: Rules) -> tuple[float, float]:
    """The band a claim is judged against: its own (stated) band for ``ratio``, and for
    ``equal``/``differ`` where the sentence states a number; else the size word's
    standard band (docs/statistics.md section 4)."""
    own = (
        (float(claim.band_low), float(claim.band_high))
        if claim.band_low is not None and claim.band_high is not None
        else None
    )
    if claim.magnitude == "considerable":
        return rules.considerable
    if claim.magnitude == "slight":
        return rules.slight
    if claim.test in ("ratio", "equal", "differ", "value") and own is not None:
        return own
    return rules.equal


def verdict(
    claim: Claim,
    effect: Effect,
    p: float,
    rules: Rules,
    band: tuple[float, float] | None = None,
) -> tuple[str, str]:
    """The verdict and its reason for one claim, given its measured effect and the
    (possibly adjusted) p-value. Pure: the rules of the module docstring, nothing else.
    ``band`` replaces the claim's band (the band-sensitivity table)."""
    if effect.missing:
        return INCONCLUSIVE, effect.missing
    r = effect.ratio
    if claim.test == "compare":
        return _compare_verdict(claim, r)
    band = band or band_of(claim, rules)
    if effect.fact:
        return _fact_verdict(claim, effect, band)
    if effect.n_min < rules.min_repetitions:
        return INCONCLUSIVE, (
            f"too few repetitions (n={effect.n_min}, need >= {rules.min_repetitions})"
        )
    if effect.constant and claim.test in ("direction", "interaction"):
        off = _constant_off_side(claim, effect)
        if off:
            return NOT_REPRODUCED, off
    if effect.constant and claim.test == "value":
        return _constant_value(effect, band)
    closed = not effect.open_ended or np.isnan([r.estimate, r.low, r.high]).any()
    if closed and not (np.isfinite(r.estimate) and np.isfinite(r.low) and np.isfinite(r.high)):
        return INCONCLUSIVE, f"effect or CI undefined ({_ci(r)})"
    return _interval_verdict(claim, _Reading.of(r, p, rules.alpha, band))


def _compare_verdict(claim: Claim, r: Interval) -> tuple[str, str]:
    """A comparison of two values with no test: which side of 1 their ratio lies."""
    if not np.isfinite(r.estimate):
        return INCONCLUSIVE, "not measured"
    holds = r.estimate > 1 if claim.relation == ">" else r.estimate < 1
    return (
        (REPRODUCED, f"a/b = {_fmt(r.estimate)} {claim.relation} 1")
        if holds
        else (NOT_REPRODUCED, f"a/b = {_fmt(r.estimate)}, not {claim.relation} 1")
    )


@dataclass(frozen=True)
class _Reading:
    """A defined ratio interval read against the significance level and the claim's band,
    with the texts the reasons quote."""

    r: Interval
    alpha: float
    sig: bool  # p below alpha
    inside: bool  # the interval lies inside the band
    outside: bool  # the interval lies entirely on one side of the band
    ptxt: str
    btxt: str

    @classmethod
    def of(cls, r: Interval, p: float, alpha: float, band: tuple[float, float]) -> _Reading:
        bl, bh = band
        return cls(
            r=r,
            alpha=alpha,
            sig=bool(np.isfinite(p) and p < alpha),
            inside=bl <= r.low and r.high <= bh,
            outside=r.high < bl or r.low > bh,
            ptxt=f"p = {_fmt(p)}",
            btxt=f"[{_fmt(bl)}, {_fmt(bh)}]",
        )


def _interval_verdict(claim: Claim, reading: _Reading) -> tuple[str, str]:
    """The verdict of a tested claim from its ratio's interval, p-value and band."""
    r, btxt = reading.r, reading.btxt
    if claim.test in ("direction", "interaction", "ratio"):
        up = claim.relation == ">"
        sign_ok = r.estimate > 1 if up else r.estimate < 1
        if claim.test == "ratio":
            return _ratio_verdict(reading, sign_ok)
        return _direction_verdict(claim, reading, sign_ok)
    if claim.test in ("equal", "value"):
        if reading.inside:
            return REPRODUCED, f"ratio {_ci(r)} inside the equivalence band {btxt}"
        if reading.outside:
            return NOT_REPRODUCED, f"ratio {_ci(r)} entirely outside the band {btxt}"
        return INCONCLUSIVE, f"ratio {_ci(r)} straddles the band {btxt}"
    if claim.test == "differ":
        if reading.sig and reading.outside:
            return REPRODUCED, f"ratio {_ci(r)} outside the band {btxt}, {reading.ptxt}"
        if reading.inside:
            return NOT_REPRODUCED, f"ratio {_ci(r)} inside the band {btxt}: no such gap"
        return INCONCLUSIVE, f"ratio {_ci(r)}, {reading.ptxt}: neither outside nor inside {btxt}"
    raise ValueError(f"unknown test {claim.test!r} in claim {claim.claim_id}")


def _ratio_verdict(reading: _Reading, sign_ok: bool) -> tuple[str, str]:
    """A claimed ratio: its band must overlap the interval, the difference be significant
    and on the claimed side."""
    r, btxt, ptxt = reading.r, reading.btxt, reading.ptxt
    if reading.outside:
        side = " although the direction holds" if reading.sig and sign_ok else ""
        return NOT_REPRODUCED, f"ratio {_ci(r)} excludes the claimed band {btxt}{side}"
    if reading.sig and sign_ok:
        return (
            REPRODUCED,
            f"ratio {_ci(r)} overlaps the claimed band {btxt}, {ptxt} < {reading.alpha}",
        )
    return INCONCLUSIVE, (
        f"ratio {_ci(r)} overlaps the claimed band but {ptxt} is not below {reading.alpha}"
    )


def _direction_verdict(claim: Claim, reading: _Reading, sign_ok: bool) -> tuple[str, str]:
    """A claimed direction (or interaction): significant on the claimed side, and of the
    claimed size when the claim gives one ("slight", "considerable")."""
    r, btxt, ptxt = reading.r, reading.btxt, reading.ptxt
    if reading.sig and not sign_ok:
        return NOT_REPRODUCED, f"ratio {_ci(r)} significant in the opposite direction, {ptxt}"
    if claim.magnitude == "considerable" and reading.inside:
        return NOT_REPRODUCED, (
            f"ratio {_ci(r)} inside {btxt}: not a considerable difference ({ptxt})"
        )
    if not reading.sig:
        return INCONCLUSIVE, f"ratio {_ci(r)}, {ptxt}: not significant at {reading.alpha}"
    if claim.magnitude == "slight":
        return _sized(r, ptxt, btxt, reading.inside, reading.outside, "slight", within=True)
    if claim.magnitude == "considerable":
        return _sized(r, ptxt, btxt, reading.inside, reading.outside, "considerable", within=False)
    return REPRODUCED, f"ratio {_ci(r)} on the claimed side of 1, {ptxt} < {reading.alpha}"


def _fact_verdict(claim: Claim, effect: Effect, band: tuple[float, float]) -> tuple[str, str]:
    """A value fixed by construction (docs/statistics.md section 4): the value itself holds
    the claim or does not; no p-value, no interval, no family."""
    r = effect.ratio.estimate
    if not np.isfinite(r):
        return INCONCLUSIVE, f"fact: a/b undefined ({_fmt(effect.measured_a)} / "\
            f"{_fmt(effect.measured_b)})"  # fmt: skip
    bl, bh = band
    btxt = f"[{_fmt(bl)}, {_fmt(bh)}]"
    # a fact has no interval to round into: enough digits to show how it differs from 1
    val = f"fact: a/b = {r:.7g} ({effect.measured_a:.7g} against {effect.measured_b:.7g})"
    in_band = bl <= r <= bh
    if claim.test in ("direction", "interaction", "ratio"):
        holds = r > 1 if claim.relation == ">" else r < 1
        if not holds:
            return NOT_REPRODUCED, f"{val}, not {claim.relation} 1"
        if claim.test == "ratio" or claim.magnitude == "slight":
            return (REPRODUCED, f"{val}, inside {btxt}") if in_band else (
                NOT_REPRODUCED, f"{val}, outside {btxt}")  # fmt: skip
        if claim.magnitude == "considerable":
            outside = r < bl or r > bh
            return (REPRODUCED, f"{val}, outside {btxt}") if outside else (
                NOT_REPRODUCED, f"{val}, inside {btxt}: not considerable")  # fmt: skip
        return REPRODUCED, f"{val} {claim.relation} 1"
    if claim.test == "equal":
        return (REPRODUCED, f"{val}, inside {btxt}") if in_band else (
            NOT_REPRODUCED, f"{val}, outside {btxt}")  # fmt: skip
    if claim.test == "differ":
        return (NOT_REPRODUCED, f"{val}, inside {btxt}") if in_band else (
            REPRODUCED, f"{val}, outside {btxt}")  # fmt: skip
    raise ValueError(f"unknown test {claim.test!r} in claim {claim.claim_id}")


def _sized(
    r: Interval, ptxt: str, btxt: str, inside: bool, outside: bool, word: str, within: bool
) -> tuple[str, str]:
    """A significant difference on the claimed side, said to be of a size: "slight" (the
    interval must lie inside the band) or "considerable" (entirely outside it)."""
    ok, bad = (inside, outside) if within else (outside, inside)
    where = "inside" if within else "outside"
    if ok:
        return REPRODUCED, f"ratio {_ci(r)} on the claimed side ({ptxt}) and {word}: {where} {btxt}"
    if bad:
        return NOT_REPRODUCED, (
            f"ratio {_ci(r)} on the claimed side ({ptxt}) but not {word}: "
            f"{'outside' if within else 'inside'} {btxt}"
        )
    return INCONCLUSIVE, f"ratio {_ci(r)} on the claimed side ({ptxt}); {word} or not is open"


def _constant_off_side(claim: Claim, effect: Effect) -> str:
    """Why a direction or interaction claim is not reproduced when every run of every
    compared cell gave one value (the interval is the point, docs/statistics.md section 4):
    the point is not on the claimed side (equal sides included, 0 against 0 too); empty
    when it is on the claimed side, which the permutation test then decides."""
    a, b, r = effect.measured_a, effect.measured_b, effect.ratio.estimate
    if a == b:
        return (
            f"every run of both sides measured the same value ({_fmt(a)}): no difference, "
            f"so not a/b {claim.relation} 1"
        )
    up = claim.relation == ">"
    if np.isfinite(r) and (r <= 1 if up else r >= 1):
        return (
            f"every run measured the same value per cell: a/b = {_fmt(r)}, not {claim.relation} 1"
        )
    return ""


def _constant_value(effect: Effect, band: tuple[float, float]) -> tuple[str, str]:
    """A ``value`` claim whose runs all measured one value (docs/statistics.md section 4):
    no spread, so no interval of the mean and no test (the p-value is undefined, never 0).
    A value outside the band is not reproduced (no run comes near the stated number and no
    spread leaves room for it); inside it, inconclusive (one value, however often, is no
    interval inside the band)."""
    r, (bl, bh) = effect.ratio.estimate, band
    said = f"every run measured {_fmt(effect.measured_a)} (measured / stated = {_fmt(r)})"
    if np.isfinite(r) and not bl <= r <= bh:
        return NOT_REPRODUCED, f"{said}, outside the band [{_fmt(bl)}, {_fmt(bh)}]: no spread"
    return INCONCLUSIVE, f"no spread: {said}; no interval of the mean to place in the band"


def published_consistent(claim: Claim, rules: Rules | None = None) -> bool | None:
    """Whether the documents' own numbers (``published_ratio``) satisfy the claim's test;
    None when the documents print no number for it."""
    ref = claim.published_ratio
    if ref is None or not np.isfinite(ref):
        return None
    bl, bh = band_of(claim, rules or Rules())
    in_band = bool(bl <= ref <= bh)
    side = ref > 1 if claim.relation == ">" else ref < 1
    if claim.test in ("direction", "interaction", "compare"):
        if claim.magnitude == "slight":
            return side and in_band
        if claim.magnitude == "considerable":
            return side and not in_band
        return side
    if claim.test == "differ":
        return not in_band
    return in_band  # ratio and equal


# --------------------------------------------------------------------------- effects


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


# --------------------------------------------------------------------------- the table


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


def test_key(c: Claim) -> tuple[Any, ...]:
    """What a claim tests, whatever the sentence: claims with the same key are one test
    (the same comparison said in several places, or with its sides swapped)."""
    if c.test == "value":  # one cell against a stated number
        return (c.scope, c.metric, "value", c.a_style, tuple(c.a_users), c.published_number)
    sides = sorted([(c.a_style, tuple(c.a_users)), (c.b_style, tuple(c.b_users))])
    kind = "interaction" if c.test == "interaction" else "compare" if c.test == "compare" else "ab"
    if c.b_metric and c.b_metric != c.metric:  # two measures: the sides keep their metric
        sides = sorted(
            [(c.metric, c.a_style, tuple(c.a_users)), (c.b_metric, c.b_style, tuple(c.b_users))]
        )  # type: ignore[list-item]
        return (c.scope, "two-metrics", kind, *sides, c.from_users, c.to_users)
    return (c.scope, c.metric, kind, *sides, c.from_users, c.to_users)


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


def distinct_tests(table: pd.DataFrame) -> pd.DataFrame:
    """One row per distinct test of a claims table (docs/statistics.md section 5): claims with
    the same test key, kind and size word count once."""
    if table.empty:
        return table
    return table.drop_duplicates(_test_columns(table))


def _test_columns(table: pd.DataFrame) -> list[str]:
    """The columns that name a distinct test (a table without test keys: each row one)."""
    if "test_key" not in table.columns:
        return ["claim_id"]
    return ["test_key"] + [c for c in ("test", "magnitude") if c in table.columns]


def _key_text(v: Any) -> str:
    return "" if pd.isna(v) else str(v)


def claim_ids(table: pd.DataFrame, row: pd.Series, verdict: str | None = None) -> str:
    """The claim rows (ids) of one distinct test, e.g. 'T01a, P01a': the rows of ``table``
    with ``row``'s test key, kind and size word (and ``verdict``, when given)."""
    cols = _test_columns(table)
    want = tuple(_key_text(row[c]) for c in cols)
    keys = zip(*(table[c].tolist() for c in cols), strict=True)
    verdicts = table["verdict"].tolist() if verdict is not None else [None] * len(table)
    ids = (
        str(i)
        for i, k, v in zip(table["claim_id"].tolist(), keys, verdicts, strict=True)
        if tuple(_key_text(x) for x in k) == want and (verdict is None or v == verdict)
    )
    return ", ".join(dict.fromkeys(ids))


def tally(table: pd.DataFrame, evidence: str = TEST) -> dict[str, int]:
    """Verdicts counted over distinct tests of one kind of evidence: ``test`` (measured,
    the default), ``fact`` (fixed by construction, counted apart) or ``code``. A table
    written before the ``evidence`` column counts every row as a test."""
    d = distinct_tests(table)
    if "evidence" in d.columns:
        d = d[d["evidence"].fillna(TEST).replace("", TEST) == evidence]
    elif evidence != TEST:
        return {}
    if d.empty:
        return {}
    return {str(k): int(v) for k, v in d["verdict"].value_counts().items()}


def statement_verdicts(table: pd.DataFrame) -> pd.DataFrame:
    """One row per published statement: ``reproduced`` when every part is, ``not
    reproduced`` when any part is not, otherwise ``inconclusive``; with the parts' counts."""
    out = []
    for sid, g in table.groupby("statement_id", sort=False):
        counts = g["verdict"].value_counts()
        if (g["verdict"] == REPRODUCED).all():
            v = REPRODUCED
        elif (g["verdict"] == NOT_REPRODUCED).any():
            v = NOT_REPRODUCED
        else:
            v = INCONCLUSIVE
        out.append(
            {
                "statement_id": sid,
                "source": g["source"].iloc[0],
                "quote": g["quote"].iloc[0],
                "parts": len(g),
                **{k: int(counts.get(k, 0)) for k in VERDICTS},
                "verdict": v,
            }
        )
    return pd.DataFrame(out)


def band_sensitivity(table: pd.DataFrame) -> pd.DataFrame:
    """The band-sensitivity table (docs/statistics.md section 4): one row per distinct test
    whose verdict hangs on a size word (equal, differ, slight, considerable) judged on the
    standard band, with its verdict again at +-5, 10 and 20%, and whether any differs."""
    cols = [f"verdict_{round(x * 100)}pct" for x in SENSITIVITY]
    if table.empty or any(c not in table.columns for c in cols):
        return pd.DataFrame()
    d = distinct_tests(table)
    d = d[d[cols[0]].fillna("").astype(str) != ""]
    out = pd.DataFrame(
        {
            "claims": [claim_ids(table, r) for _, r in d.iterrows()],
            "comparison": d["comparison"],
            "size_word": d["size_word"],
            "measured": d["measured"],
            "band": d["band"],
            "verdict": d["verdict"],
            **{c.replace("verdict_", "at_"): d[c] for c in cols},
        }
    )
    out["band_decides"] = [
        any(r[c.replace("verdict_", "at_")] != r["verdict"] for c in cols)
        for _, r in out.iterrows()
    ]
    return out.reset_index(drop=True)
