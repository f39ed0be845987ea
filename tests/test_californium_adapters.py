"""The Californium adapters' sockets (issue 46, item 1): TCP_NODELAY, keep-alive, pools.

A real chain, as a stack runs it: a client -> ``egress`` (the JDK's HTTP server, Californium
client endpoints) -> ``auth-ingress`` (Californium's server endpoint, the JDK's HTTP client)
-> a small HTTP/1.1 service, each adapter a ``python -m ipclab_services.adapters.native``
process. The JDK's HTTP server writes an answer's head and body in two writes; with Nagle's
algorithm on (its default) the body waited for the client's delayed ACK (40 ms on Linux), so
a single client's request took 40-50 ms. The client here sends each request in one write
and, like every client, delays its ACKs: far under 40 ms with the adapters' settings, and,
as a control that the test can fail, 40 ms again with the JDK's default put back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
import uvloop
from aiohttp import web
from ipclab_services.adapters import native

from ipclab import javabuild, sockopts
from ipclab.procs import free_port

SERVICE = "auth"
STALL_MS = 40.0  # Linux's delayed-ACK timeout (TCP_DELACK_MIN)
GET = b"GET /auth/logout?login=uid0 HTTP/1.1\r\nHost: egress\r\n\r\n"
FORM = b"login=uid0%40email.com&password=password"
POST = (
    b"POST /auth/login HTTP/1.1\r\nHost: egress\r\n"
    b"Content-Type: application/x-www-form-urlencoded\r\n"
    b"Content-Length: %d\r\n\r\n%s" % (len(FORM), FORM)
)
WARMUP = 300  # the JIT compiles the path first (the control's 20: each takes 40 ms)
SAMPLES = 40

pytestmark = [
    pytest.mark.skipif(shutil.which("java") is None, reason="java missing"),
    pytest.mark.skipif(
        javabuild.toolchain_missing() is not None, reason=str(javabuild.toolchain_missing())
    ),
]


@dataclass
class Chain:
    port: int
    upstream_port: int
    procs: dict[str, asyncio.subprocess.Process]
    logs: dict[str, Path]
    connections: set[int]  # the peer ports of the connections the service was asked on


def _env(role: str, port: int, addrs: dict[str, str], jvm: str, tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IPCLAB_")}
    env.update(
        IPCLAB_ROLE=role,
        IPCLAB_ADAPTER="egress" if role == "egress" else "ingress",
        IPCLAB_ADAPTERS="native",
        IPCLAB_TRANSPORT="coap",
        IPCLAB_HOST="127.0.0.1",
        IPCLAB_PORT=str(port),
        IPCLAB_SERVICES=SERVICE,
        IPCLAB_CALIFORNIUM_CLASSPATH=str(javabuild.classpath()),
        IPCLAB_JVM_OPTIONS=jvm,
        TMPDIR=str(tmp),
    )
    env.update({native.addr_env(r): a for r, a in addrs.items()})
    return env


def _service(connections: set[int]) -> web.Application:
    async def handle(request: web.Request) -> web.Response:
        await request.read()
        if request.transport is not None:
            connections.add(request.transport.get_extra_info("peername")[1])
        if request.method == "POST":
            resp = web.Response(text="logged in", content_type="text/plain")
            resp.headers.add("Set-Cookie", "sessionid=4f2a; Path=/")
            return resp
        return web.Response(text="logged out", content_type="text/plain")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


async def _answered(port: int, proc: asyncio.subprocess.Process, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        assert proc.returncode is None, "the egress exited"
        with contextlib.suppress(OSError, asyncio.IncompleteReadError, ValueError):
            r, w = await asyncio.open_connection("127.0.0.1", port)
            w.write(GET)
            status = int((await r.readuntil(b"\r\n\r\n")).split()[1])
            w.close()
            if status == 200:
                return
        await asyncio.sleep(0.2)
    raise AssertionError("the chain does not answer")


@contextlib.asynccontextmanager
async def chain(tmp: Path, jvm: str = "") -> AsyncIterator[Chain]:
    """The service, its ingress and the egress; every adapter stopped afterwards."""
    (tmp / "t").mkdir(exist_ok=True)
    connections: set[int] = set()
    runner = web.AppRunner(_service(connections), access_log=None)
    await runner.setup()
    up, ingress, egress = free_port(), free_port(), free_port()
    await web.TCPSite(runner, "127.0.0.1", up).start()
    plan = {
        f"{SERVICE}-ingress": (ingress, {SERVICE: f"127.0.0.1:{up}"}),
        "egress": (egress, {f"{SERVICE}-ingress": f"127.0.0.1:{ingress}"}),
    }
    procs: dict[str, asyncio.subprocess.Process] = {}
    logs = {role: tmp / f"{role}.log" for role in plan}
    try:
        for role, (port, addrs) in plan.items():
            with logs[role].open("ab") as log:
                procs[role] = await asyncio.create_subprocess_exec(
                    sys.executable, "-m", "ipclab_services.adapters.native",
                    env=_env(role, port, addrs, jvm, tmp / "t"), stderr=log,
                )  # fmt: skip
        await _answered(egress, procs["egress"])
        yield Chain(egress, up, procs, logs, connections)
    finally:
        for p in procs.values():
            if p.returncode is None:
                p.send_signal(signal.SIGTERM)
        for p in procs.values():
            try:
                await asyncio.wait_for(p.wait(), 15)
            except TimeoutError:
                p.kill()
                await p.wait()
        await runner.cleanup()


async def sequential(port: int, request: bytes, n: int) -> list[float]:
    """``n`` requests one after another on one keep-alive connection, each in one write: the
    latency of each, in ms."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    out = []
    try:
        for _ in range(n):
            t = time.perf_counter()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            await reader.readexactly(length)
            out.append((time.perf_counter() - t) * 1000)
            assert head.startswith(b"HTTP/1.1 200"), head
    finally:
        writer.close()
    return out


