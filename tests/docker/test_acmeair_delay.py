"""AcmeAir under added delay (issue 14, must-show 4): each test case's minimum response time
rises by its delayed one-way hops x the per-host delay, within 25%, per protocol.

Every host is a container with its own delayed network namespace, the load generator's
included (``StackSpec.load_host``: the requests here are sent from the ``loadgen``
container, as Locust's are from its namespace). The adapters share their host's namespace,
so gateway <-> egress and ingress <-> service cross no delayed interface. Hops:

* Query Flight: loadgen -> gateway, gateway -> flight, flight -> gateway, gateway -> loadgen
  = **4**;
* List Bookings: the same to booking, plus booking -> auth -> booking (the session's
  validation, HTTP/1.1) = **6**.

Over CoAP an answer above one block (1,024 bytes) travels block-wise, one request per
further block: Query Flight's 3,752-byte answer takes 3 more round trips between the gateway
and flight, 4 + 2 x 3 = **10** hops (counted from the answer's size as seen here).

The per-hop delay is the measured one (``stack.netem``: TCP connect and UDP round trips,
halved); the TCP and UDP round trips themselves must be within 25% of 2 x nominal.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import pytest
from ipclab_services.domains.acmeair.routes import api

from ipclab.backends import StackOptions
from ipclab.backends.docker import execs, netem
from ipclab.backends.docker.backend import DockerBackend, DockerStack
from ipclab.stacks import LOADGEN, all_stacks, resolve

DELAY_MS = 5.0
# every AcmeAir stack with a host for its load generator, from the registry
STACKS = tuple(n for n, s in all_stacks().items() if s.domain == "acmeair" and s.load_host)
HOPS = {"Query Flight": 4, "List Bookings": 6}
COAP_BLOCK = 1024
USER = "uid3@email.com"
# AcmeAir's own paths (not from the Locust user module: importing Locust patches this process)
AUTH, FLIGHT, BOOKING = (api(s) for s in ("auth", "flight", "booking"))
QUERY = "fromAirport=OSL&toAirport=TRD&fromDate=2017-06-01&returnDate=2017-06-08&oneWay=false"

# Runs in the loadgen container (python3 of the services image): log in, then alternate the
# two test cases on one keep-alive connection (as a Locust user's); the minimum of each over
# N requests after W left out, and each answer's size.
_CLIENT = r"""
import http.client, json, sys, time
host, port, n, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
auth, flight, booking, user, query = sys.argv[5:10]
form = {"Content-Type": "application/x-www-form-urlencoded"}
c = http.client.HTTPConnection(host, port, timeout=10)
c.request("POST", auth + "/login", f"login={user}&password=password", form)
r = c.getresponse(); r.read(); assert r.status == 200, r.status
cookie = "; ".join(v.split(";")[0] for k, v in r.getheaders() if k.lower() == "set-cookie")
cases = {
    "Query Flight": ("POST", flight + "/flights/queryflights", query, form),
    "List Bookings": ("GET", f"{booking}/bookings/byuser/{user}", None, {"Cookie": cookie}),
}
best, size = {k: float("inf") for k in cases}, {}
for i in range(-warmup, n):
    for case, (method, path, body, headers) in cases.items():
        t0 = time.perf_counter()
        c.request(method, path, body, headers)
        r = c.getresponse(); data = r.read()
        dt = (time.perf_counter() - t0) * 1000
        assert r.status == 200, (case, r.status, data[:200])
        size[case] = len(data)
        if i >= 0:
            best[case] = min(best[case], dt)
