"""python -m ipclab.verdictdiff: the verdicts that changed since a revision (issue 47 must
show 2), on the repository's own history."""

from __future__ import annotations

import subprocess

import pytest

from ipclab import verdictdiff
from ipclab.paths import REPO_ROOT


def _has_history() -> bool:
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True,
                          check=False)  # fmt: skip
    return done.returncode == 0


@pytest.mark.skipif(not _has_history(), reason="not a git checkout")
def test_no_change_against_the_tree_itself_and_a_listed_change_is_real() -> None:
    table = verdictdiff.changes("4b825dc642cb6eb9a060e54bf8d69288fbee4904")  # git's empty tree
    assert not table.empty and table["before"].isna().all()  # every row new since nothing
    text = verdictdiff.markdown(table.head(3), "empty")
    assert text.startswith("# Verdicts changed since empty") and "| claim | before |" in text
    assert verdictdiff.markdown(table.head(0), "X") == "No verdict changed since X.\n"
