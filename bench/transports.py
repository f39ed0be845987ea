"""Transport micro-benchmark: one call style per row, against a raw TCP echo floor.

Server and client run in separate processes (multiprocessing, spawn). Every candidate
serves the real ``product-info`` operation of the shop services (product 1: a ~330 B JSON
document, ~250 B as protobuf) through the project's adapter where one exists, or through
the library directly with the same handler. Per candidate it prints:

- sequential p50 and p99 latency of ``--requests`` calls, one at a time, after warm-up;
- throughput with ``--inflight`` calls in flight for ``--seconds`` seconds;
- the CPU used meanwhile by the client, the server and (AMQP) the broker, in % of one core;
- each row's ratio to the floor: a length-prefixed asyncio TCP echo of the same payload,
  measured in the same run.

With ``--go``, the Go styles (``go-rest``, ``go-grpc``, ``go-amqp``, and ``go-floor``, a
raw Go TCP echo) are rows of the same rounds, measured the same way by the Go binary as
server and client (``bench/go_rows.py``; without a Go toolchain they fail, saying so).

With ``--pairs``, CoAP as the AcmeAir stacks carry it, a sidecar pair between an HTTP/1.1
client and server: ``pair-aiocoap`` (the Python adapters), ``pair-californium`` (the
Californium adapters on the JVM; without Java and Maven the row fails, saying what to
install) and ``pair-none`` (the same client and server without a pair, the pair rows'
baseline), measured like every row (``bench/adapter_pairs.py``).

    python bench/transports.py [--requests 2000] [--inflight 32] [--seconds 3]
                               [--only rest,grpc] [--rounds 3] [--go] [--pairs] [--json OUT]
                               [--against REV]

With ``--against REV``, the chosen rows at the git revision REV beside the working tree,
rounds interleaved in one sitting, and their per-call CPU and req/s ratios
(``bench/against.py``): what a change of the code cost.

Numbers move with the machine's load; compare rows of one run, not runs of two machines.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import importlib
import itertools
import json
import multiprocessing as mp
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import metadata
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import psutil
import uvloop

from ipclab.procs import free_port

SERVICE = "product-info"
REQUEST = {"product_id": 1}
TIMEOUT_S = 10.0

Call = Callable[[], Awaitable[Any]]
Close = Callable[[], Awaitable[None]]
Ready = Callable[[], None]


@dataclass(frozen=True)
class Candidate:
    name: str
    label: str
    server: str  # key of SERVERS
    client: str  # key of CLIENTS
    loop: str = "uvloop"  # or "asyncio", on both sides
    broker: bool = False
    tls: bool = False  # the row runs with the bench's TLS environment (bench/tls_rows.py)
    runtime: str = "python"  # "go": both sides are the Go binary (bench/go_rows.py);
    # "pair": Python client and server, an adapter pair between them (bench/adapter_pairs.py)


CANDIDATES = (
    Candidate("floor", "raw asyncio TCP echo, length-prefixed (the floor)", "echo", "echo"),
    Candidate("rest", "HTTP/1.1: adapter (uvicorn+httptools, aiohttp client)", "rest", "rest"),
    Candidate("rest-httpx", "HTTP/1.1: same server, httpx.AsyncClient", "rest", "httpx"),
    Candidate("aiohttp-web", "HTTP/1.1: aiohttp.web server, aiohttp client", "aiohttp", "rest"),
    Candidate("h2c", "h2c: adapter (own asyncio protocols on h2, both sides)", "h2c", "h2c"),
    Candidate("h2c-granian", "h2c: granian server (RSGI), adapter client", "granian", "h2c"),
    Candidate("h2c-hypercorn", "h2c: hypercorn server, adapter client", "hypercorn", "h2c"),
    Candidate("h2c-httpx", "h2c: adapter server, httpx http2 client", "h2c", "httpx-h2"),
    Candidate(
        "h2c-hyp-httpx", "h2c: hypercorn server, httpx http2 client", "hypercorn", "httpx-h2"
    ),
    Candidate("grpc", "gRPC unary: adapter (grpc.aio both sides), uvloop", "grpc", "grpc"),
    Candidate(
        "grpc-asyncio", "gRPC unary: adapter, default asyncio loop", "grpc", "grpc", "asyncio"
    ),
    Candidate(
        "amqp", "AMQP: adapter (aio-pika, reply queue + corr. id)", "amqp", "amqp", broker=True
    ),
    Candidate(
        "amqp-direct",
        "AMQP: adapter server, direct reply-to client",
        "amqp",
        "amqp-direct",
        broker=True,
    ),
    Candidate("coap", "CoAP GET: adapter (aiocoap both sides, CON)", "coap", "coap"),
    # Go (issue 18): the Go binary on both sides; chosen with --go or by name
    Candidate("go-floor", "Go: raw TCP echo, length-prefixed", "echo", "echo", runtime="go"),
    Candidate("go-rest", "Go: net/http server and client", "rest", "rest", runtime="go"),
    Candidate("go-grpc", "Go: grpc-go unary, both sides", "grpc", "grpc", runtime="go"),
    Candidate(
        "go-amqp",
        "Go: amqp091-go, reply queue + corr. id",
        "amqp",
        "amqp",
        broker=True,
        runtime="go",
    ),
    # TLS (issue 32): chosen with --tls or by name (bench/tls_rows.py)
    Candidate(
        "rest-tls", "HTTPS: the REST adapter over TLS", "rest", "rest", tls=True, runtime="tls"
    ),
    Candidate("grpc-tls", "gRPC over TLS: the adapter", "grpc", "grpc", tls=True, runtime="tls"),
    Candidate(
        "h2c-tls", "HTTP/2 over TLS (ALPN h2): the adapter", "h2c", "h2c", tls=True, runtime="tls"
    ),
    Candidate(
        "amqp-tls",
        "AMQPS: the adapter, a broker with its TLS listener",
        "amqp",
        "amqp",
        broker=True,
        tls=True,
        runtime="tls",
    ),
    Candidate(
        "rest-conn",
        "HTTP/1.1, a new connection per call (the handshake's baseline)",
        "rest",
        "rest-conn",
        runtime="tls",
    ),
    Candidate(
        "rest-tls-conn",
        "HTTPS, a new connection per call: a handshake each",
        "rest",
        "rest-tls-conn",
        tls=True,
        runtime="tls",
    ),
    # CoAP as a sidecar pair (issue 30): chosen with --pairs or by name
    Candidate(
        "pair-none",
        "pairs' baseline: HTTP/1.1 client (aiohttp) to the aiohttp server, no pair",
        "aiohttp",
        "http-path",
        runtime="pair",
    ),
    Candidate(
        "pair-aiocoap",
        "CoAP pair: aiocoap egress + ingress (Python adapters), HTTP/1.1 either side",
        "aiohttp",
        "http-path",
        runtime="pair",
    ),
    Candidate(
        "pair-californium",
        "CoAP pair: Californium egress + ingress (JVM), HTTP/1.1 either side",
        "aiohttp",
        "http-path",
        runtime="pair",
    ),
)
BY_NAME = {c.name: c for c in CANDIDATES}


# --- servers (run in the server process) ------------------------------------------------


def _moved(new: str, old: str) -> Any:
    """A module that dacf7dab's layout moved, as the measured tree has it: the bench also
    runs on revisions older than the move (``bench/reference_costs.py``)."""
    try:
        return importlib.import_module(new)
    except ModuleNotFoundError:
        return importlib.import_module(old)


def _shop(module: str) -> Any:
    return _moved(f"ipclab_services.domains.shop.{module}", f"ipclab_services.shop.{module}")


def _service() -> Any:
    data, services = _shop("data"), _shop("services")
    return services.build(data.ShopConfig())[SERVICE]


def _payload() -> bytes:
    data = _shop("data")
    return orjson.dumps(data.product(data.ShopConfig(), REQUEST["product_id"]))


class _Echo(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: asyncio.Transport = transport  # type: ignore[assignment]
        self.buf = bytearray()

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while len(self.buf) >= 4:
            end = 4 + int.from_bytes(self.buf[:4], "big")
            if len(self.buf) < end:
                break
            self.transport.write(bytes(self.buf[:end]))
            del self.buf[:end]


async def serve_echo(port: int, _url: str, ready: Ready) -> None:
    server = await asyncio.get_running_loop().create_server(_Echo, "127.0.0.1", port, backlog=4096)
    ready()
    await server.serve_forever()


async def serve_adapter(style: str, port: int, url: str, ready: Ready) -> None:
    from ipclab_services import transports
    from ipclab_services.transports.base import ServeConfig

    config = ServeConfig(port=port, amqp_url=url)
    task = asyncio.create_task(transports.load(style).serve(_service(), config))
    await config.ready.wait()
    ready()
    await task


async def serve_aiohttp(port: int, _url: str, ready: Ready) -> None:
    from aiohttp import web

    service = _service()

    async def handle(request: web.Request) -> web.Response:
        body = await service.invoke(request.match_info["op"], dict(request.query))
        return web.Response(body=orjson.dumps(body), content_type="application/json")

    app = web.Application()
    app.router.add_get("/{op}", handle)
    app.router.add_get(f"/{SERVICE}/{{op}}", handle)  # the path an adapter pair carries
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port, backlog=4096).start()
    ready()
    await asyncio.Future()


async def _wait_listening(port: int) -> None:
    """For servers without a "started" hook: wait until the port accepts a connection."""
    while True:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            await asyncio.sleep(0.02)


async def serve_hypercorn(port: int, _url: str, ready: Ready) -> None:
    from hypercorn.asyncio import serve
    from hypercorn.config import Config
    from ipclab_services.asgi import json_app

    service = _service()

    async def route(parts: list[str], query: dict[str, str]) -> tuple[int, Any]:
        return 200, await service.invoke(parts[0], query)

    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    config.errorlog = None
    task = asyncio.create_task(serve(json_app(route), config))  # type: ignore[arg-type]
    await _wait_listening(port)
    ready()
    await task


async def serve_granian(port: int, _url: str, ready: Ready) -> None:
    """granian (Rust, hyper) as an h2c server, embedded in this loop, RSGI interface."""
    from urllib.parse import parse_qsl

    from granian.constants import HTTPModes, Interfaces
    from granian.server.embed import Server
    from ipclab_services import wire

    service = _service()
    headers = [("content-type", "application/json")]

    async def app(scope: Any, proto: Any) -> None:
        query = dict(parse_qsl(scope.query_string, keep_blank_values=True))
        status, body = await wire.answer(service, scope.path.strip("/"), query)
        proto.response_bytes(status, headers, body)

    server = Server(
        app,
        address="127.0.0.1",
        port=port,
        interface=Interfaces.RSGI,
        http=HTTPModes.http2,
        websockets=False,
        backlog=4096,
        log_enabled=False,
    )
    task = asyncio.create_task(server.serve())
    await _wait_listening(port)
    ready()
    await task


SERVERS: dict[str, Callable[[int, str, Ready], Awaitable[None]]] = {
    "echo": serve_echo,
    "rest": lambda p, u, r: serve_adapter("rest", p, u, r),
    "grpc": lambda p, u, r: serve_adapter("grpc", p, u, r),
    "amqp": lambda p, u, r: serve_adapter("amqp", p, u, r),
    "aiohttp": serve_aiohttp,
    "h2c": lambda p, u, r: serve_adapter("h2c", p, u, r),
    "coap": lambda p, u, r: serve_adapter("coap", p, u, r),
    "hypercorn": serve_hypercorn,
    "granian": serve_granian,
}


# --- clients (run in the client process): each returns (call, close) ---------------------


async def client_echo(addr: str, _url: str, inflight: int) -> tuple[Call, Close]:
    host, port = addr.split(":")
    body = _payload()
    frame = len(body).to_bytes(4, "big") + body
    pool: asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = asyncio.Queue()
    writers = []
    for _ in range(inflight):
        reader, writer = await asyncio.open_connection(host, int(port))
        writers.append(writer)
        pool.put_nowait((reader, writer))

    async def call() -> bytes:
        reader, writer = await pool.get()
        try:
            writer.write(frame)
            n = int.from_bytes(await reader.readexactly(4), "big")
            return await reader.readexactly(n)
        finally:
            pool.put_nowait((reader, writer))

    async def close() -> None:
        for w in writers:
            w.close()

    return call, close


async def client_adapter(style: str, addr: str, url: str) -> tuple[Call, Close]:
    from ipclab_services import transports
    from ipclab_services.transports.base import ConnectConfig

    clients = await transports.load(style).connect(
        [_service()], ConnectConfig({SERVICE: addr}, url)
    )
    return lambda: clients.call(SERVICE, "get", REQUEST, TIMEOUT_S), clients.close


async def client_httpx(addr: str, http2: bool = False) -> tuple[Call, Close]:
    import httpx

    client = httpx.AsyncClient(
        base_url=f"http://{addr}",
        http1=not http2,
        http2=http2,
        timeout=TIMEOUT_S,
        limits=httpx.Limits(max_connections=100, max_keepalive_connections=100),
    )
    params = {k: str(v) for k, v in REQUEST.items()}

    async def call() -> Any:
        response = await client.get("/get", params=params)
        response.raise_for_status()
        return orjson.loads(response.content)

    return call, client.aclose


class DirectReplyClient:
    """RPC over RabbitMQ's direct reply-to pseudo-queue: no reply queue is declared."""

    async def start(self, url: str) -> None:
        import aio_pika

        self.aio_pika = aio_pika
        self.pending: dict[str, asyncio.Future[Any]] = {}
        self.ids = itertools.count()
        self.connection = await aio_pika.connect(url)
        self.channel = await self.connection.channel(publisher_confirms=False)
        queue = await self.channel.get_queue("amq.rabbitmq.reply-to", ensure=False)
        await queue.consume(self._on_reply, no_ack=True)
        self.body = orjson.dumps({"op": "get", "request": REQUEST})

    async def _on_reply(self, message: Any) -> None:
        future = self.pending.pop(message.correlation_id or "", None)
        if future is not None and not future.done():
            future.set_result(orjson.loads(message.body))

    async def call(self) -> Any:
        from ipclab_services.transports.amqp import queue_name

        cid = str(next(self.ids))
        future = self.pending[cid] = asyncio.get_running_loop().create_future()
        message = self.aio_pika.Message(
            self.body,
            correlation_id=cid,
            reply_to="amq.rabbitmq.reply-to",
            delivery_mode=self.aio_pika.DeliveryMode.NOT_PERSISTENT,
        )
        await self.channel.default_exchange.publish(message, routing_key=queue_name(SERVICE))
        return (await asyncio.wait_for(future, TIMEOUT_S))["result"]

    async def close(self) -> None:
        await self.connection.close()


