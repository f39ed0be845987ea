"""The JVM's heap as the JVM itself reports it: its unified GC log.

Every payload run on the JVM starts it with :data:`ipclab.studies.buono.stacks.GC_LOG`: the
``gc``, ``gc+init``, ``gc+heap`` and ``gc+metaspace`` lines on stderr, each decorated with
the wall clock in ms (``timemillis``, the clock ``memory.csv`` keeps), the JVM's uptime and
its tags. The backends keep stderr as the role's log (``logs/<role>.log``, which committed
references do not keep), so :func:`record` parses it into the run directory as it ends:
``heap.csv``, one row per collection and role (plot-ready), and a summary per role for the
run's ``summary.json`` (``heap``).

Per collection: the heap's used and committed bytes before and after it, summed over the
generations where the collector prints them in K (Serial's ``DefNew`` and ``Tenured``,
Parallel's ``PSYoungGen`` and ``ParOldGen``: ``source`` ``generations``), else from the
collection's summary line in M (G1, or a young collection that turned into a full one:
``source`` ``summary``); the metaspace after it; the pause and its cause. The committed heap
is what the JVM has taken from the system for its heap ("requested (allocated)", the
thesis's B16c); the used heap before a collection is the peak the heap held since the
previous one. Between collections the log says nothing: a JVM killed by the kernel
(``OOMKilled``) is read up to its last collection, so its peaks are lower bounds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

HEAP_CSV = "heap.csv"
COLUMNS = (
    "role", "gc", "t", "uptime_s", "pause", "cause", "pause_ms",
    "used_before_bytes", "used_after_bytes", "committed_before_bytes", "committed_after_bytes",
    "metaspace_used_bytes", "metaspace_committed_bytes", "source",
)  # fmt: skip
_UNITS = {"B": 1, "K": 2**10, "M": 2**20, "G": 2**30}
_SIZE = r"(\d+)([BKMG])"
# a line of the log, after whatever the backend put before it (docker's timestamp)
_LINE = re.compile(r"\[(\d+)ms\]\[(\d+)ms\]\[([a-z0-9,+]+) *\] (.*)$")
_GC_ID = re.compile(r"^GC\((\d+)\) (.*)$")
_SUMMARY = re.compile(rf"^(Pause \w+)((?: \([^)]*\))*) {_SIZE}->{_SIZE}\({_SIZE}\) ([0-9.]+)ms$")
_GENERATION = re.compile(r"^(\w+): (\d+)K\((\d+)K\)->(\d+)K\((\d+)K\)")
_INIT = {
    "Memory": "memory_bytes",  # what the JVM sized itself from (a container's limit)
    "Heap Min Capacity": "heap_min_bytes",
    "Heap Initial Capacity": "heap_initial_bytes",
    "Heap Max Capacity": "heap_max_bytes",
}
_INIT_LINE = re.compile(rf"^({'|'.join(_INIT)}): {_SIZE}$")


def _bytes(number: str, unit: str) -> int:
    return int(number) * _UNITS[unit]


def _jvm_line(jvm: dict[str, Any], tags: str, message: str) -> None:
    """A line about the JVM rather than one collection: its collector and heap sizing."""
    if tags == "gc" and message.startswith("Using "):
        jvm["collector"] = message.removeprefix("Using ").strip()
    elif tags == "gc,init" and (m := _INIT_LINE.match(message)):
        jvm[_INIT[m[1]]] = _bytes(m[2], m[3])


def _collection_line(gc: dict[str, Any], tags: str, message: str) -> None:
    """One line of a collection: a generation's, the metaspace's or the summary."""
    if tags == "gc,heap" and (m := _GENERATION.match(message)):
        gc["generations"][m[1]] = tuple(int(v) * 2**10 for v in m.groups()[1:])
    elif tags == "gc,metaspace" and (m := _GENERATION.match(message)):
        gc["metaspace"] = (int(m[4]) * 2**10, int(m[5]) * 2**10)
    elif tags == "gc" and (m := _SUMMARY.match(message)):
        causes = re.findall(r"\(([^)]*)\)", m[2])
        gc["summary"] = {
            "pause": m[1], "cause": "; ".join(causes), "pause_ms": float(m[9]),
            "sizes": (_bytes(m[3], m[4]), _bytes(m[5], m[6]), _bytes(m[7], m[8])),
        }  # fmt: skip


def _row(role: str, gc: dict[str, Any]) -> dict[str, Any] | None:
    summary, gens = gc.get("summary"), gc["generations"]
    if gens:
        before, cbefore, after, cafter = (sum(g[i] for g in gens.values()) for i in range(4))
        source = "generations"
    elif summary:
        before, after, cafter = summary["sizes"]
        cbefore, source = None, "summary"
    else:
        return None  # a collection the log holds no sizes of (cut by a kill)
    meta = gc.get("metaspace", (None, None))
    return {
        "role": role, "gc": gc["gc"], "t": gc["t"], "uptime_s": gc["uptime_s"],
        "pause": summary["pause"] if summary else None,
        "cause": summary["cause"] if summary else None,
        "pause_ms": summary["pause_ms"] if summary else None,
        "used_before_bytes": before, "used_after_bytes": after,
        "committed_before_bytes": cbefore, "committed_after_bytes": cafter,
        "metaspace_used_bytes": meta[0], "metaspace_committed_bytes": meta[1], "source": source,
    }  # fmt: skip


def parse(lines: Iterable[str], role: str = "") -> tuple[dict[str, Any], pd.DataFrame]:
    """A role's log: what the JVM says of its heap at start (collector, memory, initial and
    maximum heap) and one row per collection (:data:`COLUMNS`, by collection). Lines that
    are not the GC log's (the service's own, or one cut by a kill) are skipped. The first
    JVM's only: a log that goes on with a later JVM (a pod's container the kubelet restarted
    after the kernel killed it, whose log files the kubernetes backend keeps together) ends
    where that one says which collector it uses."""
    jvm: dict[str, Any] = {}
    gcs: dict[int, dict[str, Any]] = {}
    for line in lines:
        m = _LINE.search(line)
        if m is None:
            continue
        t_ms, uptime_ms, tags, message = int(m[1]), int(m[2]), m[3], m[4].rstrip()
        if "collector" in jvm and tags == "gc" and message.startswith("Using "):
            break  # the next JVM's start: a restarted container's log follows the ended one's
        collection = _GC_ID.match(message)
        if collection is None:
            _jvm_line(jvm, tags, message)
            continue
        n = int(collection[1])
        gc = gcs.setdefault(
            n, {"gc": n, "t": t_ms / 1000, "uptime_s": uptime_ms / 1000, "generations": {}}
        )
        _collection_line(gc, tags, collection[2])
    rows = [r for n in sorted(gcs) if (r := _row(role, gcs[n])) is not None]
    return jvm, pd.DataFrame(rows, columns=list(COLUMNS))


def summarise(jvm: Mapping[str, Any], rows: pd.DataFrame) -> dict[str, Any]:
    """A role's heap over the run: how it was sized, its collections, and the peaks of its
    used heap (before a collection) and of its committed heap (from its initial size on)."""
    committed = [jvm.get("heap_initial_bytes")]
    committed += [*rows["committed_before_bytes"].dropna(), *rows["committed_after_bytes"].dropna()]
    known = [int(c) for c in committed if c is not None and pd.notna(c)]
    used = rows["used_before_bytes"].dropna()
    return {
        **{k: jvm.get(k) for k in ("collector", *_INIT.values())},
        "collections": len(rows),
        "full_collections": int((rows["pause"] == "Pause Full").sum()),
        "used_peak_bytes": int(used.max()) if len(used) else None,
        "committed_peak_bytes": max(known) if known else None,
        "committed_last_bytes": int(rows["committed_after_bytes"].iloc[-1]) if len(rows) else None,
        "last_collection_t": float(rows["t"].iloc[-1]) if len(rows) else None,
    }


def record(run_dir: Path, logs_dir: Path | None = None) -> dict[str, Any]:
    """Parse each role's GC log under ``logs_dir`` (``<run_dir>/logs``) into
    ``<run_dir>/heap.csv`` (every role's collections, by time); return each role's
    :func:`summarise`. Roles whose log holds no GC log (a Python role) are left out; with
    none, nothing is written and the answer is empty."""
    folder = Path(logs_dir) if logs_dir is not None else Path(run_dir) / "logs"
    frames, out = [], {}
    for log in sorted(folder.glob("*.log")) if folder.is_dir() else []:
        jvm, rows = parse(log.read_text(errors="replace").splitlines(), log.stem)
        if not jvm and rows.empty:
            continue
        out[log.stem] = summarise(jvm, rows)
        frames.append(rows)
    if out:
        every = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)
        every.sort_values(["t", "role", "gc"], kind="stable").to_csv(
            Path(run_dir) / HEAP_CSV, index=False
        )
    return out


def read(run_dir: Path) -> pd.DataFrame:
    """A run's ``heap.csv`` (empty, with :data:`COLUMNS`, where the run has none)."""
    path = Path(run_dir) / HEAP_CSV
    return pd.read_csv(path) if path.exists() else pd.DataFrame(columns=list(COLUMNS))
