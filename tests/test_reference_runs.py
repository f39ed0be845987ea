"""The committed reference runs (data/runs/reference) load and analyse without rerunning
anything: what a reader of a fresh clone gets (per-request files are not committed, so the
analysis reads each run's summary.json)."""

from __future__ import annotations

from ipclab.claims import VERDICTS
from ipclab.experiments import load_runs
from ipclab.paths import from_repo
from ipclab.studies.shafabakhsh import performance as shafabakhsh
from tests import reference_analyses

REFERENCE = from_repo("data/runs/reference")


def test_shafabakhsh_full_reference_is_complete_and_analyses() -> None:
    perf_exp, think_exp = shafabakhsh.experiments("full", "local", REFERENCE)
    # the reference covers every cell of the notebook's full profile (made by its own code)
    assert (
        perf_exp.pending(current_only=False) == [] and think_exp.pending(current_only=False) == []
    )
    p = shafabakhsh.profile("full")
    assert {perf_exp.directory.parent, think_exp.directory.parent} == {REFERENCE}
    perf = list(reference_analyses.runs(perf_exp.directory.name))
    think = list(reference_analyses.runs(think_exp.directory.name))
    # every cell's profile repetitions, and the planned ones (ipclab plan, issue 27) beyond
    assert len(perf) >= 3 * len(p.users) * p.repetitions
    assert len(think) == 3 * len(p.sensitivity_users) * p.sensitivity_repetitions
    a = reference_analyses.shafabakhsh("local")  # of these runs (tests/reference_analyses.py)
    assert (a.cells.groupby(["style", "users"])["n"].min() >= p.repetitions).all()
    _one_run_per_repetition(perf)
    # Little's law N = X(R + Z) on every run, think-time runs included (Z = 1.5 s)
    assert len(a.little) == len(perf) + len(think)
    assert set(a.little["think_time_s"]) == {0.0, 1.5}
    assert (a.little["relative_error"].abs() < 0.10).all(), a.little["relative_error"].describe()
    sens = a.sensitivity_cells
    assert (sens[sens["metric"] == "rps"]["n"] == p.sensitivity_repetitions).all()
    assert a.claims["verdict"].isin(VERDICTS).all()


def test_shafabakhsh_docker_reference_is_complete_and_analyses() -> None:
    """The matrix on docker (issue 27): every cell of the full profile, one run per
    repetition, the local reference's order, and every claim judged."""
    perf_exp = shafabakhsh.experiments("full", "docker", REFERENCE)[0]
    assert perf_exp.pending(current_only=False) == []
    assert perf_exp.directory.parent == REFERENCE
    perf = list(reference_analyses.runs(perf_exp.directory.name))
    p = shafabakhsh.profile("full")
    assert len(perf) == 3 * len(p.users) * p.repetitions
    assert {r.manifest["backend"] for r in perf} == {"docker"}
    _one_run_per_repetition(perf)
    a = reference_analyses.shafabakhsh("docker")  # of these runs
    assert a.claims["verdict"].isin(VERDICTS).all()
    assert (a.runs["failures"] == 0).all()


def test_johansson_full_reference_is_complete_and_analyses() -> None:
    from ipclab.claims import VERDICTS
    from ipclab.studies.johansson import experiment as johansson
    from ipclab.studies.johansson import reference

    ex = johansson.experiments("full", "local", REFERENCE)
    # the reference covers every run of the notebook's full profile (made by its own code)
    assert all(e.pending(current_only=False) == [] for e in ex.all())
    p = johansson.profile("full")
    a = reference.load()
    assert len(a.thesis) >= 2 * len(p.thesis.rows) * p.thesis.repetitions  # + planned runs
    assert (a.thesis["requests"] == p.thesis.requests).all()  # per-request records kept
    assert (a.thesis_cells.groupby(["rows", "style"])["n"].min() >= p.thesis.repetitions).all()
    _one_run_per_repetition(load_runs(ex.thesis.directory))
    sweep_runs = (len(p.sweep.rows) + len(p.sweep.sequential_rows)) * p.sweep.repetitions
    assert len(a.sweep) == 2 * sweep_runs
    s = p.saturation
    assert len(a.saturation) == 2 * len(s.users) * len(s.rows) * s.repetitions
    assert len(a.serialisation) > 0  # the micro-benchmark as measured, read back
    assert a.claims["verdict"].isin(VERDICTS).all()
    assert (a.claims["n_a"].fillna(0) >= 0).all()


