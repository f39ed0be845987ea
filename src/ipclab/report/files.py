"""The files a study's results folder names, found only inside its own folders, and read."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ipclab.paths import from_repo
from ipclab.report.context import Counter


def _within(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


def resolve(directory: Path, path: str, fallback_dir: str | None = None) -> Path | None:
    """A file a study names, found only inside its results folder (or, by its bare name, in
    its figures folder): an absolute path or one leading out (``..``, a symlink) is never
    read, so a planted study.json cannot put any other file into the report."""
    p = Path(path)
    candidates = [directory / p.name] if p.is_absolute() else [directory / p, directory / p.name]
    roots = [directory]
    if fallback_dir:
        candidates.append(from_repo(fallback_dir) / p.name)
        roots.append(from_repo(fallback_dir))
    return next((c for c in candidates if c.is_file() and any(_within(c, r) for r in roots)), None)


def read_csv(directory: Path, name: str, what: str, n: Counter) -> pd.DataFrame | None:
    """A table of the results folder, or None with the problem noted in ``n``."""
    path = resolve(directory, name)
    if path is None:
        n.problems.append(f"{what}: {directory / name} not found")
        return None
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:  # a table written with no rows and no columns
        return pd.DataFrame()
    except (pd.errors.ParserError, UnicodeDecodeError) as e:
        n.problems.append(f"{what}: {path} unreadable ({e})")
        return None


def data_link(directory: Path, name: str, slug: str, n: Counter) -> str:
    """On the site, a link to a copy of the table ``name`` (``data/<slug>/``); nothing in
    the PDF, or when the file cannot be found."""
    path = resolve(directory, name)
    if n.site is None or path is None:
        return ""
    href = n.site.copy(path, f"data/{slug}", path.name)
    return f' <a class="data" href="{href}">CSV</a>'
