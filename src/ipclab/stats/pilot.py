"""Runs added by an internal pilot (Wittes and Brittain 1990; docs/statistics.md section 7):
the runs already made are the pilot, the runs a cell still needs are sized from their
variance only (never from the effect they show), and the final test uses every run.

The variance is the blinded one (Kieser and Friede 2003): the coefficient of variation of
the pilot runs pooled over the cells the null hypothesis makes alike (those at one load; a
comparison's two styles), whichever of them a run belongs to. Sizing from each cell's own variance
lets the estimate's chance correlation with the final test statistic through (a simulated
5.6% false-positive rate at a nominal 5% with 5 pilot runs per cell and a CV of 0.1); the
pooled one keeps it at the nominal rate (4.9% in the same simulation) and, when the cells do
differ, only overestimates the variance: more runs, never fewer.

:func:`runs_to_add` is the rule the planner applies; :func:`type_one_error` simulates the
whole procedure under the null (two cells of equal mean), the check that re-estimating the
sample size from the pilot's variance does not inflate the test's false-positive rate.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
from numpy.typing import ArrayLike

from ipclab.stats.intervals import log_ratio_interval
from ipclab.stats.power import repetitions_needed_log_ratio

#: the most runs per cell the planner adds up to (issue 27: at most 25 a cell)
MAX_RUNS_PER_CELL = 25


def blinded_cvs(
    pilot: Sequence[ArrayLike], groups: Sequence[Hashable] | None = None
) -> list[float] | None:
    """Each cell's coefficient of variation, blinded: the runs of every cell of its group
    (``groups``, e.g. each cell's load: cells the null hypothesis makes alike) pooled, the
    style label hidden; all cells one group by default. None without two runs a cell."""
    cells = [np.asarray(x, dtype=float) for x in pilot]
    keys = list(groups) if groups is not None else [0] * len(cells)
    if not cells or min(len(a) for a in cells) < 2:
        return None
    out = []
    for key in keys:
        pooled = np.concatenate([a for a, k in zip(cells, keys, strict=True) if k == key])
        if pooled.mean() <= 0:
            return None
        out.append(float(pooled.std(ddof=1) / pooled.mean()))
    return out


def runs_needed(
    pilot: Sequence[ArrayLike],
    ratio: float,
    alpha: float,
    power: float = 0.8,
    n_max: int = MAX_RUNS_PER_CELL,
    groups: Sequence[Hashable] | None = None,
) -> int | None:
    """Runs per cell the t test of the log ratio needs to detect ``ratio`` (the published
    effect) at ``alpha``, from the pilot's blinded coefficients of variation
    (:func:`blinded_cvs`); None: more than ``n_max``, or no variance to size from."""
    cvs = blinded_cvs(pilot, groups)
    if cvs is None:
        return None
    return repetitions_needed_log_ratio(cvs, ratio, alpha, power, n_max=n_max)


def runs_to_add(
    pilot: Sequence[ArrayLike],
    ratio: float,
    alpha: float,
    power: float = 0.8,
    n_max: int = MAX_RUNS_PER_CELL,
) -> int:
    """How many runs each cell gets on top of the pilot's (0 when the pilot suffices or
    when even ``n_max`` would not: such a test is left to the undecidable verdict)."""
    need = runs_needed(pilot, ratio, alpha, power, n_max)
    have = min(len(np.asarray(x)) for x in pilot)
    return max(need - have, 0) if need is not None else 0


def type_one_error(
    pilot_runs: int = 5,
    cv: float = 0.1,
    ratio: float = 1.1,
    alpha: float = 0.05,
    simulations: int = 2000,
    seed: int = 2027,
    n_max: int = MAX_RUNS_PER_CELL,
) -> float:
    """The share of simulated experiments under the null (both cells lognormal with the same
    mean and per-run CV ``cv``) whose final test rejects at ``alpha``: ``pilot_runs`` runs
    per cell, :func:`runs_to_add` more sized to detect ``ratio``, the t test of the log
    ratio over all of them."""
    rng = np.random.default_rng(seed)
    sigma = float(np.sqrt(np.log1p(cv**2)))

    def draw(n: int) -> np.ndarray:
        return rng.lognormal(-(sigma**2) / 2, sigma, n)

    rejected = 0
    for _ in range(simulations):
        a, b = draw(pilot_runs), draw(pilot_runs)
        extra = runs_to_add([a, b], ratio, alpha, n_max=n_max)
        a, b = np.concatenate([a, draw(extra)]), np.concatenate([b, draw(extra)])
        p = log_ratio_interval([(1, [a]), (-1, [b])]).p_value
        rejected += bool(p < alpha)
    return rejected / simulations