async def client_amqp_direct(_addr: str, url: str) -> tuple[Call, Close]:
    client = DirectReplyClient()
    await client.start(url)
    return client.call, client.close


async def client_http_path(addr: str, inflight: int) -> tuple[Call, Close]:
    """HTTP/1.1 GETs of the path an adapter pair carries (aiohttp, keep-alive)."""
    import aiohttp
    from adapter_pairs import PATH  # beside this file (bench/ is on sys.path)

    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=max(100, inflight)))
    return json_get(session, f"http://{addr}{PATH}"), session.close


def json_get(session: Any, url: str) -> Call:
    """A call: GET ``url`` on the aiohttp ``session``, its JSON body (an error unless 200)."""

    async def call() -> Any:
        async with session.get(url) as response:
            body = await response.read()
            if response.status != 200:
                raise RuntimeError(f"HTTP {response.status}: {body[:200]!r}")
            return orjson.loads(body)

    return call


async def _connection_per_call(addr: str, tls_on: bool) -> tuple[Call, Close]:
    """GET product 1 from the REST adapter's server, a new connection for every call."""
    import ssl as ssl_module

    import aiohttp

    # the bench's authority, which this (spawned) process is given by the environment
    ssl: Any = True
    if tls_on:
        ssl = ssl_module.create_default_context(cafile=os.environ["IPCLAB_TLS_CA"])
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True, ssl=ssl))
    url = f"{'https' if tls_on else 'http'}://{addr}/get?product_id=1"
    return json_get(session, url), session.close


