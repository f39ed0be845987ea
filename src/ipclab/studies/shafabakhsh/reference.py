"""Rebuild the committed reference results (tables, claims, figures) from their run files,
without rerunning anything: ``python -m ipclab.studies.shafabakhsh.reference``.

Each folder under ``data/runs/reference/`` keeps its runs' manifests and summaries; this
reads them, analyses them as the notebooks do, and rewrites ``<folder>/results/``,
``figures/reference/<folder>/`` and the generated parts of ``<folder>/README.md``: its
findings blocks (``ipclab.findings``, from the claims tables just written) and its other
generated blocks (tables and sentences computed by the study, ``ipclab.findings.fill_blocks``).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from ipclab import environment_table, plausibility, seed_items
from ipclab import robustness as rb
from ipclab.compare import compare_claims
from ipclab.experiments import load_runs
from ipclab.findings import fill_blocks, write_findings
from ipclab.paths import from_repo
from ipclab.results import StudyResults
from ipclab.runs import Run
from ipclab.studies import get_study
from ipclab.studies.shafabakhsh import (
    availability,
    encryption,
    languages,
    orchestrators,
    performance,
    runtimes,
)
from ipclab.studies.shafabakhsh.availability import beside
from ipclab.studies.shafabakhsh.availability import readme as availability_readme

ROOT = Path("data/runs/reference")
FIGURES = Path("figures/reference")


def _results(root: Path, figures: Path, folder: str, study: str, title: str) -> StudyResults:
    return StudyResults(root / folder / "results", study, title, figures_dir=figures / folder)


def _readme(results: StudyResults, blocks: Mapping[str, str] | None = None) -> None:
    """Fill the folder's README (when it has one): the generated ``blocks`` and a findings
    block per claims table written (read back from its CSV, as the README test reads it)."""
    readme = results.directory.parent / "README.md"
    if not readme.exists():
        return
    if blocks:
        fill_blocks(readme, blocks)
    for name in CLAIMS_TABLES:
        if _has_rows(csv := results.directory / name):
            write_findings(readme, pd.read_csv(csv), f"results/{name}")


def _has_rows(csv: Path) -> bool:
    return csv.exists() and bool(csv.stat().st_size) and len(pd.read_csv(csv)) > 0


#: The claims tables a reference folder may hold, each with a findings block in its README.
CLAIMS_TABLES = ("claims.csv", "claims_mttr_outage.csv", "claims_mttr_fault_injection.csv")


def rebuild_performance(root: Path = ROOT, figures: Path = FIGURES, backend: str = "local") -> Path:
    """The performance matrix's reference on ``backend`` (with its think-time runs, where
    that backend has them)."""
    folder = f"shafabakhsh-full-{backend}"
    think_dir = from_repo(root) / f"shafabakhsh-think-full-{backend}"
    runs = load_runs(from_repo(root) / folder)
    think = load_runs(think_dir) if think_dir.is_dir() else []
    results = _results(
        root, figures, folder, "shafabakhsh", f"Shafabakhsh 2020 (full profile, {backend})"
    )
    results.deviations = list(performance.DEVIATIONS)
    performance.declared(performance.analyse(runs, think, "full"), runs).write(results)
    plausibility.write_reference(results, think_dir)
    environment_table.write_reference(results)
    seed_items.write_reference(results)
    if backend != "local" and (local := from_repo(root) / "shafabakhsh-full-local").is_dir():
        table, agreement = backend_agreement(local / "results", results.directory)
        caption = (
            f"Every claim measured on the local backend and on {backend}: each side's "
            f"estimate and verdict, the ratio of the estimates and what explains a "
            f"disagreement (ipclab.robustness)."
        )
        results.table(table, "backends", caption, in_report=False)
        _readme(results, {"agreement": agreement})
    return results.directory


def backend_agreement(local: Path, other: Path) -> tuple[pd.DataFrame, str]:
    """Every claim of two performance references' results folders side by side (the local
    one first), as ``ipclab compare`` and the report's robustness section set them
    (``ipclab.compare.compare_claims``), and as a README block."""
    compared = compare_claims(local.parent, other.parent)
    if compared is None:
        raise ValueError(f"{local} and {other} hold no claims tables of one study to compare")
    title = f"Shafabakhsh 2020 ({local.parent.name} and {other.parent.name})"
    table = compared.table
    return table, rb.agreement_markdown(table, title, compared.labels, "backend")


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
    results.deviations = list(languages.DEVIATIONS)
    languages.declared(analyse_languages(root)).write(results)
    anchor = languages.anchor("full", "local", from_repo(root))
    plausibility.write_reference(results, *([anchor.directory] if anchor else []))
    environment_table.write_reference(results)
    seed_items.write_reference(results)
    return results.directory


def rebuild_encryption(
    root: Path = ROOT, figures: Path = FIGURES, backend: str = "local", runtime: str = "python"
) -> Path:
    """The matrix in the clear and with TLS (notebook 07) on ``backend``: the three-level
    sitting (plain, every hop, the edge) once recorded, else the two-level one before it;
    with ``runtime`` node, the Node.js sitting (plain and the edge)."""
    exp = encryption.experiment("full", backend, from_repo(root), runtime)
    directory = exp.directory
    if not directory.is_dir() and runtime == "python":
        directory = encryption.legacy_directory("full", backend, root)
    title = (
        f"Shafabakhsh 2020 on Node.js with HTTPS to the gateway (full profile, {backend})"
        if runtime != "python"
        else f"Shafabakhsh 2020 with TLS on every hop and at the edge (full profile, {backend})"
        if directory == exp.directory
        else f"Shafabakhsh 2020 with TLS on every hop (full profile, {backend})"
    )
    results = _results(root, figures, directory.name, "tls", title)
    results.deviations = list(encryption.DEVIATIONS)
    encryption.declared(encryption.analyse(load_runs(directory), "full")).write(results)
    plausibility.write_reference(results)
    environment_table.write_reference(results)
    seed_items.write_reference(results)
    return results.directory


def analyse_runtimes(root: Path = ROOT) -> runtimes.Analysis:
    """The thesis's claims per runtime over the committed runs: the Python matrix, the Go
    matrix, the Node.js matrix and its anchors."""
    where = ("full", "local", from_repo(root))
    anchor = runtimes.anchor(*where)
    return runtimes.analyse(
        load_runs(from_repo(root) / "shafabakhsh-full-local"),
        load_runs(languages.experiment(*where).directory),
        load_runs(runtimes.experiment(*where).directory),
        load_runs(anchor.directory) if anchor and anchor.directory.is_dir() else [],
        "full",
    )


def rebuild_runtimes(root: Path = ROOT, figures: Path = FIGURES) -> Path:
    """The Node.js matrix beside the Python and Go ones (notebook 08)."""
    folder = runtimes.experiment("full", "local", from_repo(root)).directory.name
    results = _results(
        root, figures, folder, "runtimes",
        "Shafabakhsh 2020 on Node.js, Python and Go: the thesis's claims per runtime (full "
        "profile, local)",
    )  # fmt: skip
    results.deviations = list(runtimes.DEVIATIONS)
    runtimes.declared(analyse_runtimes(root)).write(results)
    anchor = runtimes.anchor("full", "local", from_repo(root))
    plausibility.write_reference(results, *([anchor.directory] if anchor else []))
    environment_table.write_reference(results)
    seed_items.write_reference(results)
    _readme(results)
    return results.directory


def rebuild_orchestrators(root: Path = ROOT, figures: Path = FIGURES) -> Path:
    """One cell per style on docker compose and on Kubernetes, one sitting (issue 33),
    through its part's stages (notebook 01's section): its runs loaded, analysed, written."""
    k8s = get_study("shafabakhsh").part("orchestrators")
    params = k8s.parameters(
        profile="full", runs_root=from_repo(root),
        results_dir=root / orchestrators.FOLDER / "results",
        figures_dir=figures / orchestrators.FOLDER,
    )  # fmt: skip
    results = k8s.write(k8s.analyse(k8s.load(k8s.experiments(params)), params), params)
    plausibility.write_reference(results)
    environment_table.write_reference(results)
    seed_items.write_reference(results)
    return results.directory


#: each availability method as a reference's title names it, in the titles' order
METHOD_WORDS = {"fault_injection": "fault injection", "outage": "outage",
                "until_failure": "method 1"}  # fmt: skip


def availability_methods(directory: Path) -> tuple[str, ...]:
    """The availability methods whose runs a reference folder holds (a run directory
    ``<method>-...`` with its manifest), in ``METHOD_WORDS``' order."""
    return tuple(
        m for m in METHOD_WORDS
        if any((d / "manifest.json").is_file() for d in Path(directory).glob(f"{m}-*"))
    )  # fmt: skip


