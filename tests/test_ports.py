"""The harness's listening ports: chosen outside the kernel's ephemeral range, distinct, and
never handed out twice in a row by one process (a CI run under two test workers lost two
stacks to EADDRINUSE: an outgoing connection took a port between its choice and the bind)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from ipclab import procs
from ipclab.procs import PORT_RANGE_ENV, free_port, free_ports, port_range


def test_the_default_range_lies_below_the_kernels_ephemeral_ports(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(PORT_RANGE_ENV, raising=False)
    ephemeral = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
    ports = port_range()
    assert ports and ports.start >= 1024 and ports.stop == int(ephemeral[0])
    assert all(p in ports for p in free_ports(20))


def test_ports_are_distinct_and_not_handed_out_again_soon(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PORT_RANGE_ENV, "31000-31099")
    first, second = free_ports(30), free_ports(30)  # released between the calls, as in use
    assert len(set(first)) == 30 and len(set(second)) == 30
    assert not set(first) & set(second)
    assert all(31000 <= p <= 31099 for p in first + second)


def test_a_port_in_use_over_tcp_or_udp_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PORT_RANGE_ENV, "31200-31202")
    with socket.socket() as tcp, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        tcp.bind(("127.0.0.1", 31200))
        tcp.listen()
        udp.bind(("127.0.0.1", 31201))
        for _ in range(3):
            assert free_port() == 31202


def test_a_full_range_falls_back_to_the_kernels_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PORT_RANGE_ENV, "31300-31300")
    with socket.socket() as tcp:
        tcp.bind(("127.0.0.1", 31300))
        tcp.listen()
        assert free_ports(2)[0] != 31300


@pytest.mark.parametrize("text", ["20000", "20000-", "b-c", "900-2000", "3000-2000", "1-70000"])
def test_a_bad_range_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setenv(PORT_RANGE_ENV, text)
    with pytest.raises(ValueError, match=PORT_RANGE_ENV):
        free_port()


def test_each_test_worker_has_its_own_slice() -> None:
    """conftest gives each pytest-xdist worker its part of the range, by its index."""
    import os

    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        pytest.skip("not under pytest-xdist")
    count, index = int(os.environ["PYTEST_XDIST_WORKER_COUNT"]), int(worker[2:])
    mine = procs.port_range()
    assert len(mine) >= 1000
    assert mine.start >= 20000 and index * len(mine) <= mine.start - 20000 + count
