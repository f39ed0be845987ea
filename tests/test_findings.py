"""Sentences that state findings come from the claims tables (docs/statistics.md section 5):
every committed reference README says what its tables say, and a README edited by hand to
say otherwise fails."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from ipclab import findings
from ipclab.paths import from_repo

REFERENCE = from_repo("data/runs/reference")
READMES = sorted(p for p in REFERENCE.glob("*/README.md") if (p.parent / "results").is_dir())


def _claims_files(readme: Path) -> list[str]:
    return sorted(
        str(p.relative_to(readme.parent))
        for p in (readme.parent / "results").glob("claims*.csv")
        if p.name != "claims_code.csv"
    )


@pytest.mark.parametrize("readme", READMES, ids=lambda p: p.parent.name)
def test_every_reference_readme_says_what_its_claims_tables_say(readme: Path) -> None:
    text = readme.read_text()
    labels = [m.group("label") for m in findings.BLOCK.finditer(text)]
    assert set(_claims_files(readme)) <= set(labels), f"{readme}: a claims table without findings"
    assert findings.check_findings(readme) == []


def _a_readme(tmp_path: Path) -> Path:
    table = pd.read_csv(next(REFERENCE.glob("*/results/claims.csv")))
    (tmp_path / "results").mkdir()
    table.to_csv(tmp_path / "results" / "claims.csv", index=False)
    readme = tmp_path / "README.md"
    readme.write_text("# x\n\n<!-- findings: results/claims.csv -->\n<!-- /findings -->\n")
    findings.write_findings(readme, table, "results/claims.csv")
    return readme


def test_a_verdict_word_changed_by_hand_fails(tmp_path: Path) -> None:
    readme = _a_readme(tmp_path)
    assert findings.check_findings(readme) == []
    text = readme.read_text()
    assert "not reproduced" in text
    readme.write_text(text.replace("not reproduced", "reproduced", 1))
    assert findings.check_findings(readme)


def test_a_number_changed_by_hand_fails(tmp_path: Path) -> None:
    readme = _a_readme(tmp_path)
    text = readme.read_text()
    i = text.index("a/b = ") + len("a/b = ")
    digit = next(j for j in range(i, len(text)) if text[j].isdigit())
    wrong = "1" if text[digit] != "1" else "2"
    readme.write_text(text[:digit] + wrong + text[digit + 1 :])
    assert findings.check_findings(readme)


def test_a_hand_written_line_that_contradicts_a_claims_verdict_fails(tmp_path: Path) -> None:
    readme = _a_readme(tmp_path)
    table = pd.read_csv(tmp_path / "results" / "claims.csv")
    row = table[table["verdict"] == "not reproduced"].iloc[0]
    with readme.open("a") as f:
        f.write(f"\nAs the tables show, {row['claim_id']} is reproduced.\n")
    assert any(row["claim_id"] in p for p in findings.check_findings(readme))


def test_a_readme_without_its_block_is_refused(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# no block\n")
    with pytest.raises(findings.FindingsError, match="no block"):
        findings.write_findings(readme, pd.DataFrame(), "results/claims.csv")


def test_fill_replaces_only_the_named_blocks_and_refuses_a_missing_one(tmp_path: Path) -> None:
    md = tmp_path / "README.md"
    md.write_text(
        "# x\n<!-- generated: a -->\nold\n<!-- /generated -->\nhand\n"
        "<!-- generated: b -->\nkeep\n<!-- /generated -->\n"
    )
    findings.fill_blocks(md, {"a": "new 1\nnew 2"})
    text = md.read_text()
    assert "<!-- generated: a -->\nnew 1\nnew 2\n<!-- /generated -->" in text
    assert "old" not in text and "keep" in text and "hand" in text
    with pytest.raises(findings.FindingsError, match="generated: c"):
        findings.fill_blocks(md, {"c": "x"})
