"""The verdict for what no affordable number of runs decides (docs/statistics.md section 7,
issues 25 and 27): an inconclusive test whose power row needs more machine-hours than the
budget is ``underpowered``, with the runs it needs; nothing decided changes, and it is
counted apart from inconclusive."""

from __future__ import annotations

import math

import pandas as pd

from ipclab.claims import (
    INCONCLUSIVE,
    REPRODUCED,
    UNDERPOWERED,
    VERDICTS,
    Rules,
    mark_underpowered,
    run_hours,
    statement_verdicts,
    tally,
)
from ipclab.findings import findings_lines


def _table() -> pd.DataFrame:
    rows = [  # claim, test, verdict, family
        ("A01a", "direction", REPRODUCED, "f"),
        ("A02a", "direction", INCONCLUSIVE, "f"),
        ("A02b", "direction", INCONCLUSIVE, "f"),  # the same test said again
        ("A03a", "direction", INCONCLUSIVE, "f"),
        ("A04a", "interaction", INCONCLUSIVE, "f"),
        ("A05a", "direction", INCONCLUSIVE, "f"),
        ("A06a", "direction", INCONCLUSIVE, "g"),
    ]
    return pd.DataFrame(
        [
            {
                "claim_id": cid,
                "statement_id": cid[:3],
                "source": "s",
                "quote": "q",
                "test_key": "k" + cid[:3] if cid != "A06a" else "kA05",
                "test": test,
                "magnitude": "",
                "verdict": verdict,
                "reason": "ratio 1.1 [0.9, 1.3], p = 0.3: not significant at 0.05",
                "family": fam,
                "evidence": "test",
                "comparison": f"rps: {cid}",
                "relation": ">",
            }
            for cid, test, verdict, fam in rows
        ]
    )


POWER = pd.DataFrame(
    [  # claim, runs made, runs needed (NaN: more than 1,000), family
        {"claim_id": "A01a", "runs_per_cell": 5, "runs_needed": 900, "alpha": 0.01, "family": "f"},
        {"claim_id": "A02a", "runs_per_cell": 5, "runs_needed": 8, "alpha": 0.01, "family": "f"},
        {"claim_id": "A03a", "runs_per_cell": 5, "runs_needed": 681, "alpha": 0.01, "family": "f"},
        {"claim_id": "A04a", "runs_per_cell": 5, "runs_needed": 25, "alpha": 0.01, "family": "f"},
        {"claim_id": "A05a", "runs_per_cell": 5, "runs_needed": math.nan, "alpha": 0.01,
         "family": "f"},
    ]
)  # fmt: skip


def test_only_what_the_budget_cannot_decide_is_underpowered() -> None:
    """0.2 h a run, 24 h budget: 3 more runs x 2 cells (1.2 h) stay inconclusive; 676 x 2
    (270 h) and more than 1,000 are underpowered; an interaction counts 4 cells (at 0.4 h a
    run, 20 x 4 x 0.4 = 32 h); a decided test keeps its verdict whatever its power."""
    out = mark_underpowered(_table(), POWER, 0.2).set_index("claim_id")
    assert out.loc["A01a", "verdict"] == REPRODUCED
    assert out.loc["A02a", "verdict"] == INCONCLUSIVE == out.loc["A02b", "verdict"]
    assert out.loc["A03a", "verdict"] == UNDERPOWERED
    assert out.loc["A03a", "reason"].startswith(
        "underpowered: 681 runs per cell, 270 more machine-hours for 80% power at alpha 0.01 "
        "(5 made, budget 24 h); ratio 1.1"
    )
    assert out.loc["A04a", "verdict"] == INCONCLUSIVE  # 16 h over 4 cells
    slow = mark_underpowered(_table(), POWER, 0.4).set_index("claim_id")
    assert slow.loc["A04a", "verdict"] == UNDERPOWERED  # 32 h over 4 cells
    assert "more than 1,000 runs per cell" in out.loc["A05a", "reason"]
    # the power row of family f does not reach family g's row of the same test key
    assert out.loc["A06a", "verdict"] == INCONCLUSIVE
    assert (
        mark_underpowered(_table(), POWER, 0.4, Rules(budget_h=33.0))
        .set_index("claim_id")
        .loc["A04a", "verdict"]
        == INCONCLUSIVE
    )


def test_a_test_needing_more_runs_than_a_cell_gets_is_underpowered_within_the_budget() -> None:
    """docs/statistics.md section 7: a cell gets at most 25 runs; a test that needs more is
    underpowered, however cheap its runs (issue 47.4: 17 tests stayed inconclusive needing
    31-690 runs per cell, within the hours)."""
    power = POWER.assign(runs_needed=[900, 31, 681, 25, math.nan])
    out = mark_underpowered(_table(), power, 0.01).set_index("claim_id")
    assert out.loc["A02a", "verdict"] == UNDERPOWERED  # 26 more x 2 x 0.01 h = 0.5 h
    assert out.loc["A02a", "reason"].startswith(
        "underpowered: 31 runs per cell, more than the 25 a cell gets (0.5 more machine-hours)"
    )
    assert out.loc["A04a", "verdict"] == INCONCLUSIVE  # 25: within the cap
    assert "within the 24 h budget" in out.loc["A04a", "reason"]
    lenient = mark_underpowered(_table(), power, 0.01, Rules(max_runs=40)).set_index("claim_id")
    assert lenient.loc["A02a", "verdict"] == INCONCLUSIVE


def test_underpowered_is_counted_apart_and_named_in_the_findings() -> None:
    out = mark_underpowered(_table(), POWER, 0.4)
    assert UNDERPOWERED in VERDICTS
    counts = tally(out)
    assert counts == {INCONCLUSIVE: 1, UNDERPOWERED: 3, REPRODUCED: 1}  # A06a: A05a's key
    lines = "\n".join(findings_lines(out, "claims.csv"))
    assert "1 reproduced, 0 not reproduced, 3 underpowered, 1 inconclusive" in lines
    assert "**Underpowered (3 tests" in lines and "A03a" in lines and "681 runs per cell" in lines
    assert "(5 made, budget 24 h)" in lines  # the whole need, not cut at its reason
    st = statement_verdicts(out).set_index("statement_id")
    assert st.loc["A03", UNDERPOWERED] == 1 and st.loc["A03", "verdict"] == INCONCLUSIVE


def test_nothing_changes_without_power_or_hours() -> None:
    table = _table()
    assert mark_underpowered(table, pd.DataFrame(), 1.0).equals(table)
    out = mark_underpowered(table, POWER, 0.0)  # no wall time known: only > 25 (the cap) is
    assert list(out.loc[out["verdict"] == UNDERPOWERED, "claim_id"]) == ["A03a", "A05a"]


def test_run_hours_reads_the_manifests() -> None:
    manifests = [
        {"started_at": "2026-11-22T13:00:00+00:00", "ended_at": "2026-11-22T13:30:00+00:00"},
        {"started_at": "2026-11-22T14:00:00+00:00", "ended_at": "2026-11-22T15:00:00+00:00"},
        {"started_at": "2026-11-22T16:00:00+00:00", "ended_at": None},  # still running
    ]
    assert run_hours(manifests) == 0.75 and run_hours([]) == 0.0
