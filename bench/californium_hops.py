"""Where a request through the Californium stack waits: each hop of ``acmeair-coap-californium``
driven on its own, at 1, 10 and 50 concurrent clients (issue 46, item 1).

The stack runs on the local backend (every role a process on this machine, loopback between
them). A request to auth takes four hops, and each is driven in isolation by a client of its
own protocol, the hop's latency being what it adds to the hops behind it:

- ``service``: HTTP/1.1 straight to ``auth`` (uvicorn);
- ``ingress``: CoAP to ``auth-ingress`` (Californium's server endpoint, then the JDK's
  ``java.net.http`` client to auth);
- ``egress``: HTTP/1.1 to ``egress`` (the JDK's ``com.sun.net.httpserver``, then a Californium
  client endpoint from the service's pool to auth-ingress);
- ``gateway``: HTTP/1.1 to the gateway (Python, aiohttp's client to the egress): the stack.

Two requests, both AcmeAir's and both to auth: ``GET`` (Logout,
``GET /auth/acmeair-as/rest/api/login/logout?login=...``, a 10-byte answer) and ``POST``
(Login, a form body, a 9-byte answer and two Set-Cookie). The HTTP clients send each request
in one write on a keep-alive connection with TCP_NODELAY (asyncio's), one connection per
client; the CoAP client sends confirmable requests from a UDP socket per client. Each cell
is a closed loop of ``--clients`` clients for ``--seconds`` after a warm-up; it prints
min, p50, p95 (ms) and req/s.

``--label`` names the setting in the rows, ``--csv`` appends them to a table (e.g.
``data/measured/californium_hops.csv``, whose before/after docs/acmeair.md shows: the
adapters of two revisions, each run from its own tree, alternating). ``--jvm-options`` passes
JVM flags to both adapters (``IPCLAB_JVM_OPTIONS``), e.g.
``-Dsun.net.httpserver.nodelay=false`` to put back the JDK HTTP server's default (Nagle on
its accepted sockets) that the adapters now override; ``--compare A B`` runs the stack under
two such settings in turn (interleaved: A, B, A, B for ``--rounds``) and prints both.

    python bench/californium_hops.py [--clients 1,10,50] [--seconds 3] [--hops ...]
        [--methods GET,POST] [--jvm-options FLAGS | --compare FLAGS_A FLAGS_B] [--rounds N]
        [--label NAME] [--first-round N] [--warmup S] [--json OUT] [--csv TABLE]

Timings on a shared 2-core machine drift: compare settings measured in one sitting.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import datetime
import json
import os
import socket
import struct
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import uvloop

from ipclab.backends import StackOptions, get_backend
from ipclab.backends.local import LocalStack
from ipclab.stacks import resolve

STACK = "acmeair-coap-californium"
SERVICE = "auth"
API = "/auth/acmeair-as/rest/api"
LOGIN_FORM = b"login=uid0%40email.com&password=password"
FORM = "application/x-www-form-urlencoded"
FORM_FORMAT = 65000  # the mapping's Content-Format for form-urlencoded (Mapping.java)
HOPS = ("service", "ingress", "egress", "gateway")
METHODS = ("GET", "POST")
WARMUP_S = 3.0
CSV_FIELDS = ("setting", "round", "hop", "method", "clients", "n", "bad", "min_ms", "p50_ms",
              "p95_ms", "rps", "load_average", "measured_on")  # fmt: skip


@dataclass(frozen=True)
class Call:
    """One request: method, path and query, body."""

    method: str
    target: str
    body: bytes = b""

    @classmethod
    def of(cls, method: str) -> Call:
        if method == "GET":
            return cls("GET", f"{API}/login/logout?login=uid0%40email.com")
        return cls("POST", f"{API}/login", LOGIN_FORM)


# --------------------------------------------------------------------------- HTTP/1.1


def http_bytes(call: Call, host: str) -> bytes:
    """The request as one buffer (one write)."""
    head = f"{call.method} {call.target} HTTP/1.1\r\nHost: {host}\r\n"
    if call.body:
        head += f"Content-Type: {FORM}\r\nContent-Length: {len(call.body)}\r\n"
    return head.encode() + b"\r\n" + call.body


async def read_http(reader: asyncio.StreamReader) -> int:
    """One answer off a keep-alive connection (Content-Length or chunked): its status."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    fields = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
    if "content-length" in fields:
        await reader.readexactly(int(fields["content-length"]))
    elif fields.get("transfer-encoding", "").lower() == "chunked":
        while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
            await reader.readexactly(size + 2)
        await reader.readuntil(b"\r\n")
    return status


