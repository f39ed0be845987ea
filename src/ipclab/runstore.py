"""What made a run, and when a finished run may stand in for a new one.

A run's **key** is what produced it: its kind and parameters, the declaration of its
stacks, the backend, and the **code** that shapes a measurement (``MEASURING_CODE``: the
services, the Go sources, the compose files, the harness's load, backend and fault code).
Every run records both in its manifest (``code``, ``key``). A finished run is reused only
when all of it is equal (:func:`reusable`, the one check every experiment runner calls),
so after a change to a service ``make reproduce`` measures again instead of putting runs
of the old code into new figures. A change to analysis code (statistics, tables, the
report) leaves runs reusable: it does not change what was measured.

The code's identity is the list of its files with their git blob ids, hashed: computed
from the working tree (tracked and untracked files that git does not ignore) or, for a run
made before runs recorded it, from the revision its manifest names (``git ls-tree``), so a
committed reference says which files of the measuring code changed since it was made
(:func:`provenance`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import subprocess
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipclab.paths import REPO_ROOT

#: Repository paths whose files shape a measurement (folders or single files).
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
) -> str:
    """The key of a run: a hash of everything that produced it."""
    what = {
        "kind": kind,
        "parameters": parameters,
        "stack_spec": stack_spec,
        "backend": backend,
        "code": code,
    }
    text = json.dumps(_canonical(what), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


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
    ``backend``, from stacks declared as ``stack_spec``, by the current measuring code
    (``code``), and ``same_parameters`` accepts its parameters. ``current_only=False``
    asks only whether it is a run of the same experiment (backend and parameters),
    whatever code and declarations made it: a committed reference is evidence of its own
    making, read and rebuilt as it is (:func:`provenance` says what made it)."""
    made_now = manifest.get("code") == (code or current_code()).id and _canonical(
        manifest.get("stack_spec")
    ) == _canonical(stack_spec)
    return (
        manifest.get("status") == "complete"
        and manifest.get("backend") == backend
        and (made_now or not current_only)
        and same_parameters(manifest.get("parameters") or {})
    )


def recorded_code(manifest: Mapping[str, Any]) -> tuple[str | None, str]:
    """The id of the code that made a run, and how it is known: ``recorded`` in the
    manifest, ``revision`` computed from the git revision the manifest names (a run made
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


def provenance(manifests: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per version of the measuring code among ``manifests``: how many runs it made, the
    revisions they name, whether it is the current code and which files differ."""
    now = current_code()
    groups: dict[tuple[str | None, str], dict[str, Any]] = {}
    for m in manifests:
        code, how = recorded_code(m)
        revision = ((m.get("environment") or {}).get("git") or {}).get("revision")
        g = groups.setdefault(
            (code, how), {"code": code, "known_by": how, "runs": 0, "revisions": set()}
        )
        g["runs"] += 1
        if revision:
            g["revisions"].add(revision)
    out = []
    for g in groups.values():
        revisions = sorted(g.pop("revisions"))
        changed: list[str] | None = None
        if g["code"] == now.id:
            changed = []
        elif revisions:  # the named revision's files (approximate if the tree was dirty)
            then = code_at(revisions[0])
            changed = now.changed_since(then) if then is not None else None
        out.append(
            {**g, "revisions": revisions, "current": g["code"] == now.id, "changed": changed}
        )
    return sorted(out, key=lambda g: -g["runs"])


def provenance_text(groups: list[dict[str, Any]], shown: int = 4) -> str:
    """One sentence per version of the measuring code in :func:`provenance`'s ``groups``."""
    parts = []
    for g in groups:
        runs = f"{g['runs']} run{'s' if g['runs'] != 1 else ''}"
        revs = g["revisions"]
        at = f" at revision {revs[0][:10]}" + (
            f" and {len(revs) - 1} more" if len(revs) > 1 else ""
        )
        if g["current"]:
            parts.append(f"{runs} made by the current measuring code")
        elif g["code"] is None:
            parts.append(f"{runs} made by measuring code not known here{at if revs else ''}")
        else:
            changed = g["changed"]
            since = (
                f"; since then {len(changed)} file{'s' if len(changed) != 1 else ''} of it "
                f"changed ({', '.join(changed[:shown])}{', ...' if len(changed) > shown else ''})"
                if changed
                else ""
            )
            approx = " (with uncommitted changes)" if "uncommitted" in g["known_by"] else ""
            parts.append(f"{runs} made by other measuring code{at}{approx}{since}")
    return "; ".join(parts) if parts else "no runs"
