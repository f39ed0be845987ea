"""The transport bench at another revision beside the working tree, in one sitting
(``bench/transports.py --against REV``): a cost that moved between two revisions of the
code, measured so that the machine's drift cannot be taken for it.

The revision is checked out into a temporary worktree (``git worktree add --detach``,
removed afterwards, also on Ctrl-C); each side runs its own ``bench/transports.py`` in its
own process with its own tree first on ``PYTHONPATH`` (the installed packages, the broker
and the machine are the same for both). Rounds alternate the order (A B, B A, ...) so a
slow drift falls on both sides alike, and every ratio compares the two sides of one round:
per candidate, the median over rounds of the per-round ratio working tree / revision of the
CPU per call (client, server and broker together: the figure least moved by other load)
and of req/s, with the rounds' range beside it.

    python bench/transports.py --against c5fb113 --only floor,amqp --rounds 5
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
FORWARDED = ("requests", "inflight", "seconds")  # the options both revisions' benches take


@contextlib.contextmanager
def checkout(rev: str) -> Iterator[Path]:
    """``rev`` in a temporary worktree, with a folder to put first on ``PYTHONPATH``
    (``<tree>/.pyshim``: links to its ``src/ipclab`` and ``services``)."""
    parent = Path(tempfile.mkdtemp(prefix="ipclab-against-"))
    tree = parent / "tree"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(tree), rev],
                   check=True)  # fmt: skip
    try:
        shim(tree)
        yield tree
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)],
                       check=False)  # fmt: skip
        shutil.rmtree(parent, ignore_errors=True)


def shim(tree: Path) -> Path:
    """``tree/.pyshim``: ``ipclab`` and ``ipclab_services`` as that tree has them."""
    folder = tree / ".pyshim"
    folder.mkdir(exist_ok=True)
    for name, target in (
        ("ipclab", tree / "src" / "ipclab"),
        ("ipclab_services", tree / "services"),
    ):
        link = folder / name
        if not link.is_symlink():
            link.symlink_to(target)
    return folder


def run_side(
    tree: Path, only: str, options: dict[str, Any], out: Path, bench: Path | None = None
) -> dict[str, Any]:
    """One round of a bench over ``tree``'s code, the figures it wrote: ``tree``'s own bench
    by default, or ``bench`` (a folder holding ``transports.py``: this tree's, so that two
    revisions' services are measured by one bench)."""
    bench = bench or tree / "bench"
    cmd = [sys.executable, str(bench / "transports.py"), "--only", only,
           "--rounds", "1", "--json", str(out)]  # fmt: skip
    for key in FORWARDED:
        if options.get(key) is not None:
            cmd += [f"--{key}", str(options[key])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(shim(tree)), str(bench)])}
    subprocess.run(cmd, cwd=tree, env=env, check=False, stdout=subprocess.DEVNULL)
    if not out.is_file():
        raise RuntimeError(f"{tree}: the bench wrote no figures ({' '.join(cmd)})")
    return json.loads(out.read_text())


def ratios(
    rounds: Sequence[dict[str, dict[str, Any]]], names: Sequence[str]
) -> list[dict[str, Any]]:
    """Per candidate: the per-round ratios (working tree / revision) of CPU per call and
    req/s, their median and range, and both sides' medians."""
    out = []
    for name in names:
        pairs = [(r["tree"][name], r["rev"][name]) for r in rounds
                 if name in r["tree"] and name in r["rev"]]  # fmt: skip
        row: dict[str, Any] = {"name": name, "rounds": len(pairs)}
        for key in ("cpu_us_per_call", "rps"):
            values = [a[key] / b[key] for a, b in pairs if a.get(key) and b.get(key)]
            row[f"{key}_ratio"] = float(np.median(values)) if values else None
            row[f"{key}_range"] = (min(values), max(values)) if values else None
            row["tree_" + key] = float(
                np.median([a[key] for a, _ in pairs if a.get(key)] or [np.nan])
            )
            row["rev_" + key] = float(
                np.median([b[key] for _, b in pairs if b.get(key)] or [np.nan])
            )
        out.append(row)
    return out


def _fmt(v: float | None, spec: str) -> str:
    return "-" if v is None or v != v else format(v, spec)


def print_ratios(rows: Sequence[dict[str, Any]], rev: str) -> None:
    head = (
        f"{'candidate':<13} {'rounds':>6} {'cpu us/call':>11} {'at ' + rev[:10]:>13} "
        f"{'ratio':>6} {'range':>13} {'req/s':>8} {'at rev':>8} {'ratio':>6} {'range':>13}"
    )
    print(f"\n# working tree / {rev}: medians of per-round ratios (rounds alternate the order)")
    print(head + "\n" + "-" * len(head))
    for r in rows:
        cr, rr = r["cpu_us_per_call_range"], r["rps_range"]
        print(
            f"{r['name']:<13} {r['rounds']:>6} {_fmt(r['tree_cpu_us_per_call'], '.0f'):>11} "
            f"{_fmt(r['rev_cpu_us_per_call'], '.0f'):>13} "
            f"{_fmt(r['cpu_us_per_call_ratio'], '.3f'):>6} "
            f"{(f'{cr[0]:.3f}-{cr[1]:.3f}' if cr else '-'):>13} {_fmt(r['tree_rps'], '.0f'):>8} "
            f"{_fmt(r['rev_rps'], '.0f'):>8} {_fmt(r['rps_ratio'], '.3f'):>6} "
            f"{(f'{rr[0]:.3f}-{rr[1]:.3f}' if rr else '-'):>13}"
        )


def against(
    rev: str,
    only: str,
    rounds: int,
    options: dict[str, Any],
    json_out: Path | None = None,
    base: Path = REPO,
) -> list[dict[str, Any]]:
    """``rounds`` rounds of both sides (``base``, the working tree by default, and ``rev``),
    interleaved; prints and returns the ratios."""
    names = [n for n in only.split(",") if n]
    if not names:
        raise SystemExit("--against needs --only (the candidates both revisions know)")
    done: list[dict[str, dict[str, Any]]] = []
    with checkout(rev) as tree, tempfile.TemporaryDirectory() as tmp:
        for k in range(rounds):
            order = [("tree", base), ("rev", tree)]
            if k % 2:
                order.reverse()
            figures: dict[str, dict[str, Any]] = {}
            for side, root in order:
                doc = run_side(root, only, options, Path(tmp) / f"{side}-{k}.json")
                figures[side] = {r["name"]: r for r in doc["rows"] if "error" not in r}
            done.append(figures)
            print(f"# round {k + 1} of {rounds}: " + ", ".join(
                f"{n} {figures['tree'].get(n, {}).get('cpu_us_per_call')}/"
                f"{figures['rev'].get(n, {}).get('cpu_us_per_call')} us"
                for n in names), flush=True)  # fmt: skip
    rows = ratios(done, names)
    print_ratios(rows, rev)
    if json_out is not None:
        json_out.write_text(json.dumps({"against": rev, "rounds": done, "ratios": rows}, indent=2))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Two revisions, neither the working tree: ``python bench/against.py A B --only ...``
    (A's figures over B's; each in a temporary worktree, benched by its own code)."""
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--only", required=True)
    ap.add_argument("--rounds", type=int, default=4)
    for key in FORWARDED:
        ap.add_argument(f"--{key}", type=float if key == "seconds" else int)
    args = ap.parse_args(argv)
    with checkout(args.a) as tree:
        options = {k: getattr(args, k) for k in FORWARDED}
        against(args.b, args.only, args.rounds, options, base=tree)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
