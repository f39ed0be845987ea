"""What made a run, and when a finished run may stand in for a new one.

A run's **key** is what produced it: its kind and parameters, the declaration of its
stacks, the backend, and the **code** that shaped it: the files that measure *this* run
(``ipclab.runcode.derive``: from the imports of the module that wrote it, the modules its
parameters name (a group's load), the load generator, its backend's module, its stacks'
services and Locust user module), each with its git blob id, and the versions of the
installed packages those files import from outside the harness (the standard library
excluded). Every run records them in its manifest (``writer``, ``code_files``: path -> the
blob id's first ``SHORT`` digits, ``code``: their hash, ``code_packages``: distribution ->
version, ``key``), where ``runs.find_runs(root, key=...)`` and ``ipclab runs --where
key=...`` find it. A finished run is reused only when the key of the planned run, recomputed
from the tree as it is now, equals the recorded one (:func:`reusable`, the one check every
experiment runner calls), so after a change to a service ``make reproduce`` measures its
runs again instead of putting runs of the old code into new figures, while an edit to
another backend, another study's runner or to analysis code (statistics, tables, the report)
leaves them reusable.

Runs made before runs recorded their own files (their ``code`` is the id of one list of
files for every run, ``MEASURING_CODE`` and the user modules, :func:`measuring_paths`; the
oldest have none) are reused only when shown made by the same files
(:func:`old_run_current`): that list's id still holds, and their own files, derived now,
are unchanged since the clean git revision their manifest names; otherwise they are read as
evidence of their making and not reused. A committed reference says, in words, whether its
runs' own measuring files changed since it was made (``ipclab.provenance``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipclab import runcode
from ipclab.paths import REPO_ROOT

SHORT = 12  # the digits of a file's blob id a manifest keeps (``code_files``)
#: The measuring code of runs made before runs recorded their own files (issue 29 to 49):
#: one list for every run (folders or single files). New runs: ``ipclab.runcode``.
MEASURING_CODE: tuple[str, ...] = (
    "services",
    "compose",
    "src/ipclab/load",
    "src/ipclab/backends",
    "src/ipclab/availability/faults.py",
    "src/ipclab/availability/outage.py",
    "src/ipclab/availability/probe.py",
    "src/ipclab/availability/runner.py",
    "src/ipclab/availability/tracker.py",
    "src/ipclab/gobuild.py",
    "src/ipclab/javabuild.py",
    "src/ipclab/infrastructure",
    "src/ipclab/stackspec.py",
    "src/ipclab/procs.py",
    "src/ipclab/runs.py",
    "src/ipclab/tls.py",
)
#: The Locust user modules of the studies (what each simulated user sends and checks): with
#: the modules of their own study they import, they join the measuring code
#: (:func:`measuring_paths`), found by their name and not by naming a study.
USER_MODULES = "src/ipclab/studies/*/users*.py"
_SKIPPED_PARTS = {"__pycache__", ".ipynb_checkpoints"}


@dataclass(frozen=True)
class Code:
    """A version of the measuring code: its id and its files (path -> git blob id)."""

    id: str
    files: Mapping[str, str]

    def changed_since(self, other: Code) -> list[str]:
        """Paths added, removed or changed between ``other`` and this version."""
        paths = set(self.files) | set(other.files)
        return sorted(p for p in paths if self.files.get(p) != other.files.get(p))


def _same_folder_imports(module: Path) -> set[Path]:
    """The modules of ``module``'s own folder (package) that it imports."""
    import ast

    package = ".".join(module.parent.relative_to(module.parents[3]).parts)  # ipclab.studies.x
    found = set()
    for node in ast.walk(ast.parse(module.read_text(), str(module))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):  # from x import y: x, and x.y if a module
            base = node.module or ""
            if node.level:  # relative: from the module's own package
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([base] if base else [])])
            names = [base, *(f"{base}.{a.name}" for a in node.names)]
        for name in names:
            if name.startswith(package + "."):
                f = module.parent / (name.split(".")[len(package.split("."))] + ".py")
                if f.is_file():
                    found.add(f)
    return found


@functools.cache
def measuring_paths(root: Path = REPO_ROOT) -> tuple[str, ...]:
    """``MEASURING_CODE``, the studies' user modules and the modules of their own study
    they import (transitively), as this tree has them."""
    todo = sorted(root.glob(USER_MODULES))
    seen: set[Path] = set()
    while todo:
        f = todo.pop()
        if f not in seen:
            seen.add(f)
            todo.extend(_same_folder_imports(f) - seen)
    return MEASURING_CODE + tuple(sorted(f.relative_to(root).as_posix() for f in seen))