def availability_title(backend: str, methods: Sequence[str]) -> str:
    """A reference's title, saying what it holds: ``Shafabakhsh 2020: availability (full
    profile: fault injection and outage, local)``."""
    words = [METHOD_WORDS[m] for m in METHOD_WORDS if m in methods]
    held = words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"
    return f"Shafabakhsh 2020: availability (full profile: {held}, {backend})"


def baseline_runs(root: Path = ROOT) -> dict[str, list[Run]]:
    """The fault-injection runs of the committed availability references another backend's
    is set beside (``beside.BASELINES``: local and docker), by backend."""
    out = {}
    for b in beside.BASELINES:
        exp = availability.experiments("full", b, from_repo(root), ("fault_injection",))
        if exp.directory.is_dir():
            out[b] = exp.load().fault_injection
    return out


def rebuild_availability(
    backend: str,
    methods: tuple[str, ...] | None = None,
    title: str | None = None,
    root: Path = ROOT,
    figures: Path = FIGURES,
) -> Path:
    """The availability reference on ``backend`` (``availability-full-<backend>``), with
    the methods its folder holds (or ``methods``) and a title saying which. A reference
    on a backend other than local and docker (Kubernetes) also sets its recovery
    decomposition beside theirs (``availability.beside``), and, where its folder has no
    README yet, gets one with its generated blocks (``availability.readme.skeleton``)."""
    folder = from_repo(root) / f"availability-full-{backend}"
    methods = methods or availability_methods(folder)
    exp = availability.experiments("full", backend, from_repo(root), methods)
    runs = exp.load()
    results = _results(root, figures, exp.name, "availability",
                       title or availability_title(backend, methods))  # fmt: skip
    a = availability.analyse(runs, "full")
    if backend not in beside.BASELINES:
        a.recovery_backends = beside.table({**baseline_runs(root), backend: runs.fault_injection})
    availability.write_results(a, runs, results)
    plausibility.write_reference(results)
    environment_table.write_reference(results)
    seed_items.write_reference(results)
    readme = results.directory.parent / "README.md"
    if not readme.exists() and backend not in beside.BASELINES:
        held = [n for n in CLAIMS_TABLES if _has_rows(results.directory / n)]
        readme.write_text(availability_readme.skeleton(backend, methods, held))
    text = readme.read_text() if readme.exists() else ""
    blocks = {  # the blocks this README has (a reference written before them has none)
        name: body
        for name, body in availability_readme.readme_blocks(a, runs).items()
        if f"<!-- generated: {name} -->" in text
    }
    _readme(results, blocks)
    return results.directory


