"""How many runs per cell a test needs to detect a claimed effect (docs/statistics.md,
section 7): noncentral t power of the t test of a difference or of a log ratio."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats as sps


def repetitions_needed(
    mean_b: float,
    sd_a: float,
    sd_b: float,
    ratio: float,
    alpha: float = 0.05,
    power: float = 0.8,
    n_max: int = 1000,
) -> int | None:
    """Runs per cell that a two-sided t test at ``alpha`` needs to detect a / b = ``ratio``
    (a's mean ``ratio`` x ``mean_b``) with ``power``, given the cells' per-run standard
    deviations (noncentral t, equal n, pooled sd); None when more than ``n_max``."""
    diff = abs(mean_b * (ratio - 1.0))
    s = math.sqrt((sd_a**2 + sd_b**2) / 2)
    if diff == 0 or not np.isfinite(diff) or not np.isfinite(s):
        return None
    if s == 0:
        return 2
    for n in range(2, n_max + 1):
        df = 2 * n - 2
        q = sps.t.ppf(1 - alpha / 2, df)
        ncp = diff / (s * math.sqrt(2 / n))
        got = sps.nct.sf(q, df, ncp) + sps.nct.cdf(-q, df, ncp)
        if got >= power:
            return n
    return None


def repetitions_needed_log_ratio(
    cvs: Sequence[float],
    ratio: float,
    alpha: float = 0.05,
    power: float = 0.8,
    n_max: int = 1000,
) -> int | None:
    """Runs per cell that the t test of a log ratio (:func:`log_ratio_interval`: a ratio of
    means, or an interaction over four cells) needs to detect ``ratio`` with ``power`` at
    two-sided ``alpha``, given each cell's per-run coefficient of variation ``cvs`` (equal n;
    Var(log mean_i) = cv_i^2 / n by the delta method; Welch-Satterthwaite degrees of freedom;
    noncentral t). None when more than ``n_max`` or not computable."""
    c = np.asarray(cvs, dtype=float) ** 2
    effect = abs(math.log(ratio)) if ratio > 0 else float("nan")
    if not (np.isfinite(effect) and np.all(np.isfinite(c))) or effect == 0 or not len(c):
        return None
    if c.sum() == 0:
        return 2
    n = np.arange(2, n_max + 1)  # every n at once (vectorised: the planner's simulation
    df = (n - 1) * c.sum() ** 2 / (c**2).sum()  # calls this thousands of times)
    q = sps.t.ppf(1 - alpha / 2, df)
    ncp = effect / np.sqrt(c.sum() / n)
    got = sps.nct.sf(q, df, ncp) + sps.nct.cdf(-q, df, ncp)
    hit = np.flatnonzero(got >= power)
    return int(n[hit[0]]) if len(hit) else None
