"""Runs are keyed by what made them: a finished run is reused only when the same
parameters, stack declarations, backend and measuring code made it; a committed reference
says which code made it."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import asdict
from pathlib import Path

import pytest

from ipclab import runstore
from ipclab.experiments import Experiment
from ipclab.paths import REPO_ROOT
from ipclab.runs import RunWriter, read_run
from ipclab.stacks import resolve

SERVICE = "services/transports/rest.py"


def _measuring_code_copy(root: Path) -> Path:
    """One service file of the repository, copied where a test may change it (no git
    there: the code is every file under the measuring paths)."""
    (root / SERVICE).parent.mkdir(parents=True)
    shutil.copy(REPO_ROOT / SERVICE, root / SERVICE)
    return root


def _finished_run(e: Experiment) -> None:
    cell = e.cells()[0]
    params = {"profile": asdict(e.profile(cell)), "options": e.options.as_dict()}
    spec = resolve(cell.stack).declaration()
    RunWriter(e.directory / cell.key, "load", params, backend="local", stack_spec=spec).finish(
        "complete"
    )


def test_a_changed_line_of_a_service_means_its_old_runs_are_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = _measuring_code_copy(tmp_path / "repo")
    monkeypatch.setattr(runstore, "current_code", lambda: runstore.code_in(code))
    e = Experiment("e", ["shop-rest"], [1], duration_s=30, root=tmp_path / "runs")
    _finished_run(e)
    made = read_run(e.directory / e.cells()[0].key).manifest
    assert made["code"] == runstore.code_in(code).id and len(made["key"]) == 16
    assert e.pending() == []  # the same code: the run is reused

    service = code / SERVICE
    service.write_text(service.read_text().replace("POOL_PER_HOST", "POOL_PER_HOST ", 1))
    assert runstore.code_in(code).changed_since(runstore.Code(made["code"], {})) == [SERVICE]
    assert e.pending() == e.cells()  # one line of a service changed: measured again
    assert e.pending(current_only=False) == []  # still a run of the same experiment


def test_the_user_modules_and_their_studys_modules_they_import_are_measuring_code() -> None:
    """What a simulated user sends and checks shapes a run as much as a service does: each
    study's ``users*.py`` is measuring code, with the modules of its study it imports (the
    Johansson interleaving's schedule, Buono's procedure), and analysis modules are not."""
    paths = runstore.measuring_paths()
    users = sorted(
        p.relative_to(REPO_ROOT).as_posix() for p in REPO_ROOT.glob(runstore.USER_MODULES)
    )
    assert users and set(users) <= set(paths)
    assert "src/ipclab/studies/johansson/schedule.py" in paths  # users_interleaved imports it
    assert "src/ipclab/studies/buono/procedure.py" in paths  # users imports it
    assert not any(p.endswith(("/analysis.py", "/figures.py", "/published.py")) for p in paths)


def test_another_declaration_of_the_stack_is_not_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    e = Experiment("e", ["shop-rest"], [1], duration_s=30, root=tmp_path)
    _finished_run(e)
    assert e.pending() == []
    path = e.directory / e.cells()[0].key / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["stack_spec"]["services"] = ["catalogue"]
    path.write_text(json.dumps(manifest))
    assert e.pending() == e.cells()


def test_the_key_changes_with_each_part_and_not_with_tuples_or_key_order() -> None:
    base = ("load", {"a": 1, "b": (1, 2)}, {"s": 1}, "local", "c0de")
    key = runstore.run_key(*base)
    assert runstore.run_key("load", {"b": [1, 2], "a": 1}, {"s": 1}, "local", "c0de") == key
    for i, other in enumerate(("memory", {"a": 2}, {"s": 2}, "docker", "c0df")):
        changed = list(base)
        changed[i] = other
        assert runstore.run_key(*changed) != key


def test_code_ids_agree_between_the_working_tree_and_git() -> None:
    """A file's id is git's blob id, so the code of a revision (``git ls-tree``) and of the
    working tree are comparable: the id of HEAD's tree equals the working tree's where
    the measuring code has no uncommitted change."""
    f = REPO_ROOT / SERVICE
    git = subprocess.run(
        ["git", "hash-object", str(f)], capture_output=True, text=True, cwd=REPO_ROOT
    )
    if git.returncode != 0:
        pytest.skip("not a git checkout")
    assert runstore.blob_id(f.read_bytes()) == git.stdout.strip()
    head = runstore.code_at("HEAD")
    assert head is not None
    now = runstore.code_in(REPO_ROOT)
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", *runstore.measuring_paths()],
        capture_output=True, text=True, cwd=REPO_ROOT,
    ).stdout  # fmt: skip
    assert (now.id == head.id) == (not dirty.strip()), now.changed_since(head)


def test_every_committed_reference_says_which_code_made_its_runs() -> None:
    reference = REPO_ROOT / "data" / "runs" / "reference"
    for folder in sorted(p for p in reference.iterdir() if p.is_dir()):
        manifests = [json.loads(m.read_text()) for m in folder.rglob("manifest.json")]
        groups = runstore.provenance(manifests)
        assert sum(g["runs"] for g in groups) == len(manifests), folder.name
        text = runstore.provenance_text(groups)
        assert "made by" in text, folder.name
