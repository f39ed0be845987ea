"""REST: HTTP/1.1 + JSON. Server: uvicorn + httptools (raw ASGI). Client: aiohttp.

``GET http://host:port/{op}?{field}={value}`` (https with ``--tls``) returns the operation's
JSON document, or an error document ``{"error": code, "message": ...}`` with the matching
HTTP status. The client
keeps one aiohttp session with keep-alive connection pools for all services. aiohttp was
chosen over httpx by ``bench/transports.py`` (see docs/transports.md).

The relay level (``serve_relay``/``connect_relay``) carries whole HTTP/1.1 messages:
method, target, end-to-end headers and body as they are; its server is aiohttp's low-level
one (one write per answer, see ``serve_relay``), its client the same aiohttp client. The
client keeps no cookie jar (a proxy that stored cookies would log every user in as the
last one: the thesis's Californium bug) and adds no headers of its own but Host.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import aiohttp
import orjson
from aiohttp import web
from ipclab_services import tls
from ipclab_services.asgi import json_app, serve_http
from ipclab_services.errors import ServiceError, Timeout, Unavailable, from_code
from ipclab_services.limits import IDLE_TIMEOUT_S, MAX_ANSWER, MAX_BODY
from ipclab_services.transports.base import (
    ConnectConfig,
    HttpRequest,
    HttpResponse,
    RelayHandler,
    ServeConfig,
    ServiceDef,
    end_to_end,
)
from multidict import CIMultiDict

POOL_PER_HOST = 100  # keep-alive connections per service
#: An idle pooled connection is closed after this (aiohttp's default, stated: the Go
#: gateway's too): well before the servers close one (``limits.IDLE_TIMEOUT_S``), so a
#: client never sends on a connection its server is closing. TCP_NODELAY is on for every
#: connection (uvloop's and aiohttp's default); ``ipclab.socket_settings`` says the rest.
POOL_IDLE_S = 15.0


def _connector(**tls: Any) -> aiohttp.TCPConnector:
    """A keep-alive pool: up to ``POOL_PER_HOST`` connections per peer, no total limit."""
    return aiohttp.TCPConnector(
        limit=0, limit_per_host=POOL_PER_HOST, keepalive_timeout=POOL_IDLE_S, **tls
    )


async def serve(service: ServiceDef, config: ServeConfig) -> None:
    async def route(parts: list[str], query: dict[str, str]) -> tuple[int, Any]:
        if len(parts) != 1 or parts[0] not in service.ops:
            return 404, {"error": "no_such_operation", "message": "/".join(parts)}
        try:
            return 200, await service.invoke(parts[0], query)
        except ServiceError as e:
            return e.http_status, {"error": e.code, "message": str(e)}

    await serve_http(json_app(route), config.host, config.port, config.ready)


async def read_answer(resp: aiohttp.ClientResponse, limit: int = MAX_ANSWER) -> bytes | None:
    """An answer's body, or None when it is longer than ``limit`` bytes (not read further)."""
    if resp.content_length is not None:
        return None if resp.content_length > limit else await resp.read()
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.content.iter_chunked(1 << 16):
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


