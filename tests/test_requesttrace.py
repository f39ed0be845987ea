"""A request's trace from a loopback capture (``ipclab.requesttrace``): tcpdump's text read
into round trips, each end named, a server that speaks first, segments without a payload
left out. The live trace of a stack on its stores: tests/test_stores.py."""

from __future__ import annotations

from ipclab import requesttrace

# the harness (port 50000) asks the gateway (8000); the gateway (its pooled port 41000) asks
# product-info (8001), which asks FerretDB (27017) from 42000, twice on one connection; a new
# connection to MariaDB (3306) from 43000, which greets first
LINES = """\
10.000000 IP 127.0.0.1.50000 > 127.0.0.1.8000: Flags [S], seq 1, win 65495, length 0
10.000100 IP 127.0.0.1.50000 > 127.0.0.1.8000: Flags [P.], seq 1:90, ack 1, win 512, length 89
10.000300 IP 127.0.0.1.41000 > 127.0.0.1.8001: Flags [P.], seq 1:70, ack 1, win 512, length 69
10.000500 IP 127.0.0.1.42000 > 127.0.0.1.27017: Flags [P.], seq 1:120, ack 1, win 512, length 119
10.000520 IP 127.0.0.1.27017 > 127.0.0.1.42000: Flags [.], ack 120, win 512, length 0
10.001000 IP 127.0.0.1.27017 > 127.0.0.1.42000: Flags [P.], seq 1:400, ack 120, win 512, length 399
10.001100 IP 127.0.0.1.42000 > 127.0.0.1.27017: Flags [P.], seq 120:200, ack 400, win 512, length 80
10.001300 IP 127.0.0.1.27017 > 127.0.0.1.42000: Flags [P.], seq 400:450, ack 200, win 512, length 50
10.001350 IP 127.0.0.1.27017 > 127.0.0.1.42000: Flags [P.], seq 450:500, ack 200, win 512, length 50
10.001400 IP 127.0.0.1.3306 > 127.0.0.1.43000: Flags [P.], seq 1:80, ack 1, win 512, length 79
10.001500 IP 127.0.0.1.8001 > 127.0.0.1.41000: Flags [P.], seq 1:600, ack 70, win 512, length 599
10.001700 IP 127.0.0.1.8000 > 127.0.0.1.50000: Flags [P.], seq 1:900, ack 90, win 512, length 899
something tcpdump says that is not a packet
""".splitlines()
SERVERS = {8000: "gateway", 8001: "product-info", 27017: "ferretdb", 3306: "mariadb"}
CLIENTS = {41000: "gateway", 42000: "product-info", 43000: "shipping"}


def test_the_capture_reads_into_round_trips_each_end_named() -> None:
    segs = requesttrace.segments(LINES)
    assert len(segs) == 10  # the SYN, the pure ACK and the stray line left out
    trips = requesttrace.round_trips(segs, SERVERS, CLIENTS)
    ends = [(t.client, t.server, t.sent, t.received) for t in trips]
    assert ends == [
        ("client", "gateway", 89, 899),
        ("gateway", "product-info", 69, 599),
        ("product-info", "ferretdb", 119, 399),
        ("product-info", "ferretdb", 80, 100),  # the answer in two segments: one round trip
        ("shipping", "mariadb", 0, 79),  # the server's greeting: nothing asked
    ]
    page, _, first, second, _ = trips
    assert first.within(page) and second.within(page) and not page.within(first)
    assert round(first.ms, 3) == 0.5 and round(second.ms, 3) == 0.25
    assert "product-info -> ferretdb" in requesttrace.render(trips)


def test_a_bridge_capture_names_each_end_by_its_container_s_address() -> None:
    """A docker stack's trace (``trace_docker``): the same lines between containers'
    addresses on the project's bridge; a server end is an (address, port), a client end
    the container that holds the address, the bridge's own address (Docker's proxy of the
    harness's request) ``client``."""
    bridge = [
        line.replace("127.0.0.1.50000", "172.18.0.1.50000")
        .replace("127.0.0.1.8000", "172.18.0.9.8000")
        .replace("127.0.0.1.41000", "172.18.0.9.41000")
        .replace("127.0.0.1.8001", "172.18.0.8.8000")
        .replace("127.0.0.1.42000", "172.18.0.8.42000")
        .replace("127.0.0.1.27017", "172.18.0.2.27017")
        .replace("127.0.0.1.43000", "172.18.0.4.43000")
        .replace("127.0.0.1.3306", "172.18.0.3.3306")
        for line in LINES
    ]
    segs = requesttrace.host_segments(bridge)
    assert len(segs) == 10 and segs[0].src == ("172.18.0.1", 50000)
    servers = {
        ("172.18.0.9", 8000): "gateway", ("172.18.0.8", 8000): "product-info",
        ("172.18.0.2", 27017): "ferretdb", ("172.18.0.3", 3306): "mariadb",
    }  # fmt: skip
    hosts = {"172.18.0.9": "gateway", "172.18.0.8": "product-info", "172.18.0.4": "shipping"}
    trips = requesttrace.round_trips(
        segs, servers, lambda end: hosts.get(end[0], requesttrace.CLIENT)
    )
    ends = [(t.client, t.server, t.sent, t.received, t.server_port) for t in trips]
    assert ends == [
        ("client", "gateway", 89, 899, 8000),
        ("gateway", "product-info", 69, 599, 8000),
        ("product-info", "ferretdb", 119, 399, 27017),
        ("product-info", "ferretdb", 80, 100, 27017),
        ("shipping", "mariadb", 0, 79, 3306),
    ]
