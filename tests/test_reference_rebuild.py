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

REFERENCE = REPO_ROOT / "data" / "runs" / "reference"
SERVICE = "services/transports/rest.py"
# tables computed from the working tree's source, not from runs: they follow the code
FROM_THE_SOURCE = {"complexity.csv", "claims_code.csv"}


def _changed_code(root: Path) -> runstore.Code:
    """The measuring code with one line of a service changed (a copy; the tree is untouched)."""
    for path in runstore.measuring_paths():
        src = REPO_ROOT / path
        dst = root / path
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, dst)
    service = root / SERVICE
    service.write_text(service.read_text().replace("POOL_PER_HOST", "POOL_PER_HOST ", 1))
    return runstore.code_in(root, runstore.measuring_paths())


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
    manifest["code"] = runstore.current_code().id
    manifest["stack_spec"] = resolve(stack).declaration()
    path.write_text(json.dumps(manifest))


def _age(root: Path) -> None:
    """Every results table dated 1970: one a rebuild does not write again stays so."""
    for csv in root.rglob("results/*.csv"):
        os.utime(csv, (0, 0))


def _differences(committed: Path, rebuilt: Path) -> list[str]:
    out = [
        f"{csv.relative_to(rebuilt)}: not written by the rebuild"
        for csv in sorted(rebuilt.rglob("results/*.csv"))
        if csv.stat().st_mtime == 0
    ]
    for csv in sorted(committed.rglob("results/*.csv")):
        if csv.name in FROM_THE_SOURCE or not csv.stat().st_size:
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

    changed = _changed_code(tmp_path / "code")
    assert SERVICE in changed.changed_since(runstore.current_code())
    monkeypatch.setattr(runstore, "current_code", lambda *a, **k: changed)
    # one line of a service changed: the run no longer stands in for a new measurement...
    assert perf.pending() == perf.cells()
    # ...and every committed run is still read as evidence of its own making
    assert perf.pending(current_only=False) == []

    monkeypatch.setattr(plotting, "save", _no_figure)
    _age(root)
    _rebuild_every_reference(root, tmp_path / "figures")
    assert _differences(REFERENCE, root) == []
