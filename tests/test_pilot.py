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
    sims = 4000
    rate = pilot.type_one_error(pilot_runs=5, cv=0.1, ratio=1.1, alpha=0.05, simulations=sims)
    se = math.sqrt(0.05 * 0.95 / sims)
    assert rate <= 0.05 + 2 * se, rate  # not above the nominal level beyond simulation noise


def test_blinded_variance_leaves_the_tested_effect_in() -> None:
    low, high = np.array([10.0, 11.0, 9.0]), np.array([30.0, 33.0, 27.0])
    # an interaction's cells with a load effect (3x) and a style effect (1.5x), no
    # interaction: the additive null model takes both out, the CV is the runs' own
    cvs = pilot.blinded_cvs([low, high, 1.5 * low, 1.5 * high])
    assert cvs is not None and cvs[0] == pytest.approx(0.1, abs=0.02)
    # the same with an interaction (b grows 2x more): it stays in, a larger CV, more runs
    grown = pilot.blinded_cvs([low, high, 1.5 * low, 3.0 * high])
    assert grown is not None and grown[0] > 2 * cvs[0]


def test_type_one_error_of_an_interaction_under_the_null() -> None:
    sims = 4000
    rate = pilot.type_one_error(interaction=True, simulations=sims)
    assert rate <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / sims), rate