class RestClients:
    """One aiohttp session, a keep-alive pool per service; over TLS when the stack has it
    (HTTPS: a handshake per pooled connection, session tickets resumed by aiohttp's SSL
    context across the pool's connections to one service)."""

    def __init__(self, addresses: dict[str, str]):
        files = tls.client_files()
        scheme = "https" if files is not None else "http"
        self._base = {name: f"{scheme}://{addr}" for name, addr in addresses.items()}
        ssl_context = tls.client_context(files, alpn=("http/1.1",)) if files else True
        self._session = aiohttp.ClientSession(
            connector=_connector(ssl=ssl_context),
            json_serialize=lambda o: orjson.dumps(o).decode(),
        )

    async def call(
        self, service: str, op: str, request: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        url = f"{self._base[service]}/{op}"
        params = {k: str(v) for k, v in request.items()}
        try:
            async with self._session.get(
                url, params=params, timeout=aiohttp.ClientTimeout(total=timeout)
            ) as resp:
                body = await read_answer(resp)
        except TimeoutError:
            raise Timeout(f"{service} did not answer within {timeout}s") from None
        except aiohttp.ClientError as e:
            raise Unavailable(f"{service}: {e}") from None
        if body is None:
            raise ServiceError(f"{service}: an answer longer than {MAX_ANSWER} bytes")
        try:
            doc = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise ServiceError(f"{service}: HTTP {resp.status} with a non-JSON body") from None
        if resp.status != 200:
            raise from_code(doc.get("error", "internal"), doc.get("message", ""))
        return doc

    def stats(self) -> dict[str, Any]:
        return {}

    async def close(self) -> None:
        await self._session.close()
        await asyncio.sleep(0)


async def connect(services: Sequence[ServiceDef], config: ConnectConfig) -> RestClients:
    return RestClients({s.name: config.addresses[s.name] for s in services})


# --- relay: whole HTTP/1.1 messages ------------------------------------------------------

# MAX_BODY (limits.py): a relayed request body larger than this is refused (413)


async def serve_relay(handler: RelayHandler, config: ServeConfig) -> None:
    """Serve whole HTTP/1.1 messages with ``handler`` until cancelled, on aiohttp's
    low-level server: it writes an answer's headers and body in one write, as nginx does,
    where uvicorn writes them apart (one more TCP segment per answer on the measured hop).
    An answer without Date or Server gets aiohttp's own. An idle connection is closed after
    ``IDLE_TIMEOUT_S``, as by every server of the suite (aiohttp's own default is 3630 s);
    SO_KEEPALIVE is on, with the kernel's timing (aiohttp's default, stated)."""

    async def handle(request: web.BaseRequest) -> web.StreamResponse:
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            answer = HttpResponse(413, (("content-type", "text/plain"),), b"body too large")
        else:
            headers = end_to_end(
                (k.decode("latin-1"), v.decode("latin-1")) for k, v in request.raw_headers
            )
            answer = await handler(HttpRequest(request.method, request.raw_path, headers, body))
        return web.Response(status=answer.status, headers=CIMultiDict(answer.headers),
                            body=answer.body)  # fmt: skip

    loop = asyncio.get_running_loop()

    def request(*parts: Any) -> web.BaseRequest:  # web.Server's own keywords go to the protocol
        return web.BaseRequest(*parts, loop, client_max_size=MAX_BODY)

    server = web.Server(
        handle, request_factory=request, keepalive_timeout=IDLE_TIMEOUT_S, tcp_keepalive=True
    )
    runner = web.ServerRunner(server, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, config.host, config.port, backlog=4096)
        await site.start()
        config.ready.set()
        await asyncio.Future()  # until cancelled
    finally:
        await runner.cleanup()


class RestRelay:
    """One keep-alive pool to one peer; no cookie jar, no automatic headers but Host."""

    def __init__(self, address: str) -> None:
        self._base = f"http://{address}"
        self._session = aiohttp.ClientSession(
            connector=_connector(),
            cookie_jar=aiohttp.DummyCookieJar(),
            skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
            auto_decompress=False,
        )

    async def request(self, message: HttpRequest, timeout: float) -> HttpResponse:
        try:
            async with self._session.request(
                message.method,
                self._base + message.target,
                headers=list(message.headers),
                data=message.body or None,
                timeout=aiohttp.ClientTimeout(total=timeout),
                allow_redirects=False,
            ) as resp:
                body = await resp.read()
                headers = end_to_end(
                    (k.decode("latin-1"), v.decode("latin-1")) for k, v in resp.raw_headers
                )
        except TimeoutError:
            raise Timeout(f"{self._base} did not answer within {timeout}s") from None
        except aiohttp.ClientError as e:
            raise Unavailable(f"{self._base}: {e}") from None
        return HttpResponse(resp.status, headers, body)

    async def close(self) -> None:
        await self._session.close()
        await asyncio.sleep(0)


async def connect_relay(address: str) -> RestRelay:
    return RestRelay(address)
