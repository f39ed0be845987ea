"""Tests between two samples of per-run values and their adjustment: Welch's t, the exact
permutation test, Mann-Whitney U, Cliff's delta, Holm (docs/statistics.md, section 3)."""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from ipclab.stats.intervals import Interval, log_ratio_interval
from ipclab.stats.samples import ArrayLike, _clean


def permutation_p(
    a: ArrayLike, b: ArrayLike, max_exact: int = 1_000_000, seed: int = 0, n_random: int = 20_000
) -> float:
    """Two-sided permutation p-value of the difference of means: the share of relabellings
    whose |difference| is at least the observed one, the observed labelling included (so
    never 0: 3 vs 3 gives at least 2/20 = 0.1). Exact when there are at most ``max_exact``
    labellings (10 against 10 has 184,756), else ``n_random`` random ones, counted as
    (k + 1) / (B + 1)."""
    x, y = _clean(a), _clean(b)
    if len(x) == 0 or len(y) == 0:
        return float("nan")
    pooled = np.concatenate([x, y])
    n, k = len(pooled), len(x)
    observed = abs(x.mean() - y.mean())
    tol = 1e-12 * max(1.0, float(np.abs(pooled).max()))
    total = pooled.sum()
    if math.comb(n, k) <= max_exact:
        combos = itertools.combinations(range(n), k)
        hits = count = 0
        while chunk := list(itertools.islice(combos, 100_000)):
            sa = pooled[np.array(chunk)].sum(axis=1)
            diffs = np.abs(sa / k - (total - sa) / (n - k))
            hits += int(np.sum(diffs >= observed - tol))
            count += len(chunk)
        return hits / count
    rng = np.random.default_rng(seed)
    perm = np.argsort(rng.random((n_random, n)), axis=1)[:, :k]
    sa = pooled[perm].sum(axis=1)
    diffs = np.abs(sa / k - (total - sa) / (n - k))
    return float((np.sum(diffs >= observed - tol) + 1) / (n_random + 1))