def test_shafabakhsh_go_reference_is_complete_and_analyses() -> None:
    from ipclab.claims import VERDICTS
    from ipclab.studies.shafabakhsh import languages

    go, anchor = (
        languages.experiment("full", "local", REFERENCE),
        languages.anchor("full", "local", REFERENCE),
    )
    assert anchor is not None
    # the reference covers every run of the notebook's full profile (made by its own code)
    assert go.pending(current_only=False) == [] and anchor.pending(current_only=False) == []
    p = languages.profile("full")
    a = reference_analyses.shafabakhsh_languages()  # shafabakhsh_reference.analyse_languages
    # Go: the profile's runs; Python: the matrix's, with its planned repetitions (issue 27)
    sizes = a.runs.groupby("language").size()
    assert sizes["go"] == 3 * len(p.users) * p.repetitions
    assert sizes["python"] >= 3 * len(p.users) * p.repetitions
    assert len(a.sittings) == 3 * len(p.users)
    assert len(a.statements) == 2 * len(p.users)  # per metric and load
    assert a.claims["verdict"].isin(VERDICTS).all()
    assert (a.runs["failures"] / a.runs["requests"] < 1e-3).all()


def test_buono_full_reference_is_complete_and_analyses() -> None:
    from ipclab.claims import VERDICTS
    from ipclab.studies.buono import experiment, memory, procedure, throughput
    from ipclab.studies.buono import reference as buono_reference

    e = experiment.experiments("full", "docker", REFERENCE)
    # the reference covers every run of the notebook's full profile (made by its own code)
    assert all(x.pending(current_only=False) == [] for x in e.all())
    p = procedure.PROFILES["full"]
    a = buono_reference.load()
    cells = len(p.grid.cells())
    # per-request records kept: Python's variants and the JVM's (Jackson alone), per repetition
    jvm = [v for v in p.variants if v.json_library == "orjson"]  # gzip x cache, one encoder
    assert e.procedure_jvm is not None
    assert len(a.cells) == cells * (len(p.variants) + len(jvm)) * p.repetitions
    assert set(a.runtimes["jvm"]) <= set(VERDICTS) and len(a.runtimes) == len(a.claims)
    assert (a.cells["n"] == p.requests).all() and (a.cells["failures"] == 0).all()
    plan = memory.PLANS["full"]
    assert len(a.memory) == len(plan.cells())
    assert a.memory["limit_mb"].dropna().eq(memory.LIMIT_MB).all()
    # the JVM's runs read their heap from its GC log (issue 46): B16c measured there
    jvm = a.memory[a.memory["runtime"] == "jvm"]
    assert len(jvm) and jvm["heap_committed_mb"].notna().all()
    t = throughput.PROFILES["full"]
    assert len(a.throughput) == 4 * len(t.users) * t.repetitions
    assert a.claims["verdict"].isin(VERDICTS).all()


def test_nyflott_full_reference_is_complete_and_analyses() -> None:
    import json

    from ipclab.claims import VERDICTS
    from ipclab.studies.nyflott import experiment
    from ipclab.studies.nyflott import reference as nyflott_reference

    base = REFERENCE / nyflott_reference.FOLDER
    assert base.is_dir(), f"the committed Nyfløtt reference is missing ({base})"
    # the reference may have a shorter warm-up and measured window than the full profile's
    # (stated in its README and its results' deviations)
    described = json.loads((base / "delay0ms" / "experiment.json").read_text())
    warmup_s = float(described["warmup_s"])
    measured_s = float(described["duration_s"]) - warmup_s
    exps = experiment.experiments(
        "full", "docker", REFERENCE, measured_s=measured_s, warmup_s=warmup_s
    )
    # the reference covers every run of the notebook's full profile (made by its own code)
    assert all(e.pending(current_only=False) == [] for e in exps)
    p = experiment.profile("full")
    a = nyflott_reference.load()
    assert not a.missing  # every run analysed, from its records or the per-run tables kept
    stacks = experiment.stacks(p.adapter_sets)
    assert len(a.runs) >= len(experiment.DELAYS_MS) * len(stacks) * p.repetitions  # + planned
    assert (a.table2["runs"] >= p.repetitions).all()
    for e in exps:
        _one_run_per_repetition(load_runs(e.directory))
    assert set(a.runs["adapters"]) == set(p.adapter_sets)
    assert a.runs["bytes_per_request"].notna().all()  # docker: every host's counters
    assert a.claims["verdict"].isin(VERDICTS).all()
    assert (a.runs["failures"] / a.runs["requests"] < 1e-3).all()


