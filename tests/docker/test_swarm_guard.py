"""Issue 48, item 7: on a swarm the harness made, a stack's published gateway port and the
overlay's 4789/udp are dropped for every packet that does not come from this host, by a
chain the harness installs with the stack and removes with it (``swarmguard``).

The neighbour is a network namespace on a veth link (tests/attacker.py): a machine on the
same L2 network as this host. With the filter's jumps taken away, its connection to the
gateway's port opens (the path is real, through Docker's DNAT); with them, it does not;
the host reaches the port throughout. Its datagrams to 4789 are counted by the drop rule.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from ipclab.backends import StackOptions
from ipclab.backends.docker import swarmguard
from ipclab.backends.docker.ownership import client
from ipclab.backends.docker.swarm import SwarmBackend, publishing_containers, swarm_state
from ipclab.stacks import resolve
from tests import attacker

SUBNET = "192.168.233"


def _rules(tool: str = "iptables") -> str:
    return subprocess.run([tool, "-w", "-S"], capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def swarm_stack(docker_images: dict[str, str]) -> Iterator[Any]:
    if why := swarmguard.unavailable():
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
    assert stack.project not in swarmguard.projects_in(_rules()), "its rules went with it"
    if not swarmguard.projects_in(_rules()):  # no other ipclab swarm stack: no chain either
        assert swarmguard.CHAIN not in _rules() and swarmguard.CHAIN not in _rules("ip6tables")


def _jumps(add: bool) -> None:
    for hook in ("INPUT", "DOCKER-USER"):
        op = ["-I", hook, "1"] if add else ["-D", hook]
        subprocess.run(["iptables", "-w", *op, "-j", swarmguard.CHAIN], capture_output=True)


def _dropped_to_vxlan() -> int:
    listed = subprocess.run(
        ["iptables", "-w", "-L", swarmguard.CHAIN, "-v", "-x", "-n"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return sum(int(ln.split()[0]) for ln in listed.splitlines() if re.search(r"dpt:4789\b", ln))


def test_the_swarm_stack_installs_its_filter(swarm_stack: Any) -> None:
    assert swarm_stack.info()["swarm"]["filter"] == "installed"
    rules = _rules()
    assert swarm_stack.project in swarmguard.projects_in(rules)
    assert f"-A DOCKER-USER -j {swarmguard.CHAIN}" in rules
    assert f"-A INPUT -j {swarmguard.CHAIN}" in rules
    assert f"--ctorigdstport {swarm_stack.port} " in rules
    assert swarm_stack.project in swarmguard.projects_in(_rules("ip6tables"))


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
        attacker.send_udp(ns, host, swarmguard.VXLAN_PORT, count=5)
        assert _dropped_to_vxlan() - before >= 5, "the neighbour's VXLAN datagrams dropped"
    # the host itself, on loopback and on that address, reaches the gateway throughout
    import urllib.request

    with urllib.request.urlopen(f"{swarm_stack.gateway_url}/healthz", timeout=10) as r:
        assert r.status == 200
