"""A study's figure in the report: inlined as PNG in the PDF's HTML; on the site, its SVG
(the PNG when there is none) copied into the site's ``figures/`` and linked."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from ipclab.report import html as rh
from ipclab.report.context import Counter
from ipclab.report.files import resolve

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _missing(what: str, cap: str) -> str:
    return f'<div class="missing">Missing: figure file {rh.esc(what)}.<div>{cap}</div></div>'


def figure_html(directory: Path, fig: dict[str, Any], fallback_dir: str | None, n: Counter) -> str:
    """``fig``: an entry of study.json's ``figures`` (``name``, ``png``, ``caption``)."""
    num = n.figure()
    cap = rh.caption("Figure", num, fig.get("caption", fig.get("name", "")))
    png = resolve(directory, fig.get("png", ""), fallback_dir)
    if png is None:
        n.problems.append(f"Figure {num} ({fig.get('name')}): file {fig.get('png')} not found")
        return _missing(f"{fig.get('png')} not found", cap)
    raw = png.read_bytes()
    if not raw.startswith(PNG_MAGIC):
        n.problems.append(f"Figure {num} ({fig.get('name')}): {png.name} is not a PNG")
        return _missing(f"{png.name} is not a PNG", cap)
    alt = rh.esc(fig.get("name", ""))
    if n.site is None:
        data = base64.b64encode(raw).decode("ascii")
        return (
            f'<figure><img src="data:image/png;base64,{data}" alt="{alt}">'
            f"<figcaption>{cap}</figcaption></figure>"
        )
    # the SVG beside the PNG (ipclab.plotting writes both), found by the same rule
    svg = resolve(directory, str(Path(fig.get("png", "")).with_suffix(".svg")), fallback_dir)
    source = svg or png
    href = n.site.copy(source, "figures", f"fig{num:02d}-{source.name}")
    return (
        f'<figure><a href="{href}"><img src="{href}" alt="{alt}"></a>'
        f"<figcaption>{cap}</figcaption></figure>"
    )
