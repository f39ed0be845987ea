"""The design check (docs/statistics.md section 3, issue 47.7): the smallest p a test's runs
can reach against its Holm level, in every claims row; an undecided test whose runs could
not have passed is underpowered with the runs that could, before any run is made; and
``ipclab plan`` prints them. Synthetic claims and runs; no services."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ipclab import claims as C
from ipclab.published import Claim
from ipclab.stats import Interval, design


def claim(cid: str, test: str = "direction", rel: str = ">", metric: str = "m") -> Claim:
    return Claim(cid, cid[:3], "thesis", "1", "1", "a quote", "performance", metric, test, rel,
                 "a", (1,), "b", (1,), None, None, "", "", "", None, None, None, "",
                 "")  # fmt: skip


def runs(a: list[float], b: list[float], others: int = 0) -> pd.DataFrame:
    """Cells a@1 and b@1 of metric ``m``; ``others`` more metrics x0, x1, ... alike (a
    family of more tests)."""
    rng = np.random.default_rng(0)
    rows = [{"style": s, "users": 1, "m": v} for s, xs in (("a", a), ("b", b)) for v in xs]
    df = pd.DataFrame(rows)
    for i in range(others):
        df[f"x{i}"] = 100 * (1 + 0.05 * rng.standard_normal(len(df)))
    return df


def test_the_floors_of_exact_tests() -> None:
    assert design.exact_floor(3, 3) == pytest.approx(0.1)
    assert design.exact_floor(5, 5) == pytest.approx(2 / 252)
    assert design.exact_floor(5, 4) == pytest.approx(1 / 126)  # no mirror with unequal cells
    assert design.exact_floor(12, 12) == pytest.approx(1 / 20_001)  # the random test's
    assert design.stratified_floor([(5, 5), (2, 2)]) == pytest.approx(2 / (252 * 6))
    assert design.floor_of("t (log ratio)", 3, 3) == 0.0
    assert design.floor_of("t (delta method, gap sizes)", 3, 3) == 0.0
    assert math.isnan(design.floor_of("exact (Poisson rates)", 3, 3))  # the study's to say
    assert design.runs_to_reach(0.05 / 123) == 8  # C(16, 8) = 12,870
    assert design.runs_to_reach(0.05) == 4  # 2 / 70 = 0.029


def test_a_test_its_runs_cannot_pass_is_underpowered_by_design() -> None:
    """N14b's case: 5 against 5 runs, one side 0 in every run: the exact test's floor 0.0079
    cannot pass 0.05 / m once the family has 7 tests or more (0.05 / 7 = 0.0071)."""
    df = runs([2.1, 2.5, 1.2, 2.0, 1.4], [0.0] * 5, others=6)
    tests = [claim("N14b"), *[claim(f"X0{i}a", metric=f"x{i}") for i in range(6)]]
    row = C.evaluate_claims(df, tests).set_index("claim_id").loc["N14b"]
    assert row["p_method"] == "permutation" and row["p_floor"] == pytest.approx(2 / 252)
    assert row["p_level"] == pytest.approx(0.05 / 7)
    assert row["design"] == "cannot pass: floor 0.0079 >= level 0.0071; 6 runs per cell could"
    assert row["verdict"] == C.UNDERPOWERED
    assert row["reason"].startswith(
        "underpowered by design: the permutation test's smallest p at 5 + 5 runs is 0.0079, "
        "not below its Holm level 0.0071 (6 runs per cell could reach it); "
    )
    # in a family of 6 the same runs can pass (0.05 / 6 = 0.0083): decided as before
    small = C.evaluate_claims(df, tests[:6]).set_index("claim_id").loc["N14b"]
    assert small["design"] == "can pass" and small["verdict"] == C.REPRODUCED


def test_three_against_three_can_never_pass_and_the_design_says_so_whatever_the_data() -> None:
    """An exact test on 3 + 3 runs: no p below 0.1, so no alpha of 0.05 is ever passed (the
    availability method-1 tests with the run as the unit)."""
    for b in ([0.0] * 3, [1.0] * 3):
        row = C.evaluate_claims(runs([2.0, 2.0, 2.0], b), [claim("A01a")]).iloc[0]
        assert row["p_floor"] == pytest.approx(0.1) and row["verdict"] == C.UNDERPOWERED
        assert "4 runs per cell could reach it" in row["reason"]


def test_a_decided_test_keeps_its_verdict_and_a_t_test_has_no_floor() -> None:
    # a constant side off the claimed one is decided without any p-value
    off = C.evaluate_claims(runs([1.0] * 3, [2.0] * 3), [claim("A01a")]).iloc[0]
    assert off["verdict"] == C.NOT_REPRODUCED and off["design"].startswith("cannot pass")
    t = C.evaluate_claims(runs([1.0, 1.1, 0.9], [1.0, 1.2, 0.8]), [claim("A02a")]).iloc[0]
    assert t["p_floor"] == 0.0 and t["design"] == "can pass" and t["verdict"] == C.INCONCLUSIVE
    eq = C.evaluate_claims(runs([1.0] * 3, [0.0] * 3), [claim("A03a", "equal", "=")]).iloc[0]
    assert eq["design"] == ""  # an equivalence needs no p-value


def test_a_study_states_its_own_tests_floor() -> None:
    c = claim("A01a")
    e = C.Effect(Interval(2.0, 1.5, 2.7, 3), 2.0, 1.0, 3, 3, 3, 0.2, "exact (runs)",
                 p_floor=0.1)  # fmt: skip
    row = C.evaluate_claims(runs([1.0] * 3, [1.0] * 3), [c], effects={"A01a": e}).iloc[0]
    assert row["verdict"] == C.UNDERPOWERED and "the exact (runs) test's" in row["reason"]


def test_the_plan_prints_the_tests_whose_runs_cannot_pass() -> None:
    from ipclab.planner import design_lines

    table = C.evaluate_claims(runs([2.0, 2.5, 1.5], [0.0] * 3), [claim("A01a")])
    lines = design_lines({"ref": table})
    assert lines[0].startswith("design check: 1 test whose runs cannot pass its Holm level")
    assert "ref A01a" in lines[1] and "permutation" in lines[1] and "3 + 3 runs" in lines[1]
    assert "floor 0.1 >= level 0.05" in lines[1] and "4 runs per cell could" in lines[1]
    assert design_lines({"ref": C.evaluate_claims(runs([1, 2, 3], [2, 3, 4]), [claim("B")])}) == [
        "design check: every test's runs can pass its Holm level"
    ]
