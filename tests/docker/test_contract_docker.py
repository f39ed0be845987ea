"""The spine's contract (tests/test_contract.py) against the docker stacks, plus what only the
docker backend does: container samples, logs, kill and restart of the broker."""

from __future__ import annotations

import time
import urllib.request

import orjson

from ipclab.backends.docker.backend import PROJECT_LABEL, DockerStack

from .local_tests import load_local_tests

# The spine's contract tests, re-collected here: they get this directory's shop_stacks (docker).
_contract = load_local_tests("test_contract.py")
test_healthz = _contract.test_healthz
test_malformed_id_is_400 = _contract.test_malformed_id_is_400
test_same_json_in_every_style = _contract.test_same_json_in_every_style
test_unknown_product_is_404 = _contract.test_unknown_product_is_404
test_service_down_is_503_or_504_within_the_deadline = (
    _contract.test_service_down_is_503_or_504_within_the_deadline
)


def test_product_page_and_labels(shop_stacks: dict[str, DockerStack]) -> None:
    for name, stack in shop_stacks.items():
        assert stack.gateway_url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(f"{stack.gateway_url}/product/1?customer_id=1") as r:
            assert r.status == 200
            doc = orjson.loads(r.read())
        assert doc["product"]["product_id"] == 1, name
        for comp in stack.components:
            ctr = stack._container(comp)
            assert ctr.labels[PROJECT_LABEL] == stack.project
            # Published ports: the gateway's only, and on 127.0.0.1 only.
            ports = ctr.attrs["HostConfig"]["PortBindings"] or {}
            for bindings in ports.values():
                assert all(b["HostIp"] == "127.0.0.1" for b in bindings), (name, comp, ports)
            assert bool(ports) == (comp == "gateway"), (name, comp, ports)
            assert "NET_ADMIN" in (ctr.attrs["HostConfig"]["CapAdd"] or [])


def test_samples_cover_every_container(shop_stacks: dict[str, DockerStack]) -> None:
    for name, stack in shop_stacks.items():
        for i in range(20):  # load, so CPU and network counters move
            urllib.request.urlopen(f"{stack.gateway_url}/product/{i + 1}?customer_id=1").read()
        time.sleep(2.2)
        t0 = time.monotonic()
        rows = {r["component"]: r for r in stack.sample()}
        assert time.monotonic() - t0 < 0.5, "sample() must not block"
        assert set(rows) == set(stack.components), name
        for comp, row in rows.items():
            assert row["status"] == "running", (name, comp, row)
            assert row["cpu_percent"] is not None and row["cpu_percent"] >= 0, (name, comp)
            assert row["rss_bytes"] > 1_000_000, (name, comp, row)
            assert row["net_rx_bytes"] > 0 and row["net_tx_packets"] > 0, (name, comp, row)
        assert rows["gateway"]["net_tx_bytes"] > 20 * 1000, "20 pages left the gateway"


def test_logs_name_every_container(shop_stacks: dict[str, DockerStack]) -> None:
    for name, stack in shop_stacks.items():
        logs = stack.logs()
        assert set(logs) == set(stack.components), name


def test_broker_kill_and_restart(shop_stacks: dict[str, DockerStack]) -> None:
    stack = shop_stacks["shop-amqp"]
    stack.kill("broker")
    rows = {r["component"]: r for r in stack.sample()}
    time.sleep(3.5)
    rows = {r["component"]: r for r in stack.sample()}
    assert rows["broker"]["status"] != "running"
    stack.restart("broker")
    stack._container("broker").reload()
    assert stack._container("broker").status == "running"
