"""Rebuild the committed Buono reference result (tables, claims, figures) from its run
files, without rerunning anything: ``python -m ipclab.studies.buono.reference``.

``data/runs/reference/buono-full-docker/`` holds the two experiments' runs
(``procedure/``: one run per variant and repetition with its per-request records;
``memory/``: one run per cell and repetition with its 20 Hz samples) and ``results/``.
This reads them, analyses them as notebook 05 does, rewrites ``results/`` and
``figures/reference/buono-full-docker/``, and fills the README's findings blocks from the
claims tables (:func:`ipclab.findings.write_findings`); ``--tables`` prints the headline numbers
(:func:`ipclab.studies.buono.experiment.summary_markdown`).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from ipclab import environment_table, plausibility, seed_items
from ipclab.findings import fill_blocks, write_findings
from ipclab.paths import from_repo
from ipclab.results import StudyResults
from ipclab.studies.buono import experiment, orchestrators, readme

ROOT = Path("data/runs/reference")
FIGURES = Path("figures/reference")
FOLDER = "buono-full-docker"


def load(root: Path = ROOT) -> experiment.Analysis:
    e = experiment.experiments("full", "docker", from_repo(root))
    return experiment.analyse(*experiment.load(e))


def rebuild(root: Path = ROOT, figures: Path = FIGURES) -> Path:
    a = load(root)
    results = StudyResults(
        from_repo(root) / FOLDER / "results", "buono",
        "Buono & Petrović 2021: JSON vs Protocol Buffers (full profile, docker)",
        parameters={"profile": "full", "backend": "docker"}, figures_dir=figures / FOLDER,
    )  # fmt: skip
    experiment.write_results(a, results)
    plausibility.write_reference(results)
    environment_table.write_reference(results)
    seed_items.write_reference(results)
    text = results.directory.parent / "README.md"
    write_findings(text, a.claims, "results/claims.csv")
    if len(a.claims_stdlib):
        write_findings(text, a.claims_stdlib, f"results/{experiment.STDLIB_CLAIMS}.csv")
    if len(a.claims_jvm):  # the runtime factor: its tables and its claims' findings
        fill_blocks(text, readme.jvm_blocks(a))
        write_findings(text, a.claims_jvm, f"results/{experiment.JVM_CLAIMS}.csv")
    if (from_repo(root) / orchestrators.FOLDER).is_dir():  # the JVM's runs in pods too
        orchestrators.rebuild(root)
    return results.directory


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("--root", type=Path, default=ROOT)
    p.add_argument("--figures", type=Path, default=FIGURES)
    p.add_argument("--tables", action="store_true", help="print the headline numbers only")
    a = p.parse_args(argv)
    if a.tables:
        print(experiment.summary_markdown(load(a.root)))
        return 0
    print(rebuild(a.root, a.figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
