"""The generated blocks of the README and the docs: numbers a document states about the
repository's own files, made from them so they cannot drift.

Each entry names a document, a block (``<!-- generated: NAME -->`` ...
``<!-- /generated -->``, ``ipclab.findings.fill_blocks``) and what makes its text: the
README's table of committed references (``ipclab.catalogue``), and tables of figures
measured once on this machine, kept as CSV under ``data/measured/`` with the day they were
measured (docs/kubernetes.md's cluster figures). ``python -m ipclab.docblocks`` writes every
block; ``tests/test_docblocks.py`` checks that each is what its source gives. (The
references' own READMEs are filled by their studies' rebuilders.)
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from ipclab import catalogue
from ipclab.findings import fill_blocks
from ipclab.paths import REPO_ROOT

MEASURED = REPO_ROOT / "data" / "measured"


def measured_table(name: str) -> str:
    """A table of ``data/measured/<name>.csv`` (what, measured, measured_on) as Markdown."""
    t = pd.read_csv(MEASURED / f"{name}.csv", dtype=str, keep_default_na=False)
    rows = ["| what | measured | on |", "|---|---|---|"]
    rows += [f"| {r.what} | {r.measured} | {r.measured_on} |" for r in t.itertuples()]
    return "\n".join(rows)


#: document (relative to the repository) -> block name -> its text
BLOCKS: dict[str, dict[str, Callable[[], str]]] = {
    "README.md": {catalogue.BLOCK: catalogue.markdown},
    "docs/kubernetes.md": {"cluster": lambda: measured_table("kubecluster")},
}


def expected(document: str) -> dict[str, str]:
    return {name: make() for name, make in BLOCKS[document].items()}


def write_all() -> list[Path]:
    """Fill every block of every document; the documents written."""
    out = []
    for document in BLOCKS:
        path = REPO_ROOT / document
        fill_blocks(path, expected(document))
        out.append(path)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0]).parse_args(argv)
    for path in write_all():
        print(path.relative_to(REPO_ROOT))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
