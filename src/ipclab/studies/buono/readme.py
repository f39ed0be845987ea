"""The Buono reference README's generated blocks for the runtime factor (issue 31): the memory
cells per runtime, heap policy and encoder, the processing times per runtime beside the
thesis's 25.1 %, and the claims whose verdict changes between Python and the JVM, each
computed from the analysis (:class:`ipclab.studies.buono.experiment.Analysis`), so the README
cannot drift from the results (``ipclab.findings.fill_blocks``)."""

from __future__ import annotations

from functools import partial
from typing import Any

import pandas as pd

from ipclab.stats import interval_text
from ipclab.studies.buono.stacks import THESIS_HEAP

METRICS = {
    "server_ms": "data service, gunzip + deserialisation (`server_ms`)",
    "deser_ms": "deserialisation alone (`deser_ms`)",
    "response_ms": "client's response time",
}


#: ``v [low, high]``, every number as it is (``nan`` included)
_interval = partial(interval_text, missing=None, no_interval=None)


def _outcome(g: pd.DataFrame) -> str:
    """A cell's runs: how many completed, how many ran out of memory and how, the peak."""
    parts = [f"{int(g['completed'].sum())}/{len(g)} completed"]
    full = int(g["heap_exhausted"].sum())
    kernel = int(g["kernel_killed"].fillna(False).astype(bool).sum())
    if full:
        parts.append(f"{full} ended by a full heap")
    if kernel:
        parts.append(f"{kernel} killed by the kernel")
    text = ", ".join(parts) + f", peak {g['peak_mb'].max():.0f} MiB"
    committed = g["heap_committed_mb"].dropna() if "heap_committed_mb" in g else pd.Series()
    if len(committed):  # the JVM's GC log (a killed JVM's up to its last collection)
        text += f", heap committed {committed.median():.0f} MiB (median)"
    return text


def memory_markdown(memory: pd.DataFrame) -> str:
    """Per runtime, heap policy and encoder, each count's outcome over its runs."""
    rows = memory[~memory["traced"]]
    counts = sorted(rows["count"].unique())
    head = "| runtime | heap | format (encoder) | " + " | ".join(f"{c:,} users" for c in counts)
    lines = [head + " |", "|---|---|---|" + "---|" * len(counts)]
    for (runtime, heap, fmt, lib), g in rows.groupby(["runtime", "heap", "fmt", "json_library"]):
        name = f"JSON ({lib})" if fmt == "json" else "Protobuf"
        cells = [_outcome(g[g["count"] == c]) if (g["count"] == c).any() else "-" for c in counts]
        judged = " (the thesis's, judged)" if heap == THESIS_HEAP else ""
        heap_text = f"{heap}{judged}" if runtime == "jvm" else "no cap"
        lines.append(f"| {runtime} | {heap_text} | {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def processing_markdown(processing: pd.DataFrame) -> str:
    """Fig. 28's cells per runtime: JSON against Protobuf, J - P and % faster."""
    lines = [
        "| runtime | count | time | runs | JSON ms | Protobuf ms | J - P ms | % faster |",
        "|---|---|---|---|---|---|---|---|",
    ]
    ordered = processing.sort_values(["runtime", "count"], ascending=[False, False])
    for _, r in ordered.iterrows():
        number = ".3f" if r["json_ms"] < 0.1 else ".2f"
        lines.append(
            f"| {r['runtime']} | {r['count']} | {METRICS.get(r['metric'], r['metric'])} "
            f"| {r['runs']} "
            f"| {_interval(r['json_ms'], r['json_low'], r['json_high'], number)} "
            f"| {_interval(r['protobuf_ms'], r['protobuf_low'], r['protobuf_high'], number)} "
            f"| {_interval(r['difference_ms'], r['difference_low'], r['difference_high'], number)} "
            f"| {_interval(r['faster_pct'], r['faster_pct_low'], r['faster_pct_high'], '.1f')} |"
        )
    return "\n".join(lines)


def changes_markdown(runtimes: pd.DataFrame) -> str:
    """The claims whose verdict differs between Python (orjson) and the JVM (Jackson)."""
    changed = runtimes[runtimes["changes"].astype(bool)]
    head = (
        f"{len(changed)} of {len(runtimes)} claim rows change verdict between Python and the "
        "JVM (`results/runtimes.csv`):"
    )
    if changed.empty:
        return f"{head} none."
    lines = [head, "", "| claim | comparison | Python | JVM |", "|---|---|---|---|"]
    for _, r in changed.iterrows():
        lines.append(f"| {r['claim_id']} | {r['comparison']} | {r['python']} | {r['jvm']} |")
    return "\n".join(lines)


def jvm_blocks(a: Any) -> dict[str, str]:
    """The README's blocks for the runtime factor, from an analysis with JVM runs."""
    return {
        "jvm-memory": memory_markdown(a.memory),
        "jvm-processing": processing_markdown(a.processing),
        "jvm-changes": changes_markdown(a.runtimes),
    }
