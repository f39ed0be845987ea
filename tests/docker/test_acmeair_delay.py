"""AcmeAir under added delay (issue 14, must-show 4): each test case's minimum response
time rises by its delayed one-way hops x the per-host delay, within 25%, per protocol.

The docker backend delays every container's egress; the load generator runs on the host,
whose egress it does not delay. So the hops are: Query Flight (gateway -> flight ->
gateway -> client) 3; List Bookings (gateway -> booking -> auth -> booking -> gateway ->
client) 5. The issue's 4 and 6 count the generator's own egress too, which needs the
generator in a container of its own (not done yet).
"""

from __future__ import annotations

import http.client
import time
from collections.abc import Iterator

import pytest

from ipclab.backends import StackOptions
from ipclab.backends.docker.backend import DockerBackend, DockerStack
from ipclab.stacks import resolve

DELAY_MS = 5.0
STACKS = ("acmeair-http1", "acmeair-h2c", "acmeair-coap")
USER = "uid3@email.com"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
QUERY = "fromAirport=OSL&toAirport=TRD&fromDate=2017-06-01&returnDate=2017-06-08&oneWay=false"
HOPS = {"Query Flight": 3, "List Bookings": 5}


def min_latency_ms(stack: DockerStack, n: int = 60, warmup: int = 15) -> dict[str, float]:
    """Minimum of each test case over ``n`` sequential requests on one keep-alive
    connection, after ``warmup`` requests left out."""
    conn = http.client.HTTPConnection("127.0.0.1", int(stack.gateway_url.rsplit(":", 1)[1]))
    best = dict.fromkeys(HOPS, float("inf"))
    try:
        conn.request("POST", "/rest/api/login", f"login={USER}&password=password", FORM)
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 200
        cookies = "; ".join(
            v.split(";")[0] for k, v in resp.getheaders() if k.lower() == "set-cookie"
        )
        for i in range(-warmup, n):
            for case in HOPS:
                t0 = time.perf_counter()
                if case == "Query Flight":
                    conn.request("POST", "/rest/api/flights/queryflights", QUERY, FORM)
                else:
                    path = f"/rest/api/bookings/byuser/{USER}"
                    conn.request("GET", path, headers={"Cookie": cookies})
                r = conn.getresponse()
                r.read()
                assert r.status == 200, case
                if i >= 0:
                    best[case] = min(best[case], (time.perf_counter() - t0) * 1000)
    finally:
        conn.close()
    return best


@pytest.fixture(scope="module", params=STACKS)
def stack(request: pytest.FixtureRequest, docker_images: dict[str, str]) -> Iterator[DockerStack]:
    s = DockerBackend(net_admin=True).start(resolve(request.param), StackOptions())
    try:
        yield s
    finally:
        s.stop()


def test_min_response_time_rises_by_hops_times_delay(stack: DockerStack) -> None:
    base = min_latency_ms(stack)
    netem = stack.set_delay(DELAY_MS)
    delayed = min_latency_ms(stack)
    per_hop = netem["measured_delay_ms"]
    assert netem["measured_delay_ms"] == pytest.approx(DELAY_MS, rel=0.25), netem
    assert netem["udp_measured_delay_ms"] == pytest.approx(DELAY_MS, rel=0.25), netem
    for case, hops in HOPS.items():
        rise = delayed[case] - base[case]
        print(
            f"{stack.spec.name} {case}: min {base[case]:.2f} -> {delayed[case]:.2f} ms, rise "
            f"{rise:.2f} (expected {hops} x {per_hop:.2f} = {hops * per_hop:.2f})"
        )
        assert rise == pytest.approx(hops * per_hop, rel=0.25), (case, base, delayed, netem)
