"""Distributed load: Locust's master and workers (docs/distributed.md), on this machine."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest

from ipclab.backends import StackOptions, get_backend
from ipclab.load.runner import LoadProfile, run, run_on
from ipclab.runs import RunWriter, read_run
from ipclab.stacks import resolve
from tests.conftest import SESSION_MARK

pytestmark = pytest.mark.slow


def test_every_request_of_every_worker_lands_in_one_run(tmp_path: Path) -> None:
    profile = LoadProfile(users=20, spawn_rate=20, duration_s=8)
    out = run("shop-rest", profile, out=tmp_path / "run", workers=2)
    r = read_run(out)
    locust_total = int(
        pd.read_csv(out / "locust_stats.csv").set_index("Name").loc["Aggregated", "Request Count"]
    )
    assert r.manifest["status"] == "complete" and r.parameters["workers"] == 2
    assert len(r.requests()) == locust_total > 0  # shipped to the master, none lost
    assert r.summary["requests"] > 0 and r.summary["failures"] == 0
    assert r.summary["workers"] == 2 and r.summary["workers_lost"] == []
    gen = set(r.resources().query("kind == 'loadgen'")["component"])
    assert {"loadgen", "loadgen-worker1", "loadgen-worker2"} <= gen  # per-worker CPU
    assert set(r.summary["loadgen_cpu_percent_by_process"]) >= {"loadgen-worker1"}


def _our_workers() -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["cmdline", "environ"]):
        try:
            cmd, env = p.info["cmdline"] or [], p.info["environ"] or {}
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if "--worker" in cmd and env.get(SESSION_MARK) == os.environ[SESSION_MARK]:
            out.append(p)
    return out


def test_a_worker_that_dies_mid_run_is_recorded_and_the_run_degraded(tmp_path: Path) -> None:
    stack = get_backend("local").start(resolve("shop-rest"), StackOptions())
    try:
        writer = RunWriter(tmp_path / "run", "load", {"workers": 2}, stack="shop-rest")
        profile = LoadProfile(users=10, spawn_rate=10, duration_s=10)
        result: dict[str, dict] = {}
        t = threading.Thread(
            target=lambda: result.update(s=run_on(stack, profile, writer, StackOptions(), (), 2))
        )
        t.start()
        deadline = time.monotonic() + 30
        while len(_our_workers()) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(3)
        victim = _our_workers()[0]
        victim.send_signal(signal.SIGKILL)
        t.join(timeout=60)
        assert not t.is_alive()
    finally:
        stack.stop()
    r = read_run(tmp_path / "run")
    assert r.manifest["status"] == "degraded"
    assert result["s"]["workers_lost"] and result["s"]["status"] == "degraded"
    assert any(e["event"] == "worker_lost" for e in r.events())
    assert _our_workers() == []
