"""Which files measure a run: derived from the imports of the modules that make it.

A run is shaped by the code that runs while it is measured, not by the whole harness. Its
files are found from these **roots**:

- the module that writes the run (the caller of ``runs.RunWriter``, recorded as the
  manifest's ``writer``: ``ipclab.load.runner``, ``ipclab.soak``, a study's memory runner,
  the availability runner, an out-of-tree study's own);
- the load generator (``src/ipclab/load``);
- the run's backend only: the module its plugin in ``ipclab.backends`` makes it from, and
  the files beside the Python that it builds from (``BACKEND_FILES``: the compose files and
  the services' Dockerfile and wheel lock for the image backends, ``kubernetes/`` and the
  load pods' image's Dockerfile for the cluster);
- per stack of the run, from its declaration (``stack_spec``): the services' entry point
  (``services/serve.py``) and the domain, front, transport and adapter modules it names
  (the services import them by name), the sources of a built runtime (``RUNTIME_SOURCES``:
  ``services/go``, ``services/java/<project>``) and of a native adapter
  (``services/java/<name>``), each infrastructure's plugin and its ``compose/<folder>``,
  and the stack's Locust user module (``StackSpec.users``, in or out of the tree).

From the Python roots every import statement (anywhere in a module: a function's lazy
import runs as surely as a module's) is followed, transitively, with each module's parent
packages, into ``src/ipclab``, ``services/`` (``ipclab_services``), the study folders of
``IPCLAB_STUDIES_PATH`` and the package of an out-of-tree root; not into ``NOT_FOLLOWED``
(the statistics and the run key itself judge runs, they do not make them), and, from any
root but the backend's own module, not into another backend's modules: the docker backend
builds the images the Kubernetes backend runs (so its files are Kubernetes's), but an
infrastructure plugin's compose hooks or an experiment's wait for a local stack do not make
another backend's run. So an edit to ``backends/kubernetes/`` leaves local runs reusable,
and an edit to a study's memory runner stops the reuse of its memory runs only.

A file is named by its path from the repository (an out-of-tree file by its absolute path).
Parsed imports are kept per file while its size and time stay; a folder's files are listed
once per process (``git ls-files``, so ignored build outputs stay out; every file without
git).
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
import os
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipclab.paths import REPO_ROOT

_TOPS = {"ipclab": "src/ipclab", "ipclab_services": "services"}  # top package -> its folder
_TOPS_FOLDERS = {f.split("/")[0] for f in _TOPS.values()}
#: the load generator, a root of every run
LOAD = "src/ipclab/load"
#: the services' entry point: it imports the domain, front, transport and adapters by name
SERVICES_ENTRY = "ipclab_services.serve"
#: modules not followed: they judge runs (statistics) or key them; they do not make them
NOT_FOLLOWED = ("ipclab.stats", "ipclab.runstore", "ipclab.runcode")
#: files beside the Python that a backend builds a stack from (folders or files)
BACKEND_FILES: Mapping[str, tuple[str, ...]] = {
    "docker": (
        "compose/common.yml", "compose/defaults.env",
        "services/Dockerfile", "services/requirements.lock",
    ),
    "swarm": (
        "compose/common.yml", "compose/defaults.env",
        "services/Dockerfile", "services/requirements.lock",
    ),
    "kubernetes": (
        "kubernetes", "services/Dockerfile", "services/requirements.lock",
        "compose/locust/Dockerfile",  # the load's pods' image (``--workers N``)
    ),
}  # fmt: skip
#: the sources a built runtime's roles run from (``stackspec.RUNTIMES`` by name)
RUNTIME_SOURCES: Mapping[str, tuple[str, ...]] = {
    "go": ("services/go",),
    "jvm": ("services/java/payload", "services/java/Dockerfile"),
    "node": ("services/node", "services/proto/shop.proto"),
}
JAVA_PROJECTS = "services/java"  # a native adapter's build: services/java/<its name>
COMPOSE = "compose"  # an infrastructure's image and files: compose/<component or name>
#: the repository's top folders a run's files can be in (what a ``git diff`` needs to read)
TOP_FOLDERS = tuple(
    sorted(
        {LOAD.split("/")[0], *_TOPS_FOLDERS, COMPOSE, JAVA_PROJECTS.split("/")[0]}
        | {
            p.split("/")[0]
            for group in (*BACKEND_FILES.values(), *RUNTIME_SOURCES.values())
            for p in group
        }
    )
)
_SKIPPED_PARTS = {"__pycache__", ".ipynb_checkpoints", "target", "node_modules"}


class _Tree:
    """Modules and files of one checkout (``root``), with the study folders beyond it."""

    def __init__(self, root: Path, foreign: Iterable[tuple[str, Path]] = ()) -> None:
        self.root = Path(root)
        extra = os.environ.get("IPCLAB_STUDIES_PATH", "")
        self.study_folders = [Path(d).resolve() for d in extra.split(os.pathsep) if d]
        self.foreign = dict(foreign)  # an out-of-tree top-level package -> its folder

    def bases(self, name: str) -> list[tuple[Path, list[str]]]:
        """Folders ``name`` may be under, and its parts below each."""
        parts = name.split(".")
        if parts[0] in _TOPS:
            out = [(self.root / _TOPS[parts[0]], parts[1:])]
            if parts[:2] == ["ipclab", "studies"] and len(parts) > 2:
                out += [(f, parts[2:]) for f in self.study_folders]
            return out
        folder = self.foreign.get(parts[0])
        return [(folder, parts[1:])] if folder is not None else []

    def file(self, name: str) -> Path | None:
        """The file holding module ``name`` (a package's ``__init__.py``), or None."""
        for base, rest in self.bases(name):
            path = base.joinpath(*rest)
            if (path / "__init__.py").is_file():
                return path / "__init__.py"
            if rest and path.with_suffix(".py").is_file():
                return path.with_suffix(".py")
        return None

    def label(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return path.resolve().as_posix()

    def listed(self, entries: Iterable[str]) -> set[str]:
        """The files of ``entries`` (folders or files from the root) that exist."""
        out: set[str] = set()
        for entry in entries:
            path = self.root / entry
            if path.is_file():
                out.add(entry)
            elif path.is_dir():
                out.update(_folder_files(self.root, entry))
        return out


@functools.cache
def _folder_files(root: Path, folder: str) -> tuple[str, ...]:
    """The files under ``folder`` that git tracks or would (every file without git)."""
    names: list[str] | None = None
    if (root / ".git").exists():
        try:
            listed = subprocess.run(
                ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--",
                 folder],
                cwd=root, capture_output=True, timeout=30,
            )  # fmt: skip
            names = listed.stdout.decode().split("\0") if listed.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired):
            names = None
    if names is None:
        names = [p.relative_to(root).as_posix() for p in (root / folder).rglob("*")]
    return tuple(
        sorted(
            n
            for n in names
            if n and (root / n).is_file() and not _SKIPPED_PARTS & set(n.split("/"))
            and not n.endswith(".pyc")
        )
    )  # fmt: skip


