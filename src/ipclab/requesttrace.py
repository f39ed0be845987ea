"""One request's trace on the local backend: the round trips on loopback between the harness,
a stack's roles and its stores while the request ran, from a packet capture (``tcpdump`` on
``lo``), each end named (issue 50, must-show 2: with ``--store db`` a page's trace shows each
service's round trips to its store, inside the page's own exchange).

A round trip is one exchange on one TCP connection: the client's bytes (one or more segments
with a payload) and the server's answer that follows them, up to the client's next bytes (a
server that speaks first, as MariaDB's greeting, opens one with nothing sent). The server end
is named by the port it listens on (a role's, a store's), the client end by the process that
holds the connection's other port (a role; ``client`` for anything else, the harness asking for
the page). Segments without a payload (SYN, ACK, FIN) are left out. The trace reads the wire,
not the services, so it is the same instrument for every runtime: nothing in a service is
changed or slowed to be traced (the capture's own cost is the kernel's copy to ``tcpdump``).

Needs ``tcpdump`` and the right to capture on ``lo`` (root or CAP_NET_RAW): :func:`unavailable`
says why not. Local backend only: a container's loopback is not the host's.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import psutil

CLIENT = "client"  # a connection's end no traced process holds (the harness)
_LINE = re.compile(r"^(\d+\.\d+) IP 127\.0\.0\.1\.(\d+) > 127\.0\.0\.1\.(\d+): .*?length (\d+)")
READY_S = 10.0  # tcpdump says it listens within this
SETTLE_S = 0.3  # after the request: the last segments reach tcpdump's output
# headers only: a loopback segment is up to 64 KiB, and at tcpdump's default snapshot length
# (256 KiB) its default 2 MiB buffer holds a handful of them, which a loaded machine overflows
SNAPLEN, BUFFER_KIB = 256, 16384


@dataclass(frozen=True)
class Segment:
    t: float  # seconds (the capture's clock)
    src: int  # port
    dst: int
    length: int  # payload bytes


@dataclass(frozen=True)
class RoundTrip:
    client: str
    server: str
    start: float  # the client's first byte (or the server's, when it speaks first)
    end: float  # the server's last byte
    sent: int  # payload bytes client -> server
    received: int  # server -> client
    client_port: int
    server_port: int

    @property
    def ms(self) -> float:
        return (self.end - self.start) * 1000

    def within(self, other: RoundTrip) -> bool:
        return other.start <= self.start and self.end <= other.end


def unavailable() -> str | None:
    """Why a trace cannot be taken here (None: it can)."""
    if shutil.which("tcpdump") is None:
        return "no tcpdump on PATH (Debian: apt-get install tcpdump)"
    r = subprocess.run(["tcpdump", "-i", "lo", "-c", "0", "-nn"], capture_output=True,
                       text=True, timeout=30, check=False)  # fmt: skip
    if r.returncode != 0 and "ermission" in r.stderr:
        return f"tcpdump cannot capture on lo here (root or CAP_NET_RAW): {r.stderr.strip()}"
    return None


def segments(lines: Iterable[str]) -> list[Segment]:
    """The payload-carrying segments of ``tcpdump -tt -nn`` text lines, in their order."""
    out = []
    for line in lines:
        m = _LINE.match(line)
        if m and int(m.group(4)) > 0:
            t, src, dst, length = m.groups()
            out.append(Segment(float(t), int(src), int(dst), int(length)))
    return out


def round_trips(
    segs: Iterable[Segment], servers: Mapping[int, str], clients: Mapping[int, str]
) -> list[RoundTrip]:
    """The round trips of ``segs`` on connections to a port of ``servers`` (port -> name),
    each client named by ``clients`` (port -> name; else :data:`CLIENT`), by start time."""
    open_: dict[tuple[int, int], dict[str, Any]] = {}
    done: list[dict[str, Any]] = []
    for s in segs:
        if s.dst in servers:
            key, asking = (s.src, s.dst), True
        elif s.src in servers:
            key, asking = (s.dst, s.src), False
        else:
            continue
        rt = open_.get(key)
        if rt is None or (asking and rt["received"]):
            rt = open_[key] = {"start": s.t, "end": s.t, "sent": 0, "received": 0, "key": key}
            done.append(rt)
        rt["sent" if asking else "received"] += s.length
        if not asking:
            rt["end"] = s.t
    trips = []
    for r in done:
        (client, server), ends = r["key"], (clients.get(r["key"][0], CLIENT), servers[r["key"][1]])
        trips.append(
            RoundTrip(*ends, r["start"], r["end"], r["sent"], r["received"], client, server)
        )
    return sorted(trips, key=lambda r: r.start)


def client_ports(pids: Mapping[str, int]) -> dict[int, str]:
    """Every local port of the TCP connections of each named process (name -> pid)."""
    out: dict[int, str] = {}
    for name, pid in pids.items():
        with contextlib.suppress(psutil.Error):
            for c in psutil.Process(pid).net_connections(kind="tcp"):
                if c.laddr and c.raddr:
                    out[c.laddr.port] = name
    return out


@contextlib.contextmanager
def capture(ports: Iterable[int]) -> Iterator[list[str]]:
    """tcpdump on ``lo`` for TCP on ``ports`` while the block runs; the list it yields holds
    the capture's lines once the block is over."""
    wanted = " or ".join(f"port {p}" for p in sorted(set(ports)))
    argv = ["tcpdump", "-i", "lo", "-nn", "-tt", "-l", "--immediate-mode", "-s", str(SNAPLEN),
            "-B", str(BUFFER_KIB), f"tcp and ({wanted})"]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    try:
        _wait_listening(proc)
        yield lines
        time.sleep(SETTLE_S)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
        lines.extend(out.splitlines())
        dropped = re.search(r"(\d+) packets? dropped by kernel", err)
        if dropped is None or int(dropped.group(1)):
            raise RuntimeError(f"tcpdump lost packets, the trace would be incomplete: {err}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _wait_listening(proc: subprocess.Popen[str]) -> None:
    assert proc.stderr is not None
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if "listening on" in line:
            return
        if not line and proc.poll() is not None:
            break
    raise RuntimeError(f"tcpdump did not start listening on lo (exit {proc.poll()})")


def stack_ends(stack: Any) -> tuple[dict[int, str], dict[str, int]]:
    """A local stack's server ports (port -> role or store) and its processes (name -> pid):
    its roles and its infrastructure instances that have a port and a process."""
    servers = {port: role for role, port in stack.ports.items()}
    pids = {role: p.pid for role, p in stack.procs.items()}
    for name, instance in stack.infra.items():
        port, process = getattr(instance, "port", None), getattr(instance, "process", None)
        if isinstance(port, int):
            servers[port] = name
        if process is not None:
            pids[name] = process.pid
    return servers, pids


def trace(stack: Any, path: str, timeout: float = 10.0) -> tuple[bytes, list[RoundTrip]]:
    """GET ``path`` from a running local ``stack``'s gateway: the answer and its trace."""
    servers, pids = stack_ends(stack)
    url = stack.gateway_url + path
    with capture(servers) as lines, urllib.request.urlopen(url, timeout=timeout) as r:
        body = bytes(r.read())
    return body, round_trips(segments(lines), servers, client_ports(pids))


def render(trips: Iterable[RoundTrip]) -> str:
    """The trace as text: one round trip a line, times from its first."""
    trips = list(trips)
    t0 = trips[0].start if trips else 0.0
    return "\n".join(
        f"{(r.start - t0) * 1000:9.3f} ms  {r.ms:8.3f} ms  {r.client:>16} -> {r.server:<16} "
        f"{r.sent:>6} B / {r.received:>6} B"
        for r in trips
    )
