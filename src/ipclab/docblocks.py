"""The generated blocks of the README and the docs: numbers a document states about the
repository's own files, made from them so they cannot drift.

Each entry names a document, a block (``<!-- generated: NAME -->`` ...
``<!-- /generated -->``, ``ipclab.findings.fill_blocks``) and what makes its text: the
README's table of committed references (``ipclab.catalogue``), and tables of figures
measured once on this machine, kept as CSV under ``data/measured/`` with the day they were
measured (docs/kubernetes.md's cluster figures; docs/acmeair.md's Californium hops before and
after the fix of issue 46, and the evidence of their cause). ``python -m ipclab.docblocks``
writes every block; ``tests/test_docblocks.py`` checks that each is what its source gives.
(The references' own READMEs are filled by their studies' rebuilders.)
"""

from __future__ import annotations

import argparse
import json
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


def _spread(values: pd.Series, digits: int) -> str:
    """The median of a cell's rounds, with their range when there are several."""
    mid = f"{values.median():,.{digits}f}"
    if len(values) < 2:
        return mid
    return f"{mid} [{values.min():,.{digits}f}, {values.max():,.{digits}f}]"


def before_after_table(name: str) -> str:
    """``data/measured/<name>.csv`` (bench/californium_hops.py's rows: setting ``before`` or
    ``after``, round, hop, method, clients, min/p50/p95 ms, req/s) as one Markdown row per
    hop, method and clients: each figure's median over the rounds [range], before -> after."""
    t = pd.read_csv(MEASURED / f"{name}.csv")
    rows = [
        "| hop | request | clients | min ms | p50 ms | p95 ms | req/s |",
        "|---|---|---:|---|---|---|---|",
    ]
    order = {h: i for i, h in enumerate(("service", "ingress", "egress", "gateway"))}
    cells = t.groupby(["clients", "hop", "method"], sort=False)
    for (clients, hop, method), g in sorted(cells, key=lambda c: (c[0][0], order[c[0][1]])):
        side = {s: g[g.setting == s] for s in ("before", "after")}
        figures = [
            " -> ".join(_spread(side[s][col], d) for s in side)
            for col, d in (("min_ms", 1), ("p50_ms", 1), ("p95_ms", 1), ("rps", 0))
        ]
        rows.append(f"| {hop} | {method} | {clients} | " + " | ".join(figures) + " |")
    days = ", ".join(sorted(t.measured_on.unique()))
    loads = f"{t.load_average.min():.1f}-{t.load_average.max():.1f}"
    rows.append(
        f"\nMeasured {days}, {t['round'].max()} rounds of each side alternating, "
        f"load average {loads} (a shared machine: compare the sides, not the days)."
    )
    return "\n".join(rows)


PAIRS = REPO_ROOT / "bench" / "results" / "transports-coap-pairs-nodelay"


def pairs_before_after(folder: Path = PAIRS) -> str:
    """The adapter-pair rows of ``bench/transports.py --pairs`` runs saved as
    ``<before|after>-<round>.json`` in ``folder``, one round each: per pair, its sequential
    p50, req/s with 32 calls in flight and CPU per call, median over the rounds [range],
    before -> after."""
    runs = {}
    for path in sorted(folder.glob("*.json")):
        side, _, rnd = path.stem.partition("-")
        doc = json.loads(path.read_text())
        for row in doc["rows"]:
            runs[(side, int(rnd), row["name"])] = row | {"load": doc["load_avg_before"][0]}
    t = pd.DataFrame([{**v, "side": k[0], "round": k[1]} for k, v in runs.items()])
    rows = ["| pair | p50 us, one call at a time | req/s, 32 in flight | CPU us per call |",
            "|---|---|---|---|"]  # fmt: skip
    for name in ("pair-none", "pair-aiocoap", "pair-californium"):
        g = t[t.name == name]
        figures = [
            " -> ".join(_spread(g[g.side == s][col], 0) for s in ("before", "after"))
            for col in ("seq_p50_us", "rps", "cpu_us_per_call")
        ]
        rows.append(f"| {name} | " + " | ".join(figures) + " |")
    rows.append(
        f"\n{t['round'].max()} rounds of each side alternating, load average "
        f"{t.load.min():.1f}-{t.load.max():.1f} (a shared machine: compare the sides)."
    )
    return "\n".join(rows)


REFERENCES = REPO_ROOT / "data" / "runs" / "reference"


def californium_reference() -> str:
    """A reference's Californium cells per added delay: as first measured
    (``data/measured/californium_reference_before.csv``: its reference, stack, the stack
    beside it and the cells before the fix) and as the reference holds them now, beside the
    other stack's (the reference's ``results/runs.csv``: means over runs)."""
    before = pd.read_csv(MEASURED / "californium_reference_before.csv")
    first = before.iloc[0]
    runs = pd.read_csv(REFERENCES / first["reference"] / "results" / "runs.csv")
    cells = runs.groupby(["stack", "delay_ms"]).agg(
        runs=("rps", "size"), mean_ms=("mean_ms", "mean"), rps=("rps", "mean")
    )
    rows = [
        "| added delay | Californium before the fix: mean ms, req/s (runs) "
        "| Californium now | aiocoap (Python adapters) |",
        "|---|---|---|---|",
    ]
    for b in before.itertuples():
        cal, aio = cells.loc[(b.stack, b.delay_ms)], cells.loc[(b.beside, b.delay_ms)]
        rows.append(
            f"| {b.delay_ms:g} ms | {b.mean_ms:.1f}, {b.rps:.0f} ({b.runs}, {b.revision}) "
            f"| {cal.mean_ms:.1f}, {cal.rps:.0f} ({cal.runs:.0f}) "
            f"| {aio.mean_ms:.1f}, {aio.rps:.0f} ({aio.runs:.0f}) |"
        )
    return "\n".join(rows)


#: document (relative to the repository) -> block name -> its text
BLOCKS: dict[str, dict[str, Callable[[], str]]] = {
    "README.md": {catalogue.BLOCK: catalogue.markdown},
    "docs/kubernetes.md": {"cluster": lambda: measured_table("kubecluster")},
    "docs/acmeair.md": {
        "californium-hops": lambda: before_after_table("californium_hops"),
        "californium-evidence": lambda: measured_table("californium_evidence"),
        "californium-reference": californium_reference,
    },
    "docs/transports.md": {"californium-pairs": pairs_before_after},
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
