"""No function or method is longer than 80 lines (issue 29), generated code aside.

A function's length runs from its ``def`` line to its last line, as ``ast`` gives them
(``end_lineno - lineno + 1``; decorators are not counted, nested functions count inside
their parent and on their own). Python is read in ``src/ipclab``, ``services/`` and
``bench/``; Go in ``services/go``, where a ``func`` starts at column 0 and ends at the next
line that is a closing brace at column 0 (gofmt's layout). Generated code (protobuf's
``*_pb2.py`` / ``*_pb2_grpc.py`` and Go files marked ``Code generated ... DO NOT EDIT``) is
not read: nobody edits it by hand.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from ipclab.paths import REPO_ROOT

LIMIT = 80
PYTHON_ROOTS = ("src/ipclab", "services", "bench")
GO_ROOT = "services/go"
GENERATED_PYTHON = re.compile(r"_pb2(_grpc)?\.py$")
GENERATED_GO = re.compile(r"^// Code generated .* DO NOT EDIT\.$", re.MULTILINE)


def python_functions(text: str) -> list[tuple[str, int]]:
    """Every function and method in ``text`` as (qualified name, length in lines)."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                assert child.end_lineno is not None
                found.append((name, child.end_lineno - child.lineno + 1))
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(text), "")
    return found


GO_FUNC = re.compile(r"^func\s+(?:\([^)]*\)\s*)?(\w+)")


def go_functions(text: str) -> list[tuple[str, int]]:
    """Every top-level Go func in ``text`` as (name, length in lines): from the line that
    starts with ``func`` to the first later line that is ``}`` alone at column 0."""
    lines = text.splitlines()
    found: list[tuple[str, int]] = []
    for start, line in enumerate(lines):
        match = GO_FUNC.match(line)
        if match is None or line.rstrip().endswith("}"):
            continue  # not a func, or a one-line func
        end = next(i for i in range(start + 1, len(lines)) if lines[i].rstrip() == "}")
        found.append((match.group(1), end - start + 1))
    return found


def python_files() -> list[Path]:
    files = []
    for root in PYTHON_ROOTS:
        for path in sorted((REPO_ROOT / root).rglob("*.py")):
            if not GENERATED_PYTHON.search(path.name):
                files.append(path)
    return files


def go_files() -> list[Path]:
    return [
        path
        for path in sorted((REPO_ROOT / GO_ROOT).rglob("*.go"))
        if not GENERATED_GO.search(path.read_text())
    ]


def long_functions() -> list[str]:
    too_long = []
    for path in python_files():
        for name, length in python_functions(path.read_text()):
            if length > LIMIT:
                too_long.append(f"{path.relative_to(REPO_ROOT)} {name}: {length} lines")
    for path in go_files():
        for name, length in go_functions(path.read_text()):
            if length > LIMIT:
                too_long.append(f"{path.relative_to(REPO_ROOT)} {name}: {length} lines")
    return too_long


def test_python_length_counts_def_to_last_line_with_nesting_and_methods() -> None:
    source = (
        "@decorator\n"
        "def outer():\n"
        "    def inner():\n"
        "        return 1\n"
        "\n"
        "    return inner\n"
        "\n"
        "class C:\n"
        "    async def method(self):\n"
        "        pass\n"
    )
    assert python_functions(source) == [("outer", 5), ("outer.inner", 2), ("C.method", 2)]


def test_go_length_runs_from_func_to_closing_brace_at_column_zero() -> None:
    source = (
        "package main\n"
        "\n"
        "func (s *server) handle(w http.ResponseWriter) {\n"
        "\tif true {\n"
        "\t}\n"
        "}\n"
        "\n"
        "func one() int { return 1 }\n"
        "\n"
        "func two() {\n"
        "}\n"
    )
    assert go_functions(source) == [("handle", 4), ("two", 2)]


def test_generated_code_is_not_read() -> None:
    names = {path.name for path in python_files()}
    assert not any(GENERATED_PYTHON.search(name) for name in names)
    assert (REPO_ROOT / "services/go/bench.go") in go_files()


def test_no_function_is_longer_than_80_lines() -> None:
    too_long = long_functions()
    assert not too_long, f"{len(too_long)} functions over {LIMIT} lines:\n" + "\n".join(too_long)
