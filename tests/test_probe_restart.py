"""bench/probe_restart.py (issue 46.3): its traced probe says, per attempt, whether it made a
connection, and its summary puts each probe's first good answer after the gateway's restart
beside Locust's first served second."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest
from aiohttp import web

BENCH = Path(__file__).resolve().parents[1] / "bench" / "probe_restart.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("probe_restart", BENCH)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


pr = _bench()


class Page:
    """An aiohttp server on a free port in a thread; ``delay_s`` before each answer."""

    def __init__(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.delay_s = 0.0
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self._up(), self.loop).result(5)

    async def _answer(self, _: web.Request) -> web.Response:
        await asyncio.sleep(self.delay_s)
        return web.json_response({"product": 1})

    async def _up(self) -> None:
        app = web.Application()
        app.router.add_get("/product/{pid}", self._answer)
        self.runner = web.AppRunner(app, shutdown_timeout=0.1)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.port).start()

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@pytest.fixture
def page() -> Iterator[Page]:
    p = Page()
    try:
        yield p
    finally:
        p.close()


def _traced(page: Page, path: Path, keepalive: bool, timeout_s: float) -> pd.DataFrame:
    probe = pr.Traced(f"http://127.0.0.1:{page.port}", path, keepalive, timeout_s, 0.05)
    asyncio.run(probe.run(0.6))
    return pd.read_csv(path, keep_default_na=False)


def test_the_traced_probe_says_which_attempts_made_a_connection(page: Page, tmp_path: Path) -> None:
    kept = _traced(page, tmp_path / "kept.csv", True, 1.0)
    assert list(kept.columns) == list(pr.COLUMNS)
    assert kept["ok"].all() and kept["conn"].iloc[0] == "new"
    assert (kept["conn"] == "reused").sum() >= len(kept) - 2  # one connection, kept
    fresh = _traced(page, tmp_path / "fresh.csv", False, 1.0)
    assert fresh["ok"].all() and (fresh["conn"] == "new").all()
    assert (pd.to_numeric(fresh["connect_ms"]) < 500).all()
    # an answer later than the timeout: a timeout row, and the next attempt connects anew
    page.delay_s = 0.3
    slow = _traced(page, tmp_path / "slow.csv", True, 0.1)
    assert (slow["error"] == "timeout").all() and (slow["conn"] == "new").all()


def _history(t: float, served_from: float) -> pd.DataFrame:
    """Locust's per-second history: failures only until ``served_from``, then successes."""
    rows, requests, failures = [], 0, 0
    for s in range(-5, 30):
        requests += 100
        failures += 100 if t + s < served_from else 0
        rows.append({"Timestamp": int(t) + s, "Name": "Aggregated",
                     "Total Request Count": requests, "Total Failure Count": failures})  # fmt: skip
    return pd.DataFrame(rows)


def test_the_summary_puts_each_probes_first_good_answer_beside_locusts(tmp_path: Path) -> None:
    t = 1000.0
    run = tmp_path / "run"
    run.mkdir()
    events = [{"t": t - 3, "event": "restart", "role": "gateway"},
              {"t": t, "event": "restarted", "role": "gateway"}]  # fmt: skip
    (run / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    _history(t, t + 2).to_csv(run / "locust_stats_history.csv", index=False)
    times = [t - 10 + i * 0.1 for i in range(400)]
    # the harness's probe: timeouts until 40 s after the restart, then 50 ms answers
    pd.DataFrame({
        "seq": range(400), "t": times, "ok": [x >= t + 20 for x in times], "status": 0,
        "latency_ms": [50.0 if x >= t + 20 else 1000.0 for x in times], "complete": True,
        "error": ["" if x >= t + 20 else "timeout" for x in times],
    }).to_csv(run / "probe.csv", index=False)  # fmt: skip
    # a fresh-connection probe back 3 s after the restart
    pd.DataFrame({
        "seq": range(400), "t": times, "conn": "new", "connect_ms": 0.5,
        "end_ms": 40.0, "status": 200, "ok": [x >= t + 3 for x in times],
        "error": ["" if x >= t + 3 else "timeout" for x in times],
    }).to_csv(tmp_path / "D-proc-fresh-1s.csv", index=False)  # fmt: skip
    res = pr.summary(tmp_path)
    assert res["locust_back_s"] == pytest.approx(2.0)
    assert res["probes"]["A-monitor"] == pytest.approx(20.05, abs=0.11)
    assert res["probes"]["D-proc-fresh-1s"] == pytest.approx(3.04, abs=0.11)
    # the probe that lags Locust by more than a few seconds is the one the run flags
    lag = {k: v - res["locust_back_s"] for k, v in res["probes"].items()}
    assert lag["A-monitor"] > 10 and lag["D-proc-fresh-1s"] < 2
