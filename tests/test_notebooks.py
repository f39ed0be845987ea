"""Notebooks are thin, carry no outputs, and take the parameters reproduce passes them."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from ipclab.paths import REPO_ROOT, from_repo
from ipclab.reproduce import NOTEBOOK_DIR, notebooks

REPRODUCE_PARAMETERS = {"profile", "backend", "runs_root", "results_dir", "figures_dir"}


@pytest.mark.parametrize("nb", notebooks(), ids=lambda nb: nb.file)
def test_notebook_is_clean_and_parameterised(nb: object) -> None:
    doc = json.loads((NOTEBOOK_DIR / nb.file).read_text())  # type: ignore[attr-defined]
    code = [c for c in doc["cells"] if c["cell_type"] == "code"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code)
    tagged = [c for c in code if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1
    names = {
        t.id
        for node in ast.parse("".join(tagged[0]["source"])).body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    assert names >= REPRODUCE_PARAMETERS
    for cell in code:  # thin: no function or class definitions in cells
        tree = ast.parse("".join(cell["source"]))
        assert not any(isinstance(n, ast.FunctionDef | ast.ClassDef) for n in ast.walk(tree))


def test_relative_paths_are_taken_from_the_repository() -> None:
    assert from_repo("data/runs") == REPO_ROOT / "data" / "runs"
    assert from_repo(Path("/tmp/x")) == Path("/tmp/x")