CLIENTS: dict[str, Callable[[str, str, int], Awaitable[tuple[Call, Close]]]] = {
    "echo": client_echo,
    "rest": lambda a, u, _: client_adapter("rest", a, u),
    "grpc": lambda a, u, _: client_adapter("grpc", a, u),
    "amqp": lambda a, u, _: client_adapter("amqp", a, u),
    "httpx": lambda a, u, _: client_httpx(a),
    "httpx-h2": lambda a, u, _: client_httpx(a, http2=True),
    "amqp-direct": lambda a, u, _: client_amqp_direct(a, u),
    "h2c": lambda a, u, _: client_adapter("h2c", a, u),
    "coap": lambda a, u, _: client_adapter("coap", a, u),
    "http-path": lambda a, _, n: client_http_path(a, n),
    "rest-conn": lambda a, _, __: _connection_per_call(a, False),
    "rest-tls-conn": lambda a, _, __: _connection_per_call(a, True),
}


# --- measurement (client process) --------------------------------------------------------


def _processes(pids: list[int]) -> dict[int, psutil.Process]:
    """``pids`` and every process they started (an adapter's JVM), each once: a broker's
    ``pids()`` already lists its descendants, and counting them again under their parent
    doubled the broker's CPU (AMQP's CPU per call rose 25-30% with 9a7e366, issue 46)."""
    out: dict[int, psutil.Process] = {}
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            parent = psutil.Process(pid)
            for proc in (parent, *parent.children(recursive=True)):
                out.setdefault(proc.pid, proc)
    return out


