"""Availability on the cluster: a container killed under a fault-injection run is restarted by
the kubelet (not the harness), and the run records what the kubelet recorded of it, the
recovery split at the new container's start, and the pods' resources. AMQP, so that the
roles' wait for a healthy broker (init containers) is exercised too."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from ipclab.availability.runner import Common, FaultInjection, run_fault_injection
from ipclab.availability.tracker import Criteria
from ipclab.backends import StackOptions
from ipclab.runs import read_run
from ipclab.stacks import resolve

OPTIONS = StackOptions(call_timeout_s=15.0, cpus=0.5, memory_mb=256)


@pytest.fixture(scope="module")
def amqp_stack() -> Iterator[Any]:
    from ipclab.backends.kubernetes.stack import KubernetesBackend

    stack = KubernetesBackend().start(resolve("shop-amqp"), OPTIONS)
    try:
        yield stack
    finally:
        stack.stop()


def test_the_kubelets_restart_decomposed(amqp_stack: Any, tmp_path: Path) -> None:
    stack = amqp_stack
    stack._refresh_pods()
    counts = {c: sum(s.restart_count for s in p.status.container_statuses or [])
              for c, p in stack._pods.items()}  # fmt: skip
    assert set(counts.values()) == {0}, counts  # no role started before its broker
    plan = FaultInjection(users=5, cycles=1, mean_gap_s=1.0, min_gap_s=2.0,
                          components=("gateway",), downtime_s=5.0)  # fmt: skip
    common = Common(criteria=Criteria(window_s=2.0, silence_s=4.0), warmup_s=1.0)
    run = read_run(run_fault_injection(stack, tmp_path / "run", plan, common, OPTIONS))
    info = run.manifest["stack_info"]["kubernetes"]
    assert info["resources"]["gateway"]["limits"] == {"cpu": "500m", "memory": "256Mi"}
    assert info["qos"]["gateway"] == "Burstable"
    ev = run.events()
    kill = next(e for e in ev if e["event"] == "kill")
    restart = next(e for e in ev if e["event"] == "restart")
    assert restart["by"] == "orchestrator" and 0 <= restart["t"] - kill["t"] < 0.5
    got = {e["event"]: e for e in ev if e.get("role") == "gateway" and "t" in e}
    for name in ("container_exited", "container_started", "pod_ready", "process_started",
                 "ready", "restarted"):  # fmt: skip
        assert name in got, (name, sorted(got))
    assert got["container_started"]["restart_count"] == 1
    # the kernel's process start falls within the kubelet's second (or just before: the
    # runtime creates the process, then containerd starts it and records that time)
    assert -1.0 < got["process_started"]["t"] - got["container_started"]["t"] < 1.0
    parts = pd.read_csv(run.path / "recovery.csv")
    assert len(parts) == 1, parts
    row = parts.iloc[0]
    assert row["reaction_s"] < 0  # the kubelet does not wait for the detection
    assert row["kubelet_restart_s"] > 0 and row["readiness_s"] > 0, row
    assert row["kubelet_restart_s"] + row["readiness_s"] == pytest.approx(row["start_s"])
    total = row[["detection_s", "reaction_s", "start_s", "reconnect_s"]].sum()
    assert total == pytest.approx(row["ttr_s"])
    failed = run.requests()
    assert (~failed["ok"].astype(bool)).sum() > 0  # the users saw the failure too
