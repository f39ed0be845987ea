"""A client-side availability probe, independent of the load generator.

Every ``period_ms`` it issues ``GET {gateway_url}{path}``, the paths taken in turn (a stack
declares them: ``StackSpec.probe_paths``), with a short timeout (fixed rate: a hung request
does not delay the next one) and appends one flushed row per answered or failed request to
``probe.csv``:

``seq``, ``t`` (issue time, Unix s), ``ok`` (HTTP 200 with a JSON object), ``status`` (0 when
no HTTP answer), ``latency_ms``, ``complete`` (every ``required`` key present, e.g. the five
parts of a product page; a null value counts as present), ``error``.

Use it in a thread (``Probe(url, out).start()`` ... ``.stop()``), inside a running event
loop (``await probe.run(stop_event)``), or as a subprocess
(``python -m ipclab.availability.probe URL OUT``,
stopped cleanly by SIGTERM or SIGINT; see :func:`spawn_probe`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import aiohttp
import pandas as pd

from ipclab.runs import CsvAppender

log = logging.getLogger(__name__)

PROBE_COLUMNS = ("seq", "t", "ok", "status", "latency_ms", "complete", "error")


def probe_path(out: str | Path) -> Path:
    """``out`` itself, or ``out/probe.csv`` when ``out`` is a (run) directory."""
    out = Path(out)
    return out / "probe.csv" if out.is_dir() else out


class Probe:
    """Requests a page every ``period_ms`` and records each outcome."""

    def __init__(
        self,
        url: str,
        out_csv: str | Path,
        paths: Sequence[str],
        required: Sequence[str] = (),
        period_ms: float = 100.0,
        timeout_s: float = 1.0,
        keepalive: bool = True,
        on_row: Callable[[dict[str, Any]], None] | None = None,
    ):
        if period_ms <= 0 or timeout_s <= 0:
            raise ValueError("period_ms and timeout_s must be > 0")
        if not paths:
            raise ValueError("paths must not be empty")
        if url.startswith("https://"):
            raise ValueError("the availability probe speaks no TLS: run availability without --tls")
        self.url = url.rstrip("/")
        self.path = probe_path(out_csv)
        self.period_ms = float(period_ms)
        self.timeout_s = float(timeout_s)
        self.paths = [p if p.startswith("/") else "/" + p for p in paths]
        self.required = tuple(required)
        self.keepalive = keepalive
        self.on_row = on_row
        self.sent = 0
        self.recorded = 0
        self.skipped = 0  # slots missed because the loop fell behind
        self._out: CsvAppender | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    def target(self, seq: int) -> str:
        return self.url + self.paths[seq % len(self.paths)]

    # -- the loop ----------------------------------------------------------------------------
    async def run(self, stop: asyncio.Event) -> None:
        """Probe until ``stop`` is set, then wait for requests in flight (bounded by the
        timeout) so that every request issued has its row."""
        own_out = self._out is None
        if own_out:
            self._out = CsvAppender(self.path, PROBE_COLUMNS)
        loop = asyncio.get_running_loop()
        period = self.period_ms / 1000.0
        connector = aiohttp.TCPConnector(limit=0, force_close=not self.keepalive)
        timeout = aiohttp.ClientTimeout(total=self.timeout_s)
        tasks: set[asyncio.Task[None]] = set()
        try:
            async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
                next_t = loop.time()
                while not stop.is_set():
                    task = asyncio.create_task(self._one(session, self.sent))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                    self.sent += 1
                    next_t += period
                    now = loop.time()
                    if next_t < now:  # fell behind: skip the missed slots, no burst
                        missed = int((now - next_t) / period) + 1
                        self.skipped += missed
                        next_t += missed * period
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), next_t - now)
                if tasks:
                    await asyncio.wait(set(tasks))
        finally:
            if own_out:
                self._out.close()
                self._out = None

    async def _one(self, session: aiohttp.ClientSession, seq: int) -> None:
        url = self.target(seq)
        t = time.time()
        t0 = time.perf_counter()
        status, ok, complete, error = 0, False, False, None
        try:
            async with session.get(url) as resp:
                status = resp.status
                body = await resp.read()
            if status == 200:
                try:
                    doc = json.loads(body)
                except ValueError:
                    error = "invalid JSON"
                else:
                    ok = isinstance(doc, dict)
                    complete = ok and all(k in doc for k in self.required)
                    if not ok:
                        error = "not a JSON object"
            else:
                error = f"HTTP {status}"
        except TimeoutError:
            error = "timeout"
        except (aiohttp.ClientError, OSError) as e:
            error = f"{type(e).__name__}: {e}"[:300]
        latency_ms = (time.perf_counter() - t0) * 1000.0
        row = {
            "seq": seq,
            "t": round(t, 6),
            "ok": ok,
            "status": status,
            "latency_ms": round(latency_ms, 3),
            "complete": complete,
            "error": error,
        }
        assert self._out is not None
        self._out.write([row])
        self.recorded += 1
        if self.on_row is not None:
            try:
                self.on_row(row)
            except Exception:  # a broken consumer must not stop the probe
                log.exception("probe on_row callback failed")

    # -- thread mode ---------------------------------------------------------------------
    def start(self) -> Probe:
        """Run in a daemon thread with its own event loop; returns once probing has begun."""
        if self._thread is not None:
            raise RuntimeError("probe already started")
        self._out = CsvAppender(self.path, PROBE_COLUMNS)
        self._ready.clear()
        self._error = None
        self._thread = threading.Thread(target=self._thread_main, name="ipclab-probe", daemon=True)
        self._thread.start()
        self._ready.wait()
        return self

    def _thread_main(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            self._ready.set()
            await self.run(self._stop)

        try:
            asyncio.run(main())
        except BaseException as e:  # reported by stop()
            self._error = e
        finally:
            self._ready.set()

    def stop(self, timeout: float | None = None) -> None:
        """Stop issuing, wait for the requests in flight, close the file. Idempotent."""
        if self._thread is None:
            return
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):  # loop already gone
                self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout if timeout is not None else self.timeout_s + 5.0)
        if self._thread.is_alive():
            raise RuntimeError("probe thread did not stop")
        self._thread = None
        if self._out is not None:
            self._out.close()
            self._out = None
        if self._error is not None:
            raise RuntimeError("probe failed") from self._error

    def __enter__(self) -> Probe:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def read_probe(path: str | Path) -> pd.DataFrame:
    """A probe.csv (or the run directory holding it), sorted by issue time."""
    path = probe_path(path)
    if not path.exists():
        return pd.DataFrame(columns=list(PROBE_COLUMNS))
    df = pd.read_csv(path)
    for col in ("ok", "complete"):
        if df[col].dtype != bool:
            df[col] = df[col].astype(str).str.lower().isin(("true", "1"))
    return df.sort_values("t", kind="stable").reset_index(drop=True)


# -- subprocess mode ---------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m ipclab.availability.probe", description=__doc__.split("\n")[0]
    )
    p.add_argument("url", help="gateway base URL, e.g. http://127.0.0.1:8080")
    p.add_argument("out", help="probe.csv path, or a run directory")
    p.add_argument("--period-ms", type=float, default=100.0)
    p.add_argument("--timeout-s", type=float, default=1.0)
    p.add_argument("--path", action="append", required=True, help="a page to ask for (repeat)")
    p.add_argument("--require", default="", help="keys a complete answer has, comma-separated")
    p.add_argument("--no-keepalive", action="store_true")
    p.add_argument("--duration-s", type=float, default=None, help="stop after this long")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    probe = Probe(
        a.url,
        a.out,
        paths=a.path,
        required=[k for k in a.require.split(",") if k],
        period_ms=a.period_ms,
        timeout_s=a.timeout_s,
        keepalive=not a.no_keepalive,
    )

    async def go() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        if a.duration_s is not None:
            loop.call_later(a.duration_s, stop.set)
        await probe.run(stop)

    asyncio.run(go())
    return 0


def spawn_probe(url: str, out: str | Path, *args: str) -> subprocess.Popen[bytes]:
    """Start the probe as a subprocess (extra CLI ``args`` such as ``--period-ms 50``).
    Stop it with ``proc.send_signal(signal.SIGTERM); proc.wait()``."""
    src = str(Path(__file__).resolve().parents[2])  # the folder that holds ipclab/
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    return subprocess.Popen(
        [sys.executable, "-m", "ipclab.availability.probe", url, str(out), *args], env=env
    )


if __name__ == "__main__":
    sys.exit(main())
