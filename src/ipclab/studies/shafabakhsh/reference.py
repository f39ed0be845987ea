"""Rebuild the committed reference results (tables, claims, figures) from their run files,
without rerunning anything: ``python -m ipclab.studies.shafabakhsh.reference``.

Each folder under ``data/runs/reference/`` keeps its runs' manifests and summaries; this
reads them, analyses them as the notebooks do, and rewrites ``<folder>/results/`` and
``figures/reference/<folder>/``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from ipclab.experiments import load_runs
from ipclab.paths import from_repo
from ipclab.results import StudyResults
from ipclab.studies.shafabakhsh import availability, languages, performance

ROOT = Path("data/runs/reference")
FIGURES = Path("figures/reference")


def _results(root: Path, figures: Path, folder: str, study: str, title: str) -> StudyResults:
    return StudyResults(root / folder / "results", study, title, figures_dir=figures / folder)


def rebuild_performance(root: Path = ROOT, figures: Path = FIGURES) -> Path:
    runs = load_runs(from_repo(root) / "shafabakhsh-full-local")
    think = load_runs(from_repo(root) / "shafabakhsh-think-full-local")
    results = _results(
        root, figures, "shafabakhsh-full-local", "shafabakhsh",
        "Shafabakhsh 2020 (full profile, local)",
    )  # fmt: skip
    performance.write_results(performance.analyse(runs, think, "full"), runs, results)
    return results.directory


def analyse_languages(root: Path = ROOT) -> languages.Analysis:
    """The language factor over the committed runs: the Python matrix, the Go matrix and
    the Python anchor of the Go sitting."""
    anchor = languages.anchor("full", "local", from_repo(root))
    return languages.analyse(
        load_runs(from_repo(root) / "shafabakhsh-full-local"),
        load_runs(languages.experiment("full", "local", from_repo(root)).directory),
        load_runs(anchor.directory) if anchor else [],
        "full",
    )


def rebuild_languages(root: Path = ROOT, figures: Path = FIGURES) -> Path:
    results = _results(
        root, figures, "shafabakhsh-go-full-local", "languages",
        "Shafabakhsh 2020 in Python and Go: the language factor (full profile, local)",
    )  # fmt: skip
    languages.write_results(analyse_languages(root), results)
    return results.directory


def rebuild_availability(
    backend: str, methods: tuple[str, ...], title: str, root: Path = ROOT, figures: Path = FIGURES
) -> Path:
    exp = availability.experiments("full", backend, from_repo(root), methods)
    runs = exp.load()
    results = _results(root, figures, f"availability-full-{backend}", "availability", title)
    availability.write_results(availability.analyse(runs, "full"), runs, results)
    return results.directory


def rebuild_all(root: Path = ROOT, figures: Path = FIGURES) -> list[Path]:
    return [
        rebuild_performance(root, figures),
        rebuild_languages(root, figures),
        rebuild_availability(
            "local",
            ("fault_injection", "outage"),
            "Shafabakhsh 2020: availability (full profile: fault injection and outage, local)",
            root,
            figures,
        ),
        rebuild_availability(
            "docker",
            ("until_failure",),
            "Shafabakhsh 2020 availability, method 1 (full profile, docker, partial)",
            root,
            figures,
        ),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", type=Path, default=ROOT)
    p.add_argument("--figures", type=Path, default=FIGURES)
    a = p.parse_args(argv)
    for d in rebuild_all(a.root, a.figures):
        print(d)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
