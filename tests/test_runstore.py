"""Runs are keyed by what made them: a finished run is reused only when the same
parameters, stack declarations, backend, measuring files and packages' versions made it (a
run made before runs recorded their own files: only when shown made by the same files); a
committed reference says, in words, whether its runs' own measuring files changed since."""

from __future__ import annotations

import json
import subprocess
from dataclasses import asdict
from pathlib import Path

import pytest

from ipclab import provenance, runcode, runstore
from ipclab.experiments import Experiment
from ipclab.paths import REPO_ROOT
from ipclab.runs import RunWriter, read_run
from ipclab.stacks import resolve
from tests.test_runcode import tree_copy

SERVICE = "services/transports/rest.py"


def _finished_run(e: Experiment) -> None:
    cell = e.cells()[0]
    params = {"profile": asdict(e.profile(cell)), "options": e.options.as_dict()}
    spec = resolve(cell.stack).declaration()
    RunWriter(
        e.directory / cell.key, "load", params, writer="ipclab.load.runner",
        stack=cell.stack, backend="local", stack_spec=spec,
    ).finish("complete")  # fmt: skip


def _edit(path: Path) -> None:
    path.write_text(path.read_text().replace("POOL_PER_HOST", "POOL_PER_HOST ", 1))


def test_a_changed_line_of_a_service_means_its_old_runs_are_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tree_copy(tmp_path / "repo")
    monkeypatch.setattr(runstore, "tree", lambda: copy)
    e = Experiment("e", ["shop-rest"], [1], duration_s=30, root=tmp_path / "runs")
    _finished_run(e)
    made = read_run(e.directory / e.cells()[0].key).manifest
    own = runstore.own_code(made)
    assert own is not None and made["code"] == own.id and len(made["key"]) == 16
    assert SERVICE in made["code_files"] and made["writer"] == "ipclab.load.runner"
    assert e.pending() == []  # the same code: the run is reused
    assert runstore.planned_key(made, backend="local", stack_spec=made["stack_spec"]) == made["key"]

    _edit(copy / SERVICE)
    assert runstore.code_now(made).changed_since(own) == [SERVICE]
    assert e.pending() == e.cells()  # one line of a service changed: measured again
    assert e.pending(current_only=False) == []  # still a run of the same experiment


def _made_before(path: Path, revision: str, dirty: bool | None = False) -> None:
    """The run at ``path`` as runs made before they recorded their own files have it: the
    one list's id now as its ``code``, made at ``revision``."""
    manifest = json.loads((path / "manifest.json").read_text())
    for new in ("code_files", "code_packages", "writer"):
        manifest.pop(new, None)
    manifest["code"] = runstore.current_code().id
    manifest["environment"]["git"] = {"revision": revision, "dirty": dirty}
    (path / "manifest.json").write_text(json.dumps(manifest))


