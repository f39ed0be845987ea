"""Issue 48, item 7: what a machine on the same L2 network reaches of a docker stack, with
the harness's filter (``dockerguard``, installed with the stack, removed with it) and
without it.

The neighbour is a network namespace on a veth link (tests/attacker.py). On compose it
routes the project's subnet through this host: without the filter it connected to the
gateway container's port 8000 (published on 127.0.0.1 only; Docker 20.10 forwards to a
published container port from anywhere), with it no longer. On a swarm the harness made it
connects to the gateway's published port (all addresses, through Docker's DNAT) only
without the filter, and its datagrams to 4789 are counted by the drop rule. The host
reaches the gateway throughout.
"""

from __future__ import annotations

import ipaddress
import re
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from ipclab.backends import StackOptions, get_backend
from ipclab.backends.docker import dockerguard
from ipclab.backends.docker.ownership import client
from ipclab.backends.docker.swarm import SwarmBackend, publishing_containers, swarm_state
from ipclab.stacks import resolve
from tests import attacker

SUBNET = "192.168.233"


def _rules(tool: str = "iptables") -> str:
    return subprocess.run([tool, "-w", "-S"], capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def swarm_stack(docker_images: dict[str, str]) -> Iterator[Any]:
    if why := dockerguard.unavailable():
        pytest.skip(why)
    if attacker.why_not():
        pytest.skip("network namespaces need root")
    busy = publishing_containers(client())
    if busy and swarm_state(client()) != "active":
        pytest.skip(f"other containers publish ports on this engine ({busy[:3]}): no swarm now")
    stack = SwarmBackend().start(resolve("shop-rest"), StackOptions())
    try:
        yield stack
    finally:
        stack.stop()
    assert stack.project not in dockerguard.projects_in(_rules()), "its rules went with it"
    if not dockerguard.projects_in(_rules()):  # no other ipclab swarm stack: no chain either
        assert dockerguard.CHAIN not in _rules() and dockerguard.CHAIN not in _rules("ip6tables")


@pytest.fixture  # gone before the swarm's tests: a swarm is not made while it publishes ports
def compose_stack(docker_images: dict[str, str]) -> Iterator[Any]:
    if why := dockerguard.unavailable():
        pytest.skip(why)
    if attacker.why_not():
        pytest.skip("network namespaces need root")
    stack = get_backend("docker").start(resolve("shop-rest"), StackOptions())
    try:
        yield stack
    finally:
        stack.stop()
    assert stack.project not in dockerguard.projects_in(_rules()), "its rules went with it"


def _address(stack: Any, role: str) -> tuple[str, str]:
    """A role's container address on the project network, and that network's subnet."""
    ctr = stack._container(role)
    ctr.reload()
    net = next(iter(ctr.attrs["NetworkSettings"]["Networks"].values()))
    ip = net["IPAddress"]
    return ip, str(ipaddress.ip_network(f"{ip}/{net['IPPrefixLen']}", strict=False))


def test_an_l2_neighbour_reaches_no_compose_container_while_the_filter_is_there(
    compose_stack: Any,
) -> None:
    assert compose_stack.info()["filter"] == "installed"
    ip, subnet = _address(compose_stack, compose_stack.spec.gateway)
    with attacker.l2_neighbour(routes=(subnet,), subnet="192.168.234") as ns:
        assert not attacker.connects(ns, ip, 8000), "the neighbour reached the gateway"
        _jumps(add=False)
        try:
            real = attacker.connects(ns, ip, 8000)
        finally:
            _jumps(add=True)
        assert not attacker.connects(ns, ip, 8000)
        if not real:  # e.g. another host rule or the engine's own policy closes it here
            pytest.skip("without the filter this host does not forward the neighbour either: "
                        "the filter's own effect cannot be shown here")  # fmt: skip
    import urllib.request

    with urllib.request.urlopen(f"{compose_stack.gateway_url}/healthz", timeout=10) as r:
        assert r.status == 200


def _jumps(add: bool) -> None:
    for hook in ("INPUT", "DOCKER-USER"):
        op = ["-I", hook, "1"] if add else ["-D", hook]
        subprocess.run(["iptables", "-w", *op, "-j", dockerguard.CHAIN], capture_output=True)


def _dropped_to_vxlan() -> int:
    listed = subprocess.run(
        ["iptables", "-w", "-L", dockerguard.CHAIN, "-v", "-x", "-n"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return sum(int(ln.split()[0]) for ln in listed.splitlines() if re.search(r"dpt:4789\b", ln))


def test_the_swarm_stack_installs_its_filter(swarm_stack: Any) -> None:
    assert swarm_stack.info()["filter"] == "installed"
    rules = _rules()
    assert swarm_stack.project in dockerguard.projects_in(rules)
    assert f"-A DOCKER-USER -j {dockerguard.CHAIN}" in rules
    assert f"-A INPUT -j {dockerguard.CHAIN}" in rules
    assert f"--ctorigdstport {swarm_stack.port} " in rules
    assert swarm_stack.project in dockerguard.projects_in(_rules("ip6tables"))


def test_an_l2_neighbour_reaches_the_gateway_port_only_without_the_filter(
    swarm_stack: Any,
) -> None:
    port = swarm_stack.port
    with attacker.l2_neighbour(subnet=SUBNET) as ns:
        host = f"{SUBNET}.1"
        assert not attacker.connects(ns, host, port), "the neighbour reached the gateway"
        _jumps(add=False)
        try:
            assert attacker.connects(ns, host, port), "the path through Docker's DNAT is real"
        finally:
            _jumps(add=True)
        assert not attacker.connects(ns, host, port)
        before = _dropped_to_vxlan()
        attacker.send_udp(ns, host, dockerguard.VXLAN_PORT, count=5)
        assert _dropped_to_vxlan() - before >= 5, "the neighbour's VXLAN datagrams dropped"
    # the host itself, on loopback and on that address, reaches the gateway throughout
    import urllib.request

    with urllib.request.urlopen(f"{swarm_stack.gateway_url}/healthz", timeout=10) as r:
        assert r.status == 200
