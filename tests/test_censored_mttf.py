"""Runs that survive their cap are evidence (issue 25, must-show 2): a censored run is a
lower bound on its time to failure, so MTTF claims are judged on every run's time on test.
Three runs censored at 900 s decide a published MTTF below the cap (not reproduced) and
cannot decide one above it (inconclusive); a cell with failures against a censored one
decides a direction."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from ipclab import claims as claims_mod
from ipclab.availability.estimators import mttf_bounds, mttf_ratio, mttf_value_p
from ipclab.claims import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED
from ipclab.published import Claim, PublishedDataError
from ipclab.studies.shafabakhsh import published
from ipclab.studies.shafabakhsh.availability.analysis import family_claims, mttf_effects

CAP_S = 900.0


def _claim(claim_id: str) -> Claim:
    return next(c for c in published.claims(scope="availability") if c.claim_id == claim_id)


def _cells(**cells: tuple[int, float, int]) -> pd.DataFrame:
    """style -> (failures, time on test in s, runs), all at 200 users."""
    return pd.DataFrame(
        [
            {"style": s, "users": 200, "failures": f, "up_s": t, "runs": n}
            for s, (f, t, n) in cells.items()
        ]
    )


def _table(claims: list[Claim], cells: pd.DataFrame) -> pd.DataFrame:
    effects = mttf_effects(claims, cells, {}, 0.95)
    runs = pd.DataFrame(columns=["style", "users", "mttf_s"])
    return claims_mod.evaluate_claims(
        runs, claims, scope="availability", family="until failure", effects=effects
    ).set_index("claim_id")


def test_the_thesis_states_mttf_values_as_claims() -> None:
    stated = {c.claim_id: c.published_number for c in family_claims("until failure")}
    assert stated["T19d"] == 420.0 and stated["T19e"] == 300.0 and stated["T19f"] == 270.0
    assert stated["P13d"] == 420.0  # the paper's sentence: the same test as the thesis's
    assert claims_mod.test_key(_claim("T19d")) == claims_mod.test_key(_claim("P13d"))


def test_runs_censored_at_the_cap_refute_a_published_mttf_below_it() -> None:
    """amqp: 3 runs, none failed in 900 s (2,700 s on test): the MTTF is above
    2T / chi2_0.975(2) = 732 s, so "about seven minutes" (420 s) is not reproduced."""
    cells = _cells(amqp=(0, 3 * CAP_S, 3))
    row = _table([_claim("T19d")], cells).loc["T19d"]
    assert row["verdict"] == NOT_REPRODUCED, row["reason"]
    assert row["ci_low"] == pytest.approx(731.93 / 420, rel=1e-3) and math.isinf(row["ci_high"])
    assert row["p_raw"] < 0.01  # 0 failures where 6.4 were expected


def test_runs_censored_at_the_cap_cannot_decide_a_published_mttf_above_it() -> None:
    """The same runs against a stated 30 min (1,800 s, above the cap): the interval
    [732 s, inf) holds it, and no bound is drawn above: inconclusive, never reproduced."""
    above = replace(_claim("T19d"), claim_id="X01a", statement_id="X01", published_value="30")
    assert above.published_number == 1800.0
    row = _table([above], _cells(amqp=(0, 3 * CAP_S, 3))).loc["X01a"]
    assert row["verdict"] == INCONCLUSIVE, row["reason"]
    assert "straddles" in row["reason"]


def test_too_few_runs_decide_nothing_even_when_censored() -> None:
    row = _table([_claim("T19d")], _cells(amqp=(0, 2 * CAP_S, 2))).loc["T19d"]
    assert row["verdict"] == INCONCLUSIVE and "too few repetitions" in row["reason"]


def test_a_direction_between_a_censored_cell_and_a_failing_one_is_decided() -> None:
    """amqp survived 3 x 900 s; grpc failed 5 times in 1,500 s: MTTF amqp > grpc (T19a) by
    the conditional test of two Poisson rates, with an interval open above."""
    table = _table([_claim("T19a")], _cells(amqp=(0, 3 * CAP_S, 3), grpc=(5, 1500.0, 5)))
    row = table.loc["T19a"]
    assert row["verdict"] == REPRODUCED, row["reason"]
    assert row["p_method"] == "exact (Poisson rates)" and math.isinf(row["ci_high"])


def test_no_failure_on_either_side_compares_nothing_and_says_why() -> None:
    table = _table([_claim("T19a")], _cells(amqp=(0, 3 * CAP_S, 3), grpc=(0, 3 * CAP_S, 3)))
    row = table.loc["T19a"]
    assert row["verdict"] == INCONCLUSIVE
    assert "no failure in any run of either cell" in row["reason"] and "> 732 s" in row["reason"]


def test_the_censored_interval_covers_the_true_mttf() -> None:
    """Exponential times to failure capped at 900 s, 3 runs a cell, true MTTF 420 s and
    1,800 s: the two-sided interval (time-terminated chi-square, open above with no
    failure) covers the truth in at least 95% of 4,000 simulated cells."""
    rng = np.random.default_rng(25)
    for mttf in (420.0, 1800.0):
        t = rng.exponential(mttf, size=(4000, 3))
        failures = (t < CAP_S).sum(axis=1)
        on_test = np.minimum(t, CAP_S).sum(axis=1)
        covered = [
            lo <= mttf <= hi
            for f, tt in zip(failures, on_test, strict=True)
            for _, lo, hi in [mttf_bounds(float(tt), int(f))]
        ]
        assert np.mean(covered) >= 0.95, (mttf, np.mean(covered))


def test_the_estimators_edges() -> None:
    assert mttf_bounds(2700.0, 0) == (math.inf, pytest.approx(731.93, rel=1e-4), math.inf)
    est, lo, hi = mttf_bounds(1200.0, 3)
    assert est == 400.0 and lo < est < hi
    assert mttf_value_p(1200.0, 3, 400.0) == 1.0  # exactly the expected count
    assert all(math.isnan(x) for x in mttf_ratio(0, 900.0, 0, 900.0))
    est, lo, hi, p = mttf_ratio(4, 1000.0, 0, 2700.0)
    assert est == 0.0 and lo == 0.0 and 0 < hi < 1 and p < 0.01


def test_the_loader_checks_a_value_claim(tmp_path: object) -> None:
    import csv
    from pathlib import Path

    src = Path(published.CLAIMS_CSV)
    rows = list(csv.DictReader(src.open(encoding="utf-8")))
    row = next(r for r in rows if r["claim_id"] == "T19d")
    path = Path(str(tmp_path)) / "x_claims.csv"

    def load(**change: str) -> list[Claim]:
        with path.open("w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, list(row))
            w.writeheader()
            w.writerow({**row, **change})
        return published.claims(path)

    assert load()[0].published_number == 420.0
    with pytest.raises(PublishedDataError, match="a value claim names a_style and a_users"):
        load(b_style="rest", b_users="200")
    with pytest.raises(PublishedDataError, match="a unit of 'mttf_s'"):
        load(published_unit="requests")
    with pytest.raises(PublishedDataError, match="needs b_style"):
        load(test="direction", relation=">")