async def http_client(port: int, call: Call, end: float, out: list[float]) -> int:
    """Requests over one keep-alive connection until ``end``: latencies (s) into ``out``;
    returns the count of answers other than 2xx."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    data, bad = http_bytes(call, f"127.0.0.1:{port}"), 0
    try:
        while time.perf_counter() < end:
            t = time.perf_counter()
            writer.write(data)
            status = await read_http(reader)
            out.append(time.perf_counter() - t)
            bad += not 200 <= status < 300
    finally:
        writer.close()
    return bad


# --------------------------------------------------------------------------- CoAP


def _option(delta: int, value: bytes) -> bytes:
    def nib(n: int) -> tuple[int, bytes]:
        if n < 13:
            return n, b""
        if n < 269:
            return 13, bytes([n - 13])
        return 14, struct.pack("!H", n - 269)

    d, dx = nib(delta)
    n, nx = nib(len(value))
    return bytes([d << 4 | n]) + dx + nx + value


def coap_bytes(call: Call, mid: int, token: bytes) -> bytes:
    """A confirmable request (RFC 7252): Uri-Path, Content-Format, Uri-Query, payload."""
    path, _, query = call.target.partition("?")
    options = [(11, seg.encode()) for seg in path.split("/") if seg]
    if call.body:
        options.append((12, struct.pack("!H", FORM_FORMAT)))
    options += [(15, f.encode()) for f in query.split("&") if f]
    code = {"GET": 1, "POST": 2}[call.method]
    out = bytes([0x40 | len(token), code]) + struct.pack("!H", mid) + token
    last = 0
    for number, value in options:
        out += _option(number - last, value)
        last = number
    return out + (b"\xff" + call.body if call.body else b"")


class _Coap(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.answers: asyncio.Queue[bytes] = asyncio.Queue()

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self.answers.put_nowait(data)


async def coap_client(port: int, call: Call, end: float, out: list[float], seed: int) -> int:
    """Confirmable requests from one UDP socket until ``end`` (piggybacked answers, or an
    empty ACK then a separate one, acknowledged); returns the count of answers not 2.xx."""
    loop = asyncio.get_running_loop()
    transport, proto = await loop.create_datagram_endpoint(_Coap, remote_addr=("127.0.0.1", port))
    mid, bad = (seed * 7919) & 0xFFFF, 0
    try:
        while time.perf_counter() < end:
            mid = (mid + 1) & 0xFFFF
            token = struct.pack("!I", mid << 8 | seed & 0xFF)
            t = time.perf_counter()
            transport.sendto(coap_bytes(call, mid, token))
            while True:
                data = await asyncio.wait_for(proto.answers.get(), 10)
                kind, code = data[0] >> 4 & 3, data[1]
                if kind == 0:  # a separate (confirmable) answer: acknowledge it
                    transport.sendto(bytes([0x60, 0]) + data[2:4])
                if code != 0 and data[4 : 4 + (data[0] & 15)] == token:
                    break
            out.append(time.perf_counter() - t)
            bad += code >> 5 != 2
    finally:
        transport.close()
    return bad


# --------------------------------------------------------------------------- cells


async def _cell(hop: str, port: int, call: Call, clients: int, seconds: float) -> dict[str, Any]:
    out: list[float] = []
    start = time.perf_counter()
    end = start + seconds
    if hop == "ingress":
        jobs = [coap_client(port, call, end, out, i + 1) for i in range(clients)]
    else:
        jobs = [http_client(port, call, end, out) for _ in range(clients)]
    bad = sum(await asyncio.gather(*jobs))
    took = time.perf_counter() - start
    ms = np.array(out) * 1000
    return {
        "hop": hop, "method": call.method, "clients": clients, "n": len(out), "bad": bad,
        "min_ms": round(float(ms.min()), 2), "p50_ms": round(float(np.median(ms)), 2),
        "p95_ms": round(float(np.percentile(ms, 95)), 2), "rps": round(len(out) / took, 1),
    }  # fmt: skip


def cell(hop: str, port: int, method: str, clients: int, seconds: float) -> dict[str, Any]:
    return uvloop.run(_cell(hop, port, Call.of(method), clients, seconds))


def ports(stack: LocalStack) -> dict[str, int]:
    """Where each hop's client sends (ingress: UDP)."""
    return {
        "service": stack.ports[SERVICE],
        "ingress": stack.ports[f"{SERVICE}-ingress"],
        "egress": stack.ports["egress"],
        "gateway": stack.ports[stack.spec.gateway],
    }