def _stratum_contributions(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """Every labelling of one stratum's runs: its weighted difference of means (weight
    n_a n_b / (n_a + n_b)), and the observed one."""
    pooled = np.concatenate([x, y])
    n, k = len(pooled), len(x)
    w = k * (n - k) / n
    combos = np.array(list(itertools.combinations(range(n), k)))
    sa = pooled[combos].sum(axis=1)
    total = pooled.sum()
    return w * (sa / k - (total - sa) / (n - k)), w * (x.mean() - y.mean())


def stratified_permutation_p(
    strata: Sequence[tuple[ArrayLike, ArrayLike]],
    max_exact: int = 1_000_000,
    seed: int = 0,
    n_random: int = 20_000,
) -> float:
    """Two-sided permutation p-value of two cells' means with the runs permuted **within**
    strata (sittings, docs/statistics.md section 7): the statistic is the sum over strata of
    n_a n_b / (n_a + n_b) x (mean a - mean b); the share of labellings whose |statistic| is
    at least the observed one. One stratum: exactly :func:`permutation_p`. Exact up to
    ``max_exact`` labellings in all, else ``n_random`` random ones, (k + 1) / (B + 1)."""
    pairs = [(_clean(a), _clean(b)) for a, b in strata]
    pairs = [(a, b) for a, b in pairs if len(a) and len(b)]
    if not pairs:
        return float("nan")
    if len(pairs) == 1:
        return permutation_p(pairs[0][0], pairs[0][1], max_exact, seed, n_random)
    scale = max(1.0, max(float(np.abs(np.concatenate([a, b])).max()) for a, b in pairs))
    tol = 1e-12 * scale
    if math.prod(math.comb(len(a) + len(b), len(a)) for a, b in pairs) <= max_exact:
        dist, observed = np.zeros(1), 0.0
        for a, b in pairs:
            c, obs = _stratum_contributions(a, b)
            dist = (dist[:, None] + c[None, :]).ravel()
            observed += obs
        return float(np.mean(np.abs(dist) >= abs(observed) - tol))
    rng = np.random.default_rng(seed)
    stat, observed = np.zeros(n_random), 0.0
    for a, b in pairs:
        pooled = np.concatenate([a, b])
        n, k = len(pooled), len(a)
        w = k * (n - k) / n
        perm = np.argsort(rng.random((n_random, n)), axis=1)[:, :k]
        sa = pooled[perm].sum(axis=1)
        stat += w * (sa / k - (pooled.sum() - sa) / (n - k))
        observed += w * (a.mean() - b.mean())
    return float((np.sum(np.abs(stat) >= abs(observed) - tol) + 1) / (n_random + 1))


def cliffs_delta(x: ArrayLike, y: ArrayLike) -> float:
    """Cliff's delta: P(X > Y) - P(X < Y) over all pairs, in [-1, 1]."""
    a, b = _clean(x), _clean(y)
    if len(a) == 0 or len(b) == 0:
        return float("nan")
    d = np.sign(a[:, None] - b[None, :])
    return float(d.mean())


def cliffs_delta_ci(
    x: ArrayLike, y: ArrayLike, *, confidence: float = 0.95, n_resamples: int = 9999, seed: int = 0
) -> Interval:
    """Cliff's delta with a percentile bootstrap CI (samples resampled independently)."""
    a, b = _clean(x), _clean(y)
    est = cliffs_delta(a, b)
    if min(len(a), len(b)) < 2:
        return Interval(est, float("nan"), float("nan"), min(len(a), len(b)), confidence)

    def stat(u: np.ndarray, v: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.sign(u[..., :, None] - v[..., None, :]).mean(axis=(-2, -1))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sps.bootstrap(
            (a, b),
            stat,
            confidence_level=confidence,
            n_resamples=n_resamples,
            method="percentile",
            vectorized=True,
            paired=False,
            rng=np.random.default_rng(seed),
        )
    return Interval(
        est,
        float(res.confidence_interval.low),
        float(res.confidence_interval.high),
        min(len(a), len(b)),
        confidence,
    )


@dataclass(frozen=True)
class Comparison:
    """Two samples of per-run values compared."""

    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    ratio: Interval  # mean_a / mean_b, t interval on the log scale (log_ratio_interval)
    diff: float  # mean_a - mean_b
    mannwhitney_u: float
    mannwhitney_p: float
    welch_t: float
    welch_p: float  # NaN when both samples are constant (no variance: no t test)
    cliffs_delta: Interval  # the estimate; no interval (none covers at n = 3-5)
    permutation_p: float = float("nan")  # exact permutation test of the means

    @property
    def p(self) -> float:
        """The primary p-value (docs/statistics.md): Welch's t, or the exact permutation
        test where Welch's is undefined (constant samples)."""
        return self.welch_p if np.isfinite(self.welch_p) else self.permutation_p


def compare_samples(
    a: ArrayLike, b: ArrayLike, *, confidence: float = 0.95, n_resamples: int = 9999, seed: int = 0
) -> Comparison:
    """Welch's t (two-sided; the primary test), the exact permutation test of the means,
    Mann-Whitney U (two-sided, exact for small samples without ties), Cliff's delta, and
    the ratio of means with its t interval on the log scale. Both samples constant: no t
    test (NaN); the permutation test gives the p-value (never 0)."""
    x, y = _clean(a), _clean(b)
    nan = float("nan")
    u, pu, t, pt = nan, nan, nan, nan
    if len(x) and len(y):
        r = sps.mannwhitneyu(x, y, alternative="two-sided")
        u, pu = float(r.statistic), float(r.pvalue)
    if len(x) > 1 and len(y) > 1 and (np.ptp(x) > 0 or np.ptp(y) > 0):
        r2 = sps.ttest_ind(x, y, equal_var=False)
        t, pt = float(r2.statistic), float(r2.pvalue)
    ratio = log_ratio_interval([(1, [x]), (-1, [y])], confidence)
    return Comparison(
        n_a=len(x),
        n_b=len(y),
        mean_a=float(x.mean()) if len(x) else nan,
        mean_b=float(y.mean()) if len(y) else nan,
        ratio=ratio,
        diff=float(x.mean() - y.mean()) if len(x) and len(y) else nan,
        mannwhitney_u=u,
        mannwhitney_p=pu,
        welch_t=t,
        welch_p=pt,
        cliffs_delta=Interval(cliffs_delta(x, y), nan, nan, min(len(x), len(y)), confidence),
        permutation_p=permutation_p(x, y, seed=seed),
    )


def holm(pvalues: ArrayLike) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (NaN stays NaN)."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full_like(p, np.nan)
    ok = np.isfinite(p)
    q = p[ok]
    m = len(q)
    if m == 0:
        return out
    order = np.argsort(q)
    adj = np.maximum.accumulate((m - np.arange(m)) * q[order])
    res = np.empty(m)
    res[order] = np.minimum(adj, 1.0)
    out[ok] = res
    return out
