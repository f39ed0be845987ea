"""Writing figures: PNG and SVG side by side, byte-stable across reruns."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from ipclab.paths import REPO_ROOT

FIGURES_DIR = REPO_ROOT / "figures"


def save(
    fig: Figure,
    name: str,
    directory: str | Path | None = None,
    formats: Sequence[str] = ("png", "svg"),
    dpi: int = 150,
) -> list[Path]:
    """Write ``fig`` as ``<directory>/<name>.<format>`` for each format (default PNG and SVG
    into ``figures/``); returns the paths. SVG and PDF carry no date, so reruns are
    byte-comparable."""
    d = Path(directory) if directory is not None else FIGURES_DIR
    d.mkdir(parents=True, exist_ok=True)
    out = []
    for fmt in formats:
        p = d / f"{name}.{fmt}"
        meta: dict[str, str | None] = {}
        if fmt in ("svg", "pdf"):
            meta = {"Date": None} if fmt == "svg" else {"CreationDate": None}
        # a fixed salt: SVG clip-path ids are otherwise random on every save
        with plt.rc_context({"svg.hashsalt": name}):
            fig.savefig(p, dpi=dpi, metadata=meta or None, bbox_inches="tight")
        out.append(p)
    return out
