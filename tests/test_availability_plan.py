"""The availability plan (ipclab.studies.shafabakhsh.availability.plan): its formulas, and
the block of docs/availability.md computed from the references committed before the runs."""

from __future__ import annotations

import math

import pandas as pd

from ipclab.findings import GENERATED
from ipclab.paths import REPO_ROOT
from ipclab.studies.shafabakhsh.availability import plan


def test_exact_test_runs_for_a_complete_separation() -> None:
    assert plan.exact_min_runs(0.1) == 3  # 2 / C(6, 3) = 0.1: the old 3 runs, never below 0.05
    assert plan.exact_min_runs(0.025) == 5  # 2 / C(10, 5) = 0.0079
    assert 2 / math.comb(8, 4) > 0.025


def test_poisson_and_censored_run_counts() -> None:
    # ln(1.5)^2 = 0.164; (1.96 + 0.84)^2 = 7.85: 2 * 7.85 / 0.164 = 96 failures a cell
    assert plan.poisson_failures_needed(1.5, 0.05) == 96
    assert plan.poisson_failures_needed(1.0, 0.05) == math.inf
    # three runs surviving 900 s reject a 7-minute MTTF at 0.0029: exp(-2700/420) = 0.0016
    assert plan.censored_runs_needed(420.0, 900.0, 0.05 / 17) == 3
    assert math.exp(-2 * 900 / 420) > 0.05 / 17 > math.exp(-3 * 900 / 420)


def test_plan_rows_and_outcomes() -> None:
    table = pd.DataFrame(
        {
            "claim_id": ["T22a", "P17a", "X1"],
            "test": ["direction", "direction", "direction"],
            "test_key": ["k1", "k1", "k2"],
            "comparison": [
                "outage_failure_fraction: amqp < rest",
                "outage_failure_fraction: amqp < rest",
                "mttf_s: amqp@200 > grpc@200",
            ],
            "published_ratio": [math.nan, math.nan, 1.05],
            "published_value": ["", "", ""],
            "published_unit": ["", "", ""],
        }
    )
    t = plan.plan_table({"outage": table}, pd.DataFrame(columns=["family", "claim_id"]))
    assert t["claims"].tolist() == ["T22a, P17a", "X1"]
    assert t["runs_needed"].iloc[0] == 5  # a family of 2 tests: alpha 0.025
    assert t["outcome"].iloc[1].startswith("underpowered")


def test_the_documented_plan_is_generated() -> None:
    doc = (REPO_ROOT / "docs" / "availability.md").read_text()
    blocks = {m.group("name"): m.group(0) for m in GENERATED.finditer(doc)}
    body = blocks["availability-plan"]
    for family in plan.FAMILY_METHOD:
        assert f"| {family} |" in body, family
    assert "decidable at the plan" in body and "underpowered" in body
