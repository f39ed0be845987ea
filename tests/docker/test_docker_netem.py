"""Network delay: a constant delay on every container's egress raises the minimum product-page
latency by (delayed hops on the critical path) x delay, within 25% (issue 3, must-show 3).

The load generator is on the host, whose egress is not delayed, so the hops are:
rest/grpc: gateway -> service, service -> gateway, gateway -> client = 3;
amqp: gateway -> broker -> service -> broker -> gateway -> client = 5.
"""

from __future__ import annotations

import http.client
import time
from collections.abc import Iterator

import pytest

from ipclab.backends import StackOptions
from ipclab.backends.docker import DockerBackend, DockerStack
from ipclab.stacks import resolve

DELAY_MS = 5.0
HOPS = {"shop-rest": 3, "shop-grpc": 3, "shop-amqp": 5}


def min_latency_ms(stack: DockerStack, n: int = 60) -> float:
    """Minimum over ``n`` sequential requests on one keep-alive connection (as Locust's)."""
    conn = http.client.HTTPConnection("127.0.0.1", int(stack.gateway_url.rsplit(":", 1)[1]))
    best = float("inf")
    try:
        for i in range(n):
            t0 = time.perf_counter()
            conn.request("GET", f"/product/{i % 50 + 1}?customer_id=1")
            resp = conn.getresponse()
            resp.read()
            assert resp.status == 200
            best = min(best, (time.perf_counter() - t0) * 1000)
    finally:
        conn.close()
    return best


@pytest.fixture(scope="module", params=list(HOPS))
def stack(request: pytest.FixtureRequest, docker_images: dict[str, str]) -> Iterator[DockerStack]:
    s = DockerBackend().start(resolve(request.param), StackOptions())
    try:
        yield s
    finally:
        s.stop()


def test_delay_raises_min_latency_by_hops_times_delay(stack: DockerStack) -> None:
    name = stack.spec.name
    base = min_latency_ms(stack)
    netem = stack.set_delay(DELAY_MS)
    delayed = min_latency_ms(stack)
    expected = HOPS[name] * DELAY_MS
    rise = delayed - base
    print(f"{name}: min {base:.2f} -> {delayed:.2f} ms, rise {rise:.2f} (expected {expected}), "
          f"method {netem['method']}, measured delay {netem['measured_delay_ms']:.2f} ms")
    # The delay itself, measured between containers (TCP connect RTT = 2 delayed egresses).
    assert netem["measured_delay_ms"] == pytest.approx(DELAY_MS, rel=0.25), netem
    assert rise == pytest.approx(expected, rel=0.25), (name, base, delayed, netem)
    # Removing it brings the floor back.
    stack.set_delay(0)
    assert min_latency_ms(stack) < base + DELAY_MS / 2


def test_delay_survives_restart(stack: DockerStack) -> None:
    """A restarted container has a fresh network namespace; the backend sets the delay again."""
    if stack.spec.name != "shop-rest":
        pytest.skip("once is enough")
    stack.set_delay(DELAY_MS)
    stack.kill("reviews")
    stack.restart("reviews")
    rtt = stack.measure_delay()["rtt_ms"]["reviews:8000"]
    assert rtt == pytest.approx(2 * DELAY_MS, rel=0.25)
