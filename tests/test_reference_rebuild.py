"""After a change to the measuring code, old runs are measured again, and the committed
references, evidence of their own making, still rebuild with the same tables (issue 29,
must-show 2)."""

from __future__ import annotations

import importlib
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from ipclab import plotting, runstore
from ipclab.paths import REPO_ROOT
from ipclab.stacks import resolve
from ipclab.studies import all_studies
from ipclab.studies.shafabakhsh import performance
from tests.test_runcode import tree_copy

REFERENCE = REPO_ROOT / "data" / "runs" / "reference"
SERVICE = "services/transports/rest.py"
# tables computed from the working tree's source, not from runs: they follow the code
FROM_THE_SOURCE = {"complexity.csv", "claims_code.csv"}


def _changed_code(root: Path) -> Path:
    """The files a run can be measured by with one line of a service changed (a copy; the
    tree is untouched)."""
    copy = tree_copy(root)
    service = copy / SERVICE
    service.write_text(service.read_text().replace("POOL_PER_HOST", "POOL_PER_HOST ", 1))
    return copy


def _no_figure(fig: object, name: str, directory: object = None, **_: object) -> list[Path]:
    """Figures are not compared here; drawing them is most of a rebuild's time."""
    return [Path(f"{name}.png")]


def _rebuild_every_reference(root: Path, figures: Path) -> None:
    for name in all_studies():
        module = importlib.import_module(f"ipclab.studies.{name}.reference")
        rebuild = getattr(module, "rebuild_all", None) or module.rebuild
        rebuild(root, figures)


def _stamp_as_made_now(run_dir: Path, stack: str) -> None:
    """Mark a committed run as made by the current code and declaration (as a run made
    today records them), so that whether it is reused shows what the code decides."""
    path = run_dir / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["stack_spec"] = resolve(stack).declaration()
    manifest.update(runstore.keyed(
        manifest["kind"], manifest["parameters"], writer="ipclab.load.runner", stack=stack,
        stack_spec=manifest["stack_spec"], backend=manifest["backend"],
    ))  # fmt: skip
    path.write_text(json.dumps(manifest))


def _age(root: Path) -> None:
    """Every results table dated 1970: one a rebuild does not write again stays so."""
    for csv in root.rglob("results/*.csv"):
        os.utime(csv, (0, 0))


def _differences(committed: Path, rebuilt: Path, stamped: Path | None = None) -> list[str]:
    """Every rebuilt table that differs from the committed one; the environment table of
    ``stamped`` (the reference whose run's manifest the test rewrote: that table counts the
    manifests' own records) apart."""
    out = [
        f"{csv.relative_to(rebuilt)}: not written by the rebuild"
        for csv in sorted(rebuilt.rglob("results/*.csv"))
        if csv.stat().st_mtime == 0
    ]
    for csv in sorted(committed.rglob("results/*.csv")):
        if csv.name in FROM_THE_SOURCE or not csv.stat().st_size:
            continue
        if stamped is not None and csv == stamped / "results" / "environment.csv":
            continue
        again = rebuilt / csv.relative_to(committed)
        if not again.exists():
            out.append(f"{csv}: not rebuilt")
            continue
        a, b = pd.read_csv(csv), pd.read_csv(again)
        shown = [c for c in a.columns if "path" not in c]
        try:
            assert list(a.columns) == list(b.columns)
            pd.testing.assert_frame_equal(a[shown], b[shown], check_exact=False, rtol=1e-12)
        except AssertionError as e:
            out.append(f"{csv.relative_to(committed)}: {str(e)[:200]}")
    return out


def test_a_changed_line_of_a_service_stops_reuse_and_the_references_rebuild_identically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "reference"
    shutil.copytree(REFERENCE, root)
    perf, _ = performance.experiments("full", "local", root)
    made_now = perf.cells()[0]
    _stamp_as_made_now(perf.directory / made_now.key, made_now.stack)
    assert made_now not in perf.pending()  # made by the current code: it stands in

    copy = _changed_code(tmp_path / "code")
    monkeypatch.setattr(runstore, "tree", lambda: copy)
    changed = runstore.code_in(copy, runstore.measuring_paths())
    monkeypatch.setattr(runstore, "current_code", lambda *a, **k: changed)  # runs made before
    made = json.loads((perf.directory / made_now.key / "manifest.json").read_text())
    assert SERVICE in runstore.code_now(made).changed_since(runstore.own_code(made))
    # one line of a service changed: the run no longer stands in for a new measurement...
    assert perf.pending() == perf.cells()
    # ...and every committed run is still read as evidence of its own making
    assert perf.pending(current_only=False) == []

    monkeypatch.setattr(plotting, "save", _no_figure)
    _age(root)
    _rebuild_every_reference(root, tmp_path / "figures")
    stamped = REFERENCE / perf.directory.relative_to(root)
    assert _differences(REFERENCE, root, stamped) == []
