"""Names that collided do not come back (issue 49, item 5). Pure and fast: it lists files and
parses source; it imports and starts nothing.

- a module of ``report/`` is named for the report's part it makes, never as a core module it
  shows (``report/robustness.py`` beside ``robustness.py``: now ``robustness_section.py``);
- ``run_key`` is the key a run is stored and reused under (``ipclab.runstore.run_key``) and
  nothing else (Nyfløtt's per-run tables label a run with ``tables.run_label``).
"""

from __future__ import annotations

import ast

from ipclab.paths import REPO_ROOT

SRC = REPO_ROOT / "src" / "ipclab"
PYTHON = (SRC, REPO_ROOT / "services", REPO_ROOT / "bench")


def test_no_report_module_has_a_core_modules_name() -> None:
    core = {p.stem for p in SRC.glob("*.py")} | {p.parent.name for p in SRC.glob("*/__init__.py")}
    report = {p.stem for p in (SRC / "report").glob("*.py") if not p.stem.startswith("__")}
    assert sorted(report & core) == []


def test_run_key_is_defined_by_the_run_store_only() -> None:
    defined = sorted(
        str(p.relative_to(REPO_ROOT))
        for root in PYTHON
        for p in root.rglob("*.py")
        if any(
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "run_key"
            for node in ast.walk(ast.parse(p.read_text()))
        )
    )
    assert defined == ["src/ipclab/runstore.py"]
