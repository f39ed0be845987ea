"""The studies' full texts (not part of the repository), for the tests that check every
quote and number against its source.

``$IPCLAB_SEEDS`` names their folder; a relative path is taken from the repository's root,
so CI (``.ci/run``) sets ``IPCLAB_SEEDS=../shared/seeds``, the folder beside its clone.
Unset, those tests skip and say how to run them; set, a missing text fails them: a CI that
was told where the texts are never passes without reading them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ipclab.paths import REPO_ROOT

ENV = "IPCLAB_SEEDS"
SHAFABAKHSH_THESIS = "001_74ebe5483f33938c.txt"
SHAFABAKHSH_PAPER = "003_9ffb55fb381c6ec4.txt"
JOHANSSON_THESIS = "002_89458ba75ab59302.txt"
NYFLOTT_THESIS = "000_6c33e0cd135f3d04.txt"
BUONO_THESIS = "004_8bd2ed9805fa0c03.txt"


def folder() -> Path | None:
    """The folder ``$IPCLAB_SEEDS`` names (relative: from the repository's root), or None."""
    value = os.environ.get(ENV, "").strip()
    return REPO_ROOT / value if value else None


def seed_text(name: str) -> str:
    """The text of the study document ``name``: skips when ``$IPCLAB_SEEDS`` is unset,
    fails when it is set and the document is not there."""
    where = folder()
    if where is None:
        pytest.skip(f"set {ENV} to the folder of the study texts (CI: ../shared/seeds)")
    path = where / name
    if not path.is_file():
        pytest.fail(f"{ENV}={os.environ[ENV]}: no {name} in {where}", pytrace=False)
    return path.read_text()
