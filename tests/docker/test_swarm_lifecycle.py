"""A swarm the harness makes is left when its last stack stops; a swarm it did not make is
left untouched (issue 17, must-show 2). Its own module: test_swarm.py's stacks keep a swarm
active until that module ends."""

from __future__ import annotations

import subprocess

import pytest

from ipclab.backends import StackOptions
from ipclab.backends.docker.ownership import client, workdirs
from ipclab.backends.docker.swarm import (
    SwarmBackend,
    SwarmBusy,
    publishing_containers,
    swarm_leftovers,
    swarm_state,
)
from ipclab.stacks import resolve

NOTHING = {"services": [], "containers": [], "networks": [], "configs": [], "secrets": []}


@pytest.fixture(autouse=True)
def no_published_ports(docker_images: dict[str, str]) -> None:
    busy = publishing_containers(client())
    if busy and swarm_state(client()) != "active":
        pytest.skip(f"other containers publish ports on this engine ({busy[:3]}): no swarm now")


def test_no_swarm_is_made_while_a_container_publishes_a_port(
    docker_images: dict[str, str],
) -> None:
    """swarm init/leave rewrite the NAT rules and cut such ports off for seconds."""
    from ipclab.backends.docker.backend import DockerBackend

    c = client()
    if swarm_state(c) == "active":
        pytest.skip("this engine is in a swarm already")
    compose = DockerBackend().start(resolve("shop-rest"), StackOptions())
    try:
        before = set(workdirs("ipclab-shop-grpc"))
        with pytest.raises(SwarmBusy, match="published ports"):
            SwarmBackend().start(resolve("shop-grpc"), StackOptions())
        assert swarm_state(c) == "inactive"
        assert set(workdirs("ipclab-shop-grpc")) == before, "the refused stack left its workdir"
    finally:
        compose.stop()


def test_a_swarm_the_harness_did_not_make_is_left_untouched(docker_images: dict[str, str]) -> None:
    c = client()
    if swarm_state(c) == "active":
        pytest.skip("this engine is in a swarm already (its own, or another test's)")
    subprocess.run(["docker", "swarm", "init", "--advertise-addr", "127.0.0.1"],
                   capture_output=True, check=True, timeout=60)  # fmt: skip
    try:
        stack = SwarmBackend().start(resolve("shop-grpc"), StackOptions())
        assert not stack.made_swarm
        stack.stop()
        assert swarm_leftovers(stack.project) == NOTHING
        assert swarm_state(c) == "active", "the harness left a swarm it did not make"
    finally:
        subprocess.run(["docker", "swarm", "leave", "--force"], capture_output=True, timeout=60)


def test_a_swarm_the_harness_made_is_left_when_its_last_stack_stops(
    docker_images: dict[str, str],
) -> None:
    c = client()
    if swarm_state(c) == "active":
        pytest.skip("this engine is in a swarm already")
    stack = SwarmBackend().start(resolve("shop-rest"), StackOptions())
    assert stack.made_swarm and swarm_state(c) == "active"
    stack.stop()
    assert swarm_leftovers(stack.project) == NOTHING
    assert swarm_state(c) == "inactive"


def test_limits_and_the_network_delay_work_on_swarm(docker_images: dict[str, str]) -> None:
    """As on compose: per-container CPU and memory limits, and a measured egress delay."""
    opts = StackOptions(delay_ms=3.0, cpus=0.5, memory_mb=256)
    stack = SwarmBackend().start(resolve("shop-rest"), opts)
    try:
        host = stack._container("reviews").attrs["HostConfig"]
        assert host["NanoCpus"] == 500_000_000 and host["Memory"] == 256 * 2**20, host
        assert set(host["CapAdd"] or []) >= {"CAP_NET_ADMIN"} or "NET_ADMIN" in str(host["CapAdd"])
        netem = stack.netem or {}
        print(f"swarm delay: {netem.get('measured_delay_ms')} ms measured for 3 ms asked")
        assert netem["measured_delay_ms"] == pytest.approx(3.0, rel=0.25), netem
    finally:
        stack.stop()
    assert swarm_leftovers(stack.project) == NOTHING
