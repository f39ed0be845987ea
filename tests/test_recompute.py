"""Every committed claims table agrees with docs/statistics.md as recomputed by code that
imports nothing from ipclab (``tests/recompute.py``, issue 47): Holm, the design check, the
verdict rules of §4, "about N", an interval for every reproduced verdict, the 25-run cap,
the within-sitting rule and the estimates from the runs where the per-run table is known,
the serialisation benchmark's processes and the GC shift test's interval. And the helper
itself can fail: each rule catches a table that breaks it."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pandas as pd
import pytest

from tests import recompute as R

TABLES = R.claims_tables()


def test_the_helper_imports_nothing_from_ipclab() -> None:
    tree = ast.parse(Path(R.__file__).read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not [n for n in names if n.split(".")[0] in ("ipclab", "ipclab_services", "tests")]
    assert len(TABLES) >= 16


@pytest.mark.parametrize("path", TABLES, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_a_committed_claims_table_follows_the_rules_as_written(path: Path) -> None:
    assert R.problems(path) == []


# --------------------------------------------------------------------------- the helper can fail


def _nyflott() -> pd.DataFrame:
    return pd.read_csv(R.REFERENCE / "nyflott-full-docker" / "results" / "claims.csv")


def _base(t: pd.DataFrame) -> dict[str, str]:
    return {r["claim_id"]: v for _, r in t.iterrows() if (v := R.base_verdict(r)) is not None}


def test_holm_and_the_section_4_verdicts_catch_a_changed_row() -> None:
    t = _nyflott()
    i = t.index[t["p_method"] == "t (log ratio)"][0]
    t.loc[i, "p_value"] = t.loc[i, "p_value"] / 3
    assert any("Holm" in p for p in R.check_holm(t))
    t = _nyflott()
    j = t.index[t["verdict"] == "reproduced"][0]
    t.loc[j, "verdict"] = "not reproduced"
    assert R.check_verdicts(t, _base(t))


def test_the_design_check_and_the_cap_catch_an_inconclusive_that_should_not_be() -> None:
    t = _nyflott()
    design = t.index[t["design"].fillna("").str.startswith("cannot pass")]
    assert len(design)  # N14a, N14b
    t.loc[design, "verdict"] = "inconclusive"
    assert any("cannot pass" in p for p in R.check_design(t, _base(t)))
    t = _nyflott()
    capped = t.index[t["reason"].str.contains("more than the 25 a cell gets")]
    assert len(capped)
    t.loc[capped, "verdict"] = "inconclusive"
    assert R.check_cap(t, pd.DataFrame(), _base(t))


def test_the_within_sitting_rule_is_recomputed_from_the_runs() -> None:
    t = _nyflott()
    i = t.index[t["claim_id"] == "N14a"][0]
    assert t.loc[i, "p_method"] == "permutation (by sitting)"
    assert t.loc[i, "p_raw"] == pytest.approx(2 / 252)
    t.loc[i, ["p_method", "p_raw"]] = ["t (log ratio)", 1.06e-5]  # the old silent fallback
    assert any("N14a: p-method" in p for p in R.check_runs("nyflott-full-docker", t))


def test_about_n_intervals_and_the_gc_test_are_checked() -> None:
    t = pd.read_csv(R.REFERENCE / "availability-full-docker" / "results" / "claims.csv")
    i = t.index[t["claim_id"] == "T20a"][0]
    t.loc[i, ["band_low", "band_high"]] = [0.85, 1.15]
    assert any("about 20" in p for p in R.check_about(t))
    n = _nyflott()
    g = n.index[n["claim_id"] == "N29a"][0]
    n.loc[g, ["ci_low", "ci_high"]] = [math.nan, math.nan]
    assert R.check_intervals(n) and R.check_gc("nyflott-full-docker", n)


def test_the_serialisation_replicate_is_checked_against_its_processes() -> None:
    t = pd.read_csv(R.REFERENCE / "johansson-full-local" / "results" / "claims.csv")
    rows = t.index[t["family"] == "serialisation micro-benchmark"]
    t.loc[rows, ["n_a", "n_b"]] = 30  # the rounds (3 in each of 10 processes) as replicates
    assert R.check_serialisation("johansson-full-local", t)


def test_the_availability_rules_catch_a_table_that_breaks_them() -> None:
    folder = "availability-full-docker"
    t = pd.read_csv(R.REFERENCE / folder / "results" / "claims.csv")
    assert not R.check_availability(folder, t)
    bad = t.copy()
    i = bad.index[bad["claim_id"] == "P14c"][0]  # grpc@200 has no failure
    bad.loc[i, "p_method"] = "exact (Poisson rates)"  # the model the runs cannot support
    bad.loc[i, "verdict"] = "reproduced"  # or, with no run of the current method, evidence
    said = ("cannot support", "not said so", "no run of the current method")
    assert any(w in p for p in R.check_availability(folder, bad) for w in said)
    bad = t.copy()  # a prediction above the load its style's confirmation ran at
    k = bad.index[bad["claim_id"] == "P14b"][0]
    assert "predicted censored" in bad.loc[k, "reason"]
    bad.loc[k, "comparison"] = "mttf_s: rest@500 < rest@400"
    assert any("above the style's highest load" in p for p in R.check_availability(folder, bad))
    bad = t.copy()
    bad.loc[bad["comparison"].str.startswith("availability"), "n_b"] = 2  # a run left out
    assert any("A over" in p for p in R.check_availability(folder, bad))
    bad = t.copy()
    j = bad.index[bad["claim_id"] == "T22b"][0]
    bad.loc[j, "reason"] = "ratio 0 [0, 0] on the claimed side of 1"
    assert any("exact floor" in p for p in R.check_availability(folder, bad))
    bad.loc[j, "p_raw"] = 0.0
    assert R.check_no_zero_p(bad)
    row = pd.Series({"evidence": "test", "measured_ratio": 1.0, "ci_low": 1.0,
                     "ci_high": 1.0, "p_value": float("nan"), "n_a": 3, "measured": "1",
                     "relation": "=", "test": "value", "band_low": 0.8, "band_high": 1.25,
                     "magnitude": ""})  # fmt: skip
    assert R.base_verdict(row) == "inconclusive"  # constant runs inside the band
