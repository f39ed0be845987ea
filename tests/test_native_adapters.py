"""The native adapters (services/adapters/native.py): nginx for HTTP/1.1, nghttpx for h2c.

Each chain is real: client -> egress -> (a counting TCP relay) -> <svc>-ingress -> a small
HTTP/1.1 upstream per service, every adapter a ``python -m ipclab_services.adapters.native``
process as a role runs it. Skipped, naming the Debian package, where a binary is missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import shutil
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import psutil
import pytest
import uvloop
from aiohttp import web
from ipclab_services.adapters import native
from yarl import URL

from ipclab.procs import free_port

TRANSPORTS = ("rest", "h2c")
SERVICES = ("auth", "flight")
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SET_COOKIES = ("sessionid=4f2a9c1e-77d0; Path=/; HttpOnly", "loggedinuser=uid0%40email.com; Path=/")
BIG = json.dumps(
    [{"flightId": f"AA{i:04d}", "segment": "CDG-JFK", "miles": 3625 + i} for i in range(70)]
).encode()  # ~4 KB


def needs(transport: str) -> pytest.MarkDecorator:
    program, package = native.TRANSPORTS[transport]
    return pytest.mark.skipif(
        shutil.which(program) is None,
        reason=f"{program} missing: apt-get install {package} (scripts/system-deps.sh)",
    )


PARAMS = [pytest.param(t, marks=needs(t), id=t) for t in TRANSPORTS]


def run(test: Callable[[], Awaitable[None]]) -> None:
    uvloop.run(asyncio.wait_for(test(), 60))


# --------------------------------------------------------------------------- upstream


def upstream_app(service: str) -> web.Application:
    """An HTTP/1.1 service: login (text/plain, two Set-Cookie), a ~4 KB JSON document, any
    status, and an echo of everything it received."""

    async def handle(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        tail = request.path.rstrip("/").rsplit("/", 1)[-1]
        if tail == "login" and request.method == "POST":
            resp = web.Response(text="logged in", content_type="text/plain")
            for c in SET_COOKIES:
                resp.headers.add("Set-Cookie", c)
            return resp
        if tail == "queryflights":
            return web.Response(body=BIG, content_type="application/json")
        if request.path.split("/")[-2:-1] == ["status"]:
            return web.Response(status=int(tail), text=f"status {tail} from {service}")
        await asyncio.sleep(random.random() / 100)  # answers leave out of order
        echo = {
            "service": service,
            "method": request.method,
            "target": request.raw_path,
            "host": request.headers.get("Host"),
            "cookie": request.headers.getall("Cookie", []),
            "content_type": request.headers.get("Content-Type"),
            "body": body.decode("latin-1"),
            "headers": sorted(k.lower() for k in request.headers),
        }
        return web.json_response(echo)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


@dataclass
class Relay:
    """A TCP relay that counts connections and keeps each one's first bytes."""

    target: int
    port: int = field(default_factory=free_port)
    firsts: list[bytes] = field(default_factory=list)

    async def start(self) -> asyncio.AbstractServer:
        async def pipe(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError):
                while data := await r.read(65536):
                    w.write(data)
                    await w.drain()
            with contextlib.suppress(OSError):
                w.close()

        async def conn(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            ur, uw = await asyncio.open_connection("127.0.0.1", self.target)
            first = await r.read(len(H2_PREFACE))
            while len(first) < len(H2_PREFACE) and (more := await r.read(64)):
                first += more
            self.firsts.append(first)
            uw.write(first)
            await asyncio.gather(pipe(r, uw), pipe(ur, w))

        return await asyncio.start_server(conn, "127.0.0.1", self.port)


@dataclass
class Chain:
    url: str
    relays: dict[str, Relay]
    procs: dict[str, asyncio.subprocess.Process]


def adapter_env(role: str, transport: str, port: int, addrs: dict[str, str]) -> dict[str, str]:
    env = {
        **os.environ,
        "IPCLAB_ROLE": role,
        "IPCLAB_ADAPTER": "egress" if role == "egress" else "ingress",
        "IPCLAB_ADAPTERS": "native",
        "IPCLAB_TRANSPORT": transport,
        "IPCLAB_HOST": "127.0.0.1",
        "IPCLAB_PORT": str(port),
        "IPCLAB_SERVICES": ",".join(SERVICES),
    }
    env.update({native.addr_env(r): a for r, a in addrs.items()})
    return env


async def start_adapter(env: dict[str, str], log: Path) -> asyncio.subprocess.Process:
    with log.open("ab") as out:
        return await asyncio.create_subprocess_exec(
            sys.executable, "-m", "ipclab_services.adapters.native", env=env, stderr=out
        )


async def wait_port(port: int, proc: asyncio.subprocess.Process, timeout: float = 15) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        assert proc.returncode is None, "the adapter exited"
        with contextlib.suppress(OSError):
            _, w = await asyncio.open_connection("127.0.0.1", port)
            w.close()
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}")


