"""Packets counted as on the wire: on a stack with a load host (the AcmeAir ones, whose
packets Nyfløtt's Table 3 compares) every host container's eth0 has TSO, GSO and GRO off, so
flight's 3,752-byte Query Flight answer counts as the 3 segments a network would carry
(MSS 1,448), not as one 3.9 KB kernel buffer."""

from __future__ import annotations

import http.client
import math
import os
import subprocess
import time
from collections.abc import Iterator

import pytest

from ipclab.backends import StackOptions
from ipclab.backends.docker import offloads
from ipclab.backends.docker.backend import DockerBackend, DockerStack
from ipclab.stacks import resolve

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="offloads are set with nsenter (root)")

FLIGHT = "/flight/acmeair-fs/rest/api/flights/queryflights"
QUERY = "fromAirport=OSL&toAirport=TRD&fromDate=2017-06-01&returnDate=2017-06-08&oneWay=false"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
MSS = 1448  # a 1500-byte MTU less IP and TCP headers with timestamps
N = 50


@pytest.fixture(scope="module")
def stack(docker_images: dict[str, str]) -> Iterator[DockerStack]:
    s = DockerBackend().start(resolve("acmeair-http1"), StackOptions())
    try:
        yield s
    finally:
        s.stop()


def eth0(stack: DockerStack, component: str) -> dict[str, int]:
    """The container's eth0 counters (the ones docker stats reports), read now."""
    ctr = stack.container(component)
    ctr.reload()
    pid = str(ctr.attrs["State"]["Pid"])
    text = subprocess.run(
        ["nsenter", "-t", pid, "-n", "cat", "/proc/net/dev"], capture_output=True, text=True
    ).stdout
    (line,) = [x for x in text.splitlines() if x.strip().startswith("eth0:")]
    f = [int(x) for x in line.split(":", 1)[1].split()]
    return {"rx_bytes": f[0], "rx_packets": f[1], "tx_bytes": f[8], "tx_packets": f[9]}


def test_every_host_container_has_its_offloads_off(stack: DockerStack) -> None:
    info = stack.info()["offloads"]
    hosts = {c for c in stack.components if not stack.spec.is_sidecar(c)}
    assert info["segmentation_offloads"] == "off" and set(info["containers"]) == hosts
    for state in info["containers"].values():
        assert state == {"tso": "off", "gso": "off", "gro": "off"}


def test_a_query_flight_answer_counts_as_its_segments(stack: DockerStack) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", int(stack.gateway_url.rsplit(":", 1)[1]))
    try:

        def query() -> bytes:
            conn.request("POST", FLIGHT, QUERY, FORM)
            r = conn.getresponse()
            body = r.read()
            assert r.status == 200, body[:200]
            return body

        for _ in range(5):
            size = len(query())
        time.sleep(0.3)
        before = eth0(stack, "flight")
        for _ in range(N):
            query()
        time.sleep(0.3)
        after = eth0(stack, "flight")
    finally:
        conn.close()
    per = {k: (after[k] - before[k]) / N for k in before}
    segments = math.ceil(size / MSS)  # the body alone; the headers fit in the last one
    print(f"Query Flight ({size} B): flight's eth0 per request {per}")
    assert size > 3000 and segments == 3
    # the answer leaves as its segments (an ACK of the request may ride on the first)
    assert per["tx_packets"] == pytest.approx(segments, abs=0.2)
    assert per["tx_bytes"] / per["tx_packets"] < 1514


def test_a_restarted_host_gets_its_offloads_off_again(stack: DockerStack) -> None:
    """A restarted container has a fresh network namespace (a new veth, docker's defaults)."""
    stack.kill("flight")
    stack.restart("flight")
    ctr = stack.container("flight")
    ctr.reload()
    text = subprocess.run(
        ["nsenter", "-t", str(ctr.attrs["State"]["Pid"]), "-n", "ethtool", "-k", "eth0"],
        capture_output=True,
        text=True,
    ).stdout
    assert offloads.parse_features(text) == {"tso": "off", "gso": "off", "gro": "off"}
