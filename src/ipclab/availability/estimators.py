"""MTTF, MTTR and A = MTTF / (MTTF + MTTR) from failure/recovery cycles, with intervals.

Estimators (see docs/availability.md):

* MTTF = total time on test / number of failures. The time on test sums every up period,
  including right-censored ones (a stack that never failed within the cap, or the up period
  running at the end of observation). This is the maximum-likelihood estimate under an
  exponential time to failure and equals the plain mean when nothing is censored. With no
  failure there is no number: the MTTF is reported as censored with lower bounds only (the
  time on test, and the one-sided chi-square bound ``2T / chi2_c(2)``).
* MTTF interval, exponential model, time-terminated test:
  ``[2T / chi2_{(1+c)/2}(2r + 2), 2T / chi2_{(1-c)/2}(2r)]``.
* MTTR = total down time / number of recoveries (an unrecovered down period counts as time
  on test, like a censored up period); the plain mean when all recovered.
* A = MTTF / (MTTF + MTTR); when every failure recovered it equals the share of time up.
* Bootstrap intervals resample whole cycles (percentile method, seeded).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ipclab.availability.model import Cycle

MIN_CYCLES = 10  # fewer cycles than this get a note: the intervals are rough
MIN_BOOTSTRAP = 3  # no bootstrap interval over fewer values (docs/statistics.md)


@dataclass(frozen=True)
class Estimate:
    """A point estimate and its interval. ``censored``: no point value, ``lower`` is a bound."""

    value: float | None
    lower: float | None
    upper: float | None
    method: str
    censored: bool = False

    def as_dict(self, prefix: str) -> dict[str, Any]:
        return {
            prefix: self.value,
            f"{prefix}_lo": self.lower,
            f"{prefix}_hi": self.upper,
            f"{prefix}_method": self.method,
            f"{prefix}_censored": self.censored,
        }


def mttf_chi2_interval(
    time_on_test: float, failures: int, confidence: float = 0.95, failure_terminated: bool = False
) -> Estimate:
    """MTTF under an exponential model from the total time on test and the failure count.

    Time-terminated (type I: observation stopped at a time, the last up period censored):
    lower bound with ``2r + 2`` degrees of freedom, upper with ``2r``. Failure-terminated
    (type II: observation stopped at the r-th failure): ``2r`` for both. With no failure the
    value is None, ``censored`` is True and ``lower`` is the one-sided bound
    ``2T / chi2_c(2)``.
    """
    if not 0 < confidence < 1:
        raise ValueError("confidence must be in (0, 1)")
    if time_on_test < 0 or failures < 0:
        raise ValueError("time_on_test and failures must be >= 0")
    t2 = 2.0 * time_on_test
    if failures == 0:
        return Estimate(
            None, float(t2 / stats.chi2.ppf(confidence, 2)), None, "chi2-exponential", censored=True
        )
    a = 1.0 - confidence
    lower_df = 2 * failures if failure_terminated else 2 * failures + 2
    lo = t2 / stats.chi2.ppf(1.0 - a / 2, lower_df)
    hi = t2 / stats.chi2.ppf(a / 2, 2 * failures)
    kind = "failure" if failure_terminated else "time"
    return Estimate(time_on_test / failures, float(lo), float(hi), f"chi2-exponential ({kind})")


def mttf_bounds(
    time_on_test: float, failures: int, confidence: float = 0.95
) -> tuple[float, float, float]:
    """MTTF estimate and two-sided interval, time-terminated (exponential model): with no
    failure the estimate and the upper end are inf and the lower end is
    ``2T / chi2_{(1+c)/2}(2)``, the same lower end as with failures (``2r + 2`` df), so that
    runs that all survived their cap still bound the MTTF from below."""
    if failures > 0:
        e = mttf_chi2_interval(time_on_test, failures, confidence)
        return float(time_on_test / failures), float(e.lower or 0.0), float(e.upper or math.inf)
    if time_on_test < 0:
        raise ValueError("time_on_test must be >= 0")
    lo = 2.0 * time_on_test / stats.chi2.ppf(0.5 + confidence / 2, 2)
    return math.inf, float(lo), math.inf


def mttf_value_p(time_on_test: float, failures: int, mttf: float) -> float:
    """Two-sided exact p-value of "the MTTF is ``mttf``" given ``failures`` in
    ``time_on_test`` (failures are Poisson with mean T / MTTF under the exponential model):
    twice the smaller tail, at most 1."""
    mu = time_on_test / mttf
    low = float(stats.poisson.cdf(failures, mu))
    high = float(stats.poisson.sf(failures - 1, mu)) if failures > 0 else 1.0
    return min(1.0, 2.0 * min(low, high))


def mttf_ratio(
    failures_a: int, time_a: float, failures_b: int, time_b: float, confidence: float = 0.95
) -> tuple[float, float, float, float]:
    """MTTF_a / MTTF_b from each side's failures and time on test (censored runs included),
    with its exact interval and p-value: given r = r_a + r_b failures, r_a is binomial with
    ``pi = T_a l_a / (T_a l_a + T_b l_b)`` (the conditional test of two Poisson rates); the
    Clopper-Pearson interval of pi gives the interval of the ratio, and the two-sided
    binomial test of equal rates its p. An end may be 0 or inf (no failure on a side: a
    bound only). With no failure on either side nothing is compared: NaN."""
    r = failures_a + failures_b
    nan = math.nan
    if r == 0 or time_a <= 0 or time_b <= 0:
        return nan, nan, nan, nan
    scale = time_a / time_b  # MTTF_a / MTTF_b = (1 - pi) / pi * T_a / T_b

    def theta(pi: float) -> float:
        return math.inf if pi <= 0 else (1.0 - pi) / pi * scale

    ci = stats.binomtest(failures_a, r).proportion_ci(confidence, method="exact")
    p = stats.binomtest(failures_a, r, time_a / (time_a + time_b)).pvalue
    return theta(failures_a / r), theta(ci.high), theta(ci.low), float(p)


def failures_needed(ratio: float, alpha: float, power: float = 0.8) -> float:
    """Failures per cell for the test of two Poisson rates (:func:`mttf_ratio`) to detect an
    MTTF ratio ``ratio`` with ``power`` at two-sided ``alpha``: the normal approximation of
    the log rate ratio, 2 (z_{1-alpha/2} + z_power)^2 / ln(ratio)^2 (inf for no effect)."""
    if not ratio or ratio <= 0 or ratio == 1 or not math.isfinite(ratio):
        return math.inf
    z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)
    return float(math.ceil(2 * z**2 / math.log(ratio) ** 2))


@dataclass
class AvailabilitySummary:
    n_cycles: int
    failures: int
    recoveries: int
    censored: int  # up periods that ended without failure (cap or end of observation)
    unrecovered: int  # down periods that did not end by the end of observation
    faults_injected: int
    up_s: float  # total time on test (up), censored periods included
    down_s: float  # total down time, unrecovered periods included
    mttf: Estimate  # chi-square interval (exponential model)
    mttf_boot: Estimate  # bootstrap interval over cycles
    mttr: Estimate  # bootstrap interval over cycles
    availability: Estimate  # bootstrap interval over cycles
    time_availability: float | None  # up_s / (up_s + down_s)
    restart_to_recovery_s: float | None  # the thesis's MTTR: mean restart -> recovery
    confidence: float
    n_boot: int
    notes: list[str] = field(default_factory=list)

    def as_row(self) -> dict[str, Any]:
        """A flat dict, one table row."""
        row: dict[str, Any] = {
            k: v
            for k, v in asdict(self).items()
            if k not in ("mttf", "mttf_boot", "mttr", "availability", "notes")
        }
        row.update(self.mttf.as_dict("mttf_s"))
        b = self.mttf_boot
        row.update({"mttf_boot_lo": b.lower, "mttf_boot_hi": b.upper})
        row.update(self.mttr.as_dict("mttr_s"))
        row.update(self.availability.as_dict("availability"))
        row["notes"] = "; ".join(self.notes)
        return row


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = num / den
    return np.where(den > 0, out, np.inf)


def _point(
    up: np.ndarray, failed: np.ndarray, down: np.ndarray, rec: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """MTTF, MTTR, A along the last axis (time-on-test estimators). No failure: MTTF = inf
    and A = 1; failures but no recovery: MTTR = inf and A = 0."""
    u, f, d, r = up.sum(-1), failed.sum(-1), down.sum(-1), rec.sum(-1)
    mttf = _ratio(u, f)
    mttr = _ratio(d, r)
    with np.errstate(invalid="ignore"):
        a = np.where(f == 0, 1.0, np.where(r == 0, 0.0, mttf / (mttf + mttr)))
    return mttf, mttr, a


def _quantiles(x: np.ndarray, confidence: float) -> tuple[float | None, float | None]:
    if x.size == 0:
        return None, None
    a = 1.0 - confidence
    lo, hi = np.quantile(x, [a / 2, 1 - a / 2], method="inverted_cdf")
    return float(lo), float(hi)


def _finite(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def availability_summary(
    cycles: Sequence[Cycle],
    confidence: float = 0.95,
    n_boot: int = 5000,
    seed: int = 0,
) -> AvailabilitySummary:
    """MTTF, MTTR and A with intervals from cycles (of one run or pooled over runs)."""
    n = len(cycles)
    up = np.array([c.ttf_s for c in cycles], dtype=float)
    failed = np.array([c.failed for c in cycles], dtype=bool)
    down = np.array([(c.ttr_s or 0.0) if c.failed else 0.0 for c in cycles], dtype=float)
    rec = np.array([c.recovered for c in cycles], dtype=bool)
    f, r = int(failed.sum()), int(rec.sum())
    u, d = float(up.sum()), float(down.sum())
    notes: list[str] = []

    # observation stopped at a failure when no up period was censored (docs/statistics.md)
    mttf = mttf_chi2_interval(u, f, confidence, failure_terminated=bool(n) and bool(failed.all()))
    mttf_pt, mttr_pt, a_pt = (float(x) for x in _point(up, failed, down, rec))
    if n >= MIN_BOOTSTRAP:
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, n, size=(n_boot, n))
        b_mttf, b_mttr, b_a = _point(up[idx], failed[idx], down[idx], rec[idx])
        # a resample without any failure says nothing about repair: leave it out of MTTR's
        b_mttr = b_mttr[failed[idx].any(axis=1)]
        mttf_ci, mttr_ci, a_ci = (_quantiles(x, confidence) for x in (b_mttf, b_mttr, b_a))
    else:
        none = (None, None)
        mttf_ci = mttr_ci = a_ci = none  # type: ignore[assignment]
        notes.append(f"fewer than {MIN_BOOTSTRAP} cycles: no bootstrap interval")

    def est(value: float, ci: tuple[Any, Any], ok: bool) -> Estimate:
        lo, hi = ci
        return Estimate(
            _finite(value) if ok else None,
            None if lo is None else _finite(lo),
            None if hi is None else _finite(hi),
            "bootstrap-percentile",
            censored=not ok,
        )

    mttf_boot = est(mttf_pt, mttf_ci, f > 0)
    mttr = est(mttr_pt, mttr_ci, r > 0)
    # no failure: up over the whole observation, A = 1 (a value, not a bound)
    availability = est(a_pt, a_ci, f == 0 or r > 0)

    censored = int((~failed).sum())
    unrecovered = int((failed & ~rec).sum())
    faults = sum(c.faults for c in cycles)
    if f == 0:
        notes.append(f"no failure in {u:.1f} s on test: MTTF censored, lower bound only")
    if unrecovered:
        notes.append(f"{unrecovered} unrecovered: their down time counts as repair time on test")
    if 0 < n < MIN_CYCLES:
        notes.append(f"only {n} cycles (< {MIN_CYCLES}): intervals are rough")
    fault_failures = sum(1 for c in cycles if c.failed and c.t_fault is not None)
    if faults > fault_failures:
        notes.append(f"{faults - fault_failures} of {faults} injected faults caused no failure")
    r2r = [c.restart_to_recovery_s for c in cycles if c.restart_to_recovery_s is not None]

    return AvailabilitySummary(
        n_cycles=n,
        failures=f,
        recoveries=r,
        censored=censored,
        unrecovered=unrecovered,
        faults_injected=faults,
        up_s=u,
        down_s=d,
        mttf=mttf,
        mttf_boot=mttf_boot,
        mttr=mttr,
        availability=availability,
        time_availability=(u / (u + d)) if u + d > 0 else None,
        restart_to_recovery_s=float(np.mean(r2r)) if r2r else None,
        confidence=confidence,
        n_boot=n_boot,
        notes=notes,
    )


def summaries_frame(groups: Mapping[str, Sequence[Cycle]], **kwargs: Any) -> pd.DataFrame:
    """One summary row per group (e.g. per stack, or per stack and user count)."""
    rows = []
    for name, cyc in groups.items():
        rows.append({"group": name, **availability_summary(cyc, **kwargs).as_row()})
    return pd.DataFrame(rows)
