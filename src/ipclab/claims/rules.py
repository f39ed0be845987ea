"""The verdict rules of docs/statistics.md: the verdicts, the bands, a claim's band and
size words, and the verdict of one effect; what a claim tests (:func:`test_key`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ipclab.paths import REPO_ROOT
from ipclab.published import Claim
from ipclab.stats import Interval, interval_text
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

#: the rules as written (the document is the rule: the report quotes its table of kinds,
#: :func:`kinds_table`, and nothing in the code restates it)
STATISTICS_DOC = REPO_ROOT / "docs" / "statistics.md"
KINDS_SECTION = "## 4. Sentences and their rules"

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


def _fmt(x: float) -> str:
    """4 significant digits; an open end of an interval (censored data) reads inf."""
    return f"{x:.4g}" if np.isfinite(x) else "nan" if np.isnan(x) else str(x)


def _ci(r: Interval) -> str:
    """The estimate alone without an interval (too few runs); an open end (censored data)
    reads inf; an undefined estimate shows its interval as it is (``nan [nan, nan]``)."""
    return interval_text(r.estimate, r.low, r.high, missing=None, open_ends=True)


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


def kinds_table(doc: Path = STATISTICS_DOC) -> list[list[str]]:
    """The first table of the document's section :data:`KINDS_SECTION` (each kind of
    sentence, and when its verdict is reproduced, not reproduced or otherwise), header
    first, as Markdown cells; empty when the document or the section is missing."""
    try:
        text = doc.read_text(encoding="utf-8")
    except OSError:
        return []
    start = text.find(KINDS_SECTION)
    if start < 0:
        return []
    rows: list[list[str]] = []
    for line in text[start:].splitlines()[1:]:
        if line.startswith("## "):
            break
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(set(c) <= set("-: ") for c in cells):
                rows.append(cells)
        elif rows:
            break
    return rows
