"""The whole report as one HTML document: the answer, one section per study
(:mod:`ipclab.report.bystudy`), then the appendices: the committed references' provenance,
each results folder's section, all claims, and how the report was made. The PDF is printed
from it; the site is the same body with its figures copied beside it, screen styles and the
claims filter (:mod:`ipclab.report.site`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from ipclab.report import html as rh
from ipclab.report.answer import Entry, answer_section
from ipclab.report.bystudy import Part, entries_of, main_sections
from ipclab.report.context import Counter, SiteFiles
from ipclab.report.designcheck import design_section
from ipclab.report.files import read_csv
from ipclab.report.overview import environment_html, made_section, summary_section
from ipclab.report.pdf import APPENDICES_HEADING
from ipclab.report.reference import reference_overview, reference_parts
from ipclab.report.robustness_section import robustness_section
from ipclab.report.runlog import not_run_by_results, not_run_items, profile_backend
from ipclab.report.study import section_id, study_section
from ipclab.report.style import CSS
from ipclab.results import read_results
from ipclab.runs import utcnow

Reference = tuple[Path, dict[str, Any], pd.DataFrame | None]
APPENDICES_ID = "appendices"  # the heading the main body ends before


def _claims(directory: Path, meta: dict[str, Any], what: str, n: Counter) -> pd.DataFrame | None:
    return read_csv(directory, meta["claims"], what, n) if meta.get("claims") else None


def _references(references: Mapping[str, Path] | None, n: Counter) -> list[tuple[str, Reference]]:
    out = []
    for name, ref in (references or {}).items():
        meta = read_results(ref)
        out.append((name, (Path(ref), meta, _claims(ref, meta, f"reference claims of {name}", n))))
    return out


def _part(d: Path, meta: dict[str, Any], claims: pd.DataFrame | None, anchor: str,
          label: str, folder: Path | None) -> Part:  # fmt: skip
    title = str(meta.get("title") or meta.get("study") or d.name)
    entry = Entry(title, str(meta.get("study") or d.name), anchor,
                  claims if claims is not None else pd.DataFrame(), label, folder,
                  bool(meta.get("figures")))  # fmt: skip
    return Part(entry, d, meta)


def _reference_parts(refs: Sequence[Reference], n: Counter) -> list[Part]:
    """The references' parts of the main body's study sections; their provenance,
    robustness, design check and full sections are left for the appendices."""
    if not refs:
        return []
    root = refs[0][0].parents[1]  # <root>/<reference>/results
    n.later(lambda: reference_overview(refs))
    n.later(lambda: robustness_section(root, n))
    n.later(lambda: design_section(root, n))
    for section in reference_parts(refs, n):
        n.later(section)
    return [_part(d, m, c, section_id("R", i), d.parent.name, d.parent)
            for i, (d, m, c) in enumerate(refs, 1)]  # fmt: skip


def render_body(
    results_dirs: Sequence[Path],
    run_log: dict[str, Any] | None = None,
    environment: dict[str, Any] | None = None,
    references: Mapping[str, Path] | None = None,
    site: SiteFiles | None = None,
) -> str:
    """The report's ``<body>``: the main body (the answer, then one section per study: the
    committed references' grouped under it when there are any, else this run's) and the
    appendices (provenance, robustness, each results folder's full section with its
    figures, tables and every test, this run's beside the references, each study's detail,
    all claims, how it was made); with ``site``, figures and tables are copied there and
    linked, not inlined."""
    from ipclab.environment import describe_environment

    dirs = [Path(d) for d in results_dirs]
    metas = [read_results(d) for d in dirs]
    n = Counter(site=site)
    env = environment or (run_log or {}).get("environment") or describe_environment()
    built_at = utcnow()
    by_results = not_run_by_results(run_log)
    named = _references(references, n)
    refs = [r for _, r in named]
    ref_claims = {name: c for name, (_, _, c) in named}
    parts = _reference_parts(refs, n)
    frames = []
    for i, (d, meta) in enumerate(zip(dirs, metas, strict=True), 1):
        title = str(meta.get("title") or meta.get("study") or d.name)
        claims = _claims(d, meta, f"claims of {title}", n)
        not_run = by_results.get(d.name, [])
        reference = ref_claims.get(d.name)
        # the full section in the appendices; in the main body, its study's section
        n.later(partial(study_section, i, d, meta, claims, not_run, n, reference=reference))
        if not refs:  # the references are the main body's evidence; this run is beside them
            parts.append(_part(d, meta, claims, section_id("", i), d.name, None))
        if claims is not None:
            frames.append(claims.assign(study=title))
    all_claims = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    profile, backend = profile_backend(run_log, metas)
    root = refs[0][0].parents[1] if refs else None
    sections, studies = main_sections(parts, n)
    return "\n".join([
        answer_section(entries_of(studies), root, site is not None, _status(run_log)),
        *sections,
        f'<h1 class="study-title appendices" id="{APPENDICES_ID}">{APPENDICES_HEADING}</h1>',
        *n.appendices(),
        summary_section(all_claims, n),
        made_section(run_log, n.problems, built_at, environment_html(env, profile, backend,
                                                                     built_at[:10])),
    ])  # fmt: skip


def _status(run_log: dict[str, Any] | None) -> str:
    """The notebooks that were skipped or failed, for the first page."""
    missing = not_run_items(run_log)
    items = "".join(f"<li>{rh.esc(m)}</li>" for m in missing)
    return f'<ul class="skipped">{items}</ul>' if missing else ""


def document(body: str, css: str, script: str = "") -> str:
    """A self-contained HTML document: styles and script inline, nothing fetched."""
    tail = f"<script>{script}</script>" if script else ""
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>ipclab report</title><style>{css}</style></head><body>{body}{tail}</body></html>"
    )


def render_html(
    results_dirs: Sequence[Path],
    run_log: dict[str, Any] | None = None,
    environment: dict[str, Any] | None = None,
    references: Mapping[str, Path] | None = None,
) -> str:
    """The whole report as one self-contained HTML document (figures inlined), as printed to
    the PDF. ``references``: a fresh results folder's name -> the committed reference results
    it is placed beside (they lead)."""
    return document(render_body(results_dirs, run_log, environment, references), CSS)
