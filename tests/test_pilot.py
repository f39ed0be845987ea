"""Sample size re-estimation from an internal pilot (ipclab.stats.pilot): sized from the
variance only, and the whole procedure keeps its false-positive rate under the null."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ipclab.stats import pilot


def test_runs_are_sized_from_the_variance_not_the_effect() -> None:
    rng = np.random.default_rng(1)
    a = rng.normal(100, 10, 5)
    # the same spread, cell b moved far away or not at all: the pooled CV is what sizes it,
    # so only a difference as large as the spread itself moves the count
    same = pilot.runs_needed([a, a + rng.normal(0, 0.01, 5)], 1.1, 0.05)
    assert same is not None and 5 <= same <= 25
    assert pilot.runs_to_add([a, a], 1.1, 0.05) == max(same - 5, 0) or same <= 5
    assert pilot.runs_needed([a, a], 1.001, 0.05) is None  # beyond 25 runs: not planned
    assert pilot.runs_to_add([a, a], 1.001, 0.05) == 0
    assert pilot.runs_needed([a[:1], a], 1.1, 0.05) is None  # no variance from one run


def test_type_one_error_at_or_below_alpha_under_the_null() -> None:
    sims = 2000
    rate = pilot.type_one_error(pilot_runs=5, cv=0.1, ratio=1.1, alpha=0.05, simulations=sims)
    se = math.sqrt(0.05 * 0.95 / sims)
    assert rate <= 0.05 + 2 * se, rate  # not above the nominal level beyond simulation noise


def test_blinded_within_the_cells_the_null_makes_alike() -> None:
    low, high = np.array([10.0, 11.0, 9.0]), np.array([100.0, 110.0, 90.0])
    # an interaction's four cells: two loads, pooled per load, so the load's effect on the
    # mean does not count as variance
    cvs = pilot.blinded_cvs([low, high, low, high], groups=[50, 200, 50, 200])
    assert cvs is not None and max(cvs) == pytest.approx(0.1, abs=0.02)
    everything = pilot.blinded_cvs([low, high, low, high])
    assert everything is not None and min(everything) > 0.8
