"""Times to failure with the run as the unit (docs/statistics.md section 6): each run of
method 1 gives one time, to its failure or to its cap (censored), and these functions test
and bound them with or without the exponential model, and check that model on the runs.

* :func:`run_outcome`: a run's time to failure from its cycles, start-up failures (a
  failure before the load was fully up: ``kind`` = ``startup``, or an onset before the
  ramp's end) set apart; its A = up / (up + down) over the cycles that count (a run that
  survived its cap: its whole time up, A = 1).
* :func:`exponential_check`: is each compared cell's time to failure exponential? The
  likelihood ratio of a Weibull (a shape of its own per cell) against the exponential,
  summed over the cells, its p-value by a parametric bootstrap under the fitted
  exponentials with the runs' own caps. Runs that fail at once or survive the cap (a
  decreasing hazard), or that all fail at one instant (no spread), reject it; a cell with
  no failure cannot be checked, and the model is then not used.
* :func:`restricted_test`: no model. The exact permutation test of the two cells' mean
  time to failure restricted to the cap (each run's time, a censored one at its cap: with
  censoring only at a common cap this is the Kaplan-Meier restricted mean), its interval
  the ratios the same test does not reject (scale model), its floor 2 / C(2n, n).
* :func:`model_free_bounds`: an MTTF against a stated number with no model: a lower bound
  only, cap x the exact lower bound of the share of runs that outlived the cap (Markov:
  MTTF >= cap x P(T > cap)); with every run failed, the t interval of the mean.
* :func:`runs_needed_exponential`, :func:`runs_needed_restricted`: runs per cell for 80%
  power at the published MTTFs, a capped run failing only with probability
  1 - exp(-cap / MTTF).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as sps
from scipy.special import logsumexp

from ipclab.availability.model import Cycle

STARTUP = "startup"  # a failure's kind: before the load was fully up, not a time to failure
CHECK_ALPHA = 0.05  # the exponential model is rejected below this p
N_BOOT = 999  # parametric bootstrap replicates of the model check
LOG_SHAPES = np.linspace(-5.0, 5.0, 401)  # the Weibull shapes the check maximises over
MAX_EXACT = 200_000  # labellings enumerated; beyond, random ones (as ipclab.stats)
N_RANDOM = 20_000


# --------------------------------------------------------------------------- one run


@dataclass(frozen=True)
class RunOutcome:
    """One method-1 run: its time to failure (or to its cap, ``failed`` False), None when
    every failure was a start-up one; ``startup`` start-up failures set apart; up and down
    seconds over the cycles that count (A = up / (up + down))."""

    time_s: float | None
    failed: bool
    cap_s: float
    startup: int
    up_s: float
    down_s: float
    recovered: bool = False
    restart_to_recovery_s: float | None = None

    @property
    def availability(self) -> float:
        total = self.up_s + self.down_s
        return self.up_s / total if total > 0 else math.nan


def kind_of(cycle: Cycle, ramp_end: float | None = None) -> str:
    """A failed cycle's kind: the detector's (``cycle.kind``) where it records one, else
    ``startup`` when its onset came before ``ramp_end`` (the load fully up), else ""."""
    kind = getattr(cycle, "kind", None)
    if isinstance(kind, str) and kind:
        return kind
    if cycle.failed and ramp_end is not None and cycle.t_fail is not None:
        return STARTUP if cycle.t_fail < ramp_end else ""
    return ""


def run_outcome(cycles: Sequence[Cycle], cap_s: float, ramp_end: float | None = None) -> RunOutcome:
    """A run's time to failure from its cycles (method 1: the first cycle that is not a
    start-up failure) and its up and down time over the cycles that count."""
    counted = [c for c in cycles if kind_of(c, ramp_end) != STARTUP]
    startup = len(cycles) - len(counted)
    up = float(sum(c.ttf_s for c in counted))
    down = float(sum(c.ttr_s or 0.0 for c in counted if c.failed))
    if not counted:
        return RunOutcome(None, False, cap_s, startup, up, down)
    first = counted[0]
    # a censored time is censored where it ended (the cap, or an earlier end of observation)
    cap = cap_s if first.failed else min(cap_s, first.ttf_s)
    return RunOutcome(
        first.ttf_s, first.failed, cap, startup, up, down, first.recovered,
        first.restart_to_recovery_s if first.recovered else None,
    )  # fmt: skip


# --------------------------------------------------------------------------- one cell


@dataclass(frozen=True)
class CellTimes:
    """The runs of one cell: each run's time (to failure, or to its cap) and whether it
    failed, and each run's cap (where it would have been censored)."""

    name: str
    times: np.ndarray
    failed: np.ndarray
    caps: np.ndarray

    @classmethod
    def of(cls, name: str, times: Any, failed: Any, caps: Any) -> CellTimes:
        t = np.asarray(times, dtype=float)
        f = np.asarray(failed, dtype=bool)
        c = np.broadcast_to(np.asarray(caps, dtype=float), t.shape).copy()
        if t.shape != f.shape or (t <= 0).any():
            raise ValueError(f"{name}: times must be positive, one failed flag per time")
        return cls(name, t, f, c)

    @property
    def n(self) -> int:
        return len(self.times)

    @property
    def failures(self) -> int:
        return int(self.failed.sum())

    @property
    def time_on_test(self) -> float:
        return float(self.times.sum())

    def pattern(self) -> str:
        """How its runs ended, for a reason: failures (and when), survivals of the cap."""
        f = self.times[self.failed]
        lo, hi = (f"{x:.3g}" for x in (f.min(), f.max())) if len(f) else ("", "")
        when = "" if not len(f) else f" at {lo} s" if lo == hi else f" at {lo}-{hi} s"
        alive = self.n - self.failures
        return f"{self.name}: {self.failures} of {self.n} failed{when}, {alive} outlived the cap"


