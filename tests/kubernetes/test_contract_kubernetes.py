"""The shop contract (tests/test_contract.py) on the cluster, and what only the kubernetes
backend does: a pod per component with its own Service, samples from the pods' cgroups,
the cluster restarting a killed container (seen by the availability probe), a short run
with no failure, and nothing left after teardown or after a kill -9 of the harness."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ipclab.availability.tracker import CycleStatus
from ipclab.runs import read_run

from ..docker.local_tests import load_local_tests
from ..orchestrator_restart import killed_and_restarted

_contract = load_local_tests("test_contract.py")
test_healthz = _contract.test_healthz
test_malformed_id_is_400 = _contract.test_malformed_id_is_400
test_same_json_in_every_style = _contract.test_same_json_in_every_style
test_unknown_product_is_404 = _contract.test_unknown_product_is_404


def test_a_pod_per_component_sampled_from_its_cgroup(shop_stacks: dict[str, Any]) -> None:
    for name, stack in shop_stacks.items():
        assert stack.gateway_url.startswith("http://127.0.0.1:"), name
        stack.sample()
        time.sleep(1.0)
        rows = {r["component"]: r for r in stack.sample()}
        assert set(rows) == {m for p in stack.manifests.pods.values() for m in p.members}, name
        assert all(r["status"] == "running" for r in rows.values()), rows
        if stack.cluster.local:
            assert all(r.get("cpu_percent") is not None for r in rows.values()), rows
            assert all((r.get("rss_bytes") or 0) > 0 for r in rows.values()), rows


def test_a_killed_container_is_restarted_and_the_probe_sees_it(
    shop_stacks: dict[str, Any], tmp_path: Path
) -> None:
    stack = shop_stacks["shop-rest"]
    # nobody restarts it but the kubelet; restart() waits for the cluster's restart
    cycles = killed_and_restarted(stack, tmp_path, "reviews", lambda: stack.restart("reviews"))
    assert cycles and cycles[0].status == CycleStatus.RECOVERED, cycles
    print(f"the kubelet restarted reviews: down {cycles[0].ttr_s:.1f} s")


def _ipclab(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ipclab.cli", *args], capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip


def test_a_short_run_has_no_failure_and_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = _ipclab(
        "run", "shop-grpc", "--backend", "kubernetes", "--users", "20", "--spawn-rate", "20",
        "--duration", "8s", "--warmup", "2s", "--out", str(out),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    run = read_run(out)
    s = run.summary
    assert run.complete and s["failures"] == 0 and s["requests"] > 0, s
    assert run.manifest["backend"] == "kubernetes"
    namespace = run.manifest["stack_info"]["kubernetes"]["namespace"]
    from ipclab.backends.kubernetes import cluster, ownership

    assert namespace not in {n.metadata.name for n in ownership.namespaces(cluster.connect().core)}


def test_a_killed_harness_leaves_nothing_in_the_cluster(tmp_path: Path) -> None:
    """kill -9 of ``ipclab up`` (in the foreground): its watchdog deletes the namespace."""
    from ipclab.backends.kubernetes import cluster, ownership

    proc = subprocess.Popen(
        [sys.executable, "-m", "ipclab.cli", "up", "shop-rest", "--backend", "kubernetes"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    core = cluster.connect().core
    deadline = time.monotonic() + 300
    made: list[str] = []
    while time.monotonic() < deadline and not made:
        made = [
            n.metadata.name
            for n in ownership.namespaces(core)
            if (n.metadata.annotations or {}).get("ipclab.stack") == "shop-rest"
            and str((n.metadata.annotations or {}).get("ipclab.harness", "")).startswith(
                f"{proc.pid}:"
            )
        ]
        time.sleep(0.5)
    assert made, "ipclab up made no namespace"
    time.sleep(5)  # up by now, or on its way
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert all(ownership.wait_gone(core, name, 120) for name in made), made
    left = [n.metadata.name for n in ownership.namespaces(core)]
    assert not set(made) & set(left), left  # (this session's own stacks are still up)
