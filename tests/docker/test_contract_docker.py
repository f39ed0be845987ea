"""The spine's contract (tests/test_contract.py) against the docker stacks, plus what only the
docker backend does: container samples, logs, kill and restart of the broker."""

from __future__ import annotations

import time
import urllib.error
import urllib.request

import orjson
import pytest

from ipclab import orphans
from ipclab.backends.docker import execs
from ipclab.backends.docker.backend import DockerStack, DockerStackError
from ipclab.backends.docker.ownership import HARNESS_LABEL, PROJECT_LABEL
from ipclab.stacks import resolve

from .conftest import SHOP_FAMILIES
from .local_tests import load_local_tests

# The spine's contract tests, re-collected here: they get this directory's shop_stacks (docker,
# one stack per family: tests/docker/conftest.py).
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
            assert ctr.labels[HARNESS_LABEL] == orphans.this_harness()
            # Published ports: the gateway's only, and on 127.0.0.1 only.
            ports = ctr.attrs["HostConfig"]["PortBindings"] or {}
            for bindings in ports.values():
                assert all(b["HostIp"] == "127.0.0.1" for b in bindings), (name, comp, ports)
            assert bool(ports) == (comp == "gateway"), (name, comp, ports)


def test_containers_get_no_capability_without_a_delay_and_services_run_unprivileged(
    shop_stacks: dict[str, DockerStack],
) -> None:
    for name, stack in shop_stacks.items():
        for comp in stack.components:
            host = stack._container(comp).attrs["HostConfig"]
            assert not host["Privileged"], (name, comp)
            if comp == "broker":  # every capability dropped but what its switch of user needs
                assert "ALL" in (host["CapDrop"] or []), (name, comp, host["CapDrop"])
                assert sorted(host["CapAdd"] or []) == ["CHOWN", "SETGID", "SETUID"], host
                continue  # RabbitMQ's own entrypoint drops to the rabbitmq user
            assert not host["CapAdd"], (name, comp, host["CapAdd"])
            ctr = stack._container(comp)
            assert host["CapDrop"] and "ALL" in host["CapDrop"], (name, comp, host["CapDrop"])
            done = execs.run(ctr, ["id", "-u"], user="")  # whole output (execs' docstring)
            assert done.status == 0 and done.output.strip() == "10001", (name, comp, done)
            # every process, the service's included (pid 1 is docker's init; the exec's own
            # sh and timeout run as the same user)
            done = execs.run(ctr, ["sh", "-c", "stat -c %u /proc/[0-9]*"], user="")
            assert done.status == 0 and set(done.output.split()) == {"10001"}, (name, comp, done)


def test_setting_a_delay_on_a_stack_started_without_one_is_a_clear_error(
    shop_stacks: dict[str, DockerStack],
) -> None:
    stack = shop_stacks["shop-rest"]
    with pytest.raises(DockerStackError, match="NET_ADMIN"):
        stack.set_delay(2.0)


def test_samples_cover_every_container(shop_stacks: dict[str, DockerStack]) -> None:
    for stack in shop_stacks.values():
        for i in range(20):  # load, so CPU and network counters move
            urllib.request.urlopen(f"{stack.gateway_url}/product/{i + 1}?customer_id=1").read()
    time.sleep(2.2)  # once for every stack: each was loaded at least this long ago
    for name, stack in shop_stacks.items():
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


def page_status(stack: DockerStack) -> int:
    try:
        with urllib.request.urlopen(f"{stack.gateway_url}/product/3?customer_id=1", timeout=5) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


@pytest.mark.parametrize("name", [n for n in SHOP_FAMILIES if resolve(n).needs_broker])
def test_broker_kill_and_restart_serves_pages_again(
    shop_stacks: dict[str, DockerStack], name: str
) -> None:
    """Python's aio-pika and Go's amqp.go reconnect by themselves."""
    stack = shop_stacks[name]
    assert page_status(stack) == 200
    stack.kill("broker")
    deadline = time.monotonic() + 15
    while stack.sample() and time.monotonic() < deadline:
        rows = {r["component"]: r for r in stack.sample()}
        if rows["broker"]["status"] != "running":
            break
        time.sleep(0.5)
    assert rows["broker"]["status"] != "running"
    assert page_status(stack) in (503, 504), "no broker, no page"
    stack.restart("broker")
    # The gateway and the services reconnect: a product page is served again.
    deadline = time.monotonic() + 60
    status = 0
    while status != 200 and time.monotonic() < deadline:
        status = page_status(stack)
        if status != 200:
            time.sleep(0.5)
    assert status == 200, "no page served within 60 s of the broker's restart"