@contextlib.asynccontextmanager
async def chain(transport: str, tmp: Path) -> AsyncIterator[Chain]:
    """Upstreams, ingresses behind relays, an egress; afterwards every adapter has stopped on
    SIGTERM with status 0 and left no directory in its TMPDIR."""
    (tmp / "t").mkdir()
    runners, servers, procs = [], [], {}
    relays: dict[str, Relay] = {}
    try:
        egress_addrs = {}
        for s in SERVICES:
            runner = web.AppRunner(upstream_app(s), access_log=None)
            await runner.setup()
            runners.append(runner)
            up = free_port()
            await web.TCPSite(runner, "127.0.0.1", up).start()
            ing = free_port()
            env = adapter_env(f"{s}-ingress", transport, ing, {s: f"localhost:{up}"})
            env["TMPDIR"] = str(tmp / "t")
            procs[s] = await start_adapter(env, tmp / f"{s}-ingress.log")
            relays[s] = Relay(ing)
            servers.append(await relays[s].start())
            egress_addrs[f"{s}-ingress"] = f"localhost:{relays[s].port}"
        port = free_port()
        env = adapter_env("egress", transport, port, egress_addrs)
        env["TMPDIR"] = str(tmp / "t")
        procs["egress"] = await start_adapter(env, tmp / "egress.log")
        await wait_port(port, procs["egress"])
        for s in SERVICES:
            await wait_port(relays[s].target, procs[s])
        yield Chain(f"http://127.0.0.1:{port}", relays, procs)
        for p in procs.values():
            p.send_signal(signal.SIGTERM)
        codes = [await asyncio.wait_for(p.wait(), 10) for p in procs.values()]
        assert codes == [0] * len(procs), (tmp / "egress.log").read_text()
        assert list((tmp / "t").iterdir()) == []
    finally:
        for p in procs.values():
            if p.returncode is None:
                p.kill()
                await p.wait()
        for srv in servers:
            srv.close()
        for runner in runners:
            await runner.cleanup()


def session() -> aiohttp.ClientSession:
    """Keep-alive, at most 32 connections, no cookie jar: cookies go as written."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=32),
        cookie_jar=aiohttp.DummyCookieJar(),
        auto_decompress=False,
    )


def running(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Those of ``procs`` still running (not gone nor zombies) after up to ``timeout`` s."""
    end = time.monotonic() + timeout
    while True:
        out = []
        for p in procs:
            with contextlib.suppress(psutil.NoSuchProcess):
                if p.status() != psutil.STATUS_ZOMBIE:
                    out.append(p)
        if not out or time.monotonic() > end:
            return out
        time.sleep(0.05)


def raw(resp: aiohttp.ClientResponse, name: bytes) -> list[bytes]:
    return [v for k, v in resp.raw_headers if k.lower() == name]


# --------------------------------------------------------------------------- chains


