"""Every runtime or library version a reference's runs recorded that differs from the
study's own published set-up is named, with the published one, in that study's deviations
(issue 52). The versions come from the runs' manifests (the environment table), the
published ones from the study's ``setup.VERSION_CHECKS``, the deviations from the code that
writes them, so the text cannot drift from what ran."""

from __future__ import annotations

import importlib
import re

import pytest

from ipclab import environment_table
from ipclab.paths import REPO_ROOT

REFERENCE = REPO_ROOT / "data" / "runs" / "reference"
#: where each study's deviations are written from (the list its rebuild writes)
DEVIATIONS = {"buono": "ipclab.studies.buono.experiment",
              "nyflott": "ipclab.studies.nyflott.analysis"}  # fmt: skip


def version(value: str, parts: int) -> str:
    """The first ``parts`` components of a version (``1.22.1-9+deb12u9``, 2: ``1.22``)."""
    found = re.match(r"\d+(?:\.\d+)*", value.strip())
    return ".".join(found.group(0).split(".")[:parts]) if found else value


def named(text: str, token: str) -> bool:
    """Whether ``text`` names version ``token`` (``1.13`` in ``v1.13.3.Final``, not in
    ``11.13`` or ``1.130``)."""
    return re.search(rf"(?:^|[^\w.]|\b[vV]){re.escape(token)}(?!\d)", text) is not None


def unnamed(table, checks, text: str) -> list[str]:  # noqa: ANN001
    """The measured versions that differ from the published one and that ``text`` does not
    name together with the published one."""
    out = []
    for pattern, published, parts in checks:
        rows = table[table["field"].str.match(pattern)]
        for value in sorted(set(rows["value"])):
            ours, theirs = version(str(value), parts), version(published, parts)
            if ours != theirs and not (named(text, ours) and named(text, theirs)):
                out.append(f"{pattern}: {ours} (published {theirs})")
    return out


@pytest.mark.parametrize("study", sorted(DEVIATIONS))
def test_deviations_name_every_version_that_differs(study: str) -> None:
    checks = importlib.import_module(f"ipclab.studies.{study}.setup").VERSION_CHECKS
    text = " ".join(importlib.import_module(DEVIATIONS[study]).DEVIATIONS)
    folders = sorted(REFERENCE.glob(f"{study}-*"))
    assert folders, study
    missing = [f"{d.name}: {m}" for d in folders
               for m in unnamed(environment_table.reference_table(d), checks, text)]  # fmt: skip
    assert not missing, f"versions no deviation names: {missing}"


def test_the_check_can_fail() -> None:
    import pandas as pd

    table = pd.DataFrame({"field": ["image services nginx"], "value": ["1.22.1-9+deb12u9"]})
    checks = [(r"^image \S+ nginx$", "1.13.7", 2)]
    assert unnamed(table, checks, "nginx 1.13.7 here")
    assert not unnamed(table, checks, "Debian's nginx 1.22 in place of the thesis's 1.13.7")
    assert not unnamed(table.assign(value="1.13.9"), checks, "")
    assert named("Quarkus v1.13.3.Final", "1.13") and not named("11.13.0 and 1.130", "1.13")
