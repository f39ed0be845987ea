"""Runs of several sittings (ipclab.stats.sittings): which sitting a run is of, the log-ratio
test with the sitting as a block, its false-positive rate under the null with a shift
between sittings, and the claims engine using it when a table's runs span sittings."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ipclab import claims as claims_mod
from ipclab.published import Claim
from ipclab.stats import log_ratio_interval, log_ratio_interval_by_sitting, sittings


def test_a_new_sitting_starts_after_a_gap() -> None:
    starts = ["2026-11-22T13:00Z", "2026-11-22T15:30Z", "2026-11-27T12:00Z", None,
              "2026-11-22T14:00Z", "2026-11-27T16:00Z"]  # fmt: skip
    assert sittings(starts).tolist() == [0, 0, 1, -1, 0, 1]


def test_one_sitting_is_the_plain_test() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.normal(100, 8, 6), rng.normal(120, 10, 5)
    terms = [(1, [a]), (-1, [b])]
    one = log_ratio_interval_by_sitting(terms, [[np.zeros(6)], [np.zeros(5)]])
    plain = log_ratio_interval(terms)
    assert (one.estimate, one.low, one.high, one.p_value) == pytest.approx(
        (plain.estimate, plain.low, plain.high, plain.p_value)
    )


def _two_sittings(rng: np.random.Generator, ratio: float, n: tuple[int, int], shift: float,
                  cells: int = 2) -> tuple[list[np.ndarray], list[np.ndarray]]:  # fmt: skip
    """``cells`` samples (CV 0.1), the first ``ratio`` times the others, each with n[0] runs
    in sitting 0 and n[1] in sitting 1, where everything is ``shift`` times slower."""
    values, labels = [], []
    for c in range(cells):
        level = 100.0 * (ratio if c == 0 else 1.0)
        x = np.concatenate([level * np.exp(rng.normal(0, 0.1, n[0])),
                            shift * level * np.exp(rng.normal(0, 0.1, n[1]))])  # fmt: skip
        values.append(x)
        labels.append(np.repeat([0, 1], n))
    return values, labels


def test_a_shift_between_sittings_is_taken_out() -> None:
    rng = np.random.default_rng(5)
    (a, b), (la, lb) = _two_sittings(rng, 1.1, (5, 5), 1.4)
    blocked = log_ratio_interval_by_sitting([(1, [a]), (-1, [b])], [[la], [lb]])
    pooled = log_ratio_interval([(1, [a]), (-1, [b])])
    assert blocked.low < 1.1 < blocked.high and blocked.low > 1.0  # decided, and right
    width = math.log(blocked.high / blocked.low)
    assert width < 0.6 * math.log(pooled.high / pooled.low)  # far narrower than pooled
    assert pooled.low < 1.0  # which would not decide


@pytest.mark.parametrize(("n", "kind"), [((5, 5), "ratio"), ((5, 1), "ratio"),
                                         ((5, 5), "interaction")])  # fmt: skip
def test_false_positives_at_or_below_alpha_under_the_null(n: tuple[int, int], kind: str) -> None:
    rng = np.random.default_rng(11)
    sims, hits = 2000, 0
    for _ in range(sims):
        cells = 4 if kind == "interaction" else 2
        values, labels = _two_sittings(rng, 1.0, n, 1.35, cells)
        if kind == "interaction":  # (v1 / v0) / (v3 / v2)
            idx = [(1, 1), (-1, 0), (-1, 3), (1, 2)]
            terms = [(s, [values[i]]) for s, i in idx]
            marks = [[labels[i]] for _, i in idx]
        else:
            terms, marks = [(1, [values[0]]), (-1, [values[1]])], [[labels[0]], [labels[1]]]
        hits += log_ratio_interval_by_sitting(terms, marks).p_value < 0.05
    rate = hits / sims
    assert rate <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / sims), (n, kind, rate)


def test_the_claims_engine_tests_within_sittings() -> None:
    rng = np.random.default_rng(2)
    (a, b), (la, _) = _two_sittings(rng, 1.15, (5, 5), 1.4)
    day = {0: "2026-11-22T13:00Z", 1: "2026-11-27T13:00Z"}
    runs = pd.DataFrame(
        {"style": ["rest"] * 10 + ["grpc"] * 10, "users": 50, "mean_ms": np.r_[a, b],
         "started_at": [day[int(s)] for s in np.r_[la, la]]}
    )  # fmt: skip
    claim = Claim(
        claim_id="X1", statement_id="X", document="d", section="1", page="1", quote="q",
        scope="performance", metric="mean_ms", test="direction", relation=">",
        a_style="rest", a_users=(50,), b_style="grpc", b_users=(50,),
        from_users=None, to_users=None, published_value="", published_unit="",
        table_value="", published_ratio=None, band_low=None, band_high=None, note="",
    )  # fmt: skip
    row = claims_mod.evaluate_claims(runs, [claim]).iloc[0]
    assert row["p_method"] == "t (log ratio, by sitting)"
    assert row["verdict"] == claims_mod.REPRODUCED
    one_day = runs.assign(started_at="2026-11-22T13:00Z")
    assert claims_mod.evaluate_claims(one_day, [claim]).iloc[0]["p_method"] == "t (log ratio)"


def test_the_internal_pilot_with_added_runs_from_another_sitting_keeps_alpha() -> None:
    """docs/statistics.md section 7: runs sized from the pilot's variance, made in a sitting
    where everything is 1.35x slower, the final test within sittings."""
    from ipclab.stats import pilot

    sims = 2000
    for interaction in (False, True):
        rate = pilot.type_one_error(simulations=sims, interaction=interaction, shift=1.35)
        assert rate <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / sims), (interaction, rate)


# --------------------------------------------------------------------------- the stated rule
# (docs/statistics.md section 7, issue 47.2): an undefined within-sitting estimate is never
# replaced by the pooled test

DAYS = {0: "2026-11-25T12:30Z", 1: "2026-11-27T15:00Z"}


def _runs(a: dict[int, list[float]], b: dict[int, list[float]]) -> pd.DataFrame:
    """Per-run rows of cells a (coap@0) and b (http1@0), by sitting."""
    rows = [{"style": style, "users": 0, "m": v, "started_at": DAYS[s]}
            for style, cell in (("coap", a), ("http1", b)) for s, xs in cell.items()
            for v in xs]  # fmt: skip
    return pd.DataFrame(rows)


def _claim(rel: str = ">") -> Claim:
    return Claim(
        claim_id="N14a", statement_id="N14", document="d", section="1", page="1", quote="q",
        scope="performance", metric="m", test="direction", relation=rel,
        a_style="coap", a_users=(0,), b_style="http1", b_users=(0,),
        from_users=None, to_users=None, published_value="", published_unit="",
        table_value="", published_ratio=None, band_low=None, band_high=None, note="",
    )  # fmt: skip


#: Nyfløtt N14a's slow requests per 1,000: CoAP's five runs in the first sitting; HTTP/1.1's
#: five there all 0, and 20 more in a second sitting (a few not 0)
N14A = (
    {0: [2.172, 2.530, 1.252, 1.983, 1.357]},
    {0: [0.0] * 5, 1: [0.0] * 5 + [0.186, 0.027] + [0.0] * 6 + [0.128, 0.318, 0.438] + [0.0] * 4},
)


def test_a_zero_side_within_the_only_common_sitting_is_the_exact_test_there() -> None:
    """N14a: before, the within-sitting estimate was undefined and the pooled test decided
    in silence (42.4 [14.5, 124], reproduced); within the sitting it is section 3's
    zero-side case: the exact test of 5 against 5 (p = 2 / 252)."""
    row = claims_mod.evaluate_claims(_runs(*N14A), [_claim()]).iloc[0]
    assert row["p_method"] == "permutation (by sitting)"
    assert row["p_raw"] == pytest.approx(2 / 252)
    assert (row["n_a"], row["n_b"]) == (5, 5)  # the runs of the sitting holding both
    assert row["measured_ratio"] == math.inf and row["ci_low"] == math.inf
    assert row["p_floor"] == pytest.approx(2 / 252) and row["design"] == "can pass"
    assert row["verdict"] == claims_mod.REPRODUCED  # a family of one: 0.0079 < 0.05


def test_no_sitting_with_every_cell_is_inconclusive_and_says_so() -> None:
    row = claims_mod.evaluate_claims(_runs({0: [5, 6, 7]}, {1: [5, 6, 7]}), [_claim()]).iloc[0]
    assert row["verdict"] == claims_mod.INCONCLUSIVE
    assert "none holding every compared cell" in row["reason"]
    assert np.isnan(row["p_raw"]) and row["measured"] == ""


def test_one_value_per_cell_and_sitting_is_the_exact_test_within_sittings() -> None:
    runs = _runs({0: [3, 3, 3], 1: [4, 4, 4]}, {0: [2, 2, 2], 1: [3, 3, 3]})
    row = claims_mod.evaluate_claims(runs, [_claim()]).iloc[0]
    assert row["p_method"] == "permutation (by sitting)"
    assert row["p_raw"] == pytest.approx(2 / 400)  # 20 x 20 labellings, the mirror counted
    assert row["measured_ratio"] == pytest.approx(3.5 / 2.5)


def test_the_within_sitting_interval_is_undefined_rather_than_pooled() -> None:
    a, b = np.array([5.0, 6, 7]), np.array([5.0, 6, 7])
    terms = [(1, [a]), (-1, [b])]
    apart = log_ratio_interval_by_sitting(terms, [[np.zeros(3)], [np.ones(3)]])
    assert np.isnan(apart.estimate)  # before: the pooled interval
    flat = log_ratio_interval_by_sitting(
        [(1, [np.array([3.0, 3, 4, 4])]), (-1, [np.array([2.0, 2, 3, 3])])],
        [[np.array([0, 0, 1, 1])], [np.array([0, 0, 1, 1])]],
    )
    assert np.isnan(flat.estimate)  # no spread within any sitting: no t test