def blob_id(data: bytes) -> str:
    """Git's id of a file holding ``data`` (``git hash-object``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _code(files: Mapping[str, str]) -> Code:
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(f"{path}\0{files[path]}\n".encode())
    return Code(digest.hexdigest()[:16], dict(files))


def _wanted(path: str, paths: Iterable[str]) -> bool:
    parts = path.split("/")
    if _SKIPPED_PARTS & set(parts) or path.endswith(".pyc"):
        return False
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in paths)


def _git(root: Path, *args: str) -> bytes | None:
    try:
        out = subprocess.run(["git", *args], cwd=root, capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None


def code_in(root: Path, paths: Iterable[str] | None = None) -> Code:
    """The measuring code in the working tree at ``root``: files git tracks or would track
    (without git, every file under ``paths``, by default :func:`measuring_paths`)."""
    paths = tuple(paths) if paths is not None else measuring_paths(root)
    listed = _git(
        root, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *paths
    )
    if listed is not None:
        names = {n for n in listed.decode().split("\0") if n}
    else:
        names = {
            f.relative_to(root).as_posix()
            for p in paths
            for f in ([root / p] if (root / p).is_file() else (root / p).rglob("*"))
            if f.is_file()
        }
    files = {}
    for name in names:
        f = root / name
        if _wanted(name, paths) and f.is_file():  # a tracked file deleted since is gone
            files[name] = blob_id(f.read_bytes())
    return _code(files)


@functools.cache
def current_code(paths: tuple[str, ...] | None = None) -> Code:
    """The measuring code as this process found it (computed once per process)."""
    return code_in(REPO_ROOT, paths)


@functools.cache
def code_at(revision: str, paths: tuple[str, ...] | None = None) -> Code | None:
    """The measuring code at a git ``revision`` of this repository (None: not known here),
    by default the files of :func:`measuring_paths` as they were then."""
    paths = paths if paths is not None else measuring_paths()
    listed = _git(REPO_ROOT, "ls-tree", "-r", "-z", revision, "--", *paths)
    if listed is None:
        return None
    files = {}
    for entry in listed.decode().split("\0"):
        if not entry:
            continue
        meta, _, name = entry.partition("\t")
        _mode, kind, blob = meta.split()
        if kind == "blob" and _wanted(name, paths):
            files[name] = blob
    return _code(files)


def _canonical(value: Any) -> Any:
    """``value`` as it reads back from a manifest (tuples become lists, keys strings)."""
    return json.loads(json.dumps(value, default=str))


def run_key(
    kind: str,
    parameters: Mapping[str, Any],
    stack_spec: Any,
    backend: str | None,
    code: str,
    packages: Mapping[str, str] | None = None,
) -> str:
    """The key of a run: a hash of everything that produced it (``packages``: the versions
    of the packages outside the harness its files import, when the run records them)."""
    what = {
        "kind": kind,
        "parameters": parameters,
        "stack_spec": stack_spec,
        "backend": backend,
        "code": code,
        **({"packages": packages} if packages is not None else {}),
    }
    text = json.dumps(_canonical(what), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


KEYED = "code_files"  # the manifest field of a run that records its own measuring files
PACKAGES = "code_packages"  # ... and the versions of the packages outside the harness


def tree() -> Path:
    """The checkout whose files a planned run would be measured by (a test points it at a
    changed copy)."""
    return REPO_ROOT


@functools.lru_cache(maxsize=8192)
def _blob(path: Path, stamp: tuple[int, int]) -> str:
    return blob_id(path.read_bytes())[:SHORT]


def blobs(paths: Iterable[str], root: Path) -> dict[str, str]:
    """``paths`` (from ``root``, or absolute) that exist, with their blob ids' first
    ``SHORT`` digits (kept while a file's size and time stay)."""
    out = {}
    for name in paths:
        f = Path(root) / name
        try:
            stat = f.stat()
        except OSError:
            continue  # gone: the list of files says so by its absence
        out[name] = _blob(f, (stat.st_size, stat.st_mtime_ns))
    return out


def measuring_code(
    *,
    writers: Sequence[str],
    stack: str | None,
    stack_spec: Any,
    backend: str | None,
    parameters: Mapping[str, Any] | None = None,
    root: Path | None = None,
) -> Made:
    """The files that measure a run written by ``writers`` of ``stack`` (a group's ``a+b``)
    declared as ``stack_spec`` on ``backend`` with ``parameters``, as the checkout ``root``
    (by default :func:`tree`) has them (``ipclab.runcode.derive``), their id, and the
    versions of the packages outside the harness they import."""
    root = Path(root) if root is not None else tree()
    derived = runcode.derive(
        writers=[*writers, *runcode.parameter_modules(parameters)],
        stacks=[s for s in str(stack or "").split("+") if s],
        stack_spec=runcode.as_started(stack_spec, parameters),
        backend=backend,
        root=root,
    )
    return Made(_code(blobs(derived.files, root)), package_versions(derived.outside))


@dataclass(frozen=True)
class Made:
    """What shapes a run: its measuring files (``code``) and the versions of the installed
    packages they import that are neither the harness's nor the standard library's."""

    code: Code
    packages: Mapping[str, str]


@functools.lru_cache(maxsize=1024)
def _installed(name: str) -> tuple[tuple[str, str], ...]:
    """The installed distributions (name, version) that provide the top-level module
    ``name``: the one of that name when there is one (found by its folder's name, no scan),
    else those whose ``top_level.txt`` or ``RECORD`` holds it (``google``: protobuf)."""
    import importlib.metadata

    try:
        found = [importlib.metadata.distribution(name)]
    except importlib.metadata.PackageNotFoundError:
        found = list(_providers().get(name, ()))
    metadata = [d.metadata for d in found]  # parsed once each: name and version
    return tuple(sorted({(m["Name"], m["Version"]) for m in metadata}))


@functools.cache
def _providers() -> Mapping[str, tuple[Any, ...]]:
    """Top-level module -> the installed distributions holding it, read as plain text from
    their ``top_level.txt`` or the first part of each ``RECORD`` path (no metadata parsed:
    ``importlib.metadata.packages_distributions`` takes half a second here)."""
    import importlib.metadata

    out: dict[str, list[Any]] = {}
    for dist in importlib.metadata.distributions():
        listed = dist.read_text("top_level.txt")
        if listed is not None:
            tops = {line.strip() for line in listed.splitlines()}
        else:
            record = dist.read_text("RECORD") or ""
            tops = {
                line.split(",", 1)[0].split("/", 1)[0].removesuffix(".py")
                for line in record.splitlines()
            }
        for top in tops:
            if top.isidentifier():
                out.setdefault(top, []).append(dist)
    return {top: tuple(dists) for top, dists in out.items()}


def package_versions(names: Iterable[str]) -> dict[str, str]:
    """The installed distributions that provide the top-level modules ``names`` (the
    standard library's and those not installed are left out), with their versions."""
    out = {}
    for name in names:
        if name in sys.stdlib_module_names or name == "__future__":
            continue
        out.update(dict(_installed(name)))
    return dict(sorted(out.items()))


def caller_module(depth: int = 2) -> str | None:
    """The module of the function ``depth`` frames up (the one that made a ``RunWriter``):
    its import name, also when it runs as ``python -m``."""
    frame = sys._getframe(depth)
    name = frame.f_globals.get("__name__")
    if name == "__main__":
        spec = frame.f_globals.get("__spec__")
        name = getattr(spec, "name", None)
    return str(name) if name else None


def keyed(
    kind: str,
    parameters: Mapping[str, Any],
    *,
    writer: str | None,
    stack: str | None,
    stack_spec: Any,
    backend: str | None,
) -> dict[str, Any]:
    """What a new run's manifest records of its making: the module that writes it, its own
    measuring files with their blob ids, their id (``code``), the versions of the packages
    outside the harness they import (``code_packages``) and the run's key."""
    made = measuring_code(
        writers=[writer] if writer else [], stack=stack, stack_spec=stack_spec,
        backend=backend, parameters=parameters,
    )  # fmt: skip
    return {
        "writer": writer,
        "code": made.code.id,
        KEYED: dict(sorted(made.code.files.items())),
        PACKAGES: dict(made.packages),
        "key": run_key(kind, parameters, stack_spec, backend, made.code.id, made.packages),
    }


def made_now(
    manifest: Mapping[str, Any],
    *,
    backend: str | None = None,
    stack_spec: Any = None,
    writers: Sequence[str] | None = None,
) -> Made:
    """What would shape the run ``manifest`` records if it were made now: its kind's,
    stacks' and parameters' files as the tree has them, written by its recorded writer (or
    ``writers``), on its backend and from its declarations (or ``backend``, ``stack_spec``:
    the planned run's)."""
    writer = manifest.get("writer")
    return measuring_code(
        writers=writers if writers is not None else [writer] if writer else [],
        stack=manifest.get("stack"),
        stack_spec=stack_spec if stack_spec is not None else manifest.get("stack_spec"),
        backend=backend if backend is not None else manifest.get("backend"),
        parameters=manifest.get("parameters") or {},
    )


def planned_key(manifest: Mapping[str, Any], *, backend: str | None, stack_spec: Any) -> str:
    """The key a run like the one ``manifest`` records (its kind, parameters, writer and
    stacks) would have now, planned on ``backend`` from stacks declared as ``stack_spec``
    (with the packages' versions now when the run recorded its own)."""
    made = made_now(manifest, backend=backend, stack_spec=stack_spec)
    packages = made.packages if PACKAGES in manifest else None
    parameters = manifest.get("parameters") or {}
    kind = str(manifest.get("kind"))
    return run_key(kind, parameters, stack_spec, backend, made.code.id, packages)


def reusable(
    manifest: Mapping[str, Any],
    *,
    backend: str,
    stack_spec: Any,
    same_parameters: Callable[[Mapping[str, Any]], bool],
    code: Code | None = None,
    current_only: bool = True,
) -> bool:
    """A finished run (its manifest) may stand in for a new one: it completed, on
    ``backend``, ``same_parameters`` accepts its parameters, from the same declarations, and
    its key equals the key of the planned run (:func:`planned_key`: its parameters, the
    stacks declared as ``stack_spec``, ``backend``, the measuring files of such a run as they
    are now and the versions of the packages they import). A run made before runs recorded
    their own files only when it is shown made by the same files (:func:`old_run_current`;
    ``code``: the one list's code now, by default :func:`current_code`).
    ``current_only=False`` asks only whether it is a run of the same experiment (backend and
    parameters), whatever code and declarations made it: a committed reference is evidence of
    its own making, read and rebuilt as it is (``ipclab.provenance`` says what changed)."""
    if not (
        manifest.get("status") == "complete"
        and manifest.get("backend") == backend
        and same_parameters(manifest.get("parameters") or {})
    ):
        return False
    if not current_only:
        return True
    if _canonical(manifest.get("stack_spec")) != _canonical(stack_spec):
        return False
    if KEYED in manifest:
        return manifest.get("key") == planned_key(manifest, backend=backend, stack_spec=stack_spec)
    return old_run_current(manifest, code)


def own_code(manifest: Mapping[str, Any]) -> Code | None:
    """The measuring files a run recorded, as a ``Code`` (None: a run made before)."""
    files = manifest.get(KEYED)
    if not isinstance(files, Mapping):
        return None
    return Code(str(manifest.get("code")), dict(files))


def code_now(manifest: Mapping[str, Any], writers: Sequence[str] | None = None) -> Code:
    """The measuring files of the run ``manifest`` records as the tree has them now (its
    recorded writer, or ``writers``)."""
    return made_now(manifest, writers=writers).code


def is_current(manifest: Mapping[str, Any]) -> bool:
    """The code that made the run is the code that would make it now: its own files and
    the packages' versions it recorded unchanged (a run that recorded them), or, for a run
    made before, :func:`old_run_current`."""
    own = own_code(manifest)
    if own is None:
        return old_run_current(manifest)
    now = made_now(manifest)
    recorded = manifest.get(PACKAGES)
    return own.id == now.code.id and (recorded is None or recorded == dict(now.packages))


def old_run_current(manifest: Mapping[str, Any], code: Code | None = None) -> bool:
    """A run made before runs recorded their own files (issues 29 to 49) was made by the
    code it would be made by now only when both hold: the one list's id it records (or, with
    none, its revision's) is the one list's id now (``code``, by default
    :func:`current_code`; as it was judged when it was made), and its own files, derived now
    with the modules that write runs of its kind as its writers, are unchanged since the git
    revision it names, made from a tree without uncommitted changes. A tree with
    uncommitted changes, or a revision this repository does not hold, shows nothing: such a
    run is read as evidence of its making, not reused."""
    recorded, _ = recorded_code(manifest)
    if recorded is None or recorded != (code or current_code()).id:
        return False
    git = (manifest.get("environment") or {}).get("git") or {}
    if not git.get("revision") or git.get("dirty") is not False:
        return False
    then = files_at(str(git["revision"]))
    if then is None:
        return False
    now = code_now(manifest, writers=runcode.writers_of(str(manifest.get("kind"))))
    return all(then.get(path, "")[:SHORT] == blob for path, blob in now.files.items())


def files_at(revision: str) -> Mapping[str, str] | None:
    """Every file a run can be measured by at git ``revision`` (path -> blob id; None: not
    a revision of this repository)."""
    code = code_at(revision, runcode.TOP_FOLDERS)
    return None if code is None else code.files


def recorded_code(manifest: Mapping[str, Any]) -> tuple[str | None, str]:
    """The id of the code that made a run, and how it is known: ``recorded`` in the
    manifest (its own files' id, or the one list's for a run made before runs recorded their
    files), ``revision`` computed from the git revision the manifest names (a run made
    before runs recorded their code; a tree with uncommitted changes is only approximately
    that revision), or ``unknown``."""
    if manifest.get("code"):
        return str(manifest["code"]), "recorded"
    git = (manifest.get("environment") or {}).get("git") or {}
    revision = git.get("revision")
    code = code_at(revision) if revision else None
    if code is None:
        return None, "unknown"
    return code.id, "revision (uncommitted changes)" if git.get("dirty") else "revision"
