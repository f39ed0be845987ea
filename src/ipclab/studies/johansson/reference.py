"""Rebuild the committed Johansson reference result (tables, claims, figures) from its run
files, without rerunning anything: ``python -m ipclab.studies.johansson.reference``.

``data/runs/reference/johansson-full-local/`` holds the three experiments' runs
(``thesis/``, ``sweep/``, ``saturation/``; the interleaved runs with their per-request
records) and ``results/``, whose ``serialisation_rounds.csv`` is the micro-benchmark as
measured then (timings cannot be rebuilt from files, so they are read back). This reads
them, analyses them as the notebook does, and rewrites ``results/`` and
``figures/reference/johansson-full-local/``, and fills the findings block of its README
from ``results/claims.csv`` (:func:`ipclab.findings.write_findings`); ``--tables`` prints the
tables of its README (:func:`ipclab.studies.johansson.analysis.summary_markdown`).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pandas as pd

from ipclab import environment_table, plausibility, seed_items
from ipclab.experiments import load_runs
from ipclab.findings import GENERATED
from ipclab.paths import from_repo
from ipclab.results import StudyResults
from ipclab.studies.johansson import analysis, experiment

ROOT = Path("data/runs/reference")
FIGURES = Path("figures/reference")
FOLDER = "johansson-full-local"
CLAIMS = "results/claims.csv"  # the findings block's label: relative to the README's folder


def load(root: Path = ROOT, folder: str = FOLDER) -> analysis.Analysis:
    base = from_repo(root) / folder
    runs = {name: load_runs(base / name) for name in ("thesis", "sweep", "saturation")}
    rounds = base / "results" / "serialisation_rounds.csv"
    serial = pd.read_csv(rounds) if rounds.exists() else None
    return analysis.analyse(runs, "full", serial)


def rebuild(root: Path = ROOT, figures: Path = FIGURES, folder: str = FOLDER) -> Path:
    """One reference folder (``johansson-full-<backend>``; a folder of the thesis test alone,
    as on docker, has no sweep or saturation runs and its tables leave them out)."""
    a = load(root, folder)
    backend = folder.rsplit("-", 1)[-1]
    results = StudyResults(
        from_repo(root) / folder / "results", "johansson",
        f"Johansson 2017: REST vs GraphQL gateway (full profile, {backend})",
        parameters={"profile": "full", "backend": backend}, figures_dir=figures / folder,
    )  # fmt: skip
    written = analysis.declared(a)
    readme = from_repo(root) / folder / "README.md"
    if readme.exists():  # the blocks its README has (the docker one: no machine check)
        have = {m.group("name") for m in GENERATED.finditer(readme.read_text())}
        blocks = analysis.readme_blocks(a)
        written = replace(written, readme={k: v for k, v in blocks.items() if k in have})
    results.deviations = list(experiment.DEVIATIONS)
    written.write(results)  # with the README's tables and what was found
    plausibility.write_reference(results)
    environment_table.write_reference(results)
    seed_items.write_reference(results)
    return results.directory


def folders(root: Path = ROOT) -> list[str]:
    """The study's reference folders: the local one, and one per further backend measured."""
    return sorted(d.name for d in from_repo(root).glob("johansson-full-*") if d.is_dir())


def rebuild_all(root: Path = ROOT, figures: Path = FIGURES) -> list[Path]:
    return [rebuild(root, figures, folder) for folder in folders(root)]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", type=Path, default=ROOT)
    p.add_argument("--figures", type=Path, default=FIGURES)
    p.add_argument("--tables", action="store_true", help="print the README's tables only")
    a = p.parse_args(argv)
    if a.tables:
        print(analysis.summary_markdown(load(a.root)))
        return 0
    for d in rebuild_all(a.root, a.figures):
        print(d)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
