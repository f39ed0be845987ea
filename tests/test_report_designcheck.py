"""The report's design check (issue 47, must show 3): the tests of the committed references
whose runs cannot pass their Holm level, the same as ``ipclab plan`` prints."""

from __future__ import annotations

import pandas as pd

from ipclab.paths import REPO_ROOT
from ipclab.planner import design_lines
from ipclab.report.context import Counter
from ipclab.report.designcheck import design_section, design_table

REFERENCE = REPO_ROOT / "data" / "runs" / "reference"


def test_the_reports_design_check_is_the_plans() -> None:
    table = design_table(REFERENCE)
    tables = {
        csv.parents[1].name + ("" if csv.stem == "claims" else f" ({csv.stem})"): pd.read_csv(csv)
        for csv in sorted(REFERENCE.glob("*/results/claims*.csv"))
    }
    lines = design_lines(tables)
    assert len(lines) - 1 == len(table) > 0  # a heading, then a line per test
    html = design_section(REFERENCE, Counter())
    assert "Design check" in html
    for claims in table["claims"]:
        assert claims in html
    assert (table["floor"] >= table["level"]).all()
    assert set(table["verdict"]) <= {"underpowered", "inconclusive", "not reproduced"}


def test_no_test_that_cannot_pass_is_said_so(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert "Every test's runs can pass" in design_section(tmp_path, Counter())