def _cpu_seconds(pids: list[int]) -> float:
    """CPU time of ``pids`` and every process they started, each process counted once."""
    total = 0.0
    for proc in _processes(pids).values():
        with contextlib.suppress(psutil.Error):
            t = proc.cpu_times()
            total += t.user + t.system
    return total


async def measure(
    call: Call,
    requests: int,
    inflight: int,
    seconds: float,
    server: list[int],
    broker: list[int],
    warmup: int | None = None,
) -> dict[str, Any]:
    """One row's figures; ``warmup`` calls first (default: a tenth of ``requests``, 20 to
    200)."""
    for _ in range(warmup if warmup is not None else min(200, max(20, requests // 10))):
        await call()
    for _ in range(5):
        await asyncio.gather(*(call() for _ in range(inflight)))

    lat = np.empty(requests)
    for i in range(requests):
        t0 = time.perf_counter()
        await call()
        lat[i] = time.perf_counter() - t0

    done = errors = 0
    first_error = ""
    stop = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal done, errors, first_error
        while time.perf_counter() < stop:
            try:
                await call()
                done += 1
            except Exception:  # noqa: BLE001 - counted, the row says so
                errors += 1
                first_error = first_error or traceback.format_exc(limit=1).splitlines()[-1]

    cpu0 = (time.process_time(), _cpu_seconds(server), _cpu_seconds(broker))
    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(inflight)))
    elapsed = time.perf_counter() - t0
    cpu1 = (time.process_time(), _cpu_seconds(server), _cpu_seconds(broker))
    client_cpu, server_cpu, broker_cpu = (
        100 * (b - a) / elapsed for a, b in zip(cpu0, cpu1, strict=True)
    )
    cpu_s = sum(b - a for a, b in zip(cpu0, cpu1, strict=True))
    p50, p99 = np.percentile(lat, [50, 99]) * 1e6
    return {
        "seq_p50_us": round(float(p50), 1),
        "seq_p99_us": round(float(p99), 1),
        "rps": round(done / elapsed, 1),
        "cpu_us_per_call": round(1e6 * cpu_s / done, 1) if done else None,
        "errors": errors,
        "first_error": first_error,
        "client_cpu_percent": round(client_cpu, 1),
        "server_cpu_percent": round(server_cpu, 1),
        "broker_cpu_percent": round(broker_cpu, 1) if broker else None,
    }


# --- processes ---------------------------------------------------------------------------


def _die_with_parent() -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _run_loop(loop: str, main: Awaitable[Any]) -> Any:
    return uvloop.run(main) if loop == "uvloop" else asyncio.run(main)  # type: ignore[arg-type]


def server_main(name: str, port: int, url: str, conn: Connection) -> None:
    _die_with_parent()
    c = BY_NAME[name]
    try:
        _run_loop(c.loop, SERVERS[c.server](port, url, lambda: conn.send("ready")))
    except Exception:  # noqa: BLE001 - reported to the parent
        conn.send(traceback.format_exc())


def client_main(
    name: str,
    addr: str,
    url: str,
    args: dict[str, Any],
    pids: dict[str, list[int]],
    conn: Connection,
) -> None:
    _die_with_parent()
    c = BY_NAME[name]

    async def main() -> dict[str, Any]:
        call, close = await CLIENTS[c.client](addr, url, args["inflight"])
        try:
            return await measure(
                call,
                args["requests"],
                args["inflight"],
                args["seconds"],
                pids["server"],
                pids["broker"],
                args.get("warmup"),
            )
        finally:
            await close()

    try:
        conn.send(_run_loop(c.loop, main()))
    except Exception:  # noqa: BLE001 - reported to the parent
        conn.send({"error": traceback.format_exc(limit=3).strip().splitlines()[-1]})


def _stop(proc: mp.process.BaseProcess) -> None:
    if proc.is_alive():
        proc.terminate()
        proc.join(5)
    if proc.is_alive():
        proc.kill()
        proc.join(5)


def run_candidate(c: Candidate, args: argparse.Namespace, broker: Any) -> dict[str, Any]:
    if c.runtime == "go":
        import go_rows  # beside this file: bench/ is on sys.path when run as a script

        try:
            return go_rows.measure(c.server, args, broker if c.broker else None, _payload())
        except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
            return {"error": str(e).strip().splitlines()[-1] if str(e).strip() else repr(e)}
    import tls_rows  # beside this file: bench/ is on sys.path when run as a script

    with tls_rows.environment(c.tls):  # the row's processes start with it, or without
        return _run_python(c, args, broker)


def _run_python(c: Candidate, args: argparse.Namespace, broker: Any) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    url = broker.url if c.broker else ""
    port = free_port()  # free over TCP and UDP
    parent, child = ctx.Pipe()
    server = ctx.Process(target=server_main, args=(c.name, port, url, child), daemon=True)
    server.start()
    try:
        if not parent.poll(60):
            return {"error": "server not ready after 60 s"}
        if (msg := parent.recv()) != "ready":
            return {"error": f"server failed: {str(msg).strip().splitlines()[-1]}"}
        pids = {"server": [server.pid or 0], "broker": broker.pids() if c.broker else []}
        if c.runtime != "pair":
            return _run_client(ctx, c, args, f"127.0.0.1:{port}", url, pids)
        import adapter_pairs  # beside this file: bench/ is on sys.path when run as a script

        try:
            with adapter_pairs.pair(c.name, port) as (addr, sidecars):
                pids["server"] += sidecars
                warmup = max(args.pair_warmup, args.requests)
                return _run_client(ctx, c, args, addr, url, pids, warmup)
        except adapter_pairs.PairError as e:
            return {"error": str(e).strip().splitlines()[-1]}
    finally:
        _stop(server)


def _run_client(
    ctx: Any,
    c: Candidate,
    args: argparse.Namespace,
    addr: str,
    url: str,
    pids: dict[str, list[int]],
    warmup: int | None = None,
) -> dict[str, Any]:
    """The client process of one row, calling ``addr``: its figures, or an error."""
    options = {
        "requests": args.requests,
        "inflight": args.inflight,
        "seconds": args.seconds,
        "warmup": warmup,
    }
    parent_c, child_c = ctx.Pipe()
    client = ctx.Process(
        target=client_main, args=(c.name, addr, url, options, pids, child_c), daemon=True
    )
    client.start()
    try:
        budget = 60 + (args.requests + (warmup or 0)) * TIMEOUT_S / 100 + args.seconds
        if not parent_c.poll(budget):
            return {"error": f"client did not finish in {budget:.0f} s"}
        return dict(parent_c.recv())
    finally:
        _stop(client)


# --- report ------------------------------------------------------------------------------


VERSIONED = (
    "uvloop",
    "aiohttp",
    "uvicorn",
    "httptools",
    "httpx",
    "h2",
    "hypercorn",
    "granian",
    "grpcio",
    "protobuf",
    "aio-pika",
    "aiormq",
    "aiocoap",
)


def versions() -> dict[str, str]:
    out = {}
    for dist in VERSIONED:
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[dist] = metadata.version(dist)
    return out


def _num(v: float | None, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def header(inflight: int) -> str:
    head = (
        f"{'candidate':<13} {'p50 us':>8} {'p99 us':>8} {'req/s@' + str(inflight):>10} "
        f"{'p50 x floor':>11} {'rps % floor':>11} {'cpu us/call':>11} {'x floor':>7} "
        f"{'cpu cli/srv/brk %':>17}  description"
    )
    return head + "\n" + "-" * len(head)


def format_row(r: dict[str, Any], floor: dict[str, Any] | None) -> str:
    if "error" in r:
        return f"{r['name']:<13} FAILED: {r['error']}"
    ratio_lat = r["seq_p50_us"] / floor["seq_p50_us"] if floor else None
    ratio_rps = 100 * r["rps"] / floor["rps"] if floor else None
    cost = r["cpu_us_per_call"]
    ratio_cost = cost / floor["cpu_us_per_call"] if floor and cost else None
    cpu = (
        f"{r['client_cpu_percent']:.0f}/{r['server_cpu_percent']:.0f}/"
        f"{_num(r['broker_cpu_percent'], '.0f')}"
    )
    errors = f"  ({r['errors']} errors: {r['first_error']})" if r["errors"] else ""
    return (
        f"{r['name']:<13} {r['seq_p50_us']:>8.0f} {r['seq_p99_us']:>8.0f} {r['rps']:>10.0f} "
        f"{_num(ratio_lat, '.1f'):>11} {_num(ratio_rps, '.1f'):>11} {_num(cost, '.0f'):>11} "
        f"{_num(ratio_cost, '.1f'):>7} {cpu:>17}  {r['label']}{errors}"
    )


def measure_round(
    chosen: list[Candidate], args: argparse.Namespace, round_no: int, broker: dict[str, Any]
) -> list[dict[str, Any]]:
    """Measure each candidate once (the floor first), printing each row as soon as it is
    known; ratios compare a row with the floor of its own round."""
    broker_module = _moved("ipclab.backends.broker", "ipclab.broker")
    BrokerUnavailable, RabbitNode = broker_module.BrokerUnavailable, broker_module.RabbitNode
    rows: list[dict[str, Any]] = []
    floor: dict[str, Any] | None = None
    for c in chosen:
        result: dict[str, Any]
        try:
            node = "tls_node" if c.tls else "node"
            if c.broker and node not in broker:
                folder = Path(tempfile.mkdtemp(prefix="ipclab-bench-")) / "broker"
                if c.tls:
                    import tls_rows

                    broker[node] = tls_rows.broker(folder)
                else:
                    broker[node] = RabbitNode(folder)
                    broker[node].start()
            result = run_candidate(c, args, broker.get(node))
        except (BrokerUnavailable, OSError, EOFError) as e:
            result = {"error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
        rows.append({"name": c.name, "label": c.label, "round": round_no, **result})
        if c.name == "floor" and "error" not in result:
            floor = rows[-1]
        print(format_row(rows[-1], floor), flush=True)
    return rows


def measure_all(chosen: list[Candidate], args: argparse.Namespace) -> list[dict[str, Any]]:
    """``args.rounds`` rounds of every candidate, interleaved, so that slow drifts of the
    machine's load touch every candidate alike; after the floor, each round starts one
    candidate further along the list."""
    print(header(args.inflight), flush=True)
    broker: dict[str, Any] = {}
    floor, others = chosen[:1], chosen[1:]
    rows: list[dict[str, Any]] = []
    try:
        for r in range(args.rounds):
            if args.rounds > 1:
                print(f"# round {r + 1} of {args.rounds}, load avg {os.getloadavg()[0]:.2f}")
            k = r % len(others) if others else 0
            rows += measure_round(floor + others[k:] + others[:k], args, r + 1, broker)
    finally:
        for node in ("node", "tls_node"):
            if node in broker:
                broker[node].stop()
                with contextlib.suppress(OSError):
                    broker[node].directory.parent.rmdir()
        if any(c.tls for c in chosen):
            import tls_rows

            tls_rows.cleanup()
        if any(c.runtime == "go" for c in chosen):
            import go_rows

            go_rows.cleanup()
    return rows


def summarize(rows: list[dict[str, Any]], names: list[str]) -> list[dict[str, Any]]:
    """Per candidate over the rounds: medians of the figures, errors summed, and medians of
    the per-round ratios to the floor and to grpc (the same round's rows)."""
    ok = [r for r in rows if "error" not in r]
    same_round = {(r["round"], r["name"]): r for r in ok}

    def ratio(mine: list[dict[str, Any]], key: str, other: str) -> float | None:
        values = [
            r[key] / o[key]
            for r in mine
            if (o := same_round.get((r["round"], other))) is not None and r[key] and o[key]
        ]
        return round(float(np.median(values)), 3) if values else None

    out: list[dict[str, Any]] = []
    for name in names:
        mine = [r for r in ok if r["name"] == name]
        row: dict[str, Any] = {"name": name, "rounds": len(mine)}
        if mine:
            for k in ("seq_p50_us", "seq_p99_us", "rps", "cpu_us_per_call"):
                values = [r[k] for r in mine if r[k] is not None]
                row[k] = round(float(np.median(values)), 1) if values else None
            row["errors"] = sum(r["errors"] for r in mine)
            for other in ("floor", "grpc"):
                row[f"rps_x_{other}"] = ratio(mine, "rps", other)
                row[f"cpu_x_{other}"] = ratio(mine, "cpu_us_per_call", other)
        out.append(row)
    return out


def print_summary(summary: list[dict[str, Any]], rounds: int) -> None:
    head = (
        f"{'candidate':<13} {'p50 us':>8} {'p99 us':>8} {'req/s':>8} {'cpu us/call':>11}"
        f" {'errors':>6} {'rps x floor':>11} {'cpu x floor':>11} {'rps x grpc':>10}"
        f" {'cpu x grpc':>10}"
    )
    print(f"\n# medians over {rounds} interleaved rounds; ratios: medians of per-round ratios")
    print(head + "\n" + "-" * len(head))
    for s in summary:
        if not s["rounds"]:
            print(f"{s['name']:<13} FAILED in every round")
            continue
        print(
            f"{s['name']:<13} {_num(s['seq_p50_us'], '.0f'):>8} {_num(s['seq_p99_us'], '.0f'):>8}"
            f" {_num(s['rps'], '.0f'):>8} {_num(s['cpu_us_per_call'], '.0f'):>11}"
            f" {s['errors']:>6} {_num(s['rps_x_floor'], '.3f'):>11}"
            f" {_num(s['cpu_x_floor'], '.1f'):>11} {_num(s['rps_x_grpc'], '.2f'):>10}"
            f" {_num(s['cpu_x_grpc'], '.2f'):>10}"
        )


def chosen_candidate(
    c: Candidate, names: list[str], go: bool, pairs: bool = False, tls: bool = False
) -> bool:
    """The floor always; a named candidate; without names every Python one; with ``go``
    the Go floor and the Go row of each chosen style (all three without names); with
    ``pairs`` the three pair rows."""
    if c.name == "floor" or c.name in names:
        return True
    if c.runtime == "go":
        return go and (c.name == "go-floor" or not names or c.server in names)
    if c.runtime == "pair":
        return pairs
    if c.runtime == "tls":
        return tls
    return not names


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=2000, help="sequential calls (default 2000)")
    ap.add_argument("--inflight", type=int, default=32, help="calls in flight (default 32)")
    ap.add_argument("--seconds", type=float, default=3.0, help="throughput phase (default 3)")
    ap.add_argument("--only", default="", help=f"comma-separated: {', '.join(BY_NAME)}")
    ap.add_argument("--rounds", type=int, default=1, help="interleaved rounds (default 1)")
    ap.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    ap.add_argument(
        "--against",
        metavar="REV",
        help="also run REV's bench (a git revision, in a temporary worktree) in the same "
        "sitting, rounds interleaved, and print per-call CPU and req/s ratios (bench/against.py)",
    )
    ap.add_argument(
        "--go",
        action="store_true",
        help="also the Go rows (go-floor and, of rest/grpc/amqp, those --only names), same rounds",
    )
    ap.add_argument(
        "--pair-warmup",
        type=int,
        default=3000,
        help="calls before a pair row is measured (default 3000: the JVM compiles as it runs)",
    )
    ap.add_argument(
        "--pairs",
        action="store_true",
        help="also the CoAP adapter-pair rows (pair-none, pair-aiocoap, pair-californium)",
    )
    ap.add_argument(
        "--tls",
        action="store_true",
        help="also the TLS rows (rest-tls, grpc-tls, h2c-tls, amqp-tls, rest-conn, "
        "rest-tls-conn) and what TLS and a handshake cost",
    )
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    names = [n for n in args.only.split(",") if n]
    if unknown := [n for n in names if n not in BY_NAME]:
        ap.error(f"unknown candidate(s) {unknown}; known: {', '.join(BY_NAME)}")
    chosen = [c for c in CANDIDATES if chosen_candidate(c, names, args.go, args.pairs, args.tls)]
    if args.against:
        import against

        options = {k: getattr(args, k) for k in against.FORWARDED}
        rows = against.against(args.against, args.only, max(args.rounds, 2), options, args.json)
        return 0 if all(r["rounds"] for r in rows) else 1

    load_before = os.getloadavg()
    print(
        f"# {platform.node()} | {psutil.cpu_count()} cores | Python {platform.python_version()}"
        f" | load avg {load_before[0]:.2f} | payload {len(_payload())} B JSON ({SERVICE})"
        f" | {args.requests} sequential calls, {args.inflight} in flight for {args.seconds:g} s",
        flush=True,
    )
    started = time.monotonic()
    rows = measure_all(chosen, args)
    summary = summarize(rows, [c.name for c in chosen]) if args.rounds > 1 else []
    if summary:
        print_summary(summary, args.rounds)
    tls_costs: list[dict[str, Any]] = []
    if any(c.tls for c in chosen):
        import tls_rows

        tls_costs = tls_rows.costs(rows)
        tls_rows.print_costs(tls_costs)
    pair_costs: list[dict[str, Any]] = []
    if any(c.runtime == "pair" for c in chosen):
        import adapter_pairs

        pair_costs = adapter_pairs.costs(rows)
        adapter_pairs.print_costs(pair_costs)
    load_after = os.getloadavg()
    print(
        f"# load avg {load_before[0]:.2f} before, {load_after[0]:.2f} after;"
        f" {time.monotonic() - started:.0f} s\n# cpu: client/server/broker, % of one core in the"
        " throughput phase; cpu us/call (all three) is the figure least moved by other load"
    )
    if args.json:
        doc = {
            "host": platform.node(),
            "cores": psutil.cpu_count(),
            "python": platform.python_version(),
            "load_avg_before": load_before,
            "load_avg_after": load_after,
            "payload_bytes": len(_payload()),
            "args": {k: v for k, v in vars(args).items() if k != "json"},
            "versions": versions(),
            "rows": rows,
            "summary": summary,
            "pair_costs": pair_costs,
            "tls_costs": tls_costs,
        }
        if any(c.runtime == "go" for c in chosen):
            import go_rows

            doc["go"] = go_rows.go_version()
        args.json.write_text(json.dumps(doc, indent=2) + "\n")
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
