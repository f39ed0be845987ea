"""Each committed reference's transport costs, measured on the code that made it
(issue 46: a cost that moves under the references must be seen).

For every folder of ``data/runs/reference/``, the git revision most of its runs name
(their manifests) is checked out into a temporary worktree, and this tree's transport bench
measures that revision's services (``bench/against.py``'s ``run_side`` with this tree's
bench: one bench for every revision, so a fix to the bench itself, such as 9a7e366's double
count of the broker's CPU, cannot pass for a change of the system). All references in one
sitting, revisions in a seeded order; the figures go to ``<reference>/results/bench.json``
and a table to stdout. Revisions this repository does not hold are skipped, saying so.

    python bench/reference_costs.py [--only floor,rest,grpc,amqp] [--rounds 1]
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import against

REFERENCE = against.REPO / "data" / "runs" / "reference"


def revision(folder: Path) -> str | None:
    """The revision most of the folder's runs were made at (their manifests)."""
    counts: collections.Counter[str] = collections.Counter()
    for m in folder.rglob("manifest.json"):
        git = (json.loads(m.read_text()).get("environment") or {}).get("git") or {}
        if git.get("revision"):
            counts[str(git["revision"])] += 1
    return counts.most_common(1)[0][0] if counts else None


def known(rev: str) -> bool:
    return subprocess.run(["git", "-C", str(against.REPO), "cat-file", "-e", f"{rev}^{{commit}}"],
                          capture_output=True).returncode == 0  # fmt: skip


def measure(rev: str, only: str, options: dict[str, Any]) -> dict[str, Any]:
    with against.checkout(rev) as tree, tempfile.TemporaryDirectory() as tmp:
        return against.run_side(tree, only, options, Path(tmp) / "bench.json",
                                bench=against.REPO / "bench")  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--only", default="floor,rest,grpc,amqp")
    ap.add_argument("--seed", type=int, default=46)
    for key in against.FORWARDED:
        ap.add_argument(f"--{key}", type=float if key == "seconds" else int)
    args = ap.parse_args()
    options = {k: getattr(args, k) for k in against.FORWARDED}
    folders = sorted(p for p in REFERENCE.iterdir() if (p / "results").is_dir())
    for p in sorted(set(REFERENCE.iterdir()) - set(folders)):
        print(f"{p.name}: no results/ (runs read by another reference); skipped", flush=True)
    random.Random(args.seed).shuffle(folders)
    for folder in folders:
        rev = revision(folder)
        if rev is None or not known(rev):
            print(f"{folder.name}: revision {rev} not in this repository; skipped", flush=True)
            continue
        try:
            doc = measure(rev, args.only, options)
        except RuntimeError as e:  # one revision's failure must not lose the others' figures
            print(f"{folder.name} @ {rev[:10]}: not measured: {e}", flush=True)
            continue
        doc["reference"], doc["revision"], doc["bench"] = folder.name, rev, "this tree's"
        (folder / "results" / "bench.json").write_text(json.dumps(doc, indent=2) + "\n")
        rows = {r["name"]: r for r in doc["rows"] if "error" not in r}
        print(f"{folder.name} @ {rev[:10]}: " + ", ".join(
            f"{n} {rows[n]['cpu_us_per_call']} us/call" for n in args.only.split(",") if n in rows
        ), flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