def _medians(jvm: str, tmp: Path, warmup: int) -> tuple[float, float]:
    async def go() -> tuple[float, float]:
        async with chain(tmp, jvm) as c:
            await sequential(c.port, GET, warmup)
            get = await sequential(c.port, GET, SAMPLES)
            post = await sequential(c.port, POST, SAMPLES)
            return statistics.median(get), statistics.median(post)

    return uvloop.run(asyncio.wait_for(go(), 180))


def test_one_client_is_answered_far_under_the_delayed_ack(tmp_path: Path) -> None:
    get, post = _medians("", tmp_path, WARMUP)
    assert get < STALL_MS / 2 and post < STALL_MS / 2, (get, post)


def test_with_the_jdk_servers_default_nagle_every_answer_waits_for_the_delayed_ack(
    tmp_path: Path,
) -> None:
    """The control: the JDK's default (no TCP_NODELAY) put back, the stall is there."""
    get, post = _medians("-Dsun.net.httpserver.nodelay=false", tmp_path, 20)
    assert get > STALL_MS * 0.85 and post > STALL_MS * 0.85, (get, post)


def _pom_version() -> str:
    """The pom's ``californium.version``: what the jars are (javabuild fetches that one)."""
    pom = (javabuild.JAVA_PROJECTS / "californium" / "pom.xml").read_text()
    found = re.search(r"<californium\.version>([^<]+)</californium\.version>", pom)
    assert found is not None
    return found.group(1)


def _runtime(log: Path) -> dict[str, object]:
    for line in log.read_text().splitlines():
        if "ipclab-runtime " in line:
            doc: dict[str, object] = json.loads(line.partition("ipclab-runtime ")[2])
            return doc
    raise AssertionError(f"no ipclab-runtime line in {log}")


def test_the_sockets_have_nodelay_and_keep_alive_and_the_manifest_says_so(tmp_path: Path) -> None:
    async def go() -> None:
        async with chain(tmp_path) as c:
            await sequential(c.port, POST, 50)
            await sequential(c.port, GET, 50)
            # keep-alive on both HTTP hops: one connection to the service for 100 requests
            assert len(c.connections) == 1
            for role in ("egress", f"{SERVICE}-ingress"):
                report = _runtime(c.logs[role])
                assert report["californium"] == _pom_version()
                assert report["settings"] == {
                    "sun.net.httpserver.nodelay": "true",
                    "sun.net.httpserver.idleInterval": "75",
                    "sun.net.httpserver.maxIdleConnections": "200",
                    "jdk.httpclient.keepalive.timeout": "60",
                    "jdk.httpclient.connectionPoolSize": "100",
                    "udp_receiver_threads": "1",
                    "udp_sender_threads": "1",
                    "coap_stage_threads": str(report["processors"]),
                    "client_threads": "2",
                    "pool": "100",
                    "logging": "fixed",  # Nyfløtt's fix (issue 52): the default
                }
            await _sockets_have_nodelay(c)

    uvloop.run(asyncio.wait_for(go(), 180))


async def _sockets_have_nodelay(c: Chain) -> None:
    """Read from outside the JVMs (``ipclab.sockopts``; ptrace rights): the egress's accepted
    sockets and the ingress's connections to the service have TCP_NODELAY; none has
    SO_KEEPALIVE."""
    reader, writer = await asyncio.open_connection("127.0.0.1", c.port)  # held open
    try:
        writer.write(GET)
        await reader.readuntil(b"logged out")
        found = {}
        for role, proc in c.procs.items():
            jvm = [p for p in psutil.Process(proc.pid).children() if p.name() == "java"][0]
            try:
                found[role] = sockopts.live_sockets(jvm.pid)
            except sockopts.SockoptsError as e:
                pytest.skip(f"the JVMs' sockets cannot be read here: {e}")
        accepted = sockopts.connections(found["egress"], c.port, "server")
        to_service = sockopts.connections(found[f"{SERVICE}-ingress"], c.upstream_port, "client")
        assert accepted and all(s.nodelay for s in accepted), accepted
        assert to_service and all(s.nodelay for s in to_service), to_service
        assert not any(s.keepalive for s in accepted + to_service)
    finally:
        writer.close()


def test_the_command_line_states_the_pool_and_the_idle_timeouts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(native.CALIFORNIUM_CLASSPATH, str(tmp_path))
    plan = native.plan_from_env(
        {
            "IPCLAB_ROLE": "egress",
            "IPCLAB_TRANSPORT": "coap",
            "IPCLAB_PORT": "1",
            "IPCLAB_SERVICES": SERVICE,
            native.addr_env(f"{SERVICE}-ingress"): "127.0.0.1:2",
        }
    )
    argv = native.californium_command(plan, "java")
    tail = argv[argv.index("--role") :]
    pairs = dict(zip(tail[::2], tail[1::2], strict=True))
    assert pairs["--pool"] == str(native.CALIFORNIUM_POOL) == "100"
    assert pairs["--server-idle-s"] == "75"  # limits.IDLE_TIMEOUT_S, as every server's
    assert int(pairs["--client-keepalive-s"]) < 75  # the client lets go first