def _profile(log_t: np.ndarray, failed: np.ndarray) -> np.ndarray:
    """The Weibull log-likelihood of one cell, maximised over its scale, at every shape of
    :data:`LOG_SHAPES`; rows are replicates (``log_t`` and ``failed``: (B, n))."""
    k = np.exp(LOG_SHAPES)
    r = failed.sum(axis=1).astype(float)[:, None]  # (B, 1)
    log_sum = logsumexp(k[None, :, None] * log_t[:, None, :], axis=2)  # log sum t^k: (B, K)
    s_log = (log_t * failed).sum(axis=1)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        r_log_r = np.where(r > 0, r * np.log(np.where(r > 0, r, 1.0)), 0.0)
    ll = r * np.log(k)[None] + r_log_r - r * log_sum + (k[None] - 1) * s_log - r
    return np.where(r > 0, ll, 0.0)


def weibull_lr(log_t: np.ndarray, failed: np.ndarray) -> np.ndarray:
    """Twice the log-likelihood ratio of a Weibull against the exponential (shape 1) for
    one cell, per replicate row."""
    ll = _profile(log_t, failed)
    one = int(np.argmin(np.abs(LOG_SHAPES)))
    return 2.0 * (ll.max(axis=1) - ll[:, one])


# --------------------------------------------------------------------------- the model check


@dataclass(frozen=True)
class ModelCheck:
    """Whether the compared cells' runs support the exponential model: the check's p-value
    (NaN where it cannot be made), and the sentence that says what decided."""

    supported: bool
    p_value: float
    statistic: float
    text: str


def exponential_check(
    cells: Sequence[CellTimes], n_boot: int = N_BOOT, seed: int = 0
) -> ModelCheck:
    """The exponential model checked on the runs of ``cells``: every cell needs a failure
    (else the model cannot be checked and is not used), and the summed Weibull likelihood
    ratio (each cell its own shape) must not be significant at :data:`CHECK_ALPHA` under a
    parametric bootstrap (each cell's fitted exponential, each run censored at its cap)."""
    pattern = "; ".join(c.pattern() for c in cells)
    empty = [c.name for c in cells if c.failures == 0]
    if empty:
        return ModelCheck(False, math.nan, math.nan, (
            f"exponential model not used: no failure in {', '.join(empty)}, so the runs "
            f"cannot support it ({pattern})"
        ))  # fmt: skip
    observed = float(sum(weibull_lr(np.log(c.times)[None], c.failed[None])[0] for c in cells))
    rng = np.random.default_rng(seed)
    total = np.zeros(n_boot)
    for c in cells:
        t = rng.exponential(c.time_on_test / c.failures, size=(n_boot, c.n))
        failed = t < c.caps[None]
        total += weibull_lr(np.log(np.minimum(t, c.caps[None])), failed)
    p = float((1 + np.sum(total >= observed - 1e-9)) / (n_boot + 1))
    ok = p >= CHECK_ALPHA
    word = "not rejected" if ok else "rejected"
    return ModelCheck(ok, p, observed, (
        f"exponential model {word} by the runs (Weibull shape test, likelihood ratio "
        f"{observed:.3g}, bootstrap p = {p:.3g}; {pattern})"
    ))  # fmt: skip


