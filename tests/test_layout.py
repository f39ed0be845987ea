"""The layout's rules (docs/architecture.md), checked from the source tree:

- a module outside ``src/ipclab/studies/`` names no study;
- ``src/ipclab`` has no import cycle (the graph of every import statement, including those
  inside functions; imports under ``if TYPE_CHECKING:`` are not run and are left out);
- ``services/`` imports nothing from ``ipclab``;
- every package is listed in pyproject.toml, so an installed copy has it.
"""

from __future__ import annotations

import ast
import re
import tomllib
import unicodedata
from pathlib import Path

import pytest

from ipclab.paths import REPO_ROOT
from ipclab.stacks import all_stacks
from ipclab.studies import all_studies

SRC = REPO_ROOT / "src" / "ipclab"
SERVICES = REPO_ROOT / "services"


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
    if path.is_relative_to(SERVICES):
        parts = ["ipclab_services", *path.relative_to(SERVICES).with_suffix("").parts]
    else:
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking(node: ast.If) -> bool:
    return isinstance(node.test, ast.Name | ast.Attribute) and "TYPE_CHECKING" in ast.unparse(
        node.test
    )


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports (absolute names; ``from a import b`` gives ``a`` and
    ``a.b``), skipping ``if TYPE_CHECKING:`` blocks."""
    tree = ast.parse(path.read_text())
    skip = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and _type_checking(node)
        for b in node.body
        for n in ast.walk(b)
    }
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules it imports. ``from pkg import sub`` of a submodule is an edge
    to ``pkg.sub`` only (Python finds ``pkg`` already imported: it is the importer's own
    package, or a parent of it), ``from pkg import name`` of anything else one to ``pkg``."""
    files = {module_name(p): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        deps = {d for d in imports(path) if d in files and d != name}
        # a package named only because a submodule of it is imported by name
        deps -= {d for d in deps if any(x.startswith(d + ".") for x in deps)
                 and not _imports_names_of(path, d, files)}  # fmt: skip
        graph[name] = deps
    return graph


def _imports_names_of(path: Path, package: str, files: dict[str, Path]) -> bool:
    """Whether ``path`` imports from ``package`` a name that is not one of its submodules."""
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module == package
            and node.level == 0
            and any(f"{package}.{a.name}" not in files for a in node.names)
        ):
            return True
        if isinstance(node, ast.Import) and any(a.name == package for a in node.names):
            return True
    return False


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
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


def test_no_module_outside_studies_names_a_study() -> None:
    offenders = [
        str(p.relative_to(REPO_ROOT))
        for root in (SRC, SERVICES)
        for p in root.rglob("*.py")
        if "studies" not in p.relative_to(root).parts[:1] and STUDY_NAMES.search(p.read_text())
    ]
    assert offenders == [], f"these modules name a study (move the code to its study): {offenders}"


def test_ipclab_has_no_import_cycle() -> None:
    graph = import_graph(SRC)
    assert len(graph) > 30  # the whole package was read
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


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
