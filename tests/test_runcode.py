"""A run is keyed by the files that measure it, derived from the imports of the modules that
make it (``ipclab.runcode``): every module that writes runs is covered, and an edit stops
the reuse of the runs it measures only (issue 49, must-show 2)."""

from __future__ import annotations

import ast
import io
import json
import shutil
import sys
import tokenize
from dataclasses import asdict
from pathlib import Path

import pytest

from ipclab import runcode, runstore
from ipclab.experiments import Experiment
from ipclab.paths import REPO_ROOT
from ipclab.runs import RunWriter, read_run
from ipclab.stacks import all_stacks, resolve
from ipclab.studies.buono import memory
from ipclab.studies.buono.stacks import BY_RUNTIME

SRC = REPO_ROOT / "src" / "ipclab"


def tree_copy(root: Path) -> Path:
    """The folders a run's files can be in, copied where a test may change them (no git
    there: a folder's files are every file under it)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "target", "node_modules")
    for top in runcode.TOP_FOLDERS:
        shutil.copytree(REPO_ROOT / top, root / top, ignore=ignore)
    return root


def edit(path: Path) -> None:
    path.write_text(path.read_text() + "\n# an edit\n")


def _files(stack: str, backend: str, writer: str = "ipclab.load.runner") -> list[str]:
    return runcode.measuring_files(
        writers=[writer], stacks=[stack], stack_spec=resolve(stack).declaration(),
        backend=backend,
    )  # fmt: skip


def _load_run(e: Experiment) -> None:
    """A finished run of ``e``'s first cell, as ``ipclab.load.runner`` writes it."""
    cell = e.cells()[0]
    params = {"profile": asdict(e.profile(cell)), "options": e.options.as_dict()}
    spec = resolve(cell.stack).declaration()
    RunWriter(
        e.directory / cell.key, "load", params, writer="ipclab.load.runner",
        stack=cell.stack, stack_spec=spec, backend=e.backend,
    ).finish("complete")  # fmt: skip


def _memory_run(root: Path, cell: memory.MemoryCell, rep: int = 1) -> None:
    """A finished memory run of ``cell`` on docker, as Buono's memory runner writes it."""
    spec = BY_RUNTIME[cell.runtime]
    options = memory.cell_options(cell, "docker").as_dict()
    params = {"stack": spec.name, "cell": cell.parameters(), "limit_mb": memory.LIMIT_MB,
              "options": options, "repetition": rep}  # fmt: skip
    RunWriter(
        root / f"{cell.key}-r{rep}", "memory", params, writer=memory.__name__,
        stack=spec.name, stack_spec=spec.declaration(), backend="docker",
    ).finish("complete")  # fmt: skip


def test_an_edit_to_one_backend_or_one_studys_runner_stops_the_reuse_of_its_runs_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Must-show 2 of issue 49, on a copy of the tree: an edit to ``backends/kubernetes/``
    keeps local runs reusable (and stops the reuse of Kubernetes runs); an edit to
    ``studies/buono/memory.py`` stops the reuse of Buono's memory runs, not of a load run."""
    copy = tree_copy(tmp_path / "repo")
    monkeypatch.setattr(runstore, "tree", lambda: copy)
    local = Experiment("local", ["shop-rest"], [1], duration_s=30, root=tmp_path / "runs")
    kube = Experiment("kube", ["shop-rest"], [1], duration_s=30, root=tmp_path / "runs",
                      backend="kubernetes")  # fmt: skip
    _load_run(local)
    _load_run(kube)
    cell = memory.MemoryCell("json", 100_000)
    plan = memory.Plan(counts=(100_000,), formats=("json",))
    _memory_run(tmp_path / "memory", cell)
    assert local.pending() == [] and kube.pending() == []
    assert (1, cell) not in memory.pending(plan, tmp_path / "memory")

    edit(copy / "src/ipclab/backends/kubernetes/stack.py")
    assert local.pending() == []  # another backend's module: the local run stands in
    assert kube.pending() == kube.cells()  # its own backend's: measured again
    assert (1, cell) not in memory.pending(plan, tmp_path / "memory")  # a docker run

    old = tmp_path / "old-memory"  # a run made before runs recorded their own files
    _memory_run(old, cell)
    _made_before(old / f"{cell.key}-r1", copy, monkeypatch)
    assert (1, cell) not in memory.pending(plan, old)  # its own files as at its revision
    assert "src/ipclab/studies/buono/memory.py" not in runstore.measuring_paths()

    edit(copy / "src/ipclab/studies/buono/memory.py")
    assert (1, cell) in memory.pending(plan, tmp_path / "memory")  # Buono's memory runs
    assert (1, cell) in memory.pending(plan, old)  # the one list missed it; its files do not
    assert local.pending() == []  # a load run: memory.py does not measure it
    made = read_run(tmp_path / "memory" / f"{cell.key}-r1").manifest
    assert made["writer"] == memory.__name__
    assert "src/ipclab/studies/buono/memory.py" in made["code_files"]
    # still runs of the same experiment, read as evidence of their own making
    assert local.pending(current_only=False) == [] and kube.pending(current_only=False) == []


