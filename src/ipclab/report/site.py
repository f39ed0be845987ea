"""The report as a web page: ``<site>/index.html`` beside the PDF, the same HTML with its
figures (SVG) and tables (CSV) copied into the site folder and linked relatively, screen
styles, and one claims table across all studies that the reader filters by study and
verdict. Self-contained: no external resource, nothing fetched; the folder can be moved.

The filter reads and writes the URL's fragment, so a filtered view can be linked:
``index.html#verdict=not%20reproduced&study=...`` (the query, ``?verdict=...``, works too
on the first load; the first change of the filter drops it and writes the fragment).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ipclab.report.bystudy import registry
from ipclab.report.claimspage import (
    CLAIMS_PAGE,
    CLAIMS_TABLE_ID,
    FILTER_KEYS,
    SORT_SCRIPT,
    Source,
    claims_page,
    nav,
    runs_page,
)
from ipclab.report.context import SiteFiles
from ipclab.report.document import document, render_body
from ipclab.report.files import resolve
from ipclab.report.overview import ALL_CLAIMS_ID
from ipclab.report.study import section_id
from ipclab.report.style import CSS, SITE_CSS
from ipclab.results import read_results

SITE_MARKER = ".ipclab-site"  # a folder holding it is a site ipclab wrote: rebuilt whole

FILTER_SCRIPT = """
(() => {
  const table = document.getElementById("__TABLE__");
  if (!table) return;
  const rows = [...table.tBodies[0].rows];
  const keys = __KEYS__;
  const multi = new Set(__MULTI__);  // a cell may hold several values: "jvm, python"
  const values = (r, k) => multi.has(k) ? r.dataset[k].split(", ") : [r.dataset[k]];
  const form = document.createElement("form");
  form.className = "filter";
  form.id = "claim-filter";
  const selects = {};
  for (const key of keys) {
    const label = document.createElement("label");
    const select = document.createElement("select");
    select.name = key;
    select.add(new Option("all", ""));
    const counts = new Map();
    for (const r of rows) for (const v of values(r, key)) counts.set(v, (counts.get(v) || 0) + 1);
    for (const [value, count] of counts) select.add(new Option(`${value} (${count})`, value));
    label.append(`${key} `, select);
    form.append(label);
    selects[key] = select;
  }
  const shown = document.createElement("output");
  form.append(shown);
  table.closest(".table-block").before(form);
  const fromUrl = () => {
    for (const part of [location.hash.slice(1), location.search.slice(1)]) {
      const p = new URLSearchParams(part);
      if (keys.some((k) => p.has(k))) return p;
    }
    return null;
  };
  const apply = (p) => {
    let n = 0;
    for (const key of keys) selects[key].value = p.get(key) || "";
    for (const r of rows) {
      const ok = keys.every((k) => !p.get(k) || values(r, k).includes(p.get(k)));
      r.hidden = !ok;
      n += ok ? 1 : 0;
    }
    shown.value = `${n} of ${rows.length} claims shown`;
    table.dataset.shown = String(n);
  };
  form.addEventListener("change", () => {
    const p = new URLSearchParams();
    for (const key of keys) if (selects[key].value) p.set(key, selects[key].value);
    const hash = p.toString();
    // The query (?study=...) only seeds the first load: dropped here, or a reload would
    // apply it again after the reader cleared the filter. The fragment holds the state.
    history.replaceState(null, "", location.pathname + (hash ? `#${hash}` : ""));
    apply(p);
  });
  window.addEventListener("hashchange", () => { const p = fromUrl(); if (p) apply(p); });
  const first = fromUrl();
  apply(first || new URLSearchParams());
  if (first) form.scrollIntoView();
})();
"""


def filter_script(table_id: str, keys: Sequence[str], multi: Sequence[str] = ()) -> str:
    """The filter of one table by the ``data-`` attributes ``keys`` of its rows."""
    return (
        FILTER_SCRIPT.replace("__TABLE__", table_id)
        .replace("__KEYS__", json.dumps(list(keys)))
        .replace("__MULTI__", json.dumps(list(multi)))
    )


class SiteRefused(FileExistsError):
    """The site's folder holds something ipclab did not write: it is never replaced."""