# --------------------------------------------------------------------------- no model


def exact_floor(n_a: int, n_b: int) -> float:
    """The smallest two-sided p of an exact permutation test of two means at ``n_a``
    against ``n_b`` runs: 2 / C(n, n_a) with equal cells (a labelling and its mirror), else
    1 / C(n, n_a) (as ``ipclab.stats.permutation_p``)."""
    total = math.comb(n_a + n_b, n_a)
    if total > MAX_EXACT:
        return 1.0 / (N_RANDOM + 1)
    return min(1.0, (2.0 if n_a == n_b else 1.0) / total)


def floor_runs(level: float, n_max: int = 1000) -> int | None:
    """The fewest runs per cell (equal cells) whose exact floor lies below ``level``."""
    return next((n for n in range(2, n_max + 1) if exact_floor(n, n) < level), None)


def _labellings(n: int, k: int, seed: int) -> tuple[np.ndarray, bool]:
    """Every choice of ``k`` of ``n`` runs as the first cell (exact), or random ones."""
    if math.comb(n, k) <= MAX_EXACT:
        return np.array(list(itertools.combinations(range(n), k)), dtype=int), True
    rng = np.random.default_rng(seed)
    return np.argsort(rng.random((N_RANDOM, n)), axis=1)[:, :k], False


def _perm_p(a: np.ndarray, b: np.ndarray, idx: np.ndarray, exact: bool) -> float:
    pooled = np.concatenate([a, b])
    k, n = len(a), len(pooled)
    observed = abs(a.mean() - b.mean())
    tol = 1e-12 * max(1.0, float(np.abs(pooled).max()))
    sa = pooled[idx].sum(axis=1)
    hits = int(np.sum(np.abs(sa / k - (pooled.sum() - sa) / (n - k)) >= observed - tol))
    return hits / len(idx) if exact else (hits + 1) / (len(idx) + 1)


@dataclass(frozen=True)
class RestrictedTest:
    """The model-free test of two cells: their mean times restricted to the cap, the ratio
    a / b with the interval the same test inverts, its two-sided p and floor."""

    mean_a: float
    mean_b: float
    ratio: float
    low: float
    high: float
    p_value: float
    floor: float
    cap_s: float


def restricted_test(
    a: CellTimes, b: CellTimes, confidence: float = 0.95, seed: int = 0
) -> RestrictedTest:
    """The exact permutation test of the mean time to failure restricted to the common cap
    (the smallest cap of a run of either cell; each run's time, a censored one at the cap).
    The interval: every ratio rho for which the same test does not reject ``a / rho`` and
    ``b`` at 1 - ``confidence`` (a scale model); (0, inf) where the floor is above that."""
    cap = float(min(a.caps.min(), b.caps.min()))
    x, y = np.minimum(a.times, cap), np.minimum(b.times, cap)
    idx, exact = _labellings(len(x) + len(y), len(x), seed)
    p = _perm_p(x, y, idx, exact)
    est = float(x.mean() / y.mean())
    floor, alpha = exact_floor(len(x), len(y)), 1.0 - confidence
    if floor > alpha:
        return RestrictedTest(float(x.mean()), float(y.mean()), est, 0.0, math.inf, p, floor, cap)

    def accepted(log_rho: float) -> bool:
        return _perm_p(x / math.exp(log_rho), y, idx, exact) > alpha

    def edge(far: float) -> float:  # bisection between the estimate (accepted) and far
        inner, outer = math.log(est), math.log(est) + far
        for _ in range(60):
            mid = (inner + outer) / 2
            inner, outer = (mid, outer) if accepted(mid) else (inner, mid)
        return math.exp(inner)

    return RestrictedTest(float(x.mean()), float(y.mean()), est, edge(-30.0), edge(30.0), p,
                          floor, cap)  # fmt: skip