def _one_run_per_repetition(runs: list) -> None:
    """No cell has two runs of one repetition: planned runs continue a cell's numbering
    (repetitions 6, 7, ...) and never repeat a made one."""
    names = [r.path.name for r in runs]
    assert len(names) == len(set(names)), "a run directory twice"
    by_cell: dict[str, list[int]] = {}
    for name in names:
        cell, _, rep = name.rpartition("-r")
        by_cell.setdefault(cell, []).append(int(rep))
    for cell, reps in by_cell.items():
        assert sorted(reps) == list(range(1, len(reps) + 1)), (cell, sorted(reps))


def _committed_folders() -> set[str]:
    """The folders under data/runs/reference that git tracks (a fresh clone's), or, outside
    a git checkout, those on disk."""
    import subprocess

    from ipclab.paths import REPO_ROOT

    listed = subprocess.run(
        ["git", "ls-files", "-z", "--", str(REFERENCE)], cwd=REPO_ROOT, capture_output=True
    )
    if listed.returncode != 0:
        return {d.name for d in REFERENCE.iterdir() if d.is_dir()}
    rel = REFERENCE.relative_to(REPO_ROOT).parts
    paths = [p.split("/") for p in listed.stdout.decode().split("\0") if p]
    return {p[len(rel)] for p in paths if len(p) > len(rel) + 1}


def test_every_committed_reference_folder_is_a_studys_and_present() -> None:
    """A renamed, removed or unclaimed reference folder fails (none is skipped): each
    committed folder is on disk and named after a registered study or notebook results
    (``<name>-...``), and each notebook's reference is a committed folder with its README."""
    from ipclab.studies import all_studies

    committed = _committed_folders()
    assert committed, f"no committed folder under {REFERENCE}"
    studies = all_studies()
    owners = set(studies) | {n.results for s in studies.values() for n in s.notebooks}
    for folder in sorted(committed):
        assert (REFERENCE / folder).is_dir() and any((REFERENCE / folder).iterdir()), folder
        assert any(folder.startswith(f"{o}-") for o in owners), f"{folder}: no study names it"
    for study in studies.values():
        for notebook in study.notebooks:
            for name in filter(None, (notebook.reference, *notebook.also_references)):
                assert name in committed, (notebook.file, name)
                assert (REFERENCE / name / "README.md").is_file()


def test_the_report_shows_a_notebooks_further_references_after_its_own() -> None:
    """The docker availability reference (method 1, Fig. 4 by load) is in the report, after
    the local one, under a key no fresh results folder has (so nothing is set beside it)."""
    from ipclab.reproduce import notebooks, references

    keys = list(references(notebooks(["shafabakhsh"])))
    assert keys == [
        "shafabakhsh", "shafabakhsh@shafabakhsh-full-docker",
        "shafabakhsh@shafabakhsh-orchestrators-full", "availability",
        "availability@availability-full-docker", "languages", "tls",
    ]  # fmt: skip
    assert references(notebooks(["shafabakhsh"]))[keys[4]] == (
        REFERENCE / "availability-full-docker" / "results"
    )


def test_no_committed_result_names_a_machine_path() -> None:
    """Committed results carry repository-relative paths only (``paths.repo_relative``)."""
    import subprocess

    pattern = r"(^|[^[:alnum:]_.~-])/(work|tmp|root|home|usr|var|opt|srv|mnt)/"
    found = subprocess.run(
        ["git", "grep", "-I", "-l", "-E", pattern, "--", "data/runs/reference", "figures"],
        capture_output=True, text=True, cwd=from_repo("."),
    )  # fmt: skip
    assert found.returncode == 1, found.stdout or found.stderr  # 1: no match, none listed
