"""The report: every study's results folder rendered to HTML, printed to a PDF by headless
Chromium, and written as a site (``site/index.html``) beside it.

:func:`build_report` takes results folders (``study.json`` and its CSVs, see
:mod:`ipclab.results`), the committed references beside them and, optionally, the run log of
``ipclab reproduce``. The PDF's main body is the answer (:mod:`~ipclab.report.answer`: the
verdicts charted per results folder, the findings that matter most linked to their claims,
the agreement across backends and factors) and one section per study (its figures, main
tables, one row per distinct test); the appendices hold the provenance, robustness, a fresh
run's sections beside the references, each study's detail and claims in full, all claims,
and how the report was made (:func:`~ipclab.report.pdf.page_counts` counts both parts). The
HTML (images embedded) is kept next to the PDF; the site is the same HTML with SVG figures
and CSV tables copied beside it, a navigation bar, ``claims.html`` (every claim, sortable and
filtered by study, verdict, runtime and backend, linking to its row, figures and runs) and a
page of runs per reference (:mod:`ipclab.report.site`, :mod:`ipclab.report.claimspage`).

    python -m ipclab.report --results out/results --out out/report.pdf

The modules, by job: :mod:`~ipclab.report.build` (building, the command line),
:mod:`~ipclab.report.document` (the whole HTML), :mod:`~ipclab.report.study` (one study's
section), :mod:`~ipclab.report.reference` and :mod:`~ipclab.report.agreement` (the
committed references, and a fresh run beside them), :mod:`~ipclab.report.overview` (title,
all claims, how it was made), :mod:`~ipclab.report.runlog`, :mod:`~ipclab.report.files`
and :mod:`~ipclab.report.figures` (reading a study's files), :mod:`~ipclab.report.context`
(numbers and the site's files), :mod:`~ipclab.report.site`, :mod:`~ipclab.report.style`,
:mod:`~ipclab.report.html` (tables and numbers), :mod:`~ipclab.report.pdf` (Chromium).
"""

from __future__ import annotations

from ipclab.report.agreement import agreement, agreement_html
from ipclab.report.build import build_report, find_results, main
from ipclab.report.context import Counter, SiteFiles
from ipclab.report.document import render_body, render_html
from ipclab.report.figures import PNG_MAGIC, figure_html
from ipclab.report.files import read_csv, resolve
from ipclab.report.overview import (
    KEY_LIBRARIES,
    STATUS_CLASSES,
    environment_html,
    made_section,
    summary_section,
    title_page,
)
from ipclab.report.pdf import ChromiumMissing, find_chromium, html_to_pdf
from ipclab.report.reference import machine_and_date, made_by, reference_section
from ipclab.report.runlog import not_run_items
from ipclab.report.site import build_site
from ipclab.report.study import study_section, tally_text
from ipclab.report.style import CSS, SITE_CSS

# the names of the single module this package was before its split, kept for its callers
_resolve = resolve
_figure_html = figure_html
_read_csv = read_csv
_tally_text = tally_text
_machine_and_date = machine_and_date
_made_by = made_by

__all__ = [
    "CSS", "KEY_LIBRARIES", "PNG_MAGIC", "SITE_CSS", "STATUS_CLASSES", "ChromiumMissing",
    "Counter", "SiteFiles", "agreement", "agreement_html", "build_report", "build_site",
    "environment_html", "figure_html", "find_chromium", "find_results", "html_to_pdf",
    "machine_and_date", "made_by", "made_section", "main", "not_run_items", "read_csv",
    "reference_section", "render_body", "render_html", "resolve", "study_section",
    "summary_section", "tally_text", "title_page",
]  # fmt: skip
