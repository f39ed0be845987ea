"""Every figure and table a study's seed prints is listed in the study's ``seed_items.csv``
(issue 52) with where ipclab shows it (``figure:<name>`` or ``table:<name>`` of its primary
reference's results, ``<folder>/...`` of another reference) or why it cannot; every place
listed is in the report a rebuild of that reference gives: the figure drawn from its file,
the table printed (in the study's section or its appendix), not only left in the folder."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from ipclab import environment_table, seed_items
from ipclab.paths import REPO_ROOT
from ipclab.report import html as rh
from ipclab.report.context import Counter, SiteFiles
from ipclab.report.study import study_section
from ipclab.results import StudyResults

REFERENCE = REPO_ROOT / "data" / "runs" / "reference"
SEEDS = Path("/work/shared/seeds")  # outside the repository: checked where present
#: each study's seed texts and the pattern of a caption line (number, caption) in them
PRINTED = {
    "nyflott": [("000_6c33e0cd135f3d04.txt", r"^((?:Figure|Table) \d+): (.*)$")],
    "johansson": [("002_89458ba75ab59302.txt", r"^((?:Figure|Table) \d+\.\d+): (.*)$")],
    "shafabakhsh": [("001_74ebe5483f33938c.txt", r"^((?:Figure|Table) [A-Z0-9]+\.\d+): (.*)$")],
    "buono": [("004_8bd2ed9805fa0c03.txt", r"^\*?((?:Figure|Table) \d+) ?[-–] (.*?)\*?$")],
}
#: Shafabakhsh's paper (one line of text): its items, listed as "Paper <item>"
PAPER = "003_9ffb55fb381c6ec4.txt"


def _items(study: str) -> pd.DataFrame:
    table = seed_items.items(study)
    assert table is not None, f"{study} lists no seed items"
    return table


def _places(study: str) -> list[tuple[str, seed_items.Place]]:
    items = _items(study)
    primary = seed_items.primary()[study]
    return [(r.item, p) for r in items.itertuples() for p in seed_items.places(r.shown, primary)]


@pytest.mark.parametrize("study", sorted(seed_items.primary()))
def test_every_item_is_shown_or_says_why_not(study: str) -> None:
    items = _items(study)
    assert list(items.columns) == seed_items.COLUMNS
    assert items["item"].is_unique
    assert ((items["shown"] != "") | (items["why_not"] != "")).all(), "shown or why not"
    assert {p.kind for _, p in _places(study)} <= {"figure", "table"}  # every place parses


def test_a_place_that_is_none_is_an_error() -> None:
    with pytest.raises(ValueError, match="not a place"):
        seed_items.places("figure:a; fig:b", "x")
    assert seed_items.places(" f/table:t ;figure:g", "p") == [
        seed_items.Place("f", "table", "t"), seed_items.Place("p", "figure", "g")]  # fmt: skip


@pytest.mark.parametrize("study", sorted(PRINTED))
def test_every_item_the_seed_prints_is_listed_with_its_caption(study: str) -> None:
    printed: dict[str, str] = {}
    for name, pattern in PRINTED[study]:
        if not (SEEDS / name).is_file():
            pytest.skip("the seed text is not on this machine")
        found = re.findall(pattern, (SEEDS / name).read_text(), re.M)
        printed |= {item: caption.replace("*", "") for item, caption in found}
    items = _items(study)
    listed = dict(zip(items["item"], items["caption"], strict=True))
    paper = {k: v for k, v in listed.items() if k.startswith("Paper ")}
    assert {k: v for k, v in listed.items() if k not in paper} == printed
    text = (SEEDS / PAPER).read_text() if paper else ""
    for item, caption in paper.items():  # two columns run together: the caption's words
        label = item.removeprefix("Paper ")  # in order shortly after one of its labels
        starts = [m.start() for m in re.finditer(re.escape(label), text)]
        assert any(_in_order(caption.split(), text[i : i + WINDOW]) for i in starts), item


WINDOW = 250  # characters after a label of Shafabakhsh's paper its caption's words are in


def _in_order(words: list[str], text: str) -> bool:
    at = 0
    for w in words:
        at = text.find(w, at)
        if at < 0:
            return False
        at += len(w)
    return True


def _rebuilt(folder: str, tmp: Path) -> tuple[Path, dict]:
    """The folder's results as a rebuild writes them: the committed ones, with the tables
    every rebuild adds (the environment table; the seed items in a study's own reference)
    written again, in a copy."""
    meta = json.loads((REFERENCE / folder / "results" / "study.json").read_text())
    out = tmp / folder
    shutil.copytree(REFERENCE / folder / "results", out)
    keys = ("parameters", "deviations", "skipped", "figures", "tables", "claims", "figures_dir")
    results = StudyResults(out, meta["study"], meta["title"], **{k: meta[k] for k in keys})
    env = environment_table.table(REFERENCE / folder, meta["study"])
    results.table(env, environment_table.TABLE, environment_table.CAPTION)
    seed_items.write_reference(results)
    return out, json.loads((out / "study.json").read_text())


@pytest.mark.parametrize("study", sorted(seed_items.primary()))
def test_every_place_listed_is_in_the_report(study: str, tmp_path: Path) -> None:
    places = _places(study)
    report: dict[str, tuple[str, dict]] = {}
    for folder in sorted({p.folder for _, p in places}):
        directory, meta = _rebuilt(folder, tmp_path / "results")
        n = Counter(site=SiteFiles(tmp_path / "site" / folder))
        text = study_section(1, directory, meta, None, [], n) + "".join(n.appendices())
        report[folder] = text, meta
    missing = []
    for item, p in places:
        text, meta = report[p.folder]
        entries = {e["name"]: e for e in meta[f"{p.kind}s"]}
        if p.name not in entries:
            missing.append(f"{item}: {p} not in the results")
        elif p.kind == "figure" and f'alt="{rh.esc(p.name)}"' not in text:
            missing.append(f"{item}: {p} has no file")
        elif p.kind == "table" and f"</span> {rh.esc(entries[p.name]['caption'])}" not in text:
            missing.append(f"{item}: {p} is not printed")
    assert not missing, missing
