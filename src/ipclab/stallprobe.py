"""Does a component stall a request ~40 ms? Latency at one client, GET and POST, per hop.

A sender with Nagle's algorithm on that writes a message in two pieces, facing a receiver
that delays its acknowledgement while it waits for the rest, holds every such message for
the receiver's delayed-ACK timer: 40 ms at least on Linux (``TCP_DELACK_MIN``), whatever
the machine's load. So the minimum latency of a few dozen requests on one keep-alive
connection tells a stalled path (>= 40 ms) from a healthy one (well under a millisecond
here), where a mean or a single request would not.

:func:`survey` asks every component of a running stack that speaks HTTP/1.1 (the gateway,
the egress adapter, the first service's ingress and the first service, where they do) with
a raw client: one connection, TCP_NODELAY on, a GET, a POST written in one write, and the
same POST with its head and body in two writes (a server that reads a body in a second read
must not stall either). A stall behind a component (its own client, or the hops after it)
shows in its row too; the rows after it tell which hop it is. The connections are new ones
after a warm-up of ``warm`` requests each (Linux acknowledges the first segments of a
connection at once, which would hide a stall).
"""

from __future__ import annotations

import json
import socket
import statistics
import time
from dataclasses import dataclass
from typing import Any

from ipclab.stackspec import StackSpec

STALL_MS = 20.0  # a minimum above this is a stall (a delayed ACK is >= 40 ms on Linux)
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
JSON = {"Content-Type": "application/json"}


@dataclass(frozen=True)
class Ask:
    """One request: method, target, body and headers (Host and Content-Length are added)."""

    method: str
    target: str
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()

    def head(self, host: str) -> bytes:
        fields = [("Host", host), *self.headers]
        if self.method not in ("GET", "HEAD"):
            fields.append(("Content-Length", str(len(self.body))))
        lines = [f"{self.method} {self.target} HTTP/1.1", *(f"{k}: {v}" for k, v in fields)]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _answer(sock: socket.socket, buf: bytes) -> tuple[int, bytes]:
    """Read one answer (Content-Length or chunked); its status and what came after it."""
    while b"\r\n\r\n" not in buf:
        buf += _recv(sock)
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    fields = {k.strip().lower(): v.strip() for k, _, v in (x.partition(b":") for x in lines[1:])}
    if b"content-length" in fields:
        n = int(fields[b"content-length"])
        while len(rest) < n:
            rest += _recv(sock)
        return int(lines[0].split()[1]), rest[n:]
    if fields.get(b"transfer-encoding", b"").lower() == b"chunked":
        while b"\r\n0\r\n\r\n" not in b"\r\n" + rest:
            rest += _recv(sock)
        return int(lines[0].split()[1]), b"\r\n".join(rest.split(b"\r\n0\r\n\r\n", 1)[1:])
    raise ConnectionError("an answer with neither Content-Length nor chunked body")


def _recv(sock: socket.socket) -> bytes:
    chunk = sock.recv(1 << 16)
    if not chunk:
        raise ConnectionError("the server closed the connection")
    return chunk


@dataclass(frozen=True)
class Timing:
    role: str
    ask: str  # "GET", "POST" or "POST 2 writes"
    min_ms: float
    p50_ms: float
    statuses: tuple[int, ...]


def time_requests(
    port: int, ask: Ask, n: int = 20, warm: int = 20, split: bool = False, role: str = ""
) -> Timing:
    """``ask`` ``warm + n`` times, one after another on one connection to 127.0.0.1:``port``;
    the latencies of the last ``n``. ``split``: head and body in two writes."""
    head = ask.head(f"127.0.0.1:{port}")
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    times, statuses, buf = [], set(), b""
    try:
        for i in range(warm + n):
            t0 = time.perf_counter()
            if split and ask.body:
                sock.sendall(head)
                sock.sendall(ask.body)
            else:
                sock.sendall(head + ask.body)
            status, buf = _answer(sock, buf)
            if i >= warm:
                times.append((time.perf_counter() - t0) * 1000)
            statuses.add(status)
    finally:
        sock.close()
    name = ask.method + (" 2 writes" if split and ask.body else "")
    return Timing(role, name, min(times), statistics.median(times), tuple(sorted(statuses)))


