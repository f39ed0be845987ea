"""The layout's rules (docs/architecture.md), checked from the source tree:

- a module outside ``src/ipclab/studies/`` names no study;
- no import cycle among src/ipclab, services/ and bench/ (the graph of every import
  statement anywhere in a module: inside functions, under ``if TYPE_CHECKING:``, in try
  blocks; a cycle that only type checkers follow still ties the modules together);
- ``services/`` imports nothing from ``ipclab``;
- every package is listed in pyproject.toml, so an installed copy has it.
"""

from __future__ import annotations

import ast
import re
import tomllib
import unicodedata
from collections.abc import Collection, Mapping
from pathlib import Path

import pytest

from ipclab.paths import REPO_ROOT
from ipclab.stacks import all_stacks
from ipclab.studies import all_studies

SRC = REPO_ROOT / "src" / "ipclab"
SERVICES = REPO_ROOT / "services"
BENCH = REPO_ROOT / "bench"


def _study_words() -> set[str]:
    """Every registered study's name and its title's author names (the part before the
    year), each also without accents: a new study is checked with no edit here."""
    words = set()
    for name, study in all_studies().items():
        authors = re.findall(r"[^\W\d_]{3,}", re.split(r"\d{4}", study.title)[0])
        for word in (name, *authors):
            plain = unicodedata.normalize("NFKD", word).encode("ascii", "ignore").decode()
            words |= {word.lower(), plain.lower()} - {""}
    return words


STUDY_NAMES = re.compile("|".join(map(re.escape, sorted(_study_words()))), re.IGNORECASE)


def module_name(path: Path) -> str:
    """The name ``path`` is imported as: ``ipclab.*`` (src/ipclab), ``ipclab_services.*``
    (services/), or a top-level name for bench/*.py (a bench script puts bench/ on
    sys.path and imports its neighbours by file name, e.g. ``import transports_go``)."""
    if path.is_relative_to(SERVICES):
        parts = ["ipclab_services", *path.relative_to(SERVICES).with_suffix("").parts]
    elif path.is_relative_to(BENCH):
        parts = list(path.relative_to(BENCH).with_suffix("").parts)
    else:
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_files() -> dict[str, Path]:
    """Every module the cycle rule covers, by the name it is imported as."""
    paths = [*SRC.rglob("*.py"), *SERVICES.rglob("*.py"), *BENCH.glob("*.py")]
    return {module_name(p): p for p in paths}


def import_statements(path: Path, name: str) -> list[tuple[int, str, tuple[str, ...]]]:
    """``(line, module, names)`` for every import statement anywhere in ``path`` (module
    level, inside functions, under ``if TYPE_CHECKING:``, in try blocks): ``import a.b``
    gives ``("a.b", ())``, ``from a import b, c`` gives ``("a", ("b", "c"))``; a relative
    import is made absolute against ``name``, the module ``path`` holds."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: list[tuple[int, str, tuple[str, ...]]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, ()) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join([*base, *([module] if module else [])])
            out.append((node.lineno, module, tuple(a.name for a in node.names)))
    return out


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports by name, in any statement (``from a import b`` gives
    ``a`` and ``a.b``)."""
    return {
        m
        for _, module, names in import_statements(path, module_name(path))
        for m in (module, *(f"{module}.{n}" for n in names))
    }


