"""Short real runs through the CLI: complete run directories, faults, Ctrl-C (issue 2)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from ipclab.runs import read_run
from ipclab.stacks import resolve
from tests.conftest import SHOP_STACKS, command_line, ipclab_processes

pytestmark = pytest.mark.slow

RUN_FILES = (
    "manifest.json",
    "summary.json",
    "events.jsonl",
    "resources.csv",
    "locust_stats.csv",
    "locust_stats_history.csv",
)


def ipclab(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ipclab.cli", *args], capture_output=True, text=True, timeout=timeout
    )


def assert_nothing_left() -> None:
    deadline = time.monotonic() + 10
    while (left := ipclab_processes()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, [command_line(p) for p in left]


# One CLI run per stack serves both proofs below (one stack start, not two): 20 users for
# RUN_S seconds with reviews killed at KILL_AT_S, so the run is healthy for its first
# KILL_AT_S seconds (the short run) and its last seconds are the fault (the kill test).
RUN_S, KILL_AT_S = 7, 4


@dataclass(frozen=True)
class ShortRun:
    stack: str
    out: Path
    result: subprocess.CompletedProcess[str]
    seconds: float


@pytest.fixture(scope="module", params=SHOP_STACKS)
def short_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ShortRun:
    stack = request.param
    out = tmp_path_factory.mktemp(stack) / "run"
    started = time.monotonic()
    r = ipclab(
        "run", stack, "--users", "20", "--spawn-rate", "20", "--duration", f"{RUN_S}s",
        "--call-timeout", "1", "--fault", f"reviews@{KILL_AT_S}", "--out", str(out),
    )  # fmt: skip
    return ShortRun(stack, out, r, time.monotonic() - started)


def test_short_run_has_no_failures_and_a_complete_directory(short_run: ShortRun) -> None:
    """Until the fault, no request fails; the run directory is complete."""
    stack, out, r = short_run.stack, short_run.out, short_run.result
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == str(out)
    run = read_run(out)
    assert run.complete
    for name in RUN_FILES:
        assert (out / name).exists(), name
    s = run.summary
    assert set(s["latency_ms"]) == {"mean", "p50", "p95", "p99", "max"}
    req = run.requests()
    assert len(req) == s["requests"] and int((~req["ok"]).sum()) == s["failures"]
    kill = next(e for e in run.events() if e["event"] == "kill")
    healthy = req[req["t"] < kill["t"] - 0.5]  # the short run: before the fault
    assert len(healthy) > 100, len(healthy)
    assert healthy["ok"].all() and (healthy["status"] == 200).all()
    res = run.resources()
    components = set(res["component"])
    assert {
        "gateway",
        "product-info",
        "reviews",
        "recommendations",
        "shipping",
        "cart",
        "loadgen",
    } <= components
    assert ("broker" in components) == resolve(stack).needs_broker
    m = run.manifest
    assert m["parameters"]["profile"]["users"] == 20
    env = m["environment"]
    assert env["cpu_model"] and env["cpu_cores_logical"] and env["libraries"]["locust"]
    assert "revision" in env["git"]
    assert m["healthz"]["ready"] is True, m["healthz"]  # the stack's own word, at stack-up
    assert_nothing_left()


def test_a_run_without_a_fault_has_no_failure_from_start_to_stop(tmp_path: Path) -> None:
    """The whole of a fault-free run, its end and the stack's stop included, fails nothing
    (the shared runs above are healthy only until their fault)."""
    out = tmp_path / "run"
    r = ipclab("run", "shop-rest", "--users", "10", "--duration", "5s", "--out", str(out))
    assert r.returncode == 0, r.stderr
    run = read_run(out)
    assert run.complete and run.summary["failures"] == 0 and run.summary["requests"] > 50
    req = run.requests()
    assert len(req) > 50 and req["ok"].all() and (req["status"] == 200).all()
    assert_nothing_left()


def test_killing_a_service_mid_run_records_failures_not_a_hang(short_run: ShortRun) -> None:
    r = short_run.result
    assert r.returncode == 0, r.stderr
    assert short_run.seconds < 60
    run = read_run(short_run.out)
    req = run.requests()
    assert run.summary["failures"] > 0
    failed = req[~req["ok"]]
    assert set(failed["status"]) <= {503, 504}, set(failed["status"])
    kill = next(e for e in run.events() if e["event"] == "kill")
    assert kill["role"] == "reviews"
    assert (req[req["t"] < kill["t"] - 0.5]["ok"]).all()  # healthy before the kill
    assert_nothing_left()


def test_ctrl_c_stops_everything_and_marks_the_run(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ipclab.cli",
            "run",
            "shop-amqp",
            "--users",
            "10",
            "--spawn-rate",
            "10",
            "--duration",
            "60s",
            "--out",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not list((out / "requests").glob("part-*.parquet")):
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    run = read_run(out)
    assert run.status == "interrupted"
    assert run.summary["requests"] > 0
    assert_nothing_left()


def test_killed_harness_leaves_a_readable_incomplete_directory(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ipclab.cli",
            "run",
            "shop-rest",
            "--users",
            "5",
            "--spawn-rate",
            "5",
            "--duration",
            "60s",
            "--out",
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while len(list((out / "requests").glob("part-*.parquet"))) < 2:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.2)
    proc.kill()
    proc.wait()
    run = read_run(out)
    assert run.status == "running"  # never finished: incomplete
    assert len(run.requests()) > 0
    assert json.loads((out / "manifest.json").read_text())["parameters"]
    assert_nothing_left()
