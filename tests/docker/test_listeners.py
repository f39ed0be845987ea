"""What a stack opens to the network, on each backend (issue 28, item 3 and must-show 2).

One stack per backend, chosen to open the most: shop-coap locally (UDP sockets of every
service and the gateway's CoAP clients), shop-amqp on compose and on swarm (the broker; on
swarm the overlay and the published gateway). Every listener the stack brings is on loopback,
or is one ``ipclab.listeners.IMPOSED`` names with Docker's reason, which docs/hardening.md
shows; the broker refuses ``guest`` even from inside the stack's own network. The table over
every stack and backend is ``python -m ipclab.listeners`` (docs/hardening.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from ipclab.backends import StackOptions, get_backend
from ipclab.backends.docker import execs
from ipclab.backends.docker.ownership import client
from ipclab.backends.docker.swarm import publishing_containers, swarm_state
from ipclab.listeners import (
    IMPOSED,
    Listener,
    beyond_loopback,
    gateway_port,
    imposed_by,
    listening,
    opened_by,
    unexplained,
)
from ipclab.paths import REPO_ROOT
from ipclab.stacks import resolve

SWARM_PORTS = (2377, 7946)  # management and gossip of a swarm the harness made


@dataclass
class Started:
    backend: str
    stack: Any
    opened: list[Listener]
    made_swarm: bool


def _no_swarm_now() -> str | None:
    busy = publishing_containers(client())
    if busy and swarm_state(client()) != "active":
        return f"other containers publish ports on this engine ({busy[:3]}): no swarm now"
    return None


def test_up_detach_then_down_leaves_the_swarm_the_harness_made(
    docker_images: dict[str, str],
) -> None:
    """`ipclab down` leaves the swarm as a run's stop does; its gossip and VXLAN close. First
    in this module: the module-scoped stacks below keep a swarm active until the module ends."""
    if swarm_state(client()) == "active":
        pytest.skip("this engine is in a swarm already (its own, or another test's)")
    if why := _no_swarm_now():
        pytest.skip(why)
    cli = [sys.executable, "-m", "ipclab.cli"]
    up = subprocess.run([*cli, "up", "shop-rest", "--backend", "swarm", "--detach"],
                        capture_output=True, text=True, timeout=400)  # fmt: skip
    try:
        assert up.returncode == 0, up.stderr[-2000:]
        assert swarm_state(client()) == "active"
    finally:
        down = subprocess.run([*cli, "down", "shop-rest", "--backend", "swarm"],
                              capture_output=True, text=True, timeout=300)  # fmt: skip
    assert down.returncode == 0, down.stderr[-2000:]
    assert swarm_state(client()) == "inactive"
    left = {x.port for x in listening() if x.port in (*SWARM_PORTS, 4789)}
    deadline = time.monotonic() + 30  # the kernel drops the VXLAN socket a little later
    while left and time.monotonic() < deadline:
        time.sleep(1)
        left = {x.port for x in listening() if x.port in (*SWARM_PORTS, 4789)}
    assert left == set(), left


@pytest.fixture(
    scope="module",
    params=[("local", "shop-coap"), ("docker", "shop-amqp"), ("swarm", "shop-amqp")],
    ids=lambda p: "-".join(p),
)
def started(request: pytest.FixtureRequest, docker_images: dict[str, str]) -> Iterator[Started]:
    backend, name = request.param
    if backend == "swarm" and (why := _no_swarm_now()):
        pytest.skip(why)
    before = listening()
    stack = get_backend(backend).start(resolve(name), StackOptions())
    try:
        time.sleep(2)  # a listener opened just after the gateway answered
        made = bool(getattr(stack, "made_swarm", False))
        yield Started(backend, stack, opened_by(before), made)
    finally:
        stack.stop()


def test_every_listener_a_stack_opens_is_on_loopback_or_imposed_by_docker(
    started: Started,
) -> None:
    port = gateway_port(started.stack)
    wide = beyond_loopback(started.opened)
    print(started.backend, [f"{x.proto} {x.address} {x.process or 'kernel'}" for x in wide])
    assert unexplained(started.backend, started.opened, port) == []
    assert started.opened, "the check saw nothing: the stack's listeners were not found"
    if started.backend != "swarm":
        assert wide == []
        return
    # swarm: exactly the two Docker imposes, named here as in the docs
    assert {(x.proto, x.port, x.process) for x in wide} == {
        ("tcp", port, "docker-proxy"),
        ("udp", 4789, ""),
    }, wide
    if started.made_swarm:  # management and gossip on loopback (--listen-addr)
        swarm = [x for x in started.opened if x.port in SWARM_PORTS]
        assert {x.port for x in swarm} == set(SWARM_PORTS) and all(x.loopback() for x in swarm)


def test_the_broker_refuses_guest_from_inside_the_stack_network(started: Started) -> None:
    """The services' own login works; guest, from a container on the stack's network (the
    gateway's), is refused: it does not exist on a broker of compose or swarm."""
    if started.backend == "local":
        pytest.skip("the local broker: tests/test_broker_login.py and tests/test_local_attacker.py")
    gateway = started.stack._container("gateway")
    env = dict(e.split("=", 1) for e in gateway.attrs["Config"]["Env"])
    own = env["IPCLAB_AMQP_URL"]
    assert "guest" not in own
    script = (
        "import asyncio, json, sys, aio_pika\n"
        "async def login(url):\n"
        "    try:\n"
        "        c = await aio_pika.connect(url, timeout=10)\n"
        "        await c.close()\n"
        "        return 'ok'\n"
        "    except Exception as e:\n"
        "        return type(e).__name__\n"
        "print(json.dumps([asyncio.run(login(u)) for u in sys.argv[1:]]))\n"
    )
    guest = "amqp://guest:guest@broker:5672/"
    r = execs.run(gateway, ["python3", "-c", script, own, guest], user="")
    assert r.status == 0, r.output
    got = json.loads(r.output.strip().splitlines()[-1])
    assert got[0] == "ok", got
    assert got[1] in ("ProbableAuthenticationError", "AuthenticationError"), got


def test_no_container_can_join_the_swarm_stack_network(started: Started) -> None:
    if started.backend != "swarm":
        pytest.skip("compose's bridge network: docker run --network joins any bridge")
    import docker.errors

    gateway = started.stack._container("gateway")
    overlay = next(n for n in gateway.attrs["NetworkSettings"]["Networks"] if "default" in n)
    image = gateway.attrs["Config"]["Image"]
    made = []
    try:
        with pytest.raises(docker.errors.APIError, match="attachable"):
            # created, then refused at start: `run(remove=True)` left it behind, "Created"
            made.append(client().containers.create(image, ["true"], network=overlay))
            made[-1].start()
    finally:
        for ctr in made:
            ctr.remove(force=True)


def test_every_imposed_listener_is_named_in_the_docs_with_its_reason() -> None:
    text = (REPO_ROOT / "docs" / "hardening.md").read_text()
    section = text[text.index("## The swarm") :]
    for imposed in IMPOSED:
        what = "gateway's published port" if imposed.port < 0 else f"{imposed.port}/{imposed.proto}"
        assert what in section, what
    assert imposed_by("docker", Listener("tcp", "0.0.0.0", 80, 1, "docker-proxy"), 80) is None
