"""The committed references listed from their own files: the README's "Results already
measured" table, generated so it cannot drift from what is committed.

Per folder of ``data/runs/reference/``: its title (``results/study.json``, else its README's
first heading), how many runs of which kinds it holds, on which backends and runtimes
(the runs' manifests), and when they started. ``python -m ipclab.catalogue`` prints the
table; ``python -m ipclab.docblocks`` writes it into the README's ``references`` block.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ipclab.paths import REPO_ROOT, from_repo
from ipclab.stacks import all_stacks

REFERENCE = Path("data/runs/reference")
BLOCK = "references"  # the README's block (ipclab.docblocks)


def _title(folder: Path) -> str:
    study = folder / "results" / "study.json"
    if study.is_file():
        title = json.loads(study.read_text()).get("title")
        if title:
            return str(title)
    readme = folder / "README.md"
    if readme.is_file():
        for line in readme.read_text().splitlines():
            if line.startswith("# "):
                return line[2:].strip()
    return folder.name


def _runtime(manifest: dict[str, Any]) -> set[str]:
    spec = manifest.get("stack_spec") or {}
    if not spec and manifest.get("stack") in (stacks := all_stacks()):
        spec = stacks[manifest["stack"]].declaration()
    out = {str(spec.get("runtime") or "python")}
    out |= {str(r["runtime"]) for r in (manifest.get("runtimes") or {}).values()
            if isinstance(r, dict) and r.get("runtime")}  # fmt: skip
    return out


def describe(folder: Path) -> dict[str, Any]:
    """One reference folder in numbers, from its manifests."""
    docs = [json.loads(m.read_text()) for m in sorted(folder.rglob("manifest.json"))]
    kinds = Counter(str(d.get("kind") or "load") for d in docs)
    starts = sorted(str(d["started_at"])[:10] for d in docs if d.get("started_at"))
    return {
        "folder": folder.name,
        "title": _title(folder),
        "runs": len(docs),
        "kinds": ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())),
        "backends": ", ".join(sorted({str(d.get("backend") or "?") for d in docs})),
        "runtimes": ", ".join(sorted(set().union(*map(_runtime, docs)) if docs else set())),
        "measured": (starts[0] if starts[0] == starts[-1] else f"{starts[0]} to {starts[-1]}")
        if starts else "not recorded",
    }  # fmt: skip


def markdown(root: str | Path = REFERENCE, link_from: Path = REPO_ROOT) -> str:
    """The table of every committed reference, with links relative to ``link_from``."""
    base = from_repo(root)
    rows = ["| reference | what | runs | backends | runtimes | measured |", "|---" * 6 + "|"]
    for folder in sorted(p for p in base.iterdir() if p.is_dir()):
        d = describe(folder)
        target = folder / "README.md" if (folder / "README.md").is_file() else folder
        link = target.relative_to(link_from).as_posix()
        rows.append(f"| [`{d['folder']}`]({link}) | {d['title']} | {d['runs']} ({d['kinds']}) "
                    f"| {d['backends']} | {d['runtimes']} | {d['measured']} |")  # fmt: skip
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0]).parse_args(argv)
    print(markdown())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