@contextlib.contextmanager
def started(jvm_options: str) -> Iterator[LocalStack]:
    extra = {"IPCLAB_JVM_OPTIONS": jvm_options} if jvm_options else {}
    stack = get_backend("local").start(resolve(STACK), StackOptions(extra_env=extra))
    try:
        yield stack
    finally:
        stack.stop()


def measure(
    args: argparse.Namespace, jvm_options: str, label: str, rnd: int
) -> list[dict[str, Any]]:
    rows = []
    with started(jvm_options) as stack:
        where = ports(stack)
        for hop in args.hops:  # the JIT compiles the path first
            for method in args.methods:
                cell(hop, where[hop], method, 10, args.warmup)
        for clients in args.clients:
            for hop in args.hops:
                for method in args.methods:
                    load = round(os.getloadavg()[0], 2)
                    row = cell(hop, where[hop], method, clients, args.seconds)
                    rows.append({"setting": label, "round": rnd, "jvm_options": jvm_options,
                                 **row, "load_average": load,
                                 "measured_on": datetime.date.today().isoformat()})  # fmt: skip
                    print(_line(rows[-1]), flush=True)
    return rows


def append_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    """``rows`` added to the CSV at ``path`` (its header written first when it is new)."""
    new = not path.exists()
    with path.open("a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        if new:
            w.writeheader()
        w.writerows(rows)


def _line(r: dict[str, Any]) -> str:
    return (
        f"{r['setting']:>8} {r['hop']:>8} {r['method']:>5} {r['clients']:>4} "
        f"{r['n']:>7} {r['bad']:>4} {r['min_ms']:>8.2f} {r['p50_ms']:>8.2f} "
        f"{r['p95_ms']:>8.2f} {r['rps']:>8.1f}"
    )


HEADER = (
    f"{'setting':>8} {'hop':>8} {'meth':>5} {'cl':>4} {'n':>7} {'bad':>4} {'min ms':>8} "
    f"{'p50 ms':>8} {'p95 ms':>8} {'req/s':>8}"
)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--clients", default="1,10,50")
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--hops", default=",".join(HOPS))
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--jvm-options", default="")
    p.add_argument("--compare", nargs=2, metavar=("FLAGS_A", "FLAGS_B"))
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--label", default="run", help="the setting's name in the rows")
    p.add_argument("--first-round", type=int, default=1, help="the first round's number")
    p.add_argument("--warmup", type=float, default=WARMUP_S, help="s per hop and method")
    p.add_argument("--json", help="write the rows here")
    p.add_argument("--csv", type=Path, help="append the rows to this CSV")
    args = p.parse_args(argv)
    args.clients = [int(c) for c in args.clients.split(",")]
    args.hops = [h for h in args.hops.split(",") if h in HOPS]
    args.methods = [m.upper() for m in args.methods.split(",")]
    settings = (
        [("A", args.compare[0]), ("B", args.compare[1])]
        if args.compare
        else [(args.label, args.jvm_options)]
    )
    print(f"load average {os.getloadavg()[0]:.2f}; {socket.gethostname()}", file=sys.stderr)
    for label, flags in settings:
        print(f"setting {label}: IPCLAB_JVM_OPTIONS={flags!r}", file=sys.stderr)
    print(HEADER, flush=True)
    rows = []
    for rnd in range(args.first_round, args.first_round + args.rounds):
        for label, flags in settings:
            rows += measure(args, flags, label, rnd)
    if args.csv:
        append_csv(args.csv, rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "load_average": os.getloadavg()}, f, indent=1)


if __name__ == "__main__":
    main()
