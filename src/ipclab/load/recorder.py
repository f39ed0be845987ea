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
from http import HTTPStatus
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
        ("server_ms", pa.float64()),  # the sum of the answer's Server-Timing durations
        ("timing", pa.string()),  # the answer's Server-Timing header as sent, when it has one
        ("header_bytes", pa.int64()),  # the answer's status line and header block
        ("wire_bytes", pa.int64()),  # the answer's Content-Length: its body as sent (gzip too)
    ]
)
FLUSH_EVERY_S = 1.0


def verify_the_stacks_authority(ca: str | None = os.environ.get("IPCLAB_TLS_CA")) -> None:
    """A stack started with ``--tls``: every Locust user of this process verifies the
    gateway's certificate against the stack's authority (the load runner gives its file as
    ``IPCLAB_TLS_CA``), never with verification off (Locust's FastHttpUser skips it unless
    told otherwise)."""
    if not ca:
        return
    import gevent.ssl
    from locust import FastHttpUser

    def context(cafile: str | None = None) -> gevent.ssl.SSLContext:
        """geventhttpclient's factory call: its own ``cafile`` (certifi's) is not trusted."""
        ctx = gevent.ssl.create_default_context(cafile=ca)
        ctx.minimum_version = gevent.ssl.TLSVersion.TLSv1_3
        return ctx

    FastHttpUser.insecure = False
    FastHttpUser.ssl_context_factory = staticmethod(context)  # type: ignore[assignment]
    os.environ["REQUESTS_CA_BUNDLE"] = ca  # HttpUser (requests) too


verify_the_stacks_authority()


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
            _timing(response),
            header_bytes(response, status),
            wire_bytes(response),
        )
    )


def _timing(response: Any) -> str | None:
    headers = getattr(response, "headers", None)
    value = headers.get("server-timing") if headers is not None else None
    return str(value) if value else None


def server_ms(response: Any) -> float | None:
    """The server's own time: the sum of the durations its ``Server-Timing`` header gives
    (``app;dur=<ms>``, or several metrics: ``ser;dur=1.2, gzip;dur=0.3``), if any."""
    value = _timing(response)
    if value is None:
        return None
    total, found = 0.0, False
    for metric in value.split(","):
        for part in metric.split(";")[1:]:
            if part.strip().startswith("dur="):
                try:
                    total += float(part.strip()[4:])
                except ValueError:
                    return None
                found = True
    return total if found else None


def wire_bytes(response: Any) -> int | None:
    """The answer's body as it crossed the wire (``Content-Length``; ``bytes`` is the body
    as the client decoded it, decompressed), or None when the answer gives no length."""
    headers = getattr(response, "headers", None)
    value = headers.get("content-length") if headers is not None else None
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def header_bytes(response: Any, status: int) -> int | None:
    """The size of an HTTP/1.1 answer's status line and header block, rebuilt from the
    parsed headers (``Name: value`` CRLF each, a blank line): what the server wrote when it
    writes them in that form, as uvicorn does; None without an answer."""
    headers = getattr(response, "headers", None)
    if headers is None or not status:
        return None
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = ""
    size = len(f"HTTP/1.1 {status} {phrase}\r\n") + 2
    for k, v in headers.items():
        size += len(str(k)) + 2 + len(str(v).encode("latin-1", "replace")) + 2
    return size


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
