"""The Shafabakhsh reference READMEs: their measured parts and headline are generated from
the analysis (never typed), and say what the committed runs say."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from ipclab.paths import from_repo
from ipclab.studies.shafabakhsh import languages, performance, reference
from tests import reference_analyses

REFERENCE = from_repo("data/runs/reference")


def _claims(verdict: str, ratio: float, lo: float, hi: float) -> pd.DataFrame:
    rows = [
        {"claim_id": i, "verdict": verdict, "measured_ratio": ratio, "ci_low": lo, "ci_high": hi}
        for ids in performance.HEADLINE
        for i in ids
    ]
    return pd.DataFrame(rows)


def test_the_headline_says_reversed_only_when_significant_on_the_other_side() -> None:
    # every headline claim says AMQP is better: higher rps (>) or lower mean_ms (<); a ratio
    # of 0.35 [0.33, 0.38] is on the other side for '>' and on the claimed side for '<'
    text = performance.headline_markdown(_claims("not reproduced", 0.35, 0.33, 0.38))
    assert "mixed" in text and "0.35 [0.33, 0.38]x REST's throughput" in text
    rows = _claims("not reproduced", 2.8, 2.5, 3.1)
    rel = {c.claim_id: c.relation for c in performance.published.claims(scope="performance")}
    rows.loc[rows["claim_id"].map(rel) == ">", ["measured_ratio", "ci_low", "ci_high"]] = (
        0.35, 0.33, 0.38,
    )  # fmt: skip
    assert performance.headline_markdown(rows).count(": reversed)") == 2
    assert (
        performance.headline_markdown(_claims("reproduced", 1.5, 1.2, 1.8)).count(": reproduced)")
        == 2
    )
    assert performance.headline_markdown(_claims("reproduced", 1, 1, 1).iloc[:3]) == ""


def _block(path: Path, name: str) -> str:
    text = path.read_text()
    start = text.index(f"<!-- generated: {name} -->\n") + len(f"<!-- generated: {name} -->\n")
    return text[start : text.index("\n<!-- /generated -->", start)]


@pytest.mark.skipif(
    not (REFERENCE / "shafabakhsh-go-full-local").is_dir(), reason="no committed reference"
)
def test_the_committed_readmes_say_what_the_committed_runs_give() -> None:
    """Every generated block of the two performance READMEs is what the rebuilder writes
    from the committed runs (so "3 of 9 cells" against a table of 6 cannot come back)."""
    a = reference_analyses.shafabakhsh_languages()  # reference.analyse_languages()
    go = REFERENCE / "shafabakhsh-go-full-local" / "README.md"
    for name, text in languages.readme_blocks(a).items():
        assert _block(go, name) == text.rstrip(), name
    assert re.search(r"\b\d of 9 cells are within", _block(go, "sittings"))  # its count
    p = reference_analyses.shafabakhsh("local")  # the local and think-time runs' analysis
    py = REFERENCE / "shafabakhsh-full-local" / "README.md"
    for name, text in performance.readme_blocks(p).items():
        assert _block(py, name) == text.rstrip(), name
    assert "T18a, T18b, T18c, T18d: reversed" in _block(py, "headline")


@pytest.mark.skipif(
    not (REFERENCE / "shafabakhsh-full-docker").is_dir(), reason="no committed reference"
)
def test_the_docker_readme_says_what_its_runs_and_both_claims_tables_give() -> None:
    """The docker reference's generated blocks, the agreement with the local reference's
    claims among them, are what the rebuilder writes from the committed files."""
    folder = REFERENCE / "shafabakhsh-full-docker"
    p = reference_analyses.shafabakhsh("docker")
    table, agreement = reference.backend_agreement(
        REFERENCE / "shafabakhsh-full-local" / "results", folder / "results"
    )
    readme = folder / "README.md"
    for name, text in {**performance.readme_blocks(p), "agreement": agreement}.items():
        assert _block(readme, name) == text.rstrip(), name
    assert len(table) == len(pd.read_csv(folder / "results" / "backends.csv"))
    assert "local against docker: the verdicts agree on" in agreement


def test_the_sitting_sentence_names_each_day_of_runs() -> None:
    from ipclab.studies.shafabakhsh.readme import sitting_markdown

    runs = pd.DataFrame(
        {
            "started_at": ["2026-11-22T13:12:00Z", "2026-11-27T12:34:00Z", "2026-11-22T15:38:00Z"],
            "other_cpu_percent": [3.0, 11.4, None],
        }
    )
    assert sitting_markdown(runs) == (
        "3 runs, 2026-11-22, 13:12-15:38 and 2026-11-27, 12:34 UTC (run starts); other "
        "processes' CPU during a run at most 11 %."
    )
    assert sitting_markdown(runs.iloc[:0]) == "No run recorded its start."
