"""Runs added by an internal pilot (Wittes and Brittain 1990; docs/statistics.md section 7):
the runs already made are the pilot, the runs a cell still needs are sized from their
variance only (never from the effect they show), and the final test uses every run.

The variance is the blinded one (Kieser and Friede 2003): the variance under the null model,
blind to the effect tested (:func:`blinded_cvs`). Sizing from each cell's own variance
lets the estimate's chance correlation with the final test statistic through (a simulated
5.6% false-positive rate at a nominal 5% with 5 pilot runs per cell and a CV of 0.1); the
pooled one keeps it at the nominal rate (4.9% in the same simulation) and, when the cells do
differ, only overestimates the variance: more runs, never fewer.

:func:`runs_to_add` is the rule the planner applies; :func:`type_one_error` simulates the
whole procedure under the null (two cells of equal mean), the check that re-estimating the
sample size from the pilot's variance does not inflate the test's false-positive rate.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from ipclab.stats.intervals import log_ratio_interval
from ipclab.stats.power import repetitions_needed_log_ratio

#: the most runs per cell the planner adds up to (issue 27: at most 25 a cell)
MAX_RUNS_PER_CELL = 25


def blinded_cvs(pilot: Sequence[ArrayLike]) -> list[float] | None:
    """Each cell's coefficient of variation, blinded to the effect tested (the variance under
    the null model, Kieser and Friede 2003, on the log scale): two cells (a ratio) pooled
    around one mean; four (an interaction: a at the lower and higher load, then b) around
    the additive fit of style and load, which leaves the interaction in the residuals. A
    real effect then only overestimates the variance (more runs, never fewer). None without
    two positive runs in every cell."""
    cells = [np.asarray(x, dtype=float) for x in pilot]
    if len(cells) not in (2, 4) or min(len(a) for a in cells) < 2:
        return None
    if any((a <= 0).any() for a in cells):
        return None
    logs = [np.log(a) for a in cells]
    if len(cells) == 2:
        pooled = np.concatenate(logs)
        sd = float(pooled.std(ddof=1))
    else:
        style = np.repeat([0, 0, 1, 1], [len(x) for x in logs])
        load = np.repeat([0, 1, 0, 1], [len(x) for x in logs])
        y = np.concatenate(logs)
        design = np.column_stack([np.ones_like(y), style, load])
        coef, *_ = np.linalg.lstsq(design, y, rcond=None)
        resid = y - design @ coef
        sd = float(np.sqrt(resid @ resid / (len(y) - 3)))
    return [sd] * len(cells)  # the log-scale sd is the CV to the delta method's order


def runs_needed(
    pilot: Sequence[ArrayLike],
    ratio: float,
    alpha: float,
    power: float = 0.8,
    n_max: int = MAX_RUNS_PER_CELL,
) -> int | None:
    """Runs per cell the t test of the log ratio (two cells) or interaction (four) needs to
    detect ``ratio`` (the published effect) at ``alpha``, from the pilot's blinded
    coefficients of variation (:func:`blinded_cvs`); None: more than ``n_max``, or no
    variance to size from."""
    cvs = blinded_cvs(pilot)
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
    interaction: bool = False,
    shift: float = 1.0,
) -> float:
    """The share of simulated experiments under the null whose final test rejects at
    ``alpha``: ``pilot_runs`` runs per cell (lognormal, per-run CV ``cv``), :func:`runs_to_add`
    more sized to detect ``ratio``, then the t test over all of them. Two cells of one mean
    (a ratio), or four (``interaction``) whose means differ by style (1.5x) and load (3x)
    but whose growth is the same (no interaction). ``shift`` != 1: the added runs come from
    another sitting where every cell is ``shift`` times slower, and the final test is made
    within sittings (:func:`ipclab.stats.sittings.log_ratio_interval_by_sitting`)."""
    from ipclab.stats.sittings import log_ratio_interval_by_sitting

    rng = np.random.default_rng(seed)
    sigma = float(np.sqrt(np.log1p(cv**2)))
    means = [1.0, 3.0, 1.5, 4.5] if interaction else [1.0, 1.0]
    signs = [1, -1, -1, 1] if interaction else [1, -1]

    def draw(mean: float, n: int) -> np.ndarray:
        return mean * rng.lognormal(-(sigma**2) / 2, sigma, n)

    rejected = 0
    for _ in range(simulations):
        cells = [draw(m, pilot_runs) for m in means]
        extra = runs_to_add(cells, ratio, alpha, n_max=n_max)
        cells = [
            np.concatenate([x, draw(m * shift, extra)]) for x, m in zip(cells, means, strict=True)
        ]
        terms = [(sg, [x]) for sg, x in zip(signs, cells, strict=True)]
        if shift != 1.0 and extra:
            marks = [[np.repeat([0, 1], [pilot_runs, extra])] for _ in cells]
            p = log_ratio_interval_by_sitting(terms, marks).p_value
        else:
            p = log_ratio_interval(terms).p_value
        rejected += bool(p < alpha)
    return rejected / simulations
