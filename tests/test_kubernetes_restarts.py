"""Availability where the orchestrator restarts (Kubernetes): what the kubelet recorded of a
restart (``ipclab.backends.kubernetes.restarts``), the runner's marks (the restart issued at
the kill) and the init container that waits for a healthy broker. No cluster."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ipclab.availability import runner
from ipclab.availability.faults import Fault
from ipclab.backends.kubernetes import restarts
from tests.test_kubernetes_manifests import _build


def _at(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def _pod(ready: str = "True") -> Any:
    status = SimpleNamespace(
        name="reviews",
        restart_count=2,
        last_state=SimpleNamespace(
            terminated=SimpleNamespace(finished_at=_at(100), exit_code=137, reason="Error")
        ),
        state=SimpleNamespace(running=SimpleNamespace(started_at=_at(116))),
    )
    condition = SimpleNamespace(type="Ready", status=ready, last_transition_time=_at(117))
    return SimpleNamespace(
        metadata=SimpleNamespace(name="reviews-abc"),
        status=SimpleNamespace(container_statuses=[status], conditions=[condition]),
    )


def test_the_kubelets_record_of_a_restart() -> None:
    events = restarts.recorded("reviews", _pod(), "reviews")
    assert [(e["event"], e["t"]) for e in events] == [
        ("container_exited", 100.0), ("container_started", 116.0), ("pod_ready", 117.0)
    ]  # fmt: skip
    assert events[0]["exit_code"] == 137 and all(e["restart_count"] == 2 for e in events)
    assert all(e["resolution_s"] == 1.0 and e["source"] == "kubelet" for e in events)
    assert [e["event"] for e in restarts.recorded("reviews", _pod("False"), "reviews")] == [
        "container_exited", "container_started"
    ]  # fmt: skip
    assert restarts.recorded("reviews", _pod(), "cart") == []


def test_a_process_start_read_from_the_kernel() -> None:
    import psutil

    (e,) = restarts.process_started("reviews", [os.getpid(), 2**22 + 7])  # one is gone
    assert e["event"] == "process_started" and e["t"] == psutil.Process().create_time()
    assert restarts.process_started("reviews", []) == []


class _Writer:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def event(self, what: str, **data: Any) -> None:
        self.events.append((what, data))


class _Monitor:
    """What ``runner._inject`` and ``restart_all`` use of a Monitor; never detects."""

    def __init__(self, order: list[str]) -> None:
        self.order, self.writer = order, _Writer()
        self.n_cycles, self.state = 0, "up"
        self.tracker = SimpleNamespace(cycles=[])

    def mark(self, kind: str, role: str | None = None, **data: Any) -> float:
        self.order.append(f"mark {kind} {role} {data.get('by', '')}".strip())
        return float(len(self.order))

    def wait_until(self, done: Any, timeout: float) -> bool:
        return bool(done())

    def sleep(self, seconds: float) -> None:
        return None


class _Stack:
    def __init__(self, order: list[str], itself: bool) -> None:
        self.order = order
        if itself:
            self.restarts_itself = True
        self.spec = SimpleNamespace(services=["reviews"], gateway="gateway", infrastructure=())

    def kill(self, role: str) -> None:
        self.order.append(f"kill {role}")

    def restart(self, role: str) -> None:
        self.order.append(f"restart {role}")

    def restart_events(self) -> list[dict[str, Any]]:
        return [{"event": "container_started", "t": 1.0, "role": "reviews"}]


def test_the_orchestrators_restart_is_marked_at_the_kill() -> None:
    plan = runner.FaultInjection(restart_after="detection", downtime_s=0.0)
    fault = Fault(index=0, gap_s=1.0, at_s=1.0, component="reviews")
    for itself, expected in (
        (True, ["mark kill reviews", "mark restart reviews orchestrator", "kill reviews",
                "restart reviews"]),
        (False, ["mark kill reviews", "kill reviews", "mark restart reviews",
                 "restart reviews"]),
    ):  # fmt: skip
        order: list[str] = []
        mon = _Monitor(order)
        runner._inject(_Stack(order, itself), mon, plan, fault, 0.0)  # type: ignore[arg-type]
        assert order == expected
        names = [what for what, _ in mon.writer.events]
        assert names == ["restarted", "container_started"]  # the kubelet's record copied


def test_method_1_marks_each_restart_before_its_kill_then_waits_for_the_kubelet() -> None:
    order: list[str] = []
    runner.restart_all(_Stack(order, True), _Monitor(order))  # type: ignore[arg-type]
    assert order == [
        "mark restart gateway orchestrator", "kill gateway",
        "mark restart reviews orchestrator", "kill reviews", "restart reviews", "restart gateway",
    ]  # fmt: skip
    order.clear()
    runner.restart_all(_Stack(order, False), _Monitor(order))  # type: ignore[arg-type]
    assert order == [
        "kill gateway", "kill reviews", "mark restart reviews", "restart reviews",
        "mark restart gateway", "restart gateway",
    ]  # fmt: skip


def test_roles_wait_for_a_healthy_broker_in_an_init_container(tmp_path: Path) -> None:
    m = _build("shop-amqp", tmp_path)
    (wait,) = m.pods["reviews"].init_containers
    assert wait["name"] == "wait-broker" and wait["command"][:2] == ["bash", "-c"]
    assert "/dev/tcp/broker/5672" in wait["command"][2]
    assert wait["image"] == m.pods["broker"].containers[0]["image"]
    assert wait["securityContext"]["capabilities"]["drop"] == ["ALL"]
    deployments = {d["metadata"]["name"]: d for d in m.deployments({"broker": "10.0.0.9"})}
    spec = deployments["reviews"]["spec"]["template"]["spec"]
    assert spec["initContainers"] == [wait]
    assert "initContainers" not in deployments["broker"]["spec"]["template"]["spec"]
    (tmp_path / "r").mkdir()
    assert all(not p.init_containers for p in _build("shop-rest", tmp_path / "r").pods.values())
