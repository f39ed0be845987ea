"""The report PDF (printed by headless Chromium) and its site, from results folders.

Building both from the results folders found under a folder, and the command line.

    python -m ipclab.report --results out/results --out out/report.pdf [--site out/site]
    python -m ipclab.report --references --out out/report.pdf   # the references alone
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ipclab.report.document import render_html
from ipclab.report.pdf import ChromiumMissing, find_chromium, html_to_pdf, page_counts
from ipclab.report.runlog import notebooks
from ipclab.report.site import SiteRefused, build_site, check_site_dir


def build_report(
    results_dirs: Sequence[Path],
    out_pdf: Path,
    run_log: dict[str, Any] | None = None,
    references: Mapping[str, Path] | None = None,
    site_dir: Path | None = None,
) -> Path:
    """Render the results folders (and the run log) to ``out_pdf``; the HTML is kept beside
    it, and the site written to ``site_dir`` (default: ``site/`` beside the PDF).

    Raises :class:`ChromiumMissing` when no Chromium is installed and :class:`SiteRefused`
    when the site's folder holds something else, both before anything is written."""
    from ipclab.environment import describe_environment

    out_pdf = Path(out_pdf)
    site = out_pdf.parent / "site" if site_dir is None else Path(site_dir)
    find_chromium()  # fail before any work when it cannot end in a PDF
    check_site_dir(site)  # ... or in a site: no PDF printed beside a refused site folder
    out_pdf.parent.mkdir(parents=True, exist_ok=True)
    env = (run_log or {}).get("environment") or describe_environment()
    html_file = out_pdf.with_suffix(".html")
    html_file.write_text(render_html(results_dirs, run_log, env, references), "utf-8")
    # Chromium prints the PDF (a subprocess, ~20 s for the quick reproduce) while this
    # process renders the site; an error of either is raised once both have ended
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ipclab-pdf") as pool:
        printing = pool.submit(html_to_pdf, html_file, out_pdf)
        build_site(results_dirs, site, run_log, references, env)
        return printing.result()


def find_results(root: Path, run_log: dict[str, Any] | None = None) -> list[Path]:
    """Every folder with a ``study.json`` under ``root``, in the run log's notebook order."""
    dirs = sorted(p.parent for p in Path(root).rglob("study.json"))
    order = {str(e.get("results")): i for i, e in enumerate(notebooks(run_log))}
    return sorted(dirs, key=lambda d: (order.get(d.name, len(order)), str(d)))


def committed_references() -> dict[str, Path]:
    """Every committed reference's results folder, by its folder's name."""
    from ipclab.paths import REPO_ROOT

    root = REPO_ROOT / "data" / "runs" / "reference"
    found = sorted(root.glob("*/results"))
    return {d.parent.name: d for d in found if (d / "study.json").is_file()}


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m ipclab.report", description=__doc__.split("\n")[0])
    ap.add_argument(
        "--results",
        type=Path,
        default=Path("out/results"),
        help="folder searched for results folders (study.json)",
    )
    ap.add_argument("--out", type=Path, default=Path("out/report.pdf"), help="the PDF to write")
    ap.add_argument(
        "--site", type=Path, default=None, help="the site's folder (default: site/ beside the PDF)"
    )
    ap.add_argument("--no-pdf", action="store_true", help="write the site only (needs no Chromium)")
    ap.add_argument(
        "--references",
        action="store_true",
        help="lead with every committed reference (data/runs/reference/*/results); with no "
        "results folders, the report of the references alone",
    )
    ap.add_argument(
        "--run-log",
        type=Path,
        default=None,
        help="run_log.json of ipclab reproduce (default: <results>/../run_log.json)",
    )
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    log_path = a.run_log or a.results.parent / "run_log.json"
    run_log = json.loads(log_path.read_text()) if log_path.is_file() else None
    dirs = find_results(a.results, run_log) if a.results.is_dir() else []
    refs = committed_references() if a.references else None
    if not dirs and not refs:
        print(f"no results folders (study.json) under {a.results}", file=sys.stderr)
        return 2
    site = a.site or a.out.parent / "site"
    try:
        if a.no_pdf:
            print(build_site(dirs, site, run_log, refs))
            return 0
        print(build_report(dirs, a.out, run_log, refs, site_dir=site))
        main_body, appendices = page_counts(a.out)
        print(f"main body: {main_body} pages; appendices: {appendices} pages", file=sys.stderr)
    except (ChromiumMissing, SiteRefused) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(site / "index.html")
    return 0
