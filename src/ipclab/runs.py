"""Run directories: create, write as the run goes, and read back.

See docs/run-directory.md for the layout. Writers flush as they go so that a killed run
leaves a readable directory whose manifest says ``running``.
"""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import json
import os
import secrets
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ipclab import runstore
from ipclab.atomic import write_json_atomic
from ipclab.environment import describe_environment

SCHEMA = 1
DEFAULT_ROOT = Path(os.environ.get("IPCLAB_RUNS", "data/runs"))

REQUEST_COLUMNS = ("t", "name", "latency_ms", "bytes", "status", "ok", "error")
#: resources.csv: local rows fill pid, docker rows container, status, memory and network;
#: one ``host`` row per second holds the whole machine's busy CPU and the VM's steal time
RESOURCE_COLUMNS = (
    "t",
    "component",
    "kind",
    "pid",
    "container",
    "status",
    "cpu_percent",
    "rss_bytes",
    "mem_usage_bytes",
    "mem_limit_bytes",
    "net_rx_bytes",
    "net_tx_bytes",
    "net_rx_packets",
    "net_tx_packets",
    "steal_percent",
)


def utcnow() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


_write_json_atomic = write_json_atomic


def new_run_dir(root: Path | None, label: str) -> Path:
    """A fresh directory ``<root>/<UTC time>-<label>-<random>``."""
    root = Path(root) if root is not None else DEFAULT_ROOT
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    path = root / f"{stamp}-{label}-{secrets.token_hex(2)}"
    path.mkdir(parents=True, exist_ok=False)
    return path


class RunWriter:
    """Owns one run directory while the run goes on. Its manifest records what made the run
    (``runstore.keyed``): the module that writes it (``writer``; by default the caller's),
    its own measuring files and its key."""

    def __init__(
        self,
        path: Path,
        kind: str,
        parameters: Mapping[str, Any],
        *,
        writer: str | None = None,
        **fields: Any,
    ):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        made = runstore.keyed(
            kind,
            parameters,
            writer=writer or runstore.caller_module(),
            stack=fields.get("stack"),
            stack_spec=fields.get("stack_spec"),
            backend=fields.get("backend"),
        )
        self.manifest: dict[str, Any] = {
            "schema": SCHEMA,
            "kind": kind,
            "status": "running",
            **fields,
            **made,
            "parameters": dict(parameters),
            "environment": describe_environment(),
            "started_at": utcnow(),
            "ended_at": None,
        }
        _write_json_atomic(self.path / "manifest.json", self.manifest)
        self._events_lock = threading.Lock()

    def event(self, what: str, **data: Any) -> None:
        line = json.dumps({"t": time.time(), "event": what, **data}, default=str)
        with self._events_lock, open(self.path / "events.jsonl", "a") as f:
            f.write(line + "\n")

    def update_manifest(self, **fields: Any) -> None:
        self.manifest.update(fields)
        _write_json_atomic(self.path / "manifest.json", self.manifest)

    def write_json(self, name: str, data: Mapping[str, Any]) -> None:
        _write_json_atomic(self.path / name, data)

    def finish(self, status: str, **fields: Any) -> None:
        self.update_manifest(status=status, ended_at=utcnow(), **fields)

    @contextlib.contextmanager
    def guard(self) -> Iterator[None]:
        """Mark the run ``interrupted`` (Ctrl-C) or ``failed`` (any error), then re-raise."""
        try:
            yield
        except KeyboardInterrupt:
            self.event("interrupted")
            self.finish("interrupted")
            raise
        except BaseException as e:
            self.event("error", error=repr(e))
            self.finish("failed", error=str(e))
            raise


class CsvAppender:
    """A CSV file with a fixed header, one flushed line per row."""

    def __init__(self, path: Path, columns: Iterable[str]):
        self.columns = list(columns)
        new = not path.exists()
        self._f = open(path, "a", newline="")  # noqa: SIM115 - closed in close()
        self._w = csv.DictWriter(self._f, fieldnames=self.columns, extrasaction="ignore")
        if new:
            self._w.writeheader()
        self._lock = threading.Lock()

    def write(self, rows: Iterable[Mapping[str, Any]]) -> None:
        with self._lock:
            for row in rows:
                self._w.writerow(row)
            self._f.flush()

    def close(self) -> None:
        with self._lock:
            self._f.close()


@dataclass
class Run:
    """A run directory opened for reading."""

    path: Path
    manifest: dict[str, Any]

    @property
    def status(self) -> str:
        return str(self.manifest.get("status"))

    @property
    def complete(self) -> bool:
        return self.status == "complete"

    @property
    def parameters(self) -> dict[str, Any]:
        return dict(self.manifest.get("parameters", {}))

    @property
    def summary(self) -> dict[str, Any]:
        p = self.path / "summary.json"
        return json.loads(p.read_text()) if p.exists() else {}

    def requests(self) -> pd.DataFrame:
        parts = sorted((self.path / "requests").glob("part-*.parquet"))
        if not parts:
            return pd.DataFrame(columns=list(REQUEST_COLUMNS))
        return pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)

    def resources(self) -> pd.DataFrame:
        p = self.path / "resources.csv"
        return pd.read_csv(p) if p.exists() else pd.DataFrame()

    def history(self) -> pd.DataFrame:
        p = self.path / "locust_stats_history.csv"
        return pd.read_csv(p) if p.exists() else pd.DataFrame()

    def events(self) -> list[dict[str, Any]]:
        p = self.path / "events.jsonl"
        if not p.exists():
            return []
        return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


def compact_requests(path: Path) -> int:
    """Merge a finished run's per-second request parts into one (``part-00000.parquet``,
    written before the others go, so a kill leaves every record readable, perhaps twice
    until the merge is redone); returns how many records it holds. A run of few requests
    over a long time otherwise keeps one tiny file per second."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = Path(path) / "requests"
    parts = sorted(folder.glob("part-*.parquet"))
    if len(parts) <= 1:
        return sum(pq.read_metadata(p).num_rows for p in parts)
    table = pa.concat_tables([pq.read_table(p) for p in parts], promote_options="default")
    tmp = folder / ".merged.tmp"
    pq.write_table(table, tmp, compression="zstd")
    for p in parts:
        p.unlink()
    os.replace(tmp, folder / "part-00000.parquet")
    return int(table.num_rows)


class NotARunDirectory(ValueError):
    pass


def read_run(path: str | Path) -> Run:
    path = Path(path)
    m = path / "manifest.json"
    if not m.exists():
        raise NotARunDirectory(f"{path} is not a run directory (no manifest.json)")
    return Run(path=path, manifest=json.loads(m.read_text()))


def find_runs(root: str | Path | None = None, **match: Any) -> list[Run]:
    """Every run under ``root`` whose manifest fields (or parameters) equal ``match``."""
    root = Path(root) if root is not None else DEFAULT_ROOT
    runs = []
    for m in sorted(root.glob("**/manifest.json")):
        run = read_run(m.parent)
        fields = {**run.parameters, **run.manifest}
        if all(fields.get(k) == v for k, v in match.items()):
            runs.append(run)
    return runs