def check_site_dir(site_dir: Path) -> None:
    """Raise :class:`SiteRefused` unless a site may be written to ``site_dir`` (absent,
    empty, or a site ipclab wrote). Reads only: the report calls it before any work, so a
    refused folder fails the report before its PDF is printed, not after."""
    site_dir = Path(site_dir)
    if site_dir.is_dir() and (site_dir / SITE_MARKER).is_file():
        return
    if site_dir.exists() and (not site_dir.is_dir() or any(site_dir.iterdir())):
        raise SiteRefused(
            f"{site_dir} exists and is not a site ipclab wrote (no {SITE_MARKER} in it): "
            "not replaced; move it away or write the site elsewhere"
        )


def _prepare(site_dir: Path) -> None:
    """An empty site folder: one ipclab wrote before is removed whole (no stale figure
    stays); any other non-empty folder is left alone and refused."""
    check_site_dir(site_dir)
    if (site_dir / SITE_MARKER).is_file():
        shutil.rmtree(site_dir)
    site_dir.mkdir(parents=True, exist_ok=True)
    (site_dir / SITE_MARKER).write_text("written by ipclab.report; rebuilt whole each time\n")


def _sources(results_dirs: Sequence[Path], references: Mapping[str, Path] | None) -> list[Source]:
    """Every claims table of the site, with its anchor in ``index.html`` (as
    :func:`ipclab.report.document.render_body` numbers the sections)."""
    out = []
    named = [(Path(ref), "R", i, Path(ref)) for i, ref in enumerate((references or {}).values(), 1)]
    named += [(Path(d), "", i, None) for i, d in enumerate(results_dirs, 1)]
    owners = {name: title for _, title, names in registry() for name in names}  # its study
    for d, prefix, i, ref in named:
        meta = read_results(d)
        claims = resolve(d, str(meta.get("claims") or "")) if meta.get("claims") else None
        if claims is None:
            continue
        label = d.parent.name if ref is not None else d.name
        study = owners.get(label) or str(meta.get("title") or meta.get("study") or d.name)
        study = study.split(" (")[0]
        folder = ref.parent if ref is not None else None
        out.append(Source(study, label, section_id(prefix, i), pd.read_csv(claims), folder))
    return out


def _write_pages(site_dir: Path, sources: Sequence[Source]) -> None:
    """``claims.html`` and each reference's ``runs/<reference>.html``."""
    run_pages: dict[Path, str] = {}
    for s in sources:
        if s.folder is not None and s.folder not in run_pages:
            href = f"runs/{s.folder.name}.html"
            (site_dir / "runs").mkdir(exist_ok=True)
            page = document(runs_page(s.folder, s.claims), CSS + SITE_CSS)
            (site_dir / href).write_text(page, "utf-8")
            run_pages[s.folder] = href
    script = filter_script(CLAIMS_TABLE_ID, FILTER_KEYS, ("runtime", "backend")) + SORT_SCRIPT
    page = document(claims_page(sources, run_pages), CSS + SITE_CSS, script.replace(
        "__TABLE__", CLAIMS_TABLE_ID))  # fmt: skip
    (site_dir / CLAIMS_PAGE).write_text(page, "utf-8")


def build_site(
    results_dirs: Sequence[Path],
    site_dir: Path,
    run_log: dict[str, Any] | None = None,
    references: Mapping[str, Path] | None = None,
    environment: dict[str, Any] | None = None,
) -> Path:
    """Write the site of these results folders to ``site_dir``; its ``index.html``."""
    site_dir = Path(site_dir)
    _prepare(site_dir)
    body = render_body(results_dirs, run_log, environment, references, SiteFiles(site_dir))
    index = site_dir / "index.html"
    script = filter_script(ALL_CLAIMS_ID, ("study", "verdict"))
    index.write_text(document(nav("index.html") + body, CSS + SITE_CSS, script), "utf-8")
    _write_pages(site_dir, _sources(results_dirs, references))
    return index