print(json.dumps({"min_ms": best, "bytes": size}))
"""


def min_latency_ms(stack: DockerStack, n: int = 40, warmup: int = 10) -> dict[str, Any]:
    """From the load host: ``{"min_ms": {case: ms}, "bytes": {case: answer bytes}}``."""
    host = stack.load_host()
    assert host is not None, f"{stack.spec.name} declares no load host"
    address = host.url.removeprefix("http://")
    ip, port = address.rsplit(":", 1)
    cmd = ["python3", "-c", _CLIENT, ip, port, str(n), str(warmup)]
    res = execs.run(stack.container(LOADGEN), [*cmd, AUTH, FLIGHT, BOOKING, USER, QUERY],
                    user="", timeout_s=600)  # fmt: skip
    out = res.output
    assert res.status == 0, out[-2000:]
    return dict(json.loads(out.strip().splitlines()[-1]))


def service_to_auth_rtt(stack: DockerStack) -> dict[str, Any]:
    """The booking -> auth round trips (the sessions' validation hop), TCP and UDP."""
    return netem.rtt_ms(stack.container("booking"), ["auth:8000"])


@pytest.fixture(scope="module", params=STACKS)
def stack(request: pytest.FixtureRequest, docker_images: dict[str, str]) -> Iterator[DockerStack]:
    # without a delay at start (its round trips are measured then), set later: NET_ADMIN
    s = DockerBackend(net_admin=True).start(resolve(request.param), StackOptions())
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture(scope="module")
def rises(stack: DockerStack) -> dict[str, Any]:
    undelayed = stack.netem
    base = min_latency_ms(stack)
    auth0 = service_to_auth_rtt(stack)
    delayed_netem = stack.set_delay(DELAY_MS)
    delayed = min_latency_ms(stack)
    auth5 = service_to_auth_rtt(stack)
    for label, nm, auth in (("0 ms", undelayed, auth0), (f"{DELAY_MS:g} ms", delayed_netem, auth5)):
        assert nm is not None and "error" not in nm, nm
        lh = nm["load_host"]
        print(
            f"\n{stack.spec.name} at {label} round trips (ms, TCP / UDP): loadgen->gateway "
            f"{_ms(lh['rtt_ms'])} / {_ms(lh['udp_rtt_ms'])}; gateway->services "
            f"{_ms(nm['rtt_ms'])} / {_ms(nm['udp_rtt_ms'])}; booking->auth "
            f"{_ms(auth['tcp'])} / {_ms(auth['udp'])}"
        )
    return {"base": base, "delayed": delayed, "netem": delayed_netem, "auth": auth5}


def _ms(values: dict[str, float | None]) -> str:
    return ", ".join(f"{k.split(':')[0]} {v:.2f}" if v else f"{k} -" for k, v in values.items())


def test_delay_is_measured_over_tcp_and_udp(rises: dict[str, Any]) -> None:
    """Every measured round trip (loadgen -> gateway, gateway -> each service, booking ->
    auth; TCP and UDP) is two delays, within 25%."""
    nm, auth = rises["netem"], rises["auth"]
    trips = {
        **{f"tcp gateway->{k}": v for k, v in nm["rtt_ms"].items()},
        **{f"udp gateway->{k}": v for k, v in nm["udp_rtt_ms"].items()},
        **{f"tcp loadgen->{k}": v for k, v in nm["load_host"]["rtt_ms"].items()},
        **{f"udp loadgen->{k}": v for k, v in nm["load_host"]["udp_rtt_ms"].items()},
        **{f"{p} booking->auth": v for p, d in auth.items() for v in d.values()},
    }
    off = {k: v for k, v in trips.items() if v is None or abs(v - 2 * DELAY_MS) > 0.5 * DELAY_MS}
    assert not off, off


@pytest.mark.parametrize("case", list(HOPS))
def test_min_response_time_rises_by_hops_times_delay(
    stack: DockerStack, rises: dict[str, Any], case: str
) -> None:
    per_hop = float(rises["netem"]["measured_delay_ms"])
    hops = HOPS[case]
    size = rises["delayed"]["bytes"][case]
    if stack.spec.transport == "coap":  # one more round trip per block after the first
        hops += 2 * (math.ceil(size / COAP_BLOCK) - 1)
    base, delayed = rises["base"]["min_ms"][case], rises["delayed"]["min_ms"][case]
    rise = delayed - base
    print(
        f"{stack.spec.name} {case} ({size} B): min {base:.2f} -> {delayed:.2f} ms, rise "
        f"{rise:.2f} = {rise / per_hop:.2f} hops of {per_hop:.2f} (expected {hops})"
    )
    assert rise == pytest.approx(hops * per_hop, rel=0.25), (case, rises)
