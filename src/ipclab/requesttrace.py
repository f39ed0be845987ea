"""One request's trace: the round trips between the harness, a stack's roles and its stores
while the request ran, from a packet capture (``tcpdump`` on ``lo`` for a local stack, on the
compose project's bridge for a docker one), each end named (issue 50, must-show 2: with
``--store db`` a page's trace shows each service's round trips to its store, inside the
page's own exchange).

A round trip is one exchange on one TCP connection: the client's bytes (one or more segments
with a payload) and the server's answer that follows them, up to the client's next bytes (a
server that speaks first, as MariaDB's greeting, opens one with nothing sent). The server end
is named by the port it listens on (a role's, a store's), the client end by the process that
holds the connection's other port (a role; ``client`` for anything else, the harness asking for
the page). Segments without a payload (SYN, ACK, FIN) are left out. The trace reads the wire,
not the services, so it is the same instrument for every runtime: nothing in a service is
changed or slowed to be traced (the capture's own cost is the kernel's copy to ``tcpdump``).

On docker (``trace_docker``) every container has its own address on the project's bridge
(``br-<network id>``), where each hop between two containers passes once: a server end is a
container's address and a port its component listens on (a role's, a store's: named by its
plugin, as locally), a client end the container that holds that address; the harness's
request reaches the gateway from the bridge's own address (Docker's proxy of the published
port): :data:`CLIENT`.

Needs ``tcpdump`` and the right to capture (root or CAP_NET_RAW): :func:`unavailable` says why
not.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import psutil

CLIENT = "client"  # a connection's end no traced process holds (the harness)
_LINE = re.compile(r"^(\d+\.\d+) IP 127\.0\.0\.1\.(\d+) > 127\.0\.0\.1\.(\d+): .*?length (\d+)")
_IP = r"(\d+\.\d+\.\d+\.\d+)"
_HOSTS_LINE = re.compile(rf"^(\d+\.\d+) IP {_IP}\.(\d+) > {_IP}\.(\d+): .*?length (\d+)")
Endpoint = tuple[str, int]  # an address and a port (docker: each container has its own)
READY_S = 10.0  # tcpdump says it listens within this
SETTLE_S = 0.3  # after the request: the last segments reach tcpdump's output
# headers only: a loopback segment is up to 64 KiB, and at tcpdump's default snapshot length
# (256 KiB) its default 2 MiB buffer holds a handful of them, which a loaded machine overflows
SNAPLEN, BUFFER_KIB = 256, 16384


@dataclass(frozen=True)
class Segment:
    t: float  # seconds (the capture's clock)
    src: int | Endpoint  # a port on loopback; an (address, port) on a bridge
    dst: int | Endpoint
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
    """The payload-carrying segments of ``tcpdump -tt -nn`` text lines on loopback, in their
    order: each end a port."""
    out = []
    for line in lines:
        m = _LINE.match(line)
        if m and int(m.group(4)) > 0:
            t, src, dst, length = m.groups()
            out.append(Segment(float(t), int(src), int(dst), int(length)))
    return out


def host_segments(lines: Iterable[str]) -> list[Segment]:
    """As :func:`segments` for a capture between hosts (a bridge): each end an
    (address, port)."""
    out = []
    for line in lines:
        m = _HOSTS_LINE.match(line)
        if m and int(m.group(6)) > 0:
            t, a, p, b, q, length = m.groups()
            out.append(Segment(float(t), (a, int(p)), (b, int(q)), int(length)))
    return out


def _port(end: int | Endpoint) -> int:
    return end[1] if isinstance(end, tuple) else end


def round_trips(
    segs: Iterable[Segment],
    servers: Mapping[Any, str],
    clients: Mapping[Any, str] | Callable[[Any], str],
) -> list[RoundTrip]:
    """The round trips of ``segs`` on connections to an end of ``servers`` (a port, or an
    (address, port): its name), each client named by ``clients`` (its end -> name, else
    :data:`CLIENT`; or a function of its end), by start time."""
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
    name = clients if callable(clients) else (lambda end: clients.get(end, CLIENT))
    trips = []
    for r in done:
        (client, server), ends = r["key"], (name(r["key"][0]), servers[r["key"][1]])
        trips.append(
            RoundTrip(
                *ends, r["start"], r["end"], r["sent"], r["received"], _port(client), _port(server)
            )
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
def capture(ports: Iterable[int], device: str = "lo") -> Iterator[list[str]]:
    """tcpdump on ``device`` for TCP on ``ports`` while the block runs; the list it yields
    holds the capture's lines once the block is over."""
    wanted = " or ".join(f"port {p}" for p in sorted(set(ports)))
    argv = ["tcpdump", "-i", device, "-nn", "-tt", "-l", "--immediate-mode", "-s", str(SNAPLEN),
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
    raise RuntimeError(f"tcpdump did not start listening (exit {proc.poll()})")


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


def docker_ends(stack: Any) -> tuple[str, dict[Endpoint, str], dict[str, str]]:
    """A docker stack's bridge device, its servers ((address, port) -> role, or store by its
    plugin's name) and its containers' addresses (address -> component)."""
    from ipclab import infrastructure
    from ipclab.backends.docker.compose import port_of

    network = f"{stack.project}_default"
    device = "br-" + stack.client.networks.get(network).id[:12]
    hosts: dict[str, str] = {}
    servers: dict[Endpoint, str] = {}
    plugins = {p.component: p for p in infrastructure.of(stack.infrastructure)}
    for component in stack.components:
        ctr = stack.container(component)
        ctr.reload()
        address = ctr.attrs["NetworkSettings"]["Networks"].get(network, {}).get("IPAddress")
        if not address:  # an adapter sidecar: its host's namespace
            continue
        hosts[address] = component
        if (plugin := plugins.get(component)) is not None:
            servers.update({(address, p): plugin.name for p in plugin.service_ports()})
        elif component in stack.spec.roles:
            servers[(address, port_of(stack.spec, component))] = component
    return device, servers, hosts


def trace_docker(stack: Any, path: str, timeout: float = 10.0) -> tuple[bytes, list[RoundTrip]]:
    """GET ``path`` from a running docker ``stack``'s gateway: the answer and its trace, from
    the project's bridge."""
    device, servers, hosts = docker_ends(stack)
    url = stack.gateway_url + path
    ports = {p for _, p in servers}
    with capture(ports, device) as lines, urllib.request.urlopen(url, timeout=timeout) as r:
        body = bytes(r.read())
    trips = round_trips(host_segments(lines), servers, lambda end: hosts.get(end[0], CLIENT))
    return body, trips


def trace(stack: Any, path: str, timeout: float = 10.0) -> tuple[bytes, list[RoundTrip]]:
    """GET ``path`` from a running ``stack``'s gateway: the answer and its trace (a docker
    stack's: :func:`trace_docker`)."""
    if getattr(stack, "backend", "local") == "docker":
        return trace_docker(stack, path, timeout)
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