def test_a_run_made_before_runs_recorded_their_files_is_reused_only_when_shown_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Backward compatible, never more lenient: a manifest with a ``code`` and no
    ``code_files`` (issues 29 to 49) is reused only while the one list of measuring code
    has that id *and* its own files, derived now, are those of the clean revision it
    names; an uncommitted tree or an unknown revision shows nothing."""
    copy = tree_copy(tmp_path / "repo")
    monkeypatch.setattr(runstore, "tree", lambda: copy)
    writers = runcode.writers_of("load")  # an old run's writers: those of its kind
    at = {"r" * 40: runstore.code_now(_legacy("shop-rest", "local", ""), writers).files}
    monkeypatch.setattr(runstore, "files_at", lambda revision: at.get(revision))
    e = Experiment("e", ["shop-rest"], [1], duration_s=30, root=tmp_path / "runs")
    _finished_run(e)
    path = e.directory / e.cells()[0].key
    _made_before(path, "r" * 40)
    assert e.pending() == []  # the one list's id, and its own files as at its revision
    for revision, dirty in (("r" * 40, True), ("r" * 40, None), ("u" * 40, False)):
        _made_before(path, revision, dirty)
        assert e.pending() == e.cells(), (revision, dirty)  # nothing shown: made again
        assert e.pending(current_only=False) == []  # still read as a run of it
    _made_before(path, "r" * 40)
    _edit(copy / SERVICE)
    assert e.pending() == e.cells()
    assert e.pending(current_only=False) == []
    manifest = read_run(path).manifest
    manifest["code"] = "0" * 16  # another one list: made by other code, as judged then
    (copy / SERVICE).write_text((REPO_ROOT / SERVICE).read_text())
    assert runstore.old_run_current({**manifest, "code": runstore.current_code().id})
    assert not runstore.old_run_current(manifest)


def test_the_user_modules_and_their_studys_modules_they_import_are_measuring_code() -> None:
    """What a simulated user sends and checks shapes a run as much as a service does: each
    study's ``users*.py`` is measuring code, with the modules of its study it imports (the
    Johansson interleaving's schedule, Buono's procedure), and analysis modules are not
    (the one list of runs made before runs recorded their own files; for theirs:
    tests/test_runcode.py)."""
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


def test_every_committed_reference_says_whether_its_runs_measuring_files_changed() -> None:
    reference = REPO_ROOT / "data" / "runs" / "reference"
    for folder in sorted(p for p in reference.iterdir() if p.is_dir()):
        manifests = [json.loads(m.read_text()) for m in folder.rglob("manifest.json")]
        made = provenance.provenance(manifests)
        assert made.runs == len(manifests) and made.runs_changed <= made.known, folder.name
        text = provenance.provenance_text(made)
        assert text.startswith("made by code at revision"), (folder.name, text)
        assert ("changed since" in text) == (made.known > 0 and not made.changed), text
        assert "files of it changed" not in text  # the whole harness's count is gone


def _legacy(stack: str, backend: str, revision: str) -> dict[str, object]:
    """A run's manifest as runs made before they recorded their files have it."""
    return {
        "kind": "load", "status": "complete", "stack": stack, "backend": backend,
        "stack_spec": resolve(stack).declaration(), "parameters": {},
        "environment": {"git": {"revision": revision, "dirty": False}},
    }  # fmt: skip


def test_an_old_runs_provenance_is_the_diff_since_its_revision_within_its_own_files(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """For a run without its files, ``git diff`` since its revision, kept to the files such a
    run is measured by: an edit to the Kubernetes backend or to another transport is no
    change of a local AMQP run's code."""
    edited = frozenset({"services/transports/amqp.py", "services/transports/grpc.py",
                        "src/ipclab/backends/kubernetes/stack.py", "docs/x.md"})  # fmt: skip
    monkeypatch.setattr(provenance, "_diff", lambda rev: edited if rev == "a" * 40 else None)
    runs = [_legacy("shop-amqp", "local", "a" * 40), _legacy("shop-rest", "local", "a" * 40)]
    assert provenance.changed_files(runs[0]) == ["services/transports/amqp.py"]
    assert provenance.changed_files(runs[1]) == []
    text = provenance.provenance_text(provenance.provenance(runs))
    assert text == (
        f"made by code at revision {'a' * 10} (2 runs); since then the measuring code of 1 of "
        "these runs changed: 1 file, in services/transports/ (amqp.py)"
    )
    unknown = provenance.provenance([_legacy("shop-rest", "local", "b" * 40)])
    assert "not known here" in provenance.provenance_text(unknown)


def test_a_new_runs_provenance_is_its_own_files_now_against_those_it_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tree_copy(tmp_path / "repo")
    monkeypatch.setattr(runstore, "tree", lambda: copy)
    e = Experiment("e", ["shop-rest"], [1], duration_s=30, root=tmp_path / "runs")
    _finished_run(e)
    manifests = [read_run(e.directory / c.key).manifest for c in e.cells()]
    assert provenance.provenance_text(provenance.provenance(manifests)).endswith(
        "no measuring file of these runs changed since"
    )
    (copy / "src/ipclab/backends/kubernetes/stack.py").write_text("# another backend\n")
    assert provenance.changed_files(manifests[0]) == []
    _edit(copy / SERVICE)
    assert provenance.changed_files(manifests[0]) == [SERVICE]
    assert "in services/transports/ (rest.py)" in provenance.provenance_text(
        provenance.provenance(manifests)
    )
