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
