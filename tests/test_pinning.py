"""CPU pinning on one machine (issue 17): the stack and the load generator on disjoint CPUs,
every thread of every process, recorded in the manifest; bad CPU lists are clear errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from ipclab.backends import StackOptions, get_backend
from ipclab.procs import parse_cpus
from ipclab.runs import read_run
from ipclab.stacks import resolve

CPUS = sorted(os.sched_getaffinity(0))
needs_two = pytest.mark.skipif(len(CPUS) < 2, reason="pinning apart needs 2 CPUs")


def thread_affinities(pid: int) -> set[tuple[int, ...]]:
    out = set()
    root = psutil.Process(pid)
    for proc in [root, *root.children(recursive=True)]:
        for t in proc.threads():
            out.add(tuple(sorted(os.sched_getaffinity(t.id))))
    return out


@needs_two
@pytest.mark.slow
def test_every_thread_of_the_stack_runs_on_its_cpus_only() -> None:
    stack = get_backend("local").start(resolve("shop-amqp"), StackOptions(cpuset=str(CPUS[0])))
    try:
        pids = [p.pid for p in stack.procs.values()]  # type: ignore[attr-defined]
        pids.append(stack.broker.process.pid)  # type: ignore[attr-defined]
        for pid in pids:
            assert thread_affinities(pid) == {(CPUS[0],)}, pid
        stack.restart("reviews")  # a restarted process is pinned again
        assert thread_affinities(stack.procs["reviews"].pid) == {(CPUS[0],)}  # type: ignore[attr-defined]
    finally:
        stack.stop()


@needs_two
@pytest.mark.slow
def test_a_pinned_run_records_both_cpu_sets(tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = subprocess.run(
        [sys.executable, "-m", "ipclab.cli", "run", "shop-rest", "--users", "5",
         "--spawn-rate", "5", "--duration", "4s", "--pin", f"{CPUS[0]}:{CPUS[1]}",
         "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    run = read_run(out)
    assert run.summary["failures"] == 0
    params = run.manifest["parameters"]
    assert params["options"]["cpuset"] == str(CPUS[0])
    assert params["profile"]["cpuset"] == str(CPUS[1])


@pytest.mark.parametrize(
    ("pin", "says"),
    [
        ("0:0", "share CPU 0"),
        ("0", "STACK:LOAD"),
        ("0:4096", "this machine offers"),
        ("x:1", "not a CPU list"),
    ],
)
def test_bad_pinning_is_a_clear_error(pin: str, says: str) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "ipclab.cli", "run", "shop-rest", "--pin", pin],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode != 0 and says in r.stderr, r.stderr[-1000:]


def test_pinning_is_refused_off_the_local_backend() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "ipclab.cli", "run", "shop-rest", "--pin", "0:1",
         "--backend", "docker"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode != 0 and "local backend only" in r.stderr


def test_cpu_lists() -> None:
    assert parse_cpus(str(CPUS[0])) == {CPUS[0]}
    if len(CPUS) >= 2:
        assert parse_cpus(f"{CPUS[0]}-{CPUS[1]}") >= {CPUS[0], CPUS[1]}
