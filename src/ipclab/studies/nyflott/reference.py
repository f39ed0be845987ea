"""Rebuild the committed Nyfløtt reference result (tables, claims, figures) from its run
files, without rerunning anything: ``python -m ipclab.studies.nyflott.reference``.

``data/runs/reference/nyflott-full-docker/`` holds the experiment's runs (one folder per
added delay, ``delay0ms/`` ``delay2ms/`` ``delay5ms/``, each run with its manifest,
summary, events and 1 Hz resources) and ``results/``; ``californium-fix/``, where it was
run, the Californium fix's runs (claim N33a: ``experiment.fix_experiment``). Per-request
records and role logs are not committed (``.gitignore``), so the per-run tables derived from
them (``runs.csv``,
``hosts_runs.csv``, ``per_test_case_runs.csv``, ``gc_extremes_runs.csv``, ``extremes.csv``,
``gc_events.csv``, ``slow_requests.csv``) are read back from ``results/`` for every run
without records (``analysis.analyse``'s ``cached``); a run that has its records is
analysed from them. This rewrites ``results/`` and
``figures/reference/nyflott-full-docker/``, and fills the README's findings block from
``results/claims.csv`` (``ipclab.findings``); ``--tables`` prints Tables 2 and 3 and the GC
test (:func:`ipclab.studies.nyflott.analysis.summary_markdown`).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ipclab import environment_table, plausibility, seed_items
from ipclab.experiments import load_runs
from ipclab.findings import fill_blocks, write_findings
from ipclab.paths import from_repo
from ipclab.results import StudyResults
from ipclab.runs import Run
from ipclab.studies.nyflott import analysis, window
from ipclab.studies.nyflott.experiment import FIX_EXPERIMENT

ROOT = Path("data/runs/reference")
FIGURES = Path("figures/reference")
FOLDER = "nyflott-full-docker"
TITLE = "Nyfløtt 2017: HTTP/1.1 vs h2c vs CoAP (full profile, docker)"


#: the tables, the profiling testbed's folders (fixed and thesis logging), the Californium
#: fix's experiment (claim N33a)
NOT_DELAYS = ("results", "profiling", "profiling-thesis", FIX_EXPERIMENT)


def runs_of(base: Path) -> list[Run]:
    """Every complete run in the folder's experiment folders (any name: a delay each)."""
    return [r for d in sorted(p for p in base.iterdir() if p.is_dir() and p.name not in NOT_DELAYS)
            for r in load_runs(d)]  # fmt: skip


def load(root: Path = ROOT, folder: str = FOLDER) -> analysis.Analysis:
    base = from_repo(root) / folder
    if not base.is_dir():
        raise FileNotFoundError(f"{base}: no reference runs (make one with the notebook's "
                                "full profile and --runs-root data/runs/reference)")  # fmt: skip
    fix = load_runs(base / FIX_EXPERIMENT) if (base / FIX_EXPERIMENT).is_dir() else []
    return analysis.analyse(runs_of(base), cached=base / "results", profiling=base / "profiling",
                            fix_runs=fix, thesis_profiling=base / "profiling-thesis")  # fmt: skip


def rebuild(root: Path = ROOT, figures: Path = FIGURES, folder: str = FOLDER) -> Path:
    a = load(root, folder)
    results = StudyResults(
        from_repo(root) / folder / "results", "nyflott", TITLE,
        parameters={"profile": "full", "backend": "docker"}, figures_dir=figures / folder,
    )  # fmt: skip
    analysis.write_results(a, results)
    plausibility.write_reference(results)  # the profiling testbed's run too
    environment_table.write_reference(results)
    seed_items.write_reference(results)
    readme = from_repo(root) / folder / "README.md"
    claims_csv = results.directory / "claims.csv"
    if readme.is_file():  # its generated tables, and its findings from the claims table
        text = readme.read_text()
        blocks = analysis.readme_blocks(a)
        check = window.read_check(readme.parent)
        if check is not None:
            blocks["window-check"] = window.check_markdown(check)
        fill_blocks(readme, {k: v for k, v in blocks.items() if f"<!-- generated: {k} -->" in text})
        if claims_csv.is_file():
            write_findings(readme, pd.read_csv(claims_csv), "results/claims.csv")
    return results.directory


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("--root", type=Path, default=ROOT)
    p.add_argument("--figures", type=Path, default=FIGURES)
    p.add_argument("--folder", default=FOLDER, help="the folder of runs under --root")
    p.add_argument("--tables", action="store_true", help="print Tables 2 and 3 only")
    a = p.parse_args(argv)
    if a.tables:
        print(analysis.summary_markdown(load(a.root, a.folder)))
        return 0
    print(rebuild(a.root, a.figures, a.folder))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
