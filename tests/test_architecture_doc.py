"""docs/architecture.md is true to the code (issue 29, item 6; issue 49, item 5): every
module, function, file and command it names in backticks exists, every module of
``src/ipclab`` is named in it (a subpackage by its folder), and so is every module of a
subpackage but the studies' (by its path, dotted name, or file name in its folder's row).
Pure and fast: it reads the doc, imports modules, scans source files and builds the CLI's
parser; it starts nothing.

What a backticked span is taken for:

- ``ipclab <command> ...``: a subcommand of ``ipclab.cli.build_parser()``;
- ``python -m <module>``: an importable module; ``make <target>``: a target of the Makefile;
- a path (``a/b.py``, ``backends/``, ``services/transports/<name>.py``): a file or folder
  relative to the repository, ``src/ipclab`` or ``services/`` (``<...>`` matches any name);
  a bare ``name.py``: a file of that name in the repository's Python folders; what a run
  writes (``<out>/...``, ``build/...``) is not in a fresh clone and is not checked;
- a dotted name (``ipclab.stacks.resolve``, ``StackSpec.host_of``, ``fronts.Request``,
  with or without a call's parentheses): importable, its first part a module (absolute, or
  the last part of a module's name) or a class or function some module defines;
- a bare call (``all_stacks()``) or class name (``RunningStack``): defined somewhere in
  ``src/ipclab`` or ``services/``.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ipclab.paths import REPO_ROOT

DOC = REPO_ROOT / "docs" / "architecture.md"
SRC = REPO_ROOT / "src" / "ipclab"
SERVICES = REPO_ROOT / "services"
PYTHON_FOLDERS = (SRC, SERVICES, REPO_ROOT / "bench", REPO_ROOT / "tests", REPO_ROOT / "scripts")
OUTPUTS = ("<out>", "out/", "build/", "<site>")  # written by a run, not in a fresh clone
FILE_SUFFIXES = {"json", "jsonl", "csv", "pdf", "html", "md", "yml", "yaml", "toml", "txt",
                 "parquet", "svg", "png", "ipynb", "go", "proto", "env"}  # fmt: skip

DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+(\(.*\))?")
CALL = re.compile(r"([A-Za-z_]\w*)\(.*\)")
CLASS = re.compile(r"[A-Z][a-z0-9]\w*")  # a capitalised identifier: a class


def spans(text: str) -> list[str]:
    """The backticked spans of ``text`` outside fenced blocks, whitespace made single."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return [" ".join(s.split()) for s in re.findall(r"`([^`]+)`", text)]


@functools.cache
def module_names() -> dict[str, Path]:
    """Every module of ipclab and ipclab_services by dotted name."""
    out = {}
    for root, top in ((SRC, "ipclab"), (SERVICES, "ipclab_services")):
        for p in root.rglob("*.py"):
            parts = [top, *p.relative_to(root).with_suffix("").parts]
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


@functools.cache
def defined_names() -> dict[str, set[str]]:
    """Name -> the modules that define it (a class, a function or method, an assignment, an
    import under that name)."""
    out: dict[str, set[str]] = {}
    for module, path in module_names().items():
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            elif isinstance(node, ast.Import | ast.ImportFrom):  # ``import a as name``
                names = [a.asname for a in node.names if a.asname]
            for name in names:
                out.setdefault(name, set()).add(module)
    return out


def _attribute_path(obj: Any, attrs: list[str]) -> bool:
    for attr in attrs:
        if not hasattr(obj, attr):
            # a dataclass field without a default, or a Protocol's attribute: declared only
            return attr in getattr(obj, "__annotations__", {})
        obj = getattr(obj, attr)
    return True


def dotted_exists(name: str) -> bool:
    """Whether ``a.b.c`` names a module, or an attribute path from a module or a defined
    class or function, as the module docstring says."""
    parts = name.split(".")
    modules = module_names()
    starts: list[tuple[str, list[str]]] = []  # (module to import, attributes after it)
    if parts[0] in ("ipclab", "ipclab_services"):
        starts += [(".".join(parts[:n]), parts[n:]) for n in range(len(parts), 0, -1)]
    else:
        for module in modules:
            if module.rsplit(".", 1)[-1] == parts[0]:
                full = [*module.split("."), *parts[1:]]
                starts += [
                    (".".join(full[:n]), full[n:])
                    for n in range(len(full), len(module.split(".")) - 1, -1)
                ]
        starts += [(m, parts) for m in sorted(defined_names().get(parts[0], ()))]
    for module, attrs in starts:
        if module not in modules:
            continue
        if _attribute_path(importlib.import_module(module), attrs):
            return True
    return False


def path_exists(token: str) -> bool:
    """A file or folder relative to the repository, src/ipclab or services/; ``<...>`` and
    ``NN`` match any name; a bare ``name.py`` anywhere in the Python folders."""
    if "/" not in token:
        return any(next(root.rglob(token), None) for root in PYTHON_FOLDERS)
    pattern = re.sub(r"<[^>]*>", "*", token.rstrip("/")).replace("NN", "[0-9][0-9]")
    pattern = re.sub(r"\*+", "*", pattern)
    return any(next(base.glob(pattern), None) for base in (REPO_ROOT, SRC, SERVICES))


@functools.cache
def cli_commands() -> set[str]:
    import argparse

    from ipclab.cli import build_parser

    (sub,) = (a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


def _make_targets() -> set[str]:
    text = (REPO_ROOT / "Makefile").read_text()
    return set(re.findall(r"^([\w.-]+):", text, flags=re.M))


def check(span: str) -> str | None:
    """Why ``span`` names nothing that exists, or None (it does, or it names no code)."""
    words = span.split()
    if not words or any(span.startswith(o) or f" {o}" in span for o in OUTPUTS):
        return None
    if words[0] == "ipclab" and len(words) > 1:
        return None if words[1] in cli_commands() else f"no command `ipclab {words[1]}`"
    if words[0] in ("python", "python3") and len(words) > 2 and words[1] == "-m":
        if "<" in words[2] or importlib.util.find_spec(words[2]):
            return None
        return f"no module {words[2]}"
    if words[0] in ("python", "python3") and len(words) > 1:
        return None if path_exists(words[1]) else f"no file {words[1]}"
    if words[0] == "make" and len(words) > 1:
        return None if words[1] in _make_targets() else f"no make target {words[1]}"
    if len(words) > 1 and not CALL.fullmatch(span):
        return None  # prose, an assignment or a command line of another tool
    token = words[0]
    if token.startswith("/"):
        return None  # a path of the machine (``/tmp``), not of the repository
    if "/" in token or token.endswith(".py"):
        return None if path_exists(token) else f"no file or folder {token}"
    if DOTTED.fullmatch(token) or DOTTED.fullmatch(span):
        name = re.sub(r"\(.*\)$", "", span)
        if name.rsplit(".", 1)[-1] in FILE_SUFFIXES:
            return None  # a file a run writes (manifest.json, report.pdf)
        return None if dotted_exists(name) else f"no module or attribute {name}"
    if m := CALL.fullmatch(span):
        return None if m[1] in defined_names() else f"no function or class {m[1]}"
    if CLASS.fullmatch(token):
        return None if token in defined_names() else f"no class {token}"
    return None


def _doc_spans() -> Iterator[str]:
    yield from dict.fromkeys(spans(DOC.read_text()))


def test_every_name_the_doc_gives_exists() -> None:
    wrong = {s: why for s in _doc_spans() if (why := check(s))}
    assert wrong == {}, "docs/architecture.md names what does not exist: " + "; ".join(
        f"`{s}`: {why}" for s, why in wrong.items()
    )


def test_every_module_of_ipclab_is_named() -> None:
    """Each module file of src/ipclab by its file name or dotted name, each subpackage by
    its folder (``backends/``) or dotted name."""
    named = list(_doc_spans())

    def mentioned(file: str, dotted: str) -> bool:
        by_file = re.compile(rf"(^|/){re.escape(file)}($|[^\w.])")
        by_name = re.compile(rf"{re.escape(dotted)}($|[.(])")
        return any(by_file.search(s) or by_name.match(s) for s in named)

    missing = [
        p.name
        for p in sorted(SRC.glob("*.py"))
        if p.name != "__init__.py" and not mentioned(p.name, f"ipclab.{p.stem}")
    ] + [
        p.name + "/"
        for p in sorted(SRC.iterdir())
        if (p / "__init__.py").is_file() and not mentioned(p.name + "/", f"ipclab.{p.name}")
    ]
    assert missing == [], f"docs/architecture.md does not name these modules: {missing}"


def _rows_by_folder(text: str) -> dict[str, list[str]]:
    """A table row's spans by each folder (``backends/docker/``) its first cell names."""
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.startswith("| `"):
            for folder in spans(line.split(" | ", 1)[0]):
                if folder.endswith("/"):
                    rows.setdefault(folder, []).extend(spans(line))
    return rows


