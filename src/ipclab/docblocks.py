"""The generated blocks of the README and the docs: numbers a document states about the
repository's own files, made from them so they cannot drift.

Each entry names a document, a block (``<!-- generated: NAME -->`` ...
``<!-- /generated -->``, ``ipclab.findings.fill_blocks``) and what makes its text: the
README's table of committed references (``ipclab.catalogue``), and tables of figures
measured once on this machine, kept as CSV under ``data/measured/`` with the day they were
measured (docs/kubernetes.md's cluster figures; docs/acmeair.md's Californium hops before and
after the fix of issue 46, and the evidence of their cause; docs/node.md's shop-grpc-node
beside shop-rest-node and shop-grpc-go; docs/transports.md's bench tables from
``bench/results/`` and the references' ``results/bench.json``, ``ipclab.benchtables``).
``python -m ipclab.docblocks``
writes every block; ``tests/test_docblocks.py`` checks that each is what its source gives.
(The references' own READMEs are filled by their studies' rebuilders.)
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from ipclab import benchtables, catalogue
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


def _ratio_cells(t: pd.DataFrame, col: str, to: str) -> pd.Series:
    """Per round and clients: shop-grpc-node's ``col`` over stack ``to``'s (same round)."""
    wide = t.pivot_table(index=["round", "clients"], columns="stack", values=col)
    return wide["shop-grpc-node"] / wide[to]


def node_sitting(name: str = "shop_node_sitting") -> str:
    """``data/measured/<name>.csv`` (bench/shop_node_sitting.py's rows) as Markdown: per
    phase, clients and stack, the median over the rounds [range] of min, p50, p95 and mean
    ms, req/s, CPU ms per page (the stack's, the gateway's), the stack's threads' run-queue
    delay per page and its CPU %; then shop-grpc-node's ratios to shop-rest-node and
    shop-grpc-go, each taken within a round."""
    t = pd.read_csv(MEASURED / f"{name}.csv")
    rows = [
        "| phase | clients | stack | min ms | p50 ms | p95 ms | mean ms | req/s | CPU ms/page "
        "| gateway CPU ms/page | run-queue ms/page | stack CPU % |",
        "|---|---:|---|---|---|---|---|---|---|---|---|---|",
    ]
    cols = (("min_ms", 1), ("p50_ms", 1), ("p95_ms", 1), ("mean_ms", 1), ("rps", 0),
            ("cpu_ms_per_page", 2), ("gateway_cpu_ms_per_page", 2), ("runq_ms_per_page", 1),
            ("cpu_share", 0))  # fmt: skip
    for (phase, clients, stack), g in t.groupby(["phase", "clients", "stack"], sort=False):
        figures = " | ".join(_spread(g[c], d) for c, d in cols)
        rows.append(f"| {phase} | {clients} | {stack} | {figures} |")
    rows += ["", "| clients | grpc-node / rest-node: p50, req/s, CPU per page "
             "| grpc-node / grpc-go: p50, req/s, CPU per page |", "|---:|---|---|"]  # fmt: skip
    warm = t[t.phase == "warm"]
    for clients in sorted(warm.clients.unique()):
        c = warm[warm.clients == clients]
        sides = [
            ", ".join(_spread(_ratio_cells(c, col, to), 2) for col in ("p50_ms", "rps",
                      "cpu_ms_per_page"))
            for to in ("shop-rest-node", "shop-grpc-go")
        ]  # fmt: skip
        rows.append(f"| {clients} | {sides[0]} | {sides[1]} |")
    days = ", ".join(sorted(t.measured_on.unique()))
    rows.append(
        f"\nMeasured {days} in one sitting, {t['round'].max()} warm rounds (cells interleaved, "
        f"the order rotated each round), {t.n.min()}-{t.n.max()} pages a cell; the host's CPU "
        f"{t.host_busy.min():.0f}-{t.host_busy.max():.0f} % busy of 200, load average "
        f"{t.load_average.min():.1f}-{t.load_average.max():.1f} (a shared machine: compare "
        "the stacks within a round)."
    )
    return "\n".join(rows)


def _range(values: pd.Series) -> str:
    lo, hi = f"{values.min():.0f}", f"{values.max():.0f}"
    return lo if lo == hi else f"{lo}-{hi}"


def node_sitting_rounds(name: str = "shop_node_sitting_loaded", clients: int = 50) -> str:
    """``data/measured/<name>.csv`` (bench/shop_node_sitting.py's rows) round by round at
    ``clients`` clients: each stack's req/s, mean ms, stack CPU %, CPU and run-queue ms per
    page (the stack's, the gateway's) beside the round's load average."""
    t = pd.read_csv(MEASURED / f"{name}.csv")
    t = t[(t.phase == "warm") & (t.clients == clients)]
    rows = [
        "| round | load average | stack | req/s | mean ms | stack CPU % | CPU ms/page (gateway) "
        "| run-queue ms/page (gateway) |",
        "|---:|---|---|---:|---:|---:|---|---|",
    ]
    for (rnd, stack), g in t.groupby(["round", "stack"], sort=False):
        r = g.iloc[0]
        rows.append(
            f"| {rnd} | {r.load_average:.1f} | {stack} | {r.rps:.0f} | {r.mean_ms:.0f} "
            f"| {r.cpu_share:.0f} | {r.cpu_ms_per_page:.2f} ({r.gateway_cpu_ms_per_page:.2f}) "
            f"| {r.runq_ms_per_page:.1f} ({r.gateway_runq_ms_per_page:.1f}) |"
        )
    rows.append(
        f"\nMeasured {', '.join(sorted(t.measured_on.unique()))} in one sitting, {clients} "
        f"clients, cells interleaved, as the others' load rose; the host's CPU "
        f"{_range(t.host_busy)} % busy of 200."
    )
    return "\n".join(rows)


def node_first_ab(name: str = "shop_node_ab_first") -> str:
    """``data/measured/<name>.csv`` (the first A/B's run summaries) as Markdown: each run's
    req/s, its stack's CPU % and CPU ms per request, and the host's CPU and load."""
    t = pd.read_csv(MEASURED / f"{name}.csv")
    rows = [
        "| stack | req/s | mean ms | stack CPU % (gateway) | CPU ms/request | host CPU % "
        "(others') | load average |",
        "|---|---:|---:|---|---:|---|---:|",
    ]
    for r in t.itertuples():
        rows.append(
            f"| {r.stack} | {r.rps:.0f} | {r.mean_ms:.0f} | {r.stack_cpu_percent:.0f} "
            f"({r.gateway_cpu_percent:.0f}) | {r.cpu_ms_per_request:.2f} | "
            f"{r.host_cpu_percent:.0f} ({r.other_cpu_percent:.0f}) | {r.load_average:.1f} |"
        )
    per = t.set_index([t.groupby("stack").cumcount() + 1, "stack"]).cpu_ms_per_request
    ratio = [
        per[(r, "shop-grpc-node")] / per[(r, "shop-rest-node")]
        for r in sorted(set(per.index.get_level_values(0)))
    ]
    rows.append(
        f"\nThe host's CPU {t.host_cpu_percent.min():.0f}-{t.host_cpu_percent.max():.0f} % "
        f"busy of 200 in every run (others' {t.other_cpu_percent.min():.0f}-"
        f"{t.other_cpu_percent.max():.0f} %), load average {t.load_average.min():.1f}-"
        f"{t.load_average.max():.1f}; the stacks' CPU {t.stack_cpu_percent.min():.0f}-"
        f"{t.stack_cpu_percent.max():.0f} %; shop-grpc-node's CPU per request over "
        f"shop-rest-node's: {', '.join(f'{x:.1f}' for x in ratio)} (round 1, 2)."
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
    "docs/transports.md": {**benchtables.TRANSPORTS_MD, "californium-pairs": pairs_before_after},
    "docs/node.md": {
        "node-sitting": node_sitting,
        "node-sitting-loaded": node_sitting_rounds,
        "node-first-ab": node_first_ab,
    },
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
