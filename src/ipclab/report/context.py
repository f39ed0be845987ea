"""What one build of the report carries from section to section: running figure and table
numbers, the problems met, and, for the site, where the files it links go.

The PDF's HTML inlines every figure; the site (:mod:`ipclab.report.site`) copies each figure
and table into its own folder instead and links them by relative paths, so the folder can
be moved or served anywhere as it is.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
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
    # the appendices' parts, rendered after the main body (so numbered in page order)
    appendix: list[Callable[[], str]] = field(default_factory=list)

    def later(self, part: Callable[[], str]) -> None:
        """Render ``part`` in the appendices, after the main body."""
        self.appendix.append(part)

    def appendices(self) -> list[str]:
        """Render the parts left for the appendices (each may leave more: rendered too)."""
        out: list[str] = []
        while self.appendix:
            out.append(self.appendix.pop(0)())
        return out

    def figure(self) -> int:
        self.figures += 1
        return self.figures

    def table(self) -> int:
        self.tables += 1
        return self.tables
