"""GC events of a run: the ``ipclab-gc`` lines every role of an AcmeAir stack logs (the
Python roles' major collections, ``services/gcwatch.py``; the Californium adapters' JVM
every collection, each a stop-the-world pause, ``GcEvents.java``), read from the run
directory's ``logs/<role>.log`` (the docker backend's lines begin with the container's
timestamp)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

PREFIX = "ipclab-gc "
COLUMNS = ("role", "t", "ms", "collected", "uncollectable", "gc")
REQUIRED = ("t", "ms")  # the others: CPython's counts, or the JVM's collector (else blank)


def read_gc_events(run_dir: str | Path) -> pd.DataFrame:
    """One row per GC: role, t (unix s at its start), ms (pause), collected and
    uncollectable (CPython), gc (the JVM's collector); sorted by time. Malformed lines (a
    role killed mid-write) are skipped."""
    rows = []
    for log in sorted(Path(run_dir, "logs").glob("*.log")):
        for line in log.read_text(errors="replace").splitlines():
            head, sep, body = line.partition(PREFIX)
            if not sep or " " in head.strip():  # a docker log line starts with its timestamp
                continue
            try:
                event = json.loads(body)
                values = {k: event[k] for k in REQUIRED}
                rows.append({"role": log.stem, **{k: event.get(k) for k in COLUMNS[1:]}, **values})
            except (ValueError, KeyError, TypeError):
                continue
    return pd.DataFrame(rows, columns=list(COLUMNS)).sort_values("t", ignore_index=True)
