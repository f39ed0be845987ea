"""Every figure and table a study's seed prints is listed in the study's ``seed_items.csv``
(issue 52) with where ipclab shows it (``figure:<name>`` or ``table:<name>`` of its
reference's results) or why it cannot; an item marked as shown names a figure or table the
reference's results hold (the environment table: written by every rebuild)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from ipclab import environment_table
from ipclab.paths import REPO_ROOT

STUDIES = REPO_ROOT / "src" / "ipclab" / "studies"
REFERENCE = REPO_ROOT / "data" / "runs" / "reference"
#: the studies whose seed items are listed so far, and their reference folder
LISTED = {"nyflott": "nyflott-full-docker"}
#: the seed texts (outside the repository: checked where they are present)
SEEDS = {"nyflott": Path("/work/shared/seeds/000_6c33e0cd135f3d04.txt")}
CAPTION = re.compile(r"^((?:Figure|Table) \d+): (.*)$", re.M)


def held(folder: str) -> set[str]:
    meta = json.loads((REFERENCE / folder / "results" / "study.json").read_text())
    return ({f"figure:{f['name']}" for f in meta["figures"]}
            | {f"table:{t['name']}" for t in meta["tables"]}
            | {f"table:{environment_table.TABLE}"})  # fmt: skip


@pytest.mark.parametrize("study", sorted(LISTED))
def test_every_item_shown_names_what_the_report_holds(study: str) -> None:
    items = pd.read_csv(STUDIES / study / "seed_items.csv", keep_default_na=False)
    assert list(items.columns) == ["item", "caption", "shown", "why_not"]
    assert items["item"].is_unique
    assert ((items["shown"] != "") != (items["why_not"] != "")).all(), "shown or why, not both"
    shown = set(items.loc[items["shown"] != "", "shown"])
    assert shown <= held(LISTED[study]), shown - held(LISTED[study])


@pytest.mark.parametrize("study", sorted(LISTED))
def test_every_item_the_seed_prints_is_listed_with_its_caption(study: str) -> None:
    if not SEEDS[study].is_file():
        pytest.skip("the seed text is not on this machine")
    printed = dict(CAPTION.findall(SEEDS[study].read_text()))
    items = pd.read_csv(STUDIES / study / "seed_items.csv", keep_default_na=False)
    assert dict(zip(items["item"], items["caption"], strict=True)) == printed
