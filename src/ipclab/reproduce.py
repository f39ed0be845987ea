"""``ipclab reproduce``: run every notebook top to bottom, then build the report (the PDF and
its site, ``site/index.html`` beside it).

Notebooks run with papermill into ``<out>/notebooks`` (the repository's copies carry no
outputs). Each writes a results folder under ``<out>/results``; the report is built from
those folders. What this machine cannot run is skipped with its reason and listed in the
report; a failed notebook makes the command exit non-zero. ``<out>/run_log.json`` is
written as it goes.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ipclab.atomic import write_json_atomic
from ipclab.environment import describe_environment
from ipclab.paths import REPO_ROOT
from ipclab.runs import utcnow
from ipclab.studies import NOTEBOOK_DIR as NOTEBOOK_DIR  # re-exported: where notebooks live
from ipclab.studies import Notebook, all_studies, get_study


def references(chosen: list[Notebook]) -> dict[str, Path]:
    """Fresh results folder name -> the committed reference results it is compared with, in
    notebook order; a notebook's further references (``Notebook.also_references``) follow
    its own under keys no fresh results folder has (``<results>@<reference>``)."""
    out = {}
    for nb in chosen:
        keys = [(nb.results, nb.reference)] if nb.reference else []
        keys += [(f"{nb.results}@{r}", r) for r in nb.also_references]
        for key, name in keys:
            ref = REPO_ROOT / "data" / "runs" / "reference" / name / "results"
            if (ref / "study.json").exists():
                out[key] = ref
    return out


def notebooks(studies: list[str] | None = None) -> list[Notebook]:
    """The notebooks of every registered study (or of ``studies``), in notebook order."""
    chosen = [get_study(s) for s in studies] if studies else list(all_studies().values())
    return sorted((nb for s in chosen for nb in s.notebooks), key=lambda nb: nb.file)


def why_not(nb: Notebook, backend: str) -> str | None:
    """Why this machine cannot run ``nb`` on ``backend`` (None when it can): the backend's
    own check (docker: a client and an engine), the Go and Node.js toolchains, then each
    infrastructure plugin the notebook needs (``ipclab.infrastructure``: can this machine
    host it there)."""
    from ipclab import infrastructure
    from ipclab.backends import all_backends

    runs_on = all_backends().get(backend)
    if runs_on is not None and (why := runs_on.unavailable()):
        return why
    if "go" in nb.needs:
        from ipclab.gobuild import toolchain_missing

        if missing := toolchain_missing():
            return missing
    if "node" in nb.needs:
        from ipclab import nodebuild

        if missing := nodebuild.toolchain_missing():
            return missing
    hosted = [infrastructure.get(n) for n in nb.needs if n in infrastructure.names()]
    for plugin in hosted:
        if why := plugin.unavailable(backend):
            return why
    return None


def run_notebook(nb: Notebook, out: Path, parameters: dict[str, Any]) -> None:
    import papermill

    papermill.execute_notebook(
        str(nb.path),  # notebooks/, or the study's own folder
        str(out / "notebooks" / nb.file),
        parameters={**parameters, "results_dir": str(out / "results" / nb.results)},
        cwd=str(REPO_ROOT),
        kernel_name="python3",
        progress_bar=False,
        log_output=True,
    )


class _ProgressLines(logging.Filter):
    """Of a notebook's streamed output, keep the experiments' progress lines and problems."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage().strip()
        record.msg, record.args = text, ()
        return bool(text) and (record.levelno >= logging.WARNING or text.startswith("["))


def _show_progress_only() -> None:
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("    %(message)s"))
    handler.addFilter(_ProgressLines())
    logger = logging.getLogger("papermill")
    logger.handlers[:] = [handler]
    logger.setLevel(logging.INFO)
    logger.propagate = False


def claim_counts(results: Path) -> dict[str, int]:
    """Verdicts over every study's claims about the system, counted as distinct tests."""
    import pandas as pd

    from ipclab.claims import tally

    counts: dict[str, int] = {}
    for f in sorted(results.glob("*/claims.csv")):
        for verdict, n in tally(pd.read_csv(f, keep_default_na=False)).items():
            counts[verdict] = counts.get(verdict, 0) + n
    return counts


