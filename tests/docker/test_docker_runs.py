"""`ipclab run STACK --backend docker`: short runs with 0 failures and a complete run directory
(issue 3, must-show 1), a fault run, and Ctrl-C in the middle of a run leaving nothing behind
(must-show 4)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from ipclab.backends.docker.ownership import leftovers, workdirs
from ipclab.runs import read_run

CLI = [sys.executable, "-m", "ipclab.cli"]


NOTHING: dict[str, list[str]] = {"containers": [], "networks": [], "volumes": [], "workdirs": []}


def ipclab(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout)


def run_leftovers(out: Path) -> dict[str, list[str]]:
    """What is left of the run's own compose project (other runs on the engine don't count),
    its temporary workdir (compose and env files) included."""
    project = json.loads((out / "manifest.json").read_text())["stack_info"]["project"]
    return {**leftovers(project=project), "workdirs": [str(d) for d in workdirs(project)]}


@pytest.mark.parametrize("stack", ["shop-rest", "shop-grpc", "shop-amqp"])
def test_short_run_has_no_failures(
    stack: str, tmp_path: Path, docker_images: dict[str, str]
) -> None:
    out = tmp_path / "run"
    r = ipclab(
        "run",
        stack,
        "--backend",
        "docker",
        "--users",
        "10",
        "--spawn-rate",
        "10",
        "--duration",
        "8s",
        "--out",
        str(out),
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().splitlines()[-1] == str(out)
    run = read_run(out)
    assert run.complete and run.manifest["backend"] == "docker"
    s = run.summary
    print(
        f"{stack} on docker: {s['requests']} requests, rps {s['rps']}, "
        f"p50 {s['latency_ms']['p50']} p99 {s['latency_ms']['p99']}"
    )
    assert s["requests"] > 0 and s["failures"] == 0, s
    res = run.resources()
    containers = res[res["kind"] == "container"]
    roles = {"gateway", "product-info", "reviews", "recommendations", "shipping", "cart"}
    assert roles <= set(containers["component"]), set(containers["component"])
    assert ("broker" in set(containers["component"])) == (stack == "shop-amqp")
    assert containers["net_tx_bytes"].notna().all() and containers["cpu_percent"].notna().any()
    gw = containers[containers["component"] == "gateway"].sort_values("t")
    assert len(gw) >= 5, "about 1 Hz over an 8 s run"
    assert pd.to_numeric(gw["net_tx_packets"]).is_monotonic_increasing
    assert (out / "logs" / "gateway.log").exists()
    assert run_leftovers(out) == NOTHING


@pytest.mark.skipif(os.geteuid() != 0, reason="a load host is entered with nsenter (root)")
def test_a_run_from_a_load_host(tmp_path: Path, docker_images: dict[str, str]) -> None:
    """A stack with a load host (``StackSpec.load_host``): Locust runs in the ``loadgen``
    container's delayed network namespace; its row carries that interface's counters, and
    the manifest the loadgen -> gateway round trips over TCP and UDP."""
    out = tmp_path / "run"
    r = ipclab(
        "run", "acmeair-http1", "--backend", "docker", "--users", "4", "--spawn-rate", "4",
        "--duration", "8s", "--delay-ms", "5", "--out", str(out),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    run = read_run(out)
    assert run.complete and run.summary["requests"] > 0 and run.summary["failures"] == 0
    netem = run.manifest["stack_info"]["netem"]
    for key in ("rtt_ms", "udp_rtt_ms"):  # loadgen -> gateway, two delays of 5 ms each
        (rtt,) = netem["load_host"][key].values()
        assert rtt == pytest.approx(10.0, rel=0.25), netem["load_host"]
    (start,) = [e for e in run.events() if e["event"] == "load_start"]
    assert start["load_host"].endswith(":8000") and "127.0.0.1" not in start["load_host"]
    res = run.resources()
    loadgen = res[res["component"] == "loadgen"].sort_values("t")
    assert (loadgen["kind"] == "loadgen").all()  # one row per sample: Locust's, with counters
    assert loadgen["cpu_percent"].notna().any()
    tx = pd.to_numeric(loadgen["net_tx_packets"])
    assert tx.notna().all() and tx.is_monotonic_increasing and tx.iloc[-1] > tx.iloc[0]
    # every host's NFQUEUE delayer (the loadgen container's too) is a row of its own, its
    # CPU taken off its container's; the summary's stack CPU leaves it out
    hosts = ["gateway", "auth", "booking", "customer", "flight", "loadgen"]
    assert set(run.manifest["stack_info"]["delayers"]["host_pids"]) == set(hosts)
    delayers = res[res["kind"] == "delayer"]
    assert set(delayers["component"]) == {f"{h}-delayer" for h in hosts}
    cpu = pd.to_numeric(delayers["cpu_percent"]).dropna()
    assert len(cpu) and (cpu >= 0).all()
    mean = delayers.groupby("component")["cpu_percent"].mean()
    print(f"acmeair-http1 at 5 ms, 4 users: delayer CPU % {mean.round(2).to_dict()}")
    assert mean["gateway-delayer"] > 0
    assert "gateway-delayer" in run.summary["cpu_percent_mean"]
    assert run_leftovers(out) == NOTHING


def test_fault_run_records_failures_and_recovers(
    tmp_path: Path, docker_images: dict[str, str]
) -> None:
    out = tmp_path / "run"
    r = ipclab(
        "run",
        "shop-rest",
        "--backend",
        "docker",
        "--users",
        "5",
        "--spawn-rate",
        "5",
        "--duration",
        "10s",
        "--fault",
        "reviews@3",
        "--fault",
        "restart:reviews@6",
        "--out",
        str(out),
    )
    assert r.returncode == 0, r.stderr[-3000:]
    run = read_run(out)
    events = [e["event"] for e in run.events()]
    assert run.summary["failures"] > 0, run.summary
    reqs = run.requests()
    late = reqs[reqs["t"] > reqs["t"].max() - 2]
    assert late["ok"].all(), "requests succeed again after the restart"
    assert "stack_down" in events
    assert run_leftovers(out) == NOTHING


def test_ctrl_c_mid_run_leaves_nothing(tmp_path: Path, docker_images: dict[str, str]) -> None:
    out = tmp_path / "run"
    p = subprocess.Popen(
        [
            *CLI,
            "run",
            "shop-amqp",
            "--backend",
            "docker",
            "--users",
            "5",
            "--spawn-rate",
            "5",
            "--duration",
            "120s",
            "--out",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 180
        events = out / "events.jsonl"
        while not (events.exists() and '"load_start' in events.read_text()):
            assert p.poll() is None, p.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "the run never started its load"
            time.sleep(0.5)
        time.sleep(3)
        assert run_leftovers(out)["containers"], "the stack runs while the load runs"
        os.killpg(p.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        p.wait(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode != 0
    assert json.loads((out / "manifest.json").read_text())["status"] == "interrupted"
    assert run_leftovers(out) == NOTHING


def test_kill_9_of_ipclab_run_leaves_nothing_within_10_s(
    tmp_path: Path, docker_images: dict[str, str]
) -> None:
    """A `kill -9` of the harness cannot run its cleanup; its watchdog removes the project."""
    out = tmp_path / "run"
    p = subprocess.Popen(
        [*CLI, "run", "shop-rest", "--backend", "docker", "--users", "5", "--spawn-rate", "5",
         "--duration", "120s", "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        events = out / "events.jsonl"
        while not (events.exists() and '"load_start' in events.read_text()):
            assert p.poll() is None, p.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "the run never started its load"
            time.sleep(0.5)
        assert run_leftovers(out)["containers"], "the stack runs while the load runs"
        t0 = time.monotonic()
        os.kill(p.pid, signal.SIGKILL)  # the harness only, as `kill -9 PID` does
        p.wait(timeout=10)
        while run_leftovers(out) != NOTHING and time.monotonic() - t0 < 15:
            time.sleep(0.5)
        took = time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    print(f"kill -9 of ipclab run (docker): its project was gone {took:.1f} s later")
    assert run_leftovers(out) == NOTHING
    assert took < 10
    assert json.loads((out / "manifest.json").read_text())["status"] in ("running", "incomplete")
