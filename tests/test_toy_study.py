"""A fifth study is one folder: a toy study added outside the repository is listed, run and
reported like the four published ones, and nothing in the repository changes.

The toy study (``tests/toy_study/toy``: a declaration with one stack of the shop's
existing services, its part of the study protocol with a small analysis and one claim, its
Locust user, and a thin notebook) is copied into a temporary folder named by
``IPCLAB_STUDIES_PATH``. Then, each as its own process, as a user runs them:
``ipclab studies`` lists it, ``ipclab reproduce --study toy`` runs its notebook (two runs
of a few seconds on the local backend) and builds the report, and ``python -m
ipclab.report`` builds the site again from the results folders; the report's HTML and the
site show its section and its claim.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ipclab.paths import REPO_ROOT
from ipclab.report import pdf
from ipclab.studies import STUDIES_PATH, all_studies
from tests.test_site import Dom

TOY = Path(__file__).parent / "toy_study" / "toy"
TITLE = "Toy 2026: one stack under two loads"


def _ipclab(
    env: dict[str, str], *args: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
        timeout=timeout, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _git_status() -> set[str]:
    """The paths ``git status`` lists (changed, untracked): a path the test wrote into the
    repository would join them. Paths, not states, so another process committing in the
    same tree meanwhile does not count."""
    out = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=REPO_ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return {line[3:] for line in out.splitlines()}


def test_the_toy_study_is_not_registered_without_its_folder() -> None:
    assert "toy" not in all_studies()


@pytest.mark.slow
def test_a_study_in_one_folder_is_listed_run_and_reported(tmp_path: Path) -> None:
    before = _git_status()
    shutil.copytree(TOY, tmp_path / "studies" / "toy", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, STUDIES_PATH: str(tmp_path / "studies")}

    listed = _ipclab(env, "ipclab.cli", "studies")
    assert listed.returncode == 0, listed.stderr
    assert "toy" in listed.stdout.split()
    assert "toy-shop-rest" in _ipclab(env, "ipclab.cli", "stacks").stdout.split()

    out = tmp_path / "out"
    where = ["--out", str(out), "--runs-root", str(tmp_path / "runs")]
    ran = _ipclab(env, "ipclab.cli", "reproduce", "--study", "toy", "--profile", "quick",
                  *where, "--figures", str(tmp_path / "figures"), timeout=600)  # fmt: skip
    log = json.loads((out / "run_log.json").read_text())
    assert [(e["notebook"], e["status"]) for e in log["notebooks"]] == [("toy.ipynb", "ok")], (
        ran.stdout[-3000:]
    )
    results = out / "results" / "toy"
    meta = json.loads((results / "study.json").read_text())
    assert (meta["study"], meta["title"], meta["claims"]) == ("toy", TITLE, "claims.csv")
    assert "T01" in (results / "claims.csv").read_text()
    try:
        pdf.find_chromium()
        assert ran.returncode == 0, ran.stdout[-3000:]
        assert (out / "report.pdf").stat().st_size > 0
        assert TITLE in (out / "report.html").read_text()
    except pdf.ChromiumMissing:
        pass  # no PDF here: the site below needs no browser

    site = out / "site"
    shutil.rmtree(site, ignore_errors=True)
    built = _ipclab(env, "ipclab.report", "--results", str(out / "results"),
                    "--out", str(out / "report.pdf"), "--no-pdf")  # fmt: skip
    assert built.returncode == 0, built.stderr
    page = (site / "index.html").read_text()
    assert TITLE in page
    assert [study for study, _ in Dom(page).shown()] == [TITLE]  # its claim, in the filter

    assert _git_status() - before == set(), "the toy study changed the repository"