def _shop(role: str, gateway: str) -> tuple[Ask, Ask]:
    if role == gateway:
        return Ask("GET", "/product/1"), Ask(
            "POST", "/product/1", b'{"id": 1}', tuple(JSON.items())
        )
    return Ask("GET", "/get?product_id=1"), Ask(
        "POST", "/get", b"product_id=1", tuple(FORM.items())
    )


def asks(spec: StackSpec, role: str, sample: bytes = b"") -> tuple[Ask, Ask]:
    """The GET and the POST to ask ``role`` of ``spec`` (``sample``: a payload stack's body)."""
    if spec.domain == "acmeair":
        login = b"login=uid0@email.com&password=password"
        base = "/auth/acmeair-as/rest/api/login"
        return Ask("GET", f"{base}/logout?login=uid0@email.com"), Ask(
            "POST", base, login, tuple(FORM.items())
        )
    if spec.domain == "payload":
        return Ask("GET", "/json/flat?count=5"), Ask(
            "POST", "/json/flat", sample, tuple(JSON.items())
        )
    if spec.domain == "bundle":
        query = json.dumps({"query": "{ __typename }"}).encode()
        return Ask("GET", "/api/Databundle/"), Ask(
            "POST", "/api/graphql", query, tuple(JSON.items())
        )
    return _shop(role, spec.gateway)


def http_roles(spec: StackSpec) -> list[str]:
    """The roles that speak HTTP/1.1, the gateway first: the egress, the first service's
    ingress (REST adapters) and the first service (where it is an HTTP/1.1 server)."""
    first = spec.services[0]
    roles = [spec.gateway]
    if spec.adapters:
        roles.append("egress")
        if spec.transport == "rest":
            roles.append(f"{first}-ingress")
    if spec.domain in ("acmeair", "payload") or spec.transport == "rest":
        roles.append(first)
    return roles


def survey(spec: StackSpec, ports: dict[str, int], n: int = 20, warm: int = 20) -> list[Timing]:
    """GET, POST and POST in two writes to every HTTP/1.1 role of a running stack."""
    sample = b""
    if spec.domain == "payload":  # a body the data service decodes: one of its own answers
        sample = _body(ports[spec.services[0]], Ask("GET", "/json/flat?count=5"))
    out = []
    for role in http_roles(spec):
        get, post = asks(spec, role, sample)
        for ask, split in ((get, False), (post, False), (post, True)):
            out.append(time_requests(ports[role], ask, n, warm, split, role))
    return out


def _body(port: int, ask: Ask) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(Ask(ask.method, ask.target, headers=(("Connection", "close"),)).head("x"))
        data = b""
        while chunk := sock.recv(1 << 16):
            data += chunk
    return data.partition(b"\r\n\r\n")[2]


def stalled(timings: list[Timing]) -> list[Timing]:
    return [t for t in timings if t.min_ms >= STALL_MS]


def table(timings: list[Timing]) -> list[dict[str, Any]]:
    return [
        {"role": t.role, "ask": t.ask, "min_ms": round(t.min_ms, 2), "p50_ms": round(t.p50_ms, 2),
         "statuses": list(t.statuses)}
        for t in timings
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    """``python -m ipclab.stallprobe [--stacks a,b] [--requests N] [--warm N]``: start each
    stack on the local backend, print its survey (min and median ms per hop and request),
    stop it. By default the stacks ``tests/test_socket_options.py`` reads."""
    import argparse

    from ipclab.backends import StackOptions, get_backend
    from ipclab.socket_settings import live_stacks
    from ipclab.stacks import resolve

    parser = argparse.ArgumentParser(prog="python -m ipclab.stallprobe")
    parser.add_argument("--stacks", default=",".join(live_stacks()))
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--warm", type=int, default=50)
    args = parser.parse_args(argv)
    print("stack | role | request | min ms | median ms | statuses")
    for name in args.stacks.split(","):
        stack = get_backend("local").start(resolve(name), StackOptions())
        try:
            for t in survey(stack.spec, stack.ports, args.requests, args.warm):
                flag = "  STALLED" if t.min_ms >= STALL_MS else ""
                print(f"{name} | {t.role} | {t.ask} | {t.min_ms:.2f} | {t.p50_ms:.2f} | "
                      f"{','.join(map(str, t.statuses))}{flag}", flush=True)  # fmt: skip
        finally:
            stack.stop()


if __name__ == "__main__":
    main()
