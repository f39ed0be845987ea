"""A real fifth study added out of tree (issue 49, must-show 1): ``examples/h2study``, one
folder (its declaration, its part of the typed study protocol, its claims CSV, one notebook
and a ``pyproject.toml`` naming its ``ipclab.studies`` entry point), HTTP/1.1 against h2c on
the shop's existing stacks, two cells, two claims.

The package is copied to a folder outside the tree with the ``*.dist-info`` pip would leave
(its entry points read from the folder's own ``pyproject.toml``), that folder put on the
path. Then, each as its own process, as a user runs them: ``ipclab studies`` lists it,
``ipclab reproduce --study h2study`` runs its notebook (two runs of a few seconds on the
local backend), and the report shows its section and its claims. Nothing under
``src/ipclab`` names it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pandas as pd
import pytest

from ipclab.paths import REPO_ROOT
from ipclab.protocol import DeclaredPart
from ipclab.studies import all_studies
from tests.test_protocol import protocol_violations

EXAMPLE = REPO_ROOT / "examples" / "h2study"
TITLE = "HTTP/1.1 against h2c on the shop (an example study)"


def _entry_points() -> str:
    """``entry_points.txt`` as pip writes it from the example's ``pyproject.toml``."""
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    lines = []
    for group, points in project["entry-points"].items():
        lines += [f"[{group}]", *(f"{k} = {v}" for k, v in points.items()), ""]
    return "\n".join(lines)


@pytest.fixture
def installed(tmp_path: Path) -> dict[str, str]:
    """The example installed into a folder outside the tree; the environment that has it
    on the path."""
    site = tmp_path / "site"
    shutil.copytree(
        EXAMPLE / "h2study", site / "h2study", ignore=shutil.ignore_patterns("__pycache__")
    )
    info = site / "ipclab_h2study-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ipclab-h2study\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(_entry_points())
    path = os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])
    return {**os.environ, "PYTHONPATH": path}


def _run(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
        timeout=timeout, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_only_the_example_s_folder_names_it() -> None:
    assert "h2study" not in all_studies()  # not installed here
    for f in (REPO_ROOT / "src" / "ipclab").rglob("*.py"):
        assert "h2study" not in f.read_text(), f
    assert "ipclab.studies" in _entry_points()


def test_the_installed_example_is_a_study_with_the_whole_protocol(
    installed: dict[str, str],
) -> None:
    code = (
        "import json; from ipclab.studies import all_studies, part; "
        "from ipclab.protocol import implements; "
        "s = all_studies()['h2study']; p = part('h2study'); "
        "plan = p.experiments(p.parameters()); "
        "print(json.dumps([type(p).__mro__[1].__name__, implements(p), str(s.notebooks[0].path), "
        "{k: [e.stacks, e.users, len(e.cells())] for k, e in plan.items()}]))"
    )
    r = _run(installed, "ipclab.cli", "studies")
    assert r.returncode == 0 and "h2study" in r.stdout.split(), r.stderr
    out = subprocess.run(
        [sys.executable, "-c", code], env=installed, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    base, missing, notebook, plan = json.loads(out.stdout)
    assert (base, missing) == (DeclaredPart.__name__, [])
    assert plan == {"matrix": [["shop-rest", "shop-h2c"], [10], 2]}  # two cells
    assert protocol_violations(Path(notebook)) == []
    assert not Path(notebook).is_relative_to(REPO_ROOT)


@pytest.mark.slow
def test_the_example_runs_and_is_reported(installed: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    where = ["--out", str(out), "--runs-root", str(tmp_path / "runs")]
    ran = _run(installed, "ipclab.cli", "reproduce", "--study", "h2study", "--profile", "quick",
               *where, "--figures", str(tmp_path / "figures"), timeout=600)  # fmt: skip
    log = json.loads((out / "run_log.json").read_text())
    assert [(e["notebook"], e["status"]) for e in log["notebooks"]] == [("h2study.ipynb", "ok")], (
        ran.stdout[-3000:] + ran.stderr[-3000:]
    )
    results = out / "results" / "h2study"
    meta = json.loads((results / "study.json").read_text())
    assert (meta["study"], meta["title"], meta["claims"]) == ("h2study", TITLE, "claims.csv")
    assert [t["name"] for t in meta["tables"]][:2] == ["runs", "styles"]
    assert meta["figures"][0]["name"] == "h2study_latency"
    assert any("hypotheses" in d for d in meta["deviations"])
    claims = pd.read_csv(results / "claims.csv")
    assert list(claims["claim_id"]) == ["H1", "H2"]
    assert claims["verdict"].notna().all()
    runs = pd.read_csv(results / "runs.csv")
    assert sorted(runs["style"]) == ["h2c", "rest"] and (runs["requests"] > 0).all()

    built = _run(installed, "ipclab.report", "--results", str(out / "results"),
                 "--out", str(out / "report.pdf"), "--no-pdf")  # fmt: skip
    assert built.returncode == 0, built.stderr
    page = (out / "site" / "index.html").read_text()
    assert TITLE in page and "mean latency is lower than HTTP/1.1" in page
