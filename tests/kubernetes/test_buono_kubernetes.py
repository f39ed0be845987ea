"""Buono's memory runs in pods (issue 51, must-show 4): a small cell in a pod with the 400 MB
limit completes with its memory sampled from the pod's cgroup and the pod's limit and
request in the manifest; a cell the limit cannot hold is killed by the kernel and recorded
as docker records it (``OOMKilled``, exit code 137, from the kubelet's record of the
container, which the Deployment then restarted). The Python services: no JVM image to
import, a few seconds a cell."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ipclab.runs import read_run
from ipclab.studies.buono import memory
from ipclab.studies.buono.stacks import LIMIT_MB

MiB = 2**20


def test_a_small_memory_cell_in_a_400_mb_pod(tmp_path: Path) -> None:
    cell = memory.MemoryCell("json", 20_000)
    run = read_run(memory.run_cell(cell, tmp_path / "run", backend="kubernetes"))
    s = run.summary
    assert s["backend"] == "kubernetes" and s["limit_mb"] == LIMIT_MB
    assert s["completed"], s
    assert s["data_running"] and not s["data_oom_killed"] and s["data_restarts"] == 0
    assert not s["out_of_memory"] and s["edge_running"]
    info = run.manifest["stack_info"]["kubernetes"]
    limited = {"limits": {"memory": "400Mi"}, "requests": {"memory": "400Mi"}}
    assert info["resources"]["data"] == limited and info["resources"]["gateway"] == limited
    assert info["limits"]["memory_mb"] == LIMIT_MB
    samples = pd.read_csv(run.path / "memory.csv")
    assert len(samples) >= 10 and samples["usage_bytes"].notna().all()
    assert 10 * MiB < samples["usage_bytes"].max() < LIMIT_MB * MiB
    assert samples["rss_bytes"].max() <= samples["usage_bytes"].max()
    assert s["cgroup_peak_bytes"] >= samples["usage_bytes"].max()


def test_a_cell_over_its_pods_limit_is_oom_killed(tmp_path: Path) -> None:
    # the docker reference: JSON at 300,000 users peaks at ~266 MB in Python (orjson)
    cell = memory.MemoryCell("json", 300_000)
    path = memory.run_cell(cell, tmp_path / "run", backend="kubernetes", limit_mb=150)
    s = read_run(path).summary
    assert s["limit_mb"] == 150 and not s["completed"]
    assert s["data_oom_killed"] and s["data_exit_code"] == 137 and not s["data_running"]
    assert s["out_of_memory"] and not s["heap_exhausted"]
    assert s["edge_running"] and not s["edge_oom_killed"]
    assert s["peak_usage_bytes"] > 100 * MiB
