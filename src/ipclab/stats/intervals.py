"""Confidence intervals of per-run values: Student-t, the t interval of a log ratio
(ratios of means, averages over loads, interactions) and the bootstrap; and the one text of
an interval, ``estimate [low, high]`` (:func:`interval_text`), that every table, README and
report prints.

The interval methods of docs/statistics.md (section 2). Per-run values of a cell are means
over thousands of requests, so close to normal; the t intervals cover at the n used
(tests/test_coverage.py simulates n = 3 and 5, normal and lognormal). The bootstrap ones are
kept for comparison. Every random step takes a ``seed``."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as sps

from ipclab.stats.samples import ArrayLike, _clean


@dataclass(frozen=True)
class Interval:
    """A point estimate with a confidence interval (NaN bounds when it cannot be computed)."""

    estimate: float
    low: float
    high: float
    n: int
    confidence: float = 0.95
    method: str = "percentile"
    p_value: float = float("nan")

    def contains(self, value: float) -> bool:
        return bool(self.low <= value <= self.high)

    def __str__(self) -> str:
        return interval_text(self.estimate, self.low, self.high, missing=None, no_interval=None)


def interval_text(
    estimate: object,
    low: object,
    high: object,
    number: str | Callable[[float], str] = ".4g",
    *,
    missing: str | None = "-",
    no_interval: str | None = "",
    open_ends: bool = False,
    point: bool = False,
) -> str:
    """``estimate [low, high]``, e.g. ``1.23 [1.10, 1.40]``: each number by ``number``, a
    format spec (``".4g"``, ``".2f"``, ``",.0f"``: thousands separated) or a function.

    A value is missing when it is None, NaN, not a number, or +-inf (unless ``open_ends``:
    then an infinite estimate or end is a value, e.g. the open upper end of a censored
    MTTF). Without an estimate: ``missing`` (None: the three printed as they are, "nan"
    included). With an end missing: the estimate alone followed by ``no_interval`` (e.g.
    ``" (1 run)"``; None: the ends printed as they are). ``point``: the estimate alone when
    its interval prints as the estimate itself (a measure with no spread)."""
    e, lo, hi = (_as_float(x) for x in (estimate, low, high))

    def text(x: float) -> str:
        return number(x) if callable(number) else format(x, number)

    def absent(x: float) -> bool:
        return math.isnan(x) or (not open_ends and math.isinf(x))

    whole = f"{text(e)} [{text(lo)}, {text(hi)}]"
    if absent(e):
        return whole if missing is None else missing
    if absent(lo) or absent(hi):
        return whole if no_interval is None else text(e) + no_interval
    if point and text(lo) == text(hi) == text(e):
        return text(e)
    return whole


def _as_float(x: object) -> float:
    try:
        return float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan


def bootstrap_means(
    samples: Sequence[ArrayLike],
    combine: Callable[[list[np.ndarray]], np.ndarray],
    *,
    confidence: float = 0.95,
    n_resamples: int = 9999,
    method: str = "percentile",
    seed: int = 0,
    null: float | None = None,
) -> Interval:
    """Bootstrap CI of a statistic that is a function of the means of independent samples.

    ``combine`` receives the list of sample means (arrays, vectorised over resamples) and
    returns the statistic, e.g. ``lambda m: m[0] / m[1]`` for a ratio of means. Each sample
    is resampled independently (scipy.stats.bootstrap, ``paired=False``). With ``null``, the
    result's ``p_value`` is the two-sided bootstrap p-value: twice the smaller share of
    resampled statistics on either side of ``null``, counted as (k + 1) / (B + 1) so it is
    never 0 (the p-value of the inverted percentile interval). Samples with fewer than 2
    finite values give NaN bounds.
    """
    xs = [_clean(s) for s in samples]
    if any(len(x) == 0 for x in xs):
        return Interval(
            float("nan"), float("nan"), float("nan"), min(len(x) for x in xs), confidence, method
        )
    est = float(combine([np.asarray(x.mean()) for x in xs]))
    n = min(len(x) for x in xs)
    if n < 2:
        return Interval(est, float("nan"), float("nan"), n, confidence, method)

    def stat(*arrays: np.ndarray, axis: int = -1) -> np.ndarray:
        return combine([a.mean(axis=axis) for a in arrays])

    def run(m: str) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return sps.bootstrap(
                tuple(xs),
                stat,
                confidence_level=confidence,
                n_resamples=n_resamples,
                method=m,
                vectorized=True,
                paired=False,
                rng=np.random.default_rng(seed),
            )

    res = run(method)
    used = method
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if method.lower() == "bca" and not (np.isfinite(lo) and np.isfinite(hi)):
        res, used = run("percentile"), "percentile (BCa degenerate)"
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if not np.isfinite(lo) and np.all(res.bootstrap_distribution == est):
        lo = hi = est
    p = float("nan")
    if null is not None:
        d = np.asarray(res.bootstrap_distribution, dtype=float)
        b = len(d)
        tail = min(np.sum(d <= null), np.sum(d >= null))
        p = float(min(1.0, 2 * (tail + 1) / (b + 1)))
    return Interval(est, lo, hi, n, confidence, used, p)


def t_interval(sample: ArrayLike, confidence: float = 0.95) -> Interval:
    """Student-t interval of the mean of per-run values (n >= 2; a constant sample gives
    the point itself)."""
    x = _clean(sample)
    nan = float("nan")
    if len(x) == 0:
        return Interval(nan, nan, nan, 0, confidence, "t")
    m = float(x.mean())
    if len(x) < 2:
        return Interval(m, nan, nan, len(x), confidence, "t")
    se = float(x.std(ddof=1)) / math.sqrt(len(x))
    q = float(sps.t.ppf(0.5 + confidence / 2, len(x) - 1))
    return Interval(m, m - q * se, m + q * se, len(x), confidence, "t")


def log_ratio_interval(
    terms: Sequence[tuple[int, Sequence[ArrayLike]]], confidence: float = 0.95
) -> Interval:
    """Interval and p-value (against 1) of a product of sums of means, on the log scale.

    ``terms`` is ``[(sign, [samples...]), ...]``: the statistic is the product over terms of
    (sum of the samples' means) ** sign, e.g. a ratio of two means ``[(1, [a]), (-1, [b])]``,
    the ratio of averages over loads ``[(1, [a1, a2]), (-1, [b1, b2])]``, or an interaction
    (growth of a over growth of b) ``[(1, [a2]), (-1, [a1]), (-1, [b2]), (1, [b1])]``.
    Delta method: Var(log S) = sum Var(mean_i) / S**2 over the samples of a term; terms add;
    degrees of freedom by Welch-Satterthwaite; the p-value is the t test of log(statistic)
    = 0. Every sample needs n >= 2 (else NaN bounds); when every sample is constant the
    interval is the point and the p-value NaN (an exact permutation test is the test then).
    """
    nan = float("nan")
    groups = [[_clean(s) for s in samples] for _, samples in terms]
    n = min((len(x) for g in groups for x in g), default=0)
    if n == 0:
        return Interval(nan, nan, nan, 0, confidence, "t (log scale)")
    if all(np.ptp(x) == 0 for g in groups for x in g):  # no variance anywhere: the point
        with np.errstate(divide="ignore", invalid="ignore"):
            est = float(np.prod([np.float64(sum(float(x[0]) for x in g)) ** s for (s, _), g in
                                 zip(terms, groups, strict=True)]))  # fmt: skip
        return Interval(est, est, est, n, confidence, "t (log scale)")
    log_est, parts = 0.0, []
    for (sign, _), g in zip(terms, groups, strict=True):
        total = sum(float(x.mean()) for x in g)
        if total <= 0:
            return Interval(nan, nan, nan, n, confidence, "t (log scale)")
        log_est += sign * math.log(total)
        if n >= 2:
            parts += [(float(x.var(ddof=1)) / len(x) / total**2, len(x)) for x in g]
    est = math.exp(log_est)
    if n < 2:
        return Interval(est, nan, nan, n, confidence, "t (log scale)")
    v = sum(c for c, _ in parts)
    if v == 0:
        return Interval(est, est, est, n, confidence, "t (log scale)")
    df = v**2 / sum(c**2 / (k - 1) for c, k in parts if c > 0)
    q = float(sps.t.ppf(0.5 + confidence / 2, df))
    se = math.sqrt(v)
    p = float(2 * sps.t.sf(abs(log_est) / se, df))
    return Interval(
        est, est * math.exp(-q * se), est * math.exp(q * se), n, confidence, "t (log scale)", p
    )


def bootstrap_ci(
    sample: ArrayLike,
    statistic: Callable[..., Any] = np.mean,
    *,
    confidence: float = 0.95,
    n_resamples: int = 9999,
    method: str = "percentile",
    seed: int = 0,
) -> Interval:
    """Bootstrap CI of ``statistic`` (a numpy reduction taking ``axis``) of one sample.

    ``method`` is ``"percentile"`` or ``"BCa"`` (falls back to percentile when BCa is
    undefined, e.g. for constant data). Fewer than 2 finite values give NaN bounds.
    """
    x = _clean(sample)
    if len(x) == 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0, confidence, method)
    est = float(statistic(x, axis=-1))
    if len(x) < 2:
        return Interval(est, float("nan"), float("nan"), len(x), confidence, method)
    if np.ptp(x) == 0:
        return Interval(est, est, est, len(x), confidence, method)

    def run(m: str) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return sps.bootstrap(
                (x,),
                statistic,
                confidence_level=confidence,
                n_resamples=n_resamples,
                method=m,
                vectorized=True,
                rng=np.random.default_rng(seed),
            )

    res, used = run(method), method
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        res, used = run("percentile"), f"percentile ({method} degenerate)"
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return Interval(est, lo, hi, len(x), confidence, used)
