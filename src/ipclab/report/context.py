"""What one build of the report carries from section to section: running figure and table
numbers, the problems met, and, for the site, where the files it links go.

The PDF's HTML inlines every figure; the site (:mod:`ipclab.report.site`) copies each figure
and table into its own folder instead and links them by relative paths, so the folder can
be moved or served anywhere as it is.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote


@dataclass
class SiteFiles:
    """The site folder files are copied into; :meth:`copy` returns the relative link."""

    root: Path

    def copy(self, source: Path, folder: str, name: str) -> str:
        """Copy ``source`` to ``<root>/<folder>/<name>``; the link from ``index.html``.
        ``folder`` and ``name`` are ipclab's own slugs and file names (never a path)."""
        dest = self.root / folder / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, dest)
        return quote(f"{folder}/{name}")


@dataclass
class Counter:
    """Running figure and table numbers across the whole report, the problems met, and the
    site's folder when the HTML is the site (``None``: the PDF's HTML, figures inlined)."""

    figures: int = 0
    tables: int = 0
    problems: list[str] = field(default_factory=list)
    site: SiteFiles | None = None

    def figure(self) -> int:
        self.figures += 1
        return self.figures

    def table(self) -> int:
        self.tables += 1
        return self.tables