def _known(name: str, files: Mapping[str, Path]) -> str | None:
    """``name`` if it is a module of ``files``, else its longest prefix that is, else None
    (a module of another distribution)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if (prefix := ".".join(parts[:end])) in files:
            return prefix
    return None


def import_edges(path: Path, name: str, files: Mapping[str, Path]) -> dict[str, int]:
    """The modules of ``files`` that ``path`` (module ``name``) imports, each with the line
    of its first import: ``import a.b`` is an edge to ``a.b``; ``from a.b import c`` one to
    ``a.b.c`` when that is a module, else to ``a.b`` (a package's edge to its own
    submodules counts like any other)."""
    edges: dict[str, int] = {}
    for line, module, names in import_statements(path, name):
        wanted = [f"{module}.{n}" if f"{module}.{n}" in files else module for n in names]
        for target in (_known(w, files) for w in wanted or [module]):
            if target is not None and target != name:
                edges.setdefault(target, line)
    return edges


def import_graph(files: Mapping[str, Path]) -> dict[str, dict[str, int]]:
    """Module -> {module it imports: line of the import}, over ``files``."""
    return {name: import_edges(path, name, files) for name, path in files.items()}


def find_cycle(graph: Mapping[str, Collection[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path, or None (depth-first search, three colours)."""
    colour: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        colour[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if colour.get(m) == 1:
                return [*stack[stack.index(m) :], m]
            if m not in colour and (found := visit(m)):
                return found
        stack.pop()
        colour[n] = 2
        return None

    for n in sorted(graph):
        if n not in colour and (found := visit(n)):
            return found
    return None


def all_cycles(graph: Mapping[str, Collection[str]]) -> list[list[str]]:
    """One cycle through each group of modules that import each other (each strongly
    connected component of more than one module), so one run names every cycle to fix."""

    def reach(start: str) -> set[str]:
        seen, todo = {start}, [start]
        while todo:
            for m in graph.get(todo.pop(), ()):
                if m not in seen:
                    seen.add(m)
                    todo.append(m)
        return seen

    reached = {n: reach(n) for n in graph}
    groups = {frozenset(m for m in reached[n] if n in reached.get(m, ())) for n in graph}
    return sorted(
        cycle
        for group in groups
        if len(group) > 1
        and (cycle := find_cycle({n: set(graph[n]) & group for n in group})) is not None
    )


def describe_cycle(cycle: list[str], graph: Mapping[str, Mapping[str, int]]) -> str:
    """The cycle as ``a -> b -> a`` and, per edge, the file and line of the import."""
    files = module_files()
    hops = [
        f"  {files[a].relative_to(REPO_ROOT)}:{graph[a][b]} imports {b}"
        for a, b in zip(cycle, cycle[1:], strict=False)
    ]
    return "\n".join([" -> ".join(cycle), *hops])


def test_no_module_outside_studies_names_a_study() -> None:
    offenders = [
        str(p.relative_to(REPO_ROOT))
        for root in (SRC, SERVICES)
        for p in root.rglob("*.py")
        if "studies" not in p.relative_to(root).parts[:1] and STUDY_NAMES.search(p.read_text())
    ]
    assert offenders == [], f"these modules name a study (move the code to its study): {offenders}"


def test_no_import_cycle_in_src_services_and_bench() -> None:
    graph = import_graph(module_files())
    assert {"ipclab.cli", "ipclab_services.serve", "transports"} <= set(graph)  # all read
    cycles = all_cycles(graph)
    assert cycles == [], "import cycles:\n" + "\n".join(describe_cycle(c, graph) for c in cycles)


def test_every_import_statement_is_an_edge(tmp_path: Path) -> None:
    """Function-level, TYPE_CHECKING, try-block and relative imports all count; ``from
    pkg import sub`` is an edge to the submodule, ``from pkg import name`` to the package."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from pkg import sub\n")
    (pkg / "other.py").write_text("")
    (pkg / "sub.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pkg import Thing\n"
        "def f():\n    import pkg.other\n"
        "try:\n    from . import other\nexcept ImportError:\n    pass\n"
    )
    files = {"pkg": pkg / "__init__.py", "pkg.sub": pkg / "sub.py", "pkg.other": pkg / "other.py"}
    assert import_edges(files["pkg.sub"], "pkg.sub", files) == {"pkg": 3, "pkg.other": 5}
    assert import_edges(files["pkg"], "pkg", files) == {"pkg.sub": 1}
    assert all_cycles(import_graph(files)) == [["pkg", "pkg.sub", "pkg"]]


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    two = {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c", "e"}, "e": set()}
    assert all_cycles(two) == [["a", "b", "a"], ["c", "d", "c"]]


def test_services_import_nothing_from_ipclab() -> None:
    offenders = {
        str(p.relative_to(REPO_ROOT)): sorted(d for d in imports(p) if d.split(".")[0] == "ipclab")
        for p in SERVICES.rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_every_package_is_installed() -> None:
    listed = set(
        tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        module_name(p.parent / "__init__.py")
        for root in (SRC, SERVICES)
        for p in root.rglob("__init__.py")
    }
    assert found - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"


@pytest.mark.parametrize("name", sorted(all_stacks()))
def test_every_stack_is_buildable_from_its_declaration(name: str) -> None:
    """Domain, front and transport exist in services/, and the user module in a study;
    a domain that serves its roles itself (``serve_role``) needs no front or transport."""
    from ipclab_services import domains, fronts, transports

    from ipclab.load.runner import locustfile

    spec = all_stacks()[name]
    assert spec.domain in domains.available()
    if not hasattr(domains.load(spec.domain), "serve_role"):
        assert spec.front in fronts.available()
        assert spec.transport in transports.available()
    assert locustfile(spec.users).is_file()
    assert set(spec.services) <= set(domains.load(spec.domain).SERVICES)


def test_every_study_has_its_notebooks_and_a_stack() -> None:
    for study in all_studies().values():
        assert study.stacks, study.name
        for nb in study.notebooks:
            assert (REPO_ROOT / "notebooks" / nb.file).is_file(), nb.file