@pytest.mark.parametrize("transport", PARAMS)
def test_everything_passes_through_unchanged(transport: str, tmp_path: Path) -> None:
    async def main() -> None:
        async with chain(transport, tmp_path) as c, session() as http:
            form = b"login=uid0%40email.com&password=pa%26ss+word"
            cookie = "sessionid=4f2a9c1e-77d0; loggedinuser=uid0%40email.com"
            form_type = "application/x-www-form-urlencoded"
            async with http.post(
                f"{c.url}/auth/acmeair-as/rest/api/login",
                data=form,
                headers={"Content-Type": form_type},
            ) as r:
                assert r.status == 200
                assert raw(r, b"set-cookie") == [v.encode() for v in SET_COOKIES]
                assert raw(r, b"content-type") == [b"text/plain; charset=utf-8"]
                assert await r.read() == b"logged in"
                assert len(raw(r, b"server")) == 1 and raw(r, b"server")[0].startswith(b"Python")
                assert len(raw(r, b"date")) == 1
            target = "/auth/acmeair-as/rest/api/login/logout?login=uid0%40email.com&x=a+b"
            async with http.post(
                URL(f"{c.url}{target}", encoded=True),  # sent as written
                data=form,
                headers={"Content-Type": form_type, "Cookie": cookie},
            ) as r:
                echo = await r.json()
            host = c.url.removeprefix("http://")
            assert echo == {
                "service": "auth",
                "method": "POST",
                "target": target,
                "host": host,
                "cookie": [cookie],
                "content_type": form_type,
                "body": form.decode(),
                "headers": echo["headers"],
            }
            added = {"via", "forwarded", "x-forwarded-for", "x-forwarded-proto", "x-real-ip"}
            assert not added & set(echo["headers"]), echo["headers"]
            async with http.get(f"{c.url}/flight/acmeair-fs/rest/api/flights/queryflights") as r:
                assert r.status == 200
                assert raw(r, b"content-type") == [b"application/json"]
                assert await r.read() == BIG and len(BIG) > 4000
            for svc, code in (("auth", 401), ("flight", 404), ("flight", 200)):
                async with http.get(f"{c.url}/{svc}/x/status/{code}") as r:
                    assert (r.status, await r.text()) == (code, f"status {code} from {svc}")
            async with http.get(f"{c.url}/booking/acmeair-bs/rest/api/bookings") as r:
                assert r.status == 404  # no such service: the egress answers

    run(main)


@pytest.mark.parametrize("transport", PARAMS)
def test_32_in_flight_on_keep_alive_each_get_their_own_answer(
    transport: str, tmp_path: Path
) -> None:
    """Twice 32 requests in flight; on the network hop h2c opens one HTTP/2 connection (the
    connection preface) per peer, HTTP/1.1 one connection per request in flight, reused."""

    async def one(http: aiohttp.ClientSession, url: str, i: int) -> None:
        svc = SERVICES[i % 2]
        target = f"/{svc}/acmeair-bs/rest/api/bookings/byuser/uid{i}%40email.com?n={i}"
        cookie = f"sessionid=s{i}; loggedinuser=uid{i}"
        body = f"flight={i}&seat={'x' * (i * 37)}"
        async with http.post(
            URL(url + target, encoded=True),
            data=body.encode(),
            headers={"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"},
        ) as r:
            assert r.status == 200
            echo = await r.json()
        assert (echo["service"], echo["target"], echo["cookie"], echo["body"]) == (
            svc,
            target,
            [cookie],
            body,
        )

    async def main() -> None:
        async with chain(transport, tmp_path) as c, session() as http:
            await asyncio.gather(*(one(http, c.url, i) for i in range(32)))
            first_round = {s: len(r.firsts) for s, r in c.relays.items()}
            await asyncio.sleep(0.2)
            await asyncio.gather(*(one(http, c.url, i) for i in range(32, 64)))
            firsts = {s: r.firsts for s, r in c.relays.items()}
        for s in SERVICES:
            if transport == "h2c":
                assert firsts[s] == [H2_PREFACE], f"{s}: HTTP/2 prior knowledge, one connection"
            else:
                assert all(f.startswith(b"POST /") for f in firsts[s]), firsts[s]
                assert 1 < len(firsts[s]) <= 16, f"{s}: {len(firsts[s])} connections"
                assert len(firsts[s]) == first_round[s], "the second round reuses them"

    run(main)