def test_every_submodule_of_a_core_subpackage_is_named() -> None:
    """Each module of a subpackage of src/ipclab (``backends/docker/images.py``,
    ``claims/rules.py``; not ``__init__``/``__main__``, nor ``studies/``: a study's modules
    are its own, described in their docstrings) by its path below src/ipclab, its dotted
    name, or its file name in the table row whose first cell names its package's folder."""
    text = DOC.read_text()
    named, rows = list(_doc_spans()), _rows_by_folder(text)
    missing = []
    for p in sorted(SRC.rglob("*.py")):
        rel = p.relative_to(SRC)
        if len(rel.parts) < 2 or rel.parts[0] == "studies" or p.stem.startswith("__"):
            continue
        by_path = re.compile(rf"(^|/){re.escape(rel.as_posix())}($|[^\w.])")
        by_name = re.compile(rf"ipclab\.{re.escape('.'.join(rel.with_suffix('').parts))}($|[.(])")
        by_file = re.compile(rf"{re.escape(p.name)}($|[^\w.])")
        row = rows.get(rel.parent.as_posix() + "/", [])
        if not any(by_path.search(s) or by_name.match(s) for s in named) and not any(
            by_file.match(s) for s in row
        ):
            missing.append(rel.as_posix())
    assert missing == [], f"docs/architecture.md does not name these submodules: {missing}"