def rebuild_all(root: Path = ROOT, figures: Path = FIGURES) -> list[Path]:
    on_docker = (from_repo(root) / "shafabakhsh-full-docker").is_dir()
    with_tls = (
        encryption.experiment("full", "local", from_repo(root)).directory.is_dir()
        or encryption.legacy_directory("full", "local", root).is_dir()
    )
    on_kubernetes = orchestrators.directory("full", root).is_dir()
    on_node = runtimes.experiment("full", "local", from_repo(root)).directory.is_dir()
    node_tls = encryption.experiment("full", "local", from_repo(root), "node").directory.is_dir()
    # availability on Kubernetes (issue 51): fault injection, method 1 once measured
    k8s_availability = availability_methods(from_repo(root) / "availability-full-kubernetes")
    return [
        rebuild_performance(root, figures),
        *([rebuild_performance(root, figures, "docker")] if on_docker else []),
        rebuild_languages(root, figures),
        *([rebuild_encryption(root, figures)] if with_tls else []),
        *([rebuild_runtimes(root, figures)] if on_node else []),
        *([rebuild_encryption(root, figures, runtime="node")] if node_tls else []),
        *([rebuild_orchestrators(root, figures)] if on_kubernetes else []),
        rebuild_availability("local", root=root, figures=figures),
        rebuild_availability("docker", root=root, figures=figures),
        *(
            [rebuild_availability("kubernetes", root=root, figures=figures)]
            if k8s_availability
            else []
        ),  # fmt: skip
    ]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", type=Path, default=ROOT)
    p.add_argument("--figures", type=Path, default=FIGURES)
    a = p.parse_args(argv)
    for d in rebuild_all(a.root, a.figures):
        print(d)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
