"""Runs that survive their cap are evidence (issue 25, must-show 2; issue 47): a censored run
is a lower bound on its time to failure, so MTTF claims are judged on every run, censored
ones included. Where the runs support the exponential model (a failure to check it on, and
the Weibull shape test not rejecting it) the time-terminated interval decides; where they
cannot (no failure) the model-free bound does: three runs censored at 900 s cannot refute a
published MTTF below the cap without a model, seven can; a cell with failures against a
censored one decides a direction when the runs allow it."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from ipclab import claims as claims_mod
from ipclab.availability.estimators import mttf_bounds, mttf_ratio, mttf_value_p
from ipclab.claims import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, UNDERPOWERED
from ipclab.published import Claim, PublishedDataError
from ipclab.studies.shafabakhsh import published
from ipclab.studies.shafabakhsh.availability.analysis import family_claims
from ipclab.studies.shafabakhsh.availability.until_failure import (
    POISSON_METHOD,
    mttf_effects,
)

CAP_S = 900.0


def _claim(claim_id: str) -> Claim:
    return next(c for c in published.claims(scope="availability") if c.claim_id == claim_id)


def _cells(**cells: list[float | None]) -> pd.DataFrame:
    """style -> each run's time to failure (None: censored at the cap), all at 200 users."""
    return pd.DataFrame(
        [
            {"style": s, "users": 200, "ttf_s": CAP_S if t is None else t,
             "failed": t is not None, "cap_s": CAP_S, "startup": 0}
            for s, times in cells.items()
            for t in times
        ]
    )  # fmt: skip


def _table(claims: list[Claim], cells: pd.DataFrame) -> pd.DataFrame:
    """The claims judged on ``cells`` (a family of their own), the design check applied."""
    effects, _ = mttf_effects(claims, cells, {}, 0.95)
    runs = pd.DataFrame(columns=["style", "users", "mttf_s"])
    return claims_mod.evaluate_claims(
        runs, claims, scope="availability", family="until failure", effects=effects
    ).set_index("claim_id")


def test_the_thesis_states_mttf_values_as_claims() -> None:
    stated = {c.claim_id: c.published_number for c in family_claims("until failure")}
    assert stated["T19d"] == 420.0 and stated["T19e"] == 300.0 and stated["T19f"] == 270.0
    assert stated["P13d"] == 420.0  # the paper's sentence: the same test as the thesis's
    assert claims_mod.test_key(_claim("T19d")) == claims_mod.test_key(_claim("P13d"))


def test_runs_censored_at_the_cap_refute_a_published_mttf_below_it_once_enough() -> None:
    """amqp: no run failed in 900 s. With no failure the exponential model cannot be checked
    and is not used: the MTTF is above cap x the exact lower bound of the share that
    survived (Markov). Three such runs bound it above 263 s: "about seven minutes" (420 s)
    stays open; seven bound it above 532 s, past the band's 525 s: not reproduced."""
    three = _table([_claim("T19d")], _cells(amqp=[None] * 3)).loc["T19d"]
    assert three["verdict"] == INCONCLUSIVE, three["reason"]
    assert three["ci_low"] * 420 == pytest.approx(CAP_S * 0.025 ** (1 / 3), rel=1e-6)
    seven = _table([_claim("T19d")], _cells(amqp=[None] * 7)).loc["T19d"]
    assert seven["verdict"] == NOT_REPRODUCED, seven["reason"]
    assert math.isinf(seven["ci_high"]) and seven["p_raw"] < 0.05


def test_runs_with_a_failure_that_support_the_model_use_the_censored_interval() -> None:
    """amqp: one failure at 329 s, two runs past the cap: the model holds (one failure
    mid-run), the time-terminated chi-square interval [382 s, 84,103 s] decides: it straddles
    "about seven minutes"."""
    row = _table([_claim("T19d")], _cells(amqp=[329.3, None, None])).loc["T19d"]
    assert row["p_method"] == "exact (Poisson), censored runs included"
    lo, hi = mttf_bounds(329.3 + 2 * CAP_S, 1)[1:]
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((lo / 420, hi / 420))
    assert row["verdict"] == INCONCLUSIVE and "straddles" in row["reason"]


def test_runs_censored_at_the_cap_cannot_decide_a_published_mttf_above_it() -> None:
    """The same runs against a stated 30 min (1,800 s, above the cap): the interval holds
    it, and no bound is drawn above: inconclusive, never reproduced."""
    above = replace(_claim("T19d"), claim_id="X01a", statement_id="X01", published_value="30")
    assert above.published_number == 1800.0
    for cells in (_cells(amqp=[None] * 3), _cells(amqp=[329.3, None, None])):
        row = _table([above], cells).loc["X01a"]
        assert row["verdict"] == INCONCLUSIVE, row["reason"]
        assert "straddles" in row["reason"]


def test_too_few_runs_decide_nothing_even_when_censored() -> None:
    row = _table([_claim("T19d")], _cells(amqp=[None] * 2)).loc["T19d"]
    assert row["verdict"] == INCONCLUSIVE and "too few repetitions" in row["reason"]


def test_a_direction_between_a_censored_cell_and_a_failing_one_is_decided() -> None:
    """amqp: one failure mid-run and four runs past 900 s; grpc: five failures spread over
    the first minutes. Both support the model: MTTF amqp > grpc (T19a) by the conditional
    test of two Poisson rates."""
    cells = _cells(amqp=[500.0, None, None, None, None], grpc=[150.0, 400.0, 60.0, 250.0, 700.0])
    row = _table([_claim("T19a")], cells).loc["T19a"]
    assert row["p_method"] == POISSON_METHOD
    assert row["verdict"] == REPRODUCED, row["reason"]


def test_no_failure_on_either_side_compares_on_runs() -> None:
    """No failure in either cell: no model to use; the exact test on runs (every run at the
    cap on both sides: p = 1), whose 3 + 3 runs could not pass even alone in a family (its
    smallest p 0.1): underpowered by design, and nothing is decided."""
    row = _table([_claim("T19a")], _cells(amqp=[None] * 3, grpc=[None] * 3)).loc["T19a"]
    assert row["verdict"] == UNDERPOWERED and "by design" in row["reason"]
    assert row["p_raw"] == 1.0 and row["measured_ratio"] == 1.0


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
