"""Runs per cell each primary test needs (docs/statistics.md section 7)."""

from __future__ import annotations

import numpy as np
import pytest

from ipclab import stats


def test_repetitions_needed_textbook_case() -> None:
    # Cohen's d = 1, two-sided 0.05, 80% power: 17 per group (noncentral t)
    assert stats.repetitions_needed(10.0, 1.0, 1.0, 1.1) == 17
    assert stats.repetitions_needed(10.0, 1.0, 1.0, 1.0) is None  # no effect to detect
    assert stats.repetitions_needed(10.0, 0.0, 0.0, 1.1) == 2  # no noise
    assert stats.repetitions_needed(10.0, 1.0, 1.0, 1.001, n_max=50) is None  # > n_max


def test_log_ratio_power_matches_simulation() -> None:
    """At the n it returns, the t test of the log interaction (four lognormal cells, CV 10%)
    detects the ratio about 80% of the time; at half that n clearly less."""
    cvs, ratio, alpha = [0.1] * 4, 0.85, 0.05
    n = stats.repetitions_needed_log_ratio(cvs, ratio, alpha)
    assert n is not None and 3 <= n <= 20
    means = np.array([100.0, 200.0, 100.0, 200.0 / ratio])  # growth a / growth b = ratio
    sigma = np.sqrt(np.log(1 + 0.1**2))

    def power(k: int, sims: int = 600) -> float:
        rng = np.random.default_rng(3)
        hits = 0
        for _ in range(sims):
            x = [rng.lognormal(np.log(m) - sigma**2 / 2, sigma, k) for m in means]
            iv = stats.log_ratio_interval([(1, [x[1]]), (-1, [x[0]]), (-1, [x[3]]), (1, [x[2]])])
            hits += iv.p_value < alpha
        return hits / sims

    assert power(n) == pytest.approx(0.8, abs=0.06)
    assert power(max(2, n // 2)) < 0.7
    assert stats.repetitions_needed_log_ratio(cvs, 1.0) is None
    assert stats.repetitions_needed_log_ratio([0.0] * 4, 0.9) == 2
