"""The layout of ``ipclab.stats`` (issue 29): pure statistics read no runs, and every name
callers used from the single ``stats.py`` is still importable from the package. No services
started."""

from __future__ import annotations

import ast
from pathlib import Path

import ipclab.stats
from ipclab.paths import REPO_ROOT

STATS = REPO_ROOT / "src" / "ipclab" / "stats"
#: Statistics of samples: numpy and scipy only, nothing that reads a run directory.
PURE = ("samples", "intervals", "comparisons", "power", "design")

#: Every public name of the former ``src/ipclab/stats.py``.
PUBLIC = [
    "CELL_KEYS",
    "CELL_METRICS",
    "MACHINE_COLUMNS",
    "ArrayLike",
    "Comparison",
    "Interval",
    "LittleCheck",
    "MachineLimits",
    "Saturation",
    "bootstrap_ci",
    "bootstrap_means",
    "cell_summary",
    "cell_table",
    "cliffs_delta",
    "cliffs_delta_ci",
    "compare_samples",
    "compare_styles",
    "detect_saturation",
    "holm",
    "littles_law",
    "littles_law_table",
    "log_ratio_interval",
    "machine_check",
    "parse_seconds",
    "parse_think_time",
    "permutation_p",
    "repetitions_needed",
    "repetitions_needed_log_ratio",
    "run_metrics",
    "runs_table",
    "saturation_steps",
    "t_interval",
]
#: Public names added since the split (the within-sitting tests, docs/statistics.md §7; the
#: permutation test within sittings, issue 47).
ADDED = ["log_ratio_interval_by_sitting", "pooled_cv2", "sittings", "stratified_permutation_p"]
#: ... and the plausibility check's (docs/statistics.md §9).
ADDED += ["PlausibilityLimits", "plausibility_check"]
#: ... and the one text of an interval, ``estimate [low, high]`` (issue 49).
ADDED += ["interval_text"]


def ipclab_imports(path: Path) -> set[str]:
    """Every ``ipclab`` module that ``path`` imports, at module level or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "ipclab"}
        elif isinstance(node, ast.ImportFrom) and node.level:
            found.add(f"ipclab.stats.{node.module or ''}".rstrip("."))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "ipclab":
            found.add(str(node.module))
    return found


def test_pure_statistics_import_only_pure_statistics() -> None:
    allowed = {f"ipclab.stats.{m}" for m in PURE}
    seen, todo = set(), set(allowed)
    while todo:
        name = todo.pop()
        seen.add(name)
        deps = ipclab_imports(STATS / f"{name.rsplit('.', 1)[1]}.py")
        assert deps <= allowed, f"{name} imports {sorted(deps - allowed)}"
        todo |= deps - seen


def test_every_former_public_name_is_importable_from_the_package() -> None:
    assert [n for n in PUBLIC if not hasattr(ipclab.stats, n)] == []
    assert sorted(ipclab.stats.__all__) == sorted(PUBLIC + ADDED)