@pytest.mark.parametrize("transport", PARAMS)
def test_the_proxy_dies_with_its_adapter_and_its_directory_is_swept(
    transport: str, tmp_path: Path
) -> None:
    """SIGKILL the adapter: the proxy and its workers go too (parent-death signal); the next
    adapter started removes the directory the killed one left."""

    async def main() -> None:
        env = adapter_env("auth-ingress", transport, free_port(), {"auth": "127.0.0.1:9"})
        env["TMPDIR"] = str(tmp_path)
        proc = await start_adapter(env, tmp_path / "a.log")
        try:
            await wait_port(int(env["IPCLAB_PORT"]), proc)
            deadline = time.monotonic() + 5  # the worker may start just after the listener
            while len(family := psutil.Process(proc.pid).children(recursive=True)) < 2:
                assert time.monotonic() < deadline, family  # master and worker(s)
                await asyncio.sleep(0.05)
            left = list(tmp_path.glob(f"{native.DIR_PREFIX}{proc.pid}-*"))
            assert (
                len(left) == 1 and (left[0] / f"{native.TRANSPORTS[transport][0]}.conf").is_file()
            )
            proc.kill()
            await proc.wait()
            assert not running(family, timeout=5)
            assert left[0].exists()
            env["IPCLAB_PORT"] = str(free_port())
            proc = await start_adapter(env, tmp_path / "b.log")
            await wait_port(int(env["IPCLAB_PORT"]), proc)
            assert not left[0].exists()
            proc.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(proc.wait(), 10) == 0
            assert not list(tmp_path.glob(f"{native.DIR_PREFIX}*"))
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()

    run(main)


# --------------------------------------------------------------------------- no binaries


def env_of(role: str, transport: str = "rest", **addrs: str) -> dict[str, str]:
    return adapter_env(role, transport, 8002, addrs) | {"PATH": os.environ.get("PATH", "")}


def test_the_configs_say_what_the_thesis_ran(tmp_path: Path) -> None:
    egress = native.plan_from_env(
        env_of("egress", auth_ingress="auth:8002", flight_ingress="10.0.0.3:8002")
    )
    assert [(s, h.host, h.port) for s, h in egress.routes] == [
        ("auth", "auth", 8002),
        ("flight", "10.0.0.3", 8002),
    ]
    nginx = native.nginx_config(egress, tmp_path)
    for line in (
        "worker_processes 1;",
        "daemon off;",
        "access_log off;",
        "proxy_http_version 1.1;",
        'proxy_set_header Connection "";',
        "keepalive 128;",
        "location /auth/ { proxy_pass http://svc_auth; }",
        "server 10.0.0.3:8002;",
        "listen 127.0.0.1:8002;",
        f"pid {tmp_path}/nginx.pid;",
    ):
        assert line in nginx, line
    h2 = native.plan_from_env(env_of("egress", "h2c", auth_ingress="a:1", flight_ingress="b:2"))
    conf = native.nghttpx_config(h2, tmp_path).splitlines()
    for line in (
        "frontend=127.0.0.1,8002;no-tls",
        "backend=a,1;/auth/;proto=h2",
        "backend=b,2;/flight/;proto=h2",
        f"backend=unix:{tmp_path}/not-found.sock;/;proto=http/1.1",
        "workers=1",
        "no-via=yes",
        "no-add-x-forwarded-proto=yes",
    ):
        assert line in conf, line
    assert not [line for line in conf if "accesslog" in line or "x-forwarded-for" in line]
    ingress = native.plan_from_env(env_of("flight-ingress", "h2c", flight="127.0.0.1:8000"))
    assert "backend=127.0.0.1,8000;/;proto=http/1.1" in native.nghttpx_config(ingress, tmp_path)


def test_bad_environments_and_missing_binaries_say_what_to_do() -> None:
    with pytest.raises(native.NativeAdapterError, match="native: rest, h2c, coap"):
        native.plan_from_env(env_of("egress", "quic", auth_ingress="a:1", flight_ingress="b:1"))
    coap = native.plan_from_env(env_of("auth-ingress", "coap", auth="a:1"))
    with pytest.MonkeyPatch.context() as mp:  # the Californium adapters' jars not built
        mp.delenv("IPCLAB_CALIFORNIUM_CLASSPATH", raising=False)
        with pytest.raises(native.NativeAdapterError, match="ipclab.javabuild"):
            native.command(coap, "java", Path("/nonexistent"))
    with pytest.raises(native.NativeAdapterError, match="no adapter role"):
        native.plan_from_env(env_of("booking-ingress", booking="a:1"))
    with pytest.raises(native.NativeAdapterError, match="IPCLAB_ADDR_FLIGHT_INGRESS"):
        native.plan_from_env(env_of("egress", auth_ingress="a:1"))
    for transport, package in (
        ("rest", "nginx"), ("h2c", "nghttp2-proxy"), ("coap", "openjdk-17-jre-headless")
    ):  # fmt: skip
        plan = native.plan_from_env(env_of("auth-ingress", transport, auth="a:1"))
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("PATH", "/nonexistent")
            with pytest.raises(native.NativeAdapterError, match=f"apt-get install {package}"):
                native.binary(plan)


