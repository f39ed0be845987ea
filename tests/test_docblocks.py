"""Every generated block of the README and the docs is what its source gives
(``ipclab.docblocks``): the README's table of committed references from the folders' own
files (issue 46: the table had called a 60-run reference "one run per style" and left four
references out), docs/kubernetes.md's figures from ``data/measured/kubecluster.csv``."""

from __future__ import annotations

import re

import pytest

from ipclab import catalogue, docblocks
from ipclab.findings import GENERATED
from ipclab.paths import REPO_ROOT


@pytest.mark.parametrize("document", sorted(docblocks.BLOCKS))
def test_block_is_what_its_source_gives(document: str) -> None:
    text = (REPO_ROOT / document).read_text()
    found = {m.group("name"): m.group(0).split("\n", 1)[1].rsplit("\n", 1)[0]
             for m in GENERATED.finditer(text)}  # fmt: skip
    for name, body in docblocks.expected(document).items():
        assert name in found, f"{document}: no block {name}"
        assert found[name] == body.rstrip(), f"{document}: {name}: run python -m ipclab.docblocks"


def test_every_reference_folder_is_a_row() -> None:
    table = catalogue.markdown()
    folders = sorted(p.name for p in (REPO_ROOT / catalogue.REFERENCE).iterdir() if p.is_dir())
    assert re.findall(r"^\| \[`([^`]+)`\]", table, re.M) == folders
