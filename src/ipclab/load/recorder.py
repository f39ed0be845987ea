"""Inside the Locust process: record every request into Parquet parts, one per second.

Each part is a complete Parquet file (``requests/part-NNNNN.parquet``), so killing the run
loses at most the last second of records. Columns: see docs/run-directory.md.

With distributed load (Locust's master and workers, docs/distributed.md) each worker ships
its records to the master once a second over Locust's own messaging (message
``ipclab_records``), and the master writes them: every request of every worker lands in
the one run directory, wherever the worker runs.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import gevent
import pyarrow as pa
import pyarrow.parquet as pq
from locust import events

SCHEMA = pa.schema(
    [
        ("t", pa.float64()),
        ("name", pa.string()),
        ("latency_ms", pa.float64()),
        ("bytes", pa.int64()),
        ("status", pa.int32()),
        ("ok", pa.bool_()),
        ("error", pa.string()),
        ("server_ms", pa.float64()),  # the answer's Server-Timing app;dur, when it has one
    ]
)
FLUSH_EVERY_S = 1.0


class Recorder:
    def __init__(self, directory: Path):
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.rows: list[tuple[Any, ...]] = []
        self.part = len(list(directory.glob("part-*.parquet")))

    def add(self, row: tuple[Any, ...]) -> None:
        self.rows.append(row)

    def flush(self) -> None:
        rows, self.rows = self.rows, []
        if not rows:
            return
        columns = list(zip(*rows, strict=True))
        table = pa.Table.from_arrays(
            [pa.array(c, type=f.type) for c, f in zip(columns, SCHEMA, strict=True)], schema=SCHEMA
        )
        tmp = self.directory / f".part-{self.part:05d}.tmp"
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, self.directory / f"part-{self.part:05d}.parquet")
        self.part += 1


class Shipper:
    """A worker's recorder: the same rows, sent to the master instead of written."""

    def __init__(self, runner: Any):
        self.runner = runner
        self.rows: list[tuple[Any, ...]] = []

    def add(self, row: tuple[Any, ...]) -> None:
        self.rows.append(row)

    def flush(self) -> None:
        rows, self.rows = self.rows, []
        if rows:
            self.runner.send_message(MESSAGE, [list(r) for r in rows])


MESSAGE = "ipclab_records"
_recorder: Recorder | Shipper | None = None
_flusher: gevent.Greenlet | None = None


@events.init.add_listener
def _on_init(environment: Any, **_: Any) -> None:
    global _recorder
    from locust.runners import MasterRunner, WorkerRunner

    runner = environment.runner
    if isinstance(runner, WorkerRunner):
        _recorder = Shipper(runner)
        return
    target = os.environ.get("IPCLAB_REQUESTS_DIR")
    if target:
        _recorder = Recorder(Path(target))
    if isinstance(runner, MasterRunner) and _recorder is not None:
        recorder = _recorder

        def receive(msg: Any, **_: Any) -> None:
            for row in msg.data:
                recorder.add(tuple(row))

        runner.register_message(MESSAGE, receive)


@events.request.add_listener
def _on_request(
    name: str,
    response_time: float,
    response_length: int,
    response: Any = None,
    exception: BaseException | None = None,
    start_time: float | None = None,
    **_: Any,
) -> None:
    if _recorder is None:
        return
    status = getattr(response, "status_code", 0) or 0
    _recorder.add(
        (
            start_time if start_time is not None else time.time() - response_time / 1000,
            name,
            float(response_time),
            int(response_length or 0),
            int(status),
            exception is None,
            None if exception is None else f"{type(exception).__name__}: {exception}"[:300],
            server_ms(response),
        )
    )


def server_ms(response: Any) -> float | None:
    """The server's own time from a ``Server-Timing: app;dur=<ms>`` header, if any."""
    headers = getattr(response, "headers", None)
    value = headers.get("server-timing") if headers is not None else None
    if not value:
        return None
    for part in str(value).split(";"):
        if part.strip().startswith("dur="):
            try:
                return float(part.strip()[4:])
            except ValueError:
                return None
    return None


def _flush_forever() -> None:
    while True:
        gevent.sleep(FLUSH_EVERY_S)
        if _recorder is not None:
            _recorder.flush()


@events.test_stop.add_listener
def _on_stop(**_: Any) -> None:
    if isinstance(_recorder, Shipper):  # before the worker tells the master it stopped
        _recorder.flush()


@events.test_start.add_listener
def _on_start(**_: Any) -> None:
    global _flusher
    if _flusher is None:
        _flusher = gevent.spawn(_flush_forever)


@events.quitting.add_listener
def _on_quit(**_: Any) -> None:
    if _flusher is not None:
        _flusher.kill()
    if _recorder is not None:
        _recorder.flush()
