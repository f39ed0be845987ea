"""Where things are: the repository root, and paths given relative to it.

Notebooks run with their own folder as working directory (JupyterLab) or the repository's
(papermill), so every path a study takes is resolved here, relative to the repository.
"""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PUBLISHED_DIR = REPO_ROOT / "data" / "published"


def from_repo(path: str | Path) -> Path:
    """``path`` itself when absolute, else the same path below the repository root."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else REPO_ROOT / p


def repo_relative(path: str | Path) -> str:
    """``path`` as written into results: relative to the repository when inside it (so a
    committed result names no machine's folders), else absolute."""
    p = from_repo(path).resolve()
    return p.relative_to(REPO_ROOT).as_posix() if p.is_relative_to(REPO_ROOT) else str(p)