def reproduce(
    profile: str = "quick",
    backend: str = "local",
    out: Path = Path("out"),
    runs_root: Path = Path("data/runs"),
    figures_dir: Path = Path("figures"),
    only: list[str] | None = None,
    studies: list[str] | None = None,
    say: Callable[[str], None] = print,
) -> int:
    # the notebooks run in the repository; hand them absolute paths
    out, runs_root, figures_dir = (Path(p).resolve() for p in (out, runs_root, figures_dir))
    from ipclab.report.site import SiteRefused, check_site_dir

    try:  # the report's site would be refused: say so before an hour of notebooks
        check_site_dir(out / "site")
    except SiteRefused as e:
        say(f"ipclab reproduce: {e}")
        return 2
    (out / "notebooks").mkdir(parents=True, exist_ok=True)
    (out / "results").mkdir(parents=True, exist_ok=True)
    _show_progress_only()
    log: dict[str, Any] = {
        "profile": profile,
        "backend": backend,
        "started_at": utcnow(),
        "environment": describe_environment(),
        "notebooks": [],
    }
    log_path = out / "run_log.json"
    chosen = [nb for nb in notebooks(studies) if not only or any(o in nb.file for o in only)]
    started = time.monotonic()
    parameters = {
        "profile": profile,
        "backend": backend,
        "runs_root": str(runs_root),
        "figures_dir": str(figures_dir),
    }
    for i, nb in enumerate(chosen, 1):
        tag = f"[{i}/{len(chosen)}] {nb.file}"
        log["notebooks"].append(_run_one(nb, out, parameters, lambda m, tag=tag: say(tag + m)))
        write_json_atomic(log_path, log)

    report = out / "report.pdf"
    try:
        from ipclab.report import build_report

        dirs = [
            out / "results" / nb.results
            for nb in chosen
            if (out / "results" / nb.results / "study.json").exists()
        ]
        log["seconds"] = round(time.monotonic() - started, 1)
        build_report(dirs, report, run_log=log, references=references(chosen))
        log["report"] = str(report)
    except Exception as e:  # noqa: BLE001
        log["report_error"] = f"{type(e).__name__}: {e}"
    log["ended_at"] = utcnow()
    log["seconds"] = round(time.monotonic() - started, 1)
    write_json_atomic(log_path, log)
    _say_summary(log, out, figures_dir, runs_root, report, say)
    failed = [e for e in log["notebooks"] if e["status"] == "failed"]
    return 1 if failed or "report" not in log else 0


def _run_one(
    nb: Notebook, out: Path, parameters: dict[str, Any], say: Callable[[str], None]
) -> dict[str, Any]:
    """Run one notebook (or say why not); its entry in the run log."""
    entry: dict[str, Any] = {"notebook": nb.file, "results": nb.results}
    if not nb.path.exists():
        entry.update(status="skipped", reason="notebook not in this checkout yet")
    elif reason := why_not(nb, parameters["backend"]):
        entry.update(status="skipped", reason=reason)
    else:
        say(f" (profile {parameters['profile']}, backend {parameters['backend']}) ...")
        t0 = time.monotonic()
        try:
            run_notebook(nb, out, parameters)
            entry["status"] = "ok"
        except Exception as e:  # noqa: BLE001 - recorded, reported, and the exit code says it
            entry.update(status="failed", reason=f"{type(e).__name__}: {str(e)[-2000:]}")
        entry["seconds"] = round(time.monotonic() - t0, 1)
    if entry["status"] == "skipped":
        say(f": SKIPPED: {entry['reason']}")
    else:
        say(f": {entry['status']} in {entry['seconds']:.0f}s")
    return entry


def _say_summary(
    log: dict[str, Any],
    out: Path,
    figures_dir: Path,
    runs_root: Path,
    report: Path,
    say: Callable[[str], None],
) -> None:
    say("")
    what = f"profile {log['profile']}, backend {log['backend']}"
    say(f"== ipclab reproduce: {what}, {log['seconds'] / 60:.1f} min")
    for e in log["notebooks"]:
        extra = f" {e['seconds']:.0f}s" if "seconds" in e else ""
        why = f": {e['reason'][:300]}" if e.get("reason") else ""
        say(f"  {e['status']:8s}{extra:>6s}  {e['notebook']}{why}")
    counts = claim_counts(out / "results")
    if counts:
        counted = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
        say(f"  claims (distinct tests): {counted}")
    say(f"  executed notebooks: {out / 'notebooks'}")
    say(f"  results: {out / 'results'};  figures: {figures_dir};  runs: {runs_root}")
    if "report" in log:
        say(f"  report: {report};  site: {report.parent / 'site' / 'index.html'}")
    else:
        say(f"  report FAILED: {log['report_error']}")
