"""A stack's load host (``StackSpec.load_host``): the declaration, the docker compose file's
``loadgen`` container, entering its namespace, and the load generator's resource row."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import pytest

from ipclab.backends.base import LoadHost, LoadHostError, RunningStack
from ipclab.backends.docker.compose import DELAY_CAPABILITIES, compose_document
from ipclab.load.runner import ResourceSampler
from ipclab.stacks import LOADGEN, resolve


def test_acmeair_stacks_declare_a_load_host_and_the_shop_does_not() -> None:
    for name in ("acmeair-http1", "acmeair-h2c", "acmeair-coap"):
        spec = resolve(name)
        assert spec.load_host and spec.declaration()["load_host"] is True
        assert LOADGEN not in spec.roles  # a host, not a role
    assert not resolve("shop-rest").load_host
    assert "load_host" not in resolve("shop-rest").declaration()


def test_a_role_named_loadgen_is_refused() -> None:
    spec = resolve("shop-rest")
    with pytest.raises(ValueError, match="load generator"):
        dataclasses.replace(spec, services=(*spec.services, LOADGEN))


@pytest.mark.parametrize("net_admin", [False, True])
def test_compose_has_a_loadgen_container_that_runs_nothing(net_admin: bool) -> None:
    services = compose_document(resolve("acmeair-http1"), net_admin)["services"]
    lg = services[LOADGEN]
    assert lg["extends"]["service"] == "app"  # labels, ownership, cap_drop as every container
    assert lg["command"] == ["sleep", "infinity"]
    assert "network_mode" not in lg and "ports" not in lg  # a namespace of its own, unpublished
    assert lg.get("cap_add") == (DELAY_CAPABILITIES if net_admin else None)
    assert LOADGEN not in compose_document(resolve("shop-rest"))["services"]


def test_entering_a_load_host_needs_root(monkeypatch: pytest.MonkeyPatch) -> None:
    host = LoadHost("/proc/1/ns/net", "http://172.18.0.5:8000")
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    with pytest.raises(LoadHostError, match="only root"):
        host.enter()
    monkeypatch.setattr("os.geteuid", lambda: 0)
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")
    assert host.enter() == ["/usr/bin/nsenter", "--net=/proc/1/ns/net", "--"]


class _Stack(RunningStack):
    """Samples as DockerStack gives them: one row per container, the load host's included."""

    def sample(self) -> list[dict[str, Any]]:
        net = {"net_rx_bytes": 10, "net_tx_bytes": 20, "net_rx_packets": 1, "net_tx_packets": 2}
        return [
            {"t": 1.0, "component": "gateway", "kind": "container", "cpu_percent": 5.0, **net},
            {"t": 1.0, "component": LOADGEN, "kind": "container", "container": "p_loadgen_1",
             "cpu_percent": 0.1, **net},
        ]  # fmt: skip


class _Out:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def write(self, rows: list[dict[str, Any]]) -> None:
        self.rows.extend(rows)


def test_the_load_hosts_counters_go_into_the_load_generators_row() -> None:
    sampler = ResourceSampler(_Stack(), _Out(), lambda: {LOADGEN: os.getpid()})  # type: ignore[arg-type]
    rows = sampler._rows()
    loadgen = [r for r in rows if r["component"] == LOADGEN]
    assert len(loadgen) == 1  # one row per component per sample
    (row,) = loadgen
    assert row["kind"] == "loadgen" and row["pid"] == os.getpid()  # the process's CPU and RSS
    assert row["cpu_percent"] != 0.1
    assert (row["net_tx_bytes"], row["net_rx_packets"]) == (20, 1)  # the container's interface
    assert row["container"] == "p_loadgen_1"
    assert {r["component"] for r in rows} == {"gateway", LOADGEN, "host"}


def test_without_a_load_host_the_load_generators_row_has_no_counters() -> None:
    class Plain(_Stack):
        def sample(self) -> list[dict[str, Any]]:
            return super().sample()[:1]

    sampler = ResourceSampler(Plain(), _Out(), lambda: {LOADGEN: os.getpid()})  # type: ignore[arg-type]
    (row,) = [r for r in sampler._rows() if r["component"] == LOADGEN]
    assert "net_tx_bytes" not in row


def test_after_the_load_generator_ended_its_row_keeps_the_counters() -> None:
    pids = {LOADGEN: os.getpid()}
    sampler = ResourceSampler(_Stack(), _Out(), lambda: dict(pids))  # type: ignore[arg-type]
    sampler._rows()
    pids.clear()  # Locust stopped; the last sample comes after
    (row,) = [r for r in sampler._rows() if r["component"] == LOADGEN]
    assert row["kind"] == "loadgen" and "pid" not in row and "cpu_percent" not in row
    assert row["net_tx_bytes"] == 20
