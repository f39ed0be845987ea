"""Major GC events of a run: the ``ipclab-gc`` lines every role of an AcmeAir stack logs
(``services/gcwatch.py``), read from the run directory's ``logs/<role>.log`` (the docker
backend's lines begin with the container's timestamp)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

PREFIX = "ipclab-gc "
COLUMNS = ("role", "t", "ms", "collected", "uncollectable")


def read_gc_events(run_dir: str | Path) -> pd.DataFrame:
    """One row per major GC: role, t (unix s at its start), ms (pause), collected,
    uncollectable; sorted by time. Malformed lines (a role killed mid-write) are skipped."""
    rows = []
    for log in sorted(Path(run_dir, "logs").glob("*.log")):
        for line in log.read_text(errors="replace").splitlines():
            head, sep, body = line.partition(PREFIX)
            if not sep or " " in head.strip():  # a docker log line starts with its timestamp
                continue
            try:
                event = json.loads(body)
                rows.append({"role": log.stem, **{k: event[k] for k in COLUMNS[1:]}})
            except (ValueError, KeyError, TypeError):
                continue
    return pd.DataFrame(rows, columns=list(COLUMNS)).sort_values("t", ignore_index=True)
