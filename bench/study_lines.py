"""Lines of study code per study (issue 49, must-show 1): what a study costs in code.

For each study of ``src/ipclab/studies/`` and each study folder given with ``--extra``
(an out-of-tree study, e.g. ``examples/h2study/h2study``): its Python files' lines, all
and code only (neither blank nor a comment-only line), and apart the lines of the files
that adapt it to the core (``protocol.py``: the study protocol; ``reference.py``: the
rebuild of its committed references; ``published.py``: its published-data loaders).
Also counted: the lines under ``src/ipclab`` outside ``studies/`` that name a study (the
core names none, ``tests/test_layout.py``; a nonzero count is per-study code elsewhere).

    python bench/study_lines.py [--src SRC] [--extra DIR ...] [--csv OUT]

``--src``: another tree's ``src/ipclab`` (e.g. ``git archive main src | tar -x -C /tmp/m``
and ``--src /tmp/m/src/ipclab``: the counts before a change).
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "ipclab"
ADAPTERS = ("protocol.py", "reference.py", "published.py")
FIELDS = ("study", "files", "lines", "code", *(f.removesuffix(".py") for f in ADAPTERS))


def _code(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip() and not line.strip().startswith("#"))


def count(folder: Path) -> dict[str, int]:
    """A study folder's counts (every ``*.py`` below it)."""
    files = sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)
    texts = {p: p.read_text() for p in files}
    row = {
        "files": len(files),
        "lines": sum(len(t.splitlines()) for t in texts.values()),
        "code": sum(_code(t) for t in texts.values()),
    }
    for name in ADAPTERS:
        own = folder / name
        row[name.removesuffix(".py")] = len(texts[own].splitlines()) if own in texts else 0
    return row


def elsewhere(names: list[str], src: Path = SRC) -> int:
    """Lines under ``src/ipclab`` outside ``studies/`` naming one of ``names``."""
    hits = 0
    for p in src.rglob("*.py"):
        if "studies" in p.relative_to(src).parts[:1]:
            continue
        hits += sum(1 for line in p.read_text().splitlines() if any(n in line for n in names))
    return hits


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--extra", type=Path, action="append", default=[], help="a study folder")
    ap.add_argument("--csv", type=Path, help="write the table here too")
    ap.add_argument("--src", type=Path, default=SRC, help="the src/ipclab to count")
    args = ap.parse_args(argv)
    folders = sorted(p for p in (args.src / "studies").iterdir() if (p / "__init__.py").is_file())
    rows = [{"study": f.name, **count(f)} for f in [*folders, *args.extra]]
    writer = csv.DictWriter(sys.stdout, FIELDS)
    writer.writeheader()
    writer.writerows(rows)
    print(f"# lines naming a study under src/ipclab outside studies/: "
          f"{elsewhere([f.name for f in folders], args.src)}")  # fmt: skip
    if args.csv:
        with args.csv.open("w", newline="") as fh:
            out = csv.DictWriter(fh, FIELDS)
            out.writeheader()
            out.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
