"""ipclab.robustness: the same claims measured two ways, side by side; and the report's
robustness section built from committed references on two backends."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from ipclab import robustness as rb
from ipclab.report.context import Counter
from ipclab.report.robustness_section import robustness_section


def _claims(rows: list[tuple[str, float, float, float, str]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"claim_id": c, "comparison": f"rps: {c}", "measured_ratio": r, "ci_low": lo,
             "ci_high": hi, "verdict": v, "n_a": 5, "evidence": "test"}
            for c, r, lo, hi, v in rows
        ]
    )  # fmt: skip


LOCAL = _claims([
    ("A", 1.5, 1.3, 1.7, "reproduced"),      # the same on docker
    ("B", 1.5, 1.3, 1.7, "reproduced"),      # docker's estimate moves: the backend
    ("C", 1.05, 0.98, 1.12, "not reproduced"),  # both decide, alike estimates: noise
    ("D", 1.2, 0.9, 1.6, "underpowered"),  # docker decides, estimates alike: runs
    ("E", math.nan, math.nan, math.nan, "inconclusive"),  # not measured locally
])  # fmt: skip
DOCKER = _claims([
    ("A", 1.45, 1.3, 1.6, "reproduced"),
    ("B", 0.6, 0.55, 0.66, "not reproduced"),
    ("C", 1.08, 1.02, 1.14, "reproduced"),
    ("D", 1.25, 1.1, 1.4, "reproduced"),
    ("E", 2.0, 1.5, 2.6, "reproduced"),
])  # fmt: skip


def test_each_disagreement_is_explained_from_the_numbers() -> None:
    t = rb.side_by_side(rb.Pair("s", ("local", "docker"), LOCAL, DOCKER)).set_index("claim_id")
    assert t["explanation"].to_dict() == {
        "A": "agree", "B": "backend", "C": "noise", "D": "runs", "E": "not measured"
    }  # fmt: skip
    assert rb.agreement_share(t) == (1, 5)
    # the ratio of the estimates: b/a, its interval from the two sides' log widths
    b = t.loc["B"]
    assert b["docker_over_local"] == pytest.approx(0.4)
    se = math.hypot(math.log(1.7 / 1.3), math.log(0.66 / 0.55)) / (2 * 1.959964)
    assert b["ratio_low"] == pytest.approx(0.4 * math.exp(-1.959964 * se), rel=1e-6)
    assert b["ratio_high"] > 0.4 > b["ratio_low"]
    assert t.loc["A", "ratio_low"] < 1 < t.loc["A", "ratio_high"]


def test_facts_are_left_out_and_claims_in_one_table_only_are_not_compared(
    tmp_path: Path,
) -> None:
    fact = _claims([("F", 1.0, 1.0, 1.0, "reproduced")]).assign(evidence="fact")
    pd.concat([LOCAL, fact]).to_csv(tmp_path / "claims.csv", index=False)
    LOCAL.iloc[:2].assign(claim_id=["X", "Y"]).to_csv(tmp_path / "claims_other.csv", index=False)
    tables = rb.claims_tables(tmp_path)
    assert "F" not in set(tables["claim_id"])
    assert set(tables["table"]) == {"claims", "claims_other"}
    t = rb.side_by_side(rb.Pair("s", ("local", "docker"), tables, DOCKER.assign(table="claims")))
    assert set(t["claim_id"]) == set("ABCDE")


def test_a_factor_stated_per_level_becomes_a_pair() -> None:
    rows = _claims([
        ("L-1-python", 1.7, 1.5, 1.9, "reproduced"), ("L-1-go", 0.76, 0.67, 0.88, "not reproduced"),
        ("L-2-python", 1.7, 1.5, 1.9, "reproduced"), ("L-2-go", 1.8, 1.6, 2.0, "reproduced"),
    ])  # fmt: skip
    rows["comparison"] = [
        "rps: rest-python@50 > grpc-python@50",
        "rps: rest-go@50 > grpc-go@50",
    ] * 2
    pair = rb.factor_pairs(rows, "languages")
    assert pair is not None and pair.labels == ("python", "go")
    t = rb.side_by_side(pair, factor="language").set_index("claim_id")
    assert t["explanation"].to_dict() == {"L-1": "language", "L-2": "agree"}
    assert t.loc["L-1", "comparison"] == "rps: rest@50 > grpc@50"
    assert rb.factor_pairs(LOCAL, "none") is None


def _reference(root: Path, name: str, study: str, backend: str, claims: pd.DataFrame) -> None:
    results = root / name / "results"
    results.mkdir(parents=True)
    (results / "study.json").write_text(json.dumps({"study": study, "title": name}))
    claims.to_csv(results / "claims.csv", index=False)
    run = root / name / "run-r1"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps({"backend": backend}))


def test_the_report_sets_references_on_two_backends_side_by_side(tmp_path: Path) -> None:
    _reference(tmp_path, "s-full-local", "s", "local", LOCAL)
    _reference(tmp_path, "s-full-docker", "s", "docker", DOCKER)
    _reference(tmp_path, "t-full-local", "t", "local", LOCAL)  # one backend only: no pair
    pairs = rb.backend_pairs(tmp_path)
    titled = [(p.title, p.labels) for p in pairs]
    assert titled == [("s (s-full-local and s-full-docker)", ("local", "docker"))]
    html = robustness_section(tmp_path, Counter())
    assert "Across backends" in html and "agree on 1 of 5 claims (20%)" in html
    assert "backend 1, noise 1, not measured 1, runs 1" in html
    assert robustness_section(tmp_path / "t-full-local", Counter()) == ""


def test_an_agreement_table_a_study_wrote_is_shown_too(tmp_path: Path) -> None:
    results = tmp_path / "n-full-docker" / "results"
    results.mkdir(parents=True)
    (results / "study.json").write_text(json.dumps({"study": "n", "title": "n"}))
    table = rb.side_by_side(rb.Pair("sets", ("python", "native"), LOCAL, DOCKER), "adapters")
    table.to_csv(results / "adapters_agreement.csv", index=False)
    html = robustness_section(tmp_path, Counter())
    assert "n-full-docker: adapters, python against native" in html
    assert "agree on 1 of 5 claims" in html


def test_the_agreement_as_markdown_counts_what_its_table_shows() -> None:
    """A README's agreement block: the report's sentence, then a row per claim with both
    sides' estimates and verdicts, the ratio of the estimates and the explanation."""
    table = rb.side_by_side(rb.Pair("s", ("local", "docker"), LOCAL, DOCKER))
    text = rb.agreement_markdown(table, "s", ("local", "docker"), "backend")
    sentence, _, rows = text.partition("\n\n")
    assert sentence == rb.agreement_sentence(table, "s", ("local", "docker"), "backend")
    assert "agree on 1 of 5 claims (20%)" in sentence
    assert "backend 1, noise 1, not measured 1, runs 1" in sentence
    lines = rows.splitlines()
    assert lines[0].startswith("| claim | comparison | local a/b | local verdict | docker a/b")
    assert len(lines) == 2 + len(table)
    assert all(line.count(" | ") == 7 for line in lines[2:])  # a '|' in a cell is escaped