def _made_before(path: Path, copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run at ``path`` as runs made before they recorded their own files have it (the one
    list's id now as its ``code``, made at a clean revision), that revision holding the
    files of ``copy`` as they are now."""
    manifest = json.loads((path / "manifest.json").read_text())
    for new in ("code_files", "code_packages", "writer"):
        manifest.pop(new, None)
    manifest["code"] = runstore.current_code().id
    manifest["environment"]["git"] = {"revision": "c" * 40, "dirty": False}
    (path / "manifest.json").write_text(json.dumps(manifest))
    writers = runcode.writers_of(manifest["kind"])
    then = dict(runstore.code_now(manifest, writers).files)
    monkeypatch.setattr(runstore, "files_at", lambda rev: then if rev == "c" * 40 else None)


def _modules_calling_run_writer() -> set[str]:
    """Every module of src/ipclab whose code (not its strings) calls ``RunWriter(``."""
    out = set()
    for path in SRC.rglob("*.py"):
        tokens = list(tokenize.generate_tokens(io.StringIO(path.read_text()).readline))
        calls = any(
            a.type == tokenize.NAME and a.string == "RunWriter" and b.string == "("
            for a, b in zip(tokens, tokens[1:], strict=False)
        )
        if calls and path != SRC / "runs.py":
            parts = ("ipclab", *path.relative_to(SRC).with_suffix("").parts)
            out.add(".".join(parts).removesuffix(".__init__"))
    return out


def test_every_module_that_writes_runs_is_covered_by_the_derivation(tmp_path: Path) -> None:
    """Each module that writes a run (calls ``RunWriter``) is found with the kinds it writes,
    is recorded as the ``writer`` of a run it makes (without saying so: the caller's module)
    and is, with the modules it imports, among that run's measuring files."""
    writers = runcode.writer_kinds()
    assert set(writers) == _modules_calling_run_writer()
    assert {"ipclab.load.runner", "ipclab.soak", "ipclab.availability.runner",
            "ipclab.studies.buono.memory"} <= set(writers)  # fmt: skip
    assert all(kinds for kinds in writers.values()), writers
    assert writers["ipclab.availability.runner"] == {"availability", "outage"}
    for module in writers:
        files = _run_made_from(module, tmp_path)
        path = f"{SRC.relative_to(REPO_ROOT)}/{module.removeprefix('ipclab.').replace('.', '/')}"
        assert f"{path}.py" in files or f"{path}/__init__.py" in files, module
    availability = _run_made_from("ipclab.availability.runner", tmp_path)
    for imported in ("probe.py", "tracker.py", "faults.py"):
        assert f"src/ipclab/availability/{imported}" in availability


def _run_made_from(module: str, root: Path) -> dict[str, str]:
    """The measuring files of a run whose ``RunWriter`` code of ``module`` makes."""
    made: dict[str, RunWriter] = {}
    source = "made['w'] = RunWriter(path, 'load', {}, stack=stack, stack_spec=spec)"
    scope = {"__name__": module, "RunWriter": RunWriter, "made": made, "stack": "shop-rest",
             "spec": resolve("shop-rest").declaration(), "path": root / module}  # fmt: skip
    exec(compile(source, f"<{module}>", "exec"), scope)  # noqa: S102 - a frame of `module`
    manifest = read_run(root / module).manifest
    assert manifest["writer"] == module
    return dict(manifest["code_files"])


def test_a_backend_run_is_measured_by_its_own_backend_and_not_by_the_others() -> None:
    local, docker, kube = (_files("shop-amqp", b) for b in ("local", "docker", "kubernetes"))
    assert "src/ipclab/backends/local.py" in local
    assert not any(f.startswith(("src/ipclab/backends/docker/", "src/ipclab/backends/kubernetes/",
                                 "compose/common.yml", "kubernetes/")) for f in local)  # fmt: skip
    assert "compose/broker/rabbitmq.conf" in local  # the local broker's plugins file is there
    assert {"src/ipclab/backends/docker/backend.py", "compose/common.yml",
            "services/Dockerfile", "services/requirements.lock"} <= set(docker)  # fmt: skip
    assert not any(f.startswith("src/ipclab/backends/kubernetes/") for f in docker)
    # the Kubernetes backend runs the images the docker backend builds
    assert {"src/ipclab/backends/kubernetes/stack.py", "src/ipclab/backends/docker/images.py",
            "kubernetes/node/main.go"} <= set(kube)  # fmt: skip
    assert "src/ipclab/backends/local.py" not in kube


def test_a_stack_is_measured_by_its_own_services_runtime_and_user_module() -> None:
    rest, amqp = _files("shop-rest", "local"), _files("shop-amqp", "local")
    assert "services/transports/rest.py" in rest and "services/transports/amqp.py" not in rest
    assert "services/transports/amqp.py" in amqp and "src/ipclab/infrastructure/rabbitmq.py" in amqp
    assert not any(f.startswith("services/go/") for f in rest)
    for name, spec in all_stacks().items():
        files = _files(name, "local")
        users = spec.users.removeprefix("ipclab.").replace(".", "/")
        assert f"src/ipclab/{users}.py" in files, name
        assert f"services/domains/{spec.domain}/__init__.py" in files, name
        if spec.runtime.name == "go":
            assert "services/go/main.go" in files, name
        if spec.runtime.name == "jvm":
            assert "services/java/payload/pom.xml" in files, name
        if spec.runtime.name == "node":
            assert {"services/node/main.js", "services/node/package-lock.json",
                    "services/proto/shop.proto"} <= set(files), name  # fmt: skip
        if spec.adapter_runtime is not None:
            assert f"services/java/{spec.adapter_runtime.name}/pom.xml" in files, name
        # what judges runs (statistics, tables, figures, published data) does not measure
        assert not any(f.endswith(("/analysis.py", "/figures.py", "/published.py"))
                       or f.startswith("src/ipclab/stats/") for f in files), name  # fmt: skip


def test_an_out_of_tree_study_users_module_and_its_own_modules_measure_its_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    study = tmp_path / "elsewhere" / "fifth"
    study.mkdir(parents=True)
    (study / "__init__.py").write_text("")
    (study / "schedule.py").write_text("ORDER = [1, 2]\n")
    (study / "notes.py").write_text("TEXT = 'analysis, not measuring'\n")
    (study / "users.py").write_text(
        "from fifth import schedule\nfrom ipclab.load.targets import parse_targets\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "elsewhere"))
    monkeypatch.setattr(runcode, "users_modules", lambda stacks: ["fifth.users"])
    files = _files("shop-rest", "local")
    own = {(study / f).resolve().as_posix() for f in ("__init__.py", "schedule.py", "users.py")}
    assert own <= set(files)
    assert (study / "notes.py").resolve().as_posix() not in files
    assert "src/ipclab/load/targets.py" in files
    assert "fifth" not in sys.modules  # found without importing it


def test_the_writers_kinds_are_read_from_their_calls(tmp_path: Path) -> None:
    module = tmp_path / "src" / "ipclab" / "writes.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        "def _w(out, kind):\n    return RunWriter(out, kind, {})\n"
        "def a():\n    _w('x', 'probe')\n"
        "def b():\n    RunWriter('y', 'sweep', {})\n"
    )
    ast.parse(module.read_text())
    assert runcode.writer_kinds(tmp_path) == {"ipclab.writes": {"probe", "sweep"}}


def test_a_group_runs_load_module_and_what_it_imports_measure_it() -> None:
    """A group run's users run the module its load names (Johansson's interleaving of REST
    and GraphQL requests, with the schedule it imports), not the stacks' own user modules
    alone: it is among the run's files, so an edit to it stops the reuse of those runs."""
    from ipclab.load.group import GroupLoad
    from ipclab.studies.johansson.experiment import STACKS, USERS_MODULE

    load = GroupLoad(USERS_MODULE, requests=10)
    spec = {name: resolve(name).declaration() for name in STACKS}
    made = runstore.keyed(
        "load", {"group": {"stacks": list(STACKS), **load.as_dict()}},
        writer="ipclab.load.group", stack="+".join(STACKS), stack_spec=spec, backend="local",
    )  # fmt: skip
    for module in ("users_interleaved.py", "schedule.py", "users_rest.py", "users_graphql.py"):
        assert f"src/ipclab/studies/johansson/{module}" in made["code_files"], module
    alone = runstore.keyed("load", {}, writer="ipclab.load.group", stack="+".join(STACKS),
                           stack_spec=spec, backend="local")  # fmt: skip
    assert "src/ipclab/studies/johansson/users_interleaved.py" not in alone["code_files"]


def test_packages_outside_the_harness_are_keyed_by_their_versions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The standard library and third-party packages are not followed into: a run records
    the versions of the installed packages its files import (``code_packages``) and its
    key holds them, so another Locust stops its reuse; a run made before runs recorded them
    is judged by its files."""
    e = Experiment("e", ["shop-rest"], [1], duration_s=30, root=tmp_path / "runs")
    _load_run(e)
    path = e.directory / e.cells()[0].key
    made = read_run(path).manifest
    packages = made["code_packages"]
    assert {"locust", "gevent"} <= set(packages), packages
    assert not {"ipclab", "json", "os"} & set(packages)
    assert not any(f.startswith(("/usr/lib/python", "site-packages")) for f in made["code_files"])
    assert e.pending() == []
    versions = runstore.package_versions
    monkeypatch.setattr(
        runstore, "package_versions",
        lambda names: {**versions(names), "locust": "0.0.0"},
    )  # fmt: skip
    assert e.pending() == e.cells()  # another Locust: measured again
    del made["code_packages"]
    made["key"] = runstore.run_key(
        "load", made["parameters"], made["stack_spec"], "local", made["code"]
    )
    (path / "manifest.json").write_text(json.dumps(made))
    assert e.pending() == []  # made before runs recorded packages: its files decide


def test_a_store_run_is_measured_by_the_store_plugins_and_a_memory_run_is_not() -> None:
    """``--store db`` adds FerretDB and MariaDB to the stack it starts: their plugins shape
    its runs (and an edit to them stops their reuse), never a run from memory."""
    spec = resolve("shop-rest").declaration()

    def files(options: dict[str, object]) -> set[str]:
        made = runstore.measuring_code(
            writers=["ipclab.load.runner"], stack="shop-rest", stack_spec=spec,
            backend="local", parameters={"options": options},
        )  # fmt: skip
        return set(made.code.files)

    stores = {"src/ipclab/infrastructure/ferretdb.py", "src/ipclab/infrastructure/mariadb.py"}
    assert stores <= files({"store": "db"})
    assert not stores & files({"store": None})
    assert not stores & files({})