@functools.lru_cache(maxsize=4096)
def _imported(path: Path, stamp: tuple[int, int], package: str) -> frozenset[str]:
    """Every module name an import statement of ``path`` may name (``from a import b``:
    ``a`` and ``a.b``), relative imports made absolute against ``package``; ``stamp`` (size,
    time) keys the cache to the file's content."""
    try:
        tree = ast.parse(path.read_bytes(), str(path))
    except (SyntaxError, ValueError):
        return frozenset()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([base] if base else [])])
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names)
    return frozenset(n for n in names if n)


def _with_parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def _under(name: str, prefixes: Iterable[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _closure(
    tree: _Tree, roots: Iterable[str], cut: Callable[[str], bool], outside: set[str]
) -> set[Path]:
    """The files of ``roots`` and of every module they import, transitively (with parent
    packages), except the modules ``cut`` says not to enter (roots themselves included);
    the top-level names imported that are not the harness's nor the studies' (the standard
    library's and third-party packages') are added to ``outside``."""
    named = set(roots)
    todo = [p for r in named for p in _with_parents(r)]
    seen: set[str] = set()
    files: set[Path] = set()
    while todo:
        name = todo.pop()
        if name in seen or _under(name, NOT_FOLLOWED):
            continue
        seen.add(name)
        path = tree.file(name)
        if path is None and "." not in name and not tree.bases(name):
            outside.add(name)
        if path is None or (cut(name) and name not in named):
            continue
        files.add(path)
        stat = path.stat()
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for imported in _imported(path, (stat.st_size, stat.st_mtime_ns), package):
            todo.extend(p for p in _with_parents(imported) if p not in seen)
    return files


def _module_of(target: Any) -> str:
    """The module a backend plugin makes its backend from (``"module:name"`` or a class)."""
    if isinstance(target, str):
        return target.partition(":")[0]
    return str(getattr(target, "__module__", ""))


def _area(module: str) -> str:
    """What a backend owns: its subpackage or module of ``ipclab.backends`` (``ipclab.
    backends.docker``), or its own package when it comes from elsewhere."""
    parts = module.split(".")
    return ".".join(parts[:3]) if parts[:2] == ["ipclab", "backends"] else parts[0]


def backend_modules(backend: str | None) -> tuple[str, list[str]]:
    """The module ``backend``'s plugin makes it from ("" when unknown), and the areas of the
    other backends (``_area``) that are not also its own."""
    from ipclab.backends import all_backends

    plugins = all_backends()
    plugin = plugins.get(backend or "")
    own = _module_of(plugin.make) if plugin is not None else ""
    others = {_area(_module_of(p.make)) for n, p in plugins.items() if n != backend}
    return own, sorted(others - ({_area(own)} if own else set()))


def as_started(stack_spec: Any, parameters: Mapping[str, Any] | None) -> Any:
    """``stack_spec`` with the infrastructure the run's options add to each declaration:
    the stores with ``--store db`` (``parameters["options"]["store"]``), so their plugins'
    files shape the run's code as a declared broker's do."""
    from ipclab.stackspec import STORES

    options = (parameters or {}).get("options")
    if not (isinstance(options, Mapping) and options.get("store") == "db"):
        return stack_spec

    def started(declaration: Mapping[str, Any]) -> dict[str, Any]:
        declared = tuple(declaration.get("infrastructure") or ())
        return {
            **declaration,
            "infrastructure": [*declared, *(s for s in STORES if s not in declared)],
        }

    if isinstance(stack_spec, Mapping) and "domain" in stack_spec:
        return started(stack_spec)
    if isinstance(stack_spec, Mapping):
        return {k: started(d) if isinstance(d, Mapping) and "domain" in d else d
                for k, d in stack_spec.items()}  # fmt: skip
    return stack_spec


def _declarations(stack_spec: Any) -> list[Mapping[str, Any]]:
    """A run's stack declarations: one, or a group's by stack name."""
    if not isinstance(stack_spec, Mapping):
        return []
    if "domain" in stack_spec:
        return [stack_spec]
    return [d for d in stack_spec.values() if isinstance(d, Mapping) and "domain" in d]


def _infrastructure_folder(tree: _Tree, name: str) -> str | None:
    from ipclab import infrastructure

    try:
        component = infrastructure.get(name).component
    except (KeyError, ValueError):
        component = ""
    for folder in (component, name):
        if folder and (tree.root / COMPOSE / folder).is_dir():
            return f"{COMPOSE}/{folder}"
    return None


def stack_roots(tree: _Tree, declaration: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The modules and the other files (folders) one stack declaration names."""
    from ipclab.stackspec import NATIVE_RUNTIMES

    modules = [
        SERVICES_ENTRY,
        f"ipclab_services.domains.{declaration.get('domain')}",
        f"ipclab_services.fronts.{declaration.get('front')}",
        f"ipclab_services.transports.{declaration.get('transport')}",
    ]
    files = list(RUNTIME_SOURCES.get(str(declaration.get("runtime")), ()))
    adapters = declaration.get("adapters")
    if adapters:
        modules.append(f"ipclab_services.adapters.{adapters}")
        native = NATIVE_RUNTIMES.get(str(declaration.get("transport")))
        if adapters == "native" and native is not None:
            files += [f"{JAVA_PROJECTS}/{native.name}", f"{JAVA_PROJECTS}/Dockerfile"]
    for name in declaration.get("infrastructure") or ():
        modules.append(f"ipclab.infrastructure.{name}")
        folder = _infrastructure_folder(tree, str(name))
        files += [folder] if folder else []
    return modules, files


def users_modules(stacks: Sequence[str]) -> list[str]:
    """The Locust user modules of the stacks named (a name no study declares: none)."""
    from ipclab.stacks import UnknownStack, resolve

    out = []
    for name in stacks:
        try:
            out.append(resolve(name).users)
        except UnknownStack:
            continue
    return out


def _foreign(tree: _Tree, modules: Iterable[str]) -> list[tuple[str, Path]]:
    """The folders of the top-level packages of ``modules`` that are not the harness's
    (an out-of-tree study's users module, say), found without importing them."""
    out = []
    for name in modules:
        top = name.split(".")[0]
        if top in _TOPS or not top:
            continue
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.submodule_search_locations:
            out.append((top, Path(next(iter(spec.submodule_search_locations)))))
        elif spec is not None and spec.origin and name == top:
            out.append((top, Path(spec.origin).parent))
    return out


@dataclass(frozen=True)
class Derived:
    """What shapes a run: its files (sorted paths from the root; an out-of-tree file by its
    absolute path) and the top-level names its Python files import from outside the harness
    and the studies (the standard library's and third-party packages': their versions, not
    their files, are what a run records of them, ``runstore.package_versions``)."""

    files: tuple[str, ...]
    outside: frozenset[str]


def measuring_files(
    *,
    writers: Sequence[str],
    stacks: Sequence[str],
    stack_spec: Any,
    backend: str | None,
    root: Path | None = None,
) -> list[str]:
    """The files that shape a run written by the modules ``writers``, of the stacks named
    ``stacks`` declared as ``stack_spec``, on ``backend``, in the checkout at ``root``
    (by default the repository): sorted paths from the root (:func:`derive`)."""
    derived = derive(
        writers=writers, stacks=stacks, stack_spec=stack_spec, backend=backend, root=root
    )
    return list(derived.files)


def derive(
    *,
    writers: Sequence[str],
    stacks: Sequence[str],
    stack_spec: Any,
    backend: str | None,
    root: Path | None = None,
) -> Derived:
    """What shapes a run written by the modules ``writers`` (its writer and the modules its
    parameters name, :func:`parameter_modules`), of the stacks named ``stacks`` declared as
    ``stack_spec``, on ``backend``, in the checkout at ``root`` (by default the
    repository). Kept while the Python files it read stay as they were."""
    root = Path(root or REPO_ROOT)
    users = users_modules(stacks)
    key = (tuple(writers), tuple(users), json.dumps(stack_spec, sort_keys=True, default=str),
           backend, root)  # fmt: skip
    kept = _derived.get(key)
    if kept is not None and all(_stamp(p) == s for p, s in kept[1]):
        return kept[0]
    derived, read = _derive([*users, *writers], stack_spec, backend, root)
    _derived[key] = (derived, tuple((p, _stamp(p)) for p in read))
    return derived


_derived: dict[tuple[Any, ...], tuple[Derived, tuple[tuple[Path, Any], ...]]] = {}


def parameter_modules(parameters: Mapping[str, Any] | None) -> list[str]:
    """The modules a run's parameters name as what its users run, beside its stacks' own
    user modules: a group run's load (``ipclab.load.group``: ``group.users``, a study's
    interleaving of two APIs' requests, say)."""
    group = (parameters or {}).get("group")
    users = group.get("users") if isinstance(group, Mapping) else None
    return [users] if isinstance(users, str) and users else []


@functools.cache
def writers_of(kind: str, root: Path | None = None) -> tuple[str, ...]:
    """The modules that write runs of ``kind`` (:func:`writer_kinds`): the writers of a run
    made before runs recorded theirs."""
    return tuple(sorted(m for m, kinds in writer_kinds(root).items() if kind in kinds))


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns


def _derive(
    modules: Sequence[str], stack_spec: Any, backend: str | None, root: Path
) -> tuple[Derived, set[Path]]:
    """:func:`derive` (``modules``: the user modules and the writers), and the Python files
    whose imports it read."""
    load = ".".join(Path(LOAD).parts[1:])  # ipclab.load
    roots = [load, *(f"{load}.{p.stem}" for p in sorted((root / LOAD).glob("[!_]*.py")))]
    files = list(BACKEND_FILES.get(backend or "", ()))
    for declaration in _declarations(stack_spec):
        named, others = stack_roots(_Tree(root), declaration)
        roots += named
        files += others
    roots += modules
    tree = _Tree(root, _foreign(_Tree(root), roots))
    own, others = backend_modules(backend)
    outside: set[str] = set()
    found = _closure(tree, roots, lambda name: _under(name, others), outside)
    if own:
        found |= _closure(tree, [own], lambda name: False, outside)
    paths = tuple(sorted({tree.label(p) for p in found} | tree.listed(files)))
    return Derived(paths, frozenset(outside)), found


@functools.cache
def writer_kinds(root: Path | None = None) -> dict[str, set[str]]:
    """Every module of ``src/ipclab`` (and of the study folders) that writes runs (calls
    ``RunWriter``, directly or through a function of its own), with the kinds it writes:
    the string literals its calls pass as the kind (the second argument)."""
    tree = _Tree(root or REPO_ROOT)
    folders = [(tree.root / _TOPS["ipclab"], "ipclab")]
    folders += [(f, "ipclab.studies") for f in tree.study_folders]
    out: dict[str, set[str]] = {}
    for folder, prefix in folders:
        for path in sorted(folder.rglob("*.py")):
            if _SKIPPED_PARTS & set(path.parts):
                continue
            parts = [*prefix.split("."), *path.relative_to(folder).with_suffix("").parts]
            kinds = _kinds_written(path) if b"RunWriter(" in path.read_bytes() else None
            if kinds is not None:
                out[".".join(parts).removesuffix(".__init__")] = kinds
    return out


def _kinds_written(path: Path) -> set[str] | None:
    """The kinds ``path``'s calls of ``RunWriter`` (or of its own functions that call it)
    name; None when it calls no ``RunWriter``."""
    try:
        tree = ast.parse(path.read_bytes(), str(path))
    except (SyntaxError, ValueError):
        return None

    def callee(node: ast.Call) -> str:
        f = node.func
        return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""

    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    if not any(callee(c) == "RunWriter" for c in calls):
        return None
    wrappers = {"RunWriter"} | {
        f.name
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
        and any(isinstance(c, ast.Call) and callee(c) == "RunWriter" for c in ast.walk(f))
    }
    return {
        c.args[1].value
        for c in calls
        if callee(c) in wrappers
        and len(c.args) > 1
        and isinstance(c.args[1], ast.Constant)
        and isinstance(c.args[1].value, str)
    }