def test_a_submodule_counts_only_in_its_own_packages_row() -> None:
    """``runner.py`` in the ``load/`` row names ``load/runner.py``, not
    ``availability/runner.py``."""
    rows = _rows_by_folder("| `load/` | `runner.py` (x) |\n| `a/`, `b/` | `c.py` |")
    assert rows == {"load/": ["load/", "runner.py"], "a/": ["a/", "b/", "c.py"],
                    "b/": ["a/", "b/", "c.py"]}  # fmt: skip


@pytest.mark.parametrize(
    ("span", "exists"),
    [
        ("ipclab.stacks.resolve", True),
        ("StackSpec.host_of", True),
        ("fronts.Request", True),
        ("all_stacks()", True),
        ("ipclab runs", True),
        ("stacks.py", True),
        ("services/transports/<name>.py", True),
        ("python -m ipclab.fuzz", True),
        ("ipclab.stacks.no_such_function", False),
        ("NoSuchClass.method", False),
        ("no_such_function()", False),
        ("ipclab nosuchcommand", False),
        ("src/ipclab/no_such_module.py", False),
        ("no_such_module.py", False),
        ("python -m ipclab.no_such_module", False),
    ],
)
def test_the_checker_tells_what_exists(span: str, exists: bool) -> None:
    assert (check(span) is None) == exists, check(span)