# --------------------------------------------------------------------------- issue 28


def _workers(proc: asyncio.subprocess.Process, program: str) -> list[psutil.Process]:
    """The proxy's worker processes: its master's children (nginx: ``nginx: worker
    process``; nghttpx: the worker process)."""
    masters = [p for p in psutil.Process(proc.pid).children() if p.name() == program]
    return [w for m in masters for w in m.children()]


def _uids(workers: list[psutil.Process]) -> set[int]:
    """Every uid (real, effective, saved) of the live ``workers``."""
    out: set[int] = set()
    for w in workers:
        with contextlib.suppress(psutil.NoSuchProcess):
            out.update(w.uids())
    return out


@pytest.mark.parametrize("transport", PARAMS)
def test_the_proxy_workers_uid_is_not_0(transport: str, tmp_path: Path) -> None:
    """A root harness (as here in CI) runs the proxies' workers as ``nobody``; any other
    user runs them as itself: never as uid 0. Requests still pass (a worker served them)."""
    program = native.TRANSPORTS[transport][0]

    async def main() -> None:
        async with chain(transport, tmp_path) as c, session() as http:
            async with http.post(f"{c.url}/auth/x", data=b"y" * 100_000) as r:
                assert r.status == 200 and (await r.json())["body"] == "y" * 100_000
            for role, proc in c.procs.items():
                # a worker forked a moment ago is still root until it drops its privileges
                # (seen once: flight's nghttpx worker read uid 0): wait for it, 5 s at most
                deadline = time.monotonic() + 5
                while not (workers := _workers(proc, program)) or 0 in _uids(workers):
                    if time.monotonic() > deadline:
                        break
                    await asyncio.sleep(0.05)
                assert workers, f"{role}: no worker process"
                uids = _uids(workers)
                assert 0 not in uids, (role, uids)
                if os.geteuid() == 0:
                    assert uids == {native.pwd.getpwnam(native.UNPRIVILEGED_USER).pw_uid}

    run(main)


@pytest.mark.parametrize("transport", [p for p in PARAMS if p.id == "rest"])
def test_nginx_refuses_a_body_over_the_python_relays_limit_and_drops_underscored_headers(
    transport: str, tmp_path: Path
) -> None:
    from ipclab_services.limits import MAX_BODY

    async def main() -> None:
        async with chain(transport, tmp_path) as c, session() as http:
            async with http.post(f"{c.url}/auth/x", data=b"z" * (MAX_BODY + 1)) as r:
                assert r.status == 413
            async with http.post(f"{c.url}/auth/x", data=b"z" * 1000) as r:
                assert r.status == 200  # the connection and the adapter serve on
            async with http.get(f"{c.url}/auth/x", headers={"X_Smuggled": "1", "X-Ok": "1"}) as r:
                headers = (await r.json())["headers"]
            assert "x-ok" in headers and "x_smuggled" not in headers

    run(main)


def test_the_configs_have_the_limits_and_no_underscores(tmp_path: Path) -> None:
    from ipclab_services.limits import HEADER_TIMEOUT_S, MAX_BODY

    plan = native.plan_from_env(env_of("auth-ingress", auth="127.0.0.1:9"))
    nginx = native.nginx_config(plan, tmp_path)
    assert f"client_max_body_size {MAX_BODY};" in nginx
    assert f"client_header_timeout {round(HEADER_TIMEOUT_S * 1000)}ms;" in nginx
    assert "underscores_in_headers" not in nginx and "client_max_body_size 0" not in nginx
    user = native.UNPRIVILEGED_USER
    assert (f"user {user} " in nginx) == (os.geteuid() == 0)
    assert "user root" not in nginx
    h2 = native.plan_from_env(env_of("auth-ingress", "h2c", auth="127.0.0.1:9"))
    assert (f"user={user}" in native.nghttpx_config(h2, tmp_path)) == (os.geteuid() == 0)