def model_free_bounds(
    cell: CellTimes, number: float, confidence: float = 0.95
) -> tuple[float, float, float, float, str]:
    """A cell's MTTF against a stated ``number`` with no model: (estimate, low, high, p,
    how). Every run failed: the mean, its t interval and the one-sample t test. Else the
    restricted mean at the cap (a lower estimate), a lower bound only, cap x the
    Clopper-Pearson lower bound of the share k / n of runs that outlived the cap (Markov's
    inequality: MTTF >= cap x P(T > cap)), and the exact p of k or more survivors where the
    share could be at most number / cap, two-sided."""
    if cell.failures == cell.n:
        t = cell.times
        q = float(sps.t.ppf(0.5 + confidence / 2, cell.n - 1)) if cell.n > 1 else math.nan
        se = float(t.std(ddof=1) / math.sqrt(cell.n)) if cell.n > 1 else math.nan
        p = float(sps.ttest_1samp(t, number).pvalue) if np.ptp(t) > 0 else math.nan
        return float(t.mean()), float(t.mean() - q * se), float(t.mean() + q * se), p, (
            "t (one sample), every run failed: no censoring, no model")  # fmt: skip
    cap = float(cell.caps[~cell.failed].min())
    k, n = cell.n - cell.failures, cell.n
    share_low = float(sps.beta.ppf((1 - confidence) / 2, k, n - k + 1)) if k else 0.0
    survive = min(1.0, number / cap)
    p = min(1.0, 2.0 * float(sps.binom.sf(k - 1, n, survive)))
    rmst = float(np.minimum(cell.times, cap).mean())
    return rmst, cap * share_low, math.inf, p, (
        "exact (binomial: runs that outlived the cap), no model")  # fmt: skip


# --------------------------------------------------------------------------- power


def _z(alpha: float, power: float) -> float:
    return float(sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power))


def fail_share(mttf: float, cap_s: float) -> float:
    """The share of runs capped at ``cap_s`` that fail, at an exponential ``mttf``."""
    return 1.0 - math.exp(-cap_s / mttf)


def runs_needed_exponential(
    mttf_a: float, mttf_b: float, cap_s: float, alpha: float, power: float = 0.8
) -> float:
    """Runs per cell for the exact test of two Poisson rates to detect ``mttf_a / mttf_b``
    with ``power`` at two-sided ``alpha`` (normal approximation of the log rate ratio,
    Var = 1 / failures_a + 1 / failures_b), a run failing with :func:`fail_share` (a
    capped run may not fail): z^2 (1 / p_a + 1 / p_b) / ln(ratio)^2; inf for no effect."""
    ratio = mttf_a / mttf_b
    if not (math.isfinite(ratio) and ratio > 0) or ratio == 1:
        return math.inf
    shares = 1 / fail_share(mttf_a, cap_s) + 1 / fail_share(mttf_b, cap_s)
    return float(math.ceil(_z(alpha, power) ** 2 * shares / math.log(ratio) ** 2))


def restricted_moments(mttf: float, cap_s: float) -> tuple[float, float]:
    """Mean and variance of min(T, cap) for an exponential T of mean ``mttf``."""
    e = math.exp(-cap_s / mttf)
    mean = mttf * (1 - e)
    second = 2 * mttf**2 * (1 - e * (1 + cap_s / mttf))
    return mean, second - mean**2


def runs_needed_restricted(
    mttf_a: float, mttf_b: float, cap_s: float, alpha: float, power: float = 0.8
) -> float:
    """Runs per cell for the model-free test (:func:`restricted_test`) to detect the
    published MTTFs with ``power`` at ``alpha``: the normal approximation of the difference
    of restricted means under exponential times at those MTTFs, and at least the runs whose
    exact floor lies below ``alpha`` (:func:`floor_runs`); inf for no effect."""
    (ma, va), (mb, vb) = restricted_moments(mttf_a, cap_s), restricted_moments(mttf_b, cap_s)
    if ma == mb or not all(map(math.isfinite, (ma, mb, va, vb))):
        return math.inf
    n = math.ceil(_z(alpha, power) ** 2 * (va + vb) / (ma - mb) ** 2)
    return float(max(n, floor_runs(alpha) or math.inf))
