"""HTTP/1.1 with JSON answers (uvicorn + httptools): the front every shop stack uses.

The request line, query and (for methods other than GET and HEAD) a body of at most
``MAX_BODY`` bytes reach the domain's handler as a :class:`~ipclab_services.fronts.Request`;
its ``(status, body)`` goes back as ``application/json`` (a ``fronts.Reply`` as its own
bytes, content type and headers), with the gateway's own time
(handler and encoding) in a ``Server-Timing: app;dur=<ms>`` header, so server time is
measured apart from what the client sees.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any
from urllib.parse import parse_qsl

import orjson
from ipclab_services.asgi import Receive, Scope, Send, read_body, respond, serve_http, target
from ipclab_services.domains import GatewaySettings
from ipclab_services.fronts import Handler, Reply, Request
from ipclab_services.limits import MAX_BODY

Header = tuple[bytes, bytes]


async def _send_reply(send: Send, status: int, reply: Reply, took: list[Header]) -> None:
    headers = [
        *([(b"content-type", reply.content_type.encode("latin-1"))] if reply.content_type else []),
        (b"content-length", str(len(reply.body)).encode()),
        *took,
        *((k.encode("latin-1"), v.encode("latin-1")) for k, v in reply.headers),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": reply.body})


def asgi_app(handler: Handler, timing: bool = True) -> Any:
    """``handler`` as an ASGI app; ``timing``: its time in a ``Server-Timing`` header."""

    def took(t0: float) -> list[Header]:
        if not timing:
            return []
        return [(b"server-timing", f"app;dur={(time.perf_counter() - t0) * 1000:.3f}".encode())]

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = b""
        if scope["method"] not in ("GET", "HEAD"):
            read = await read_body(receive, MAX_BODY)
            if read is None:
                await respond(send, 413, {"error": "too_large", "message": "body too large"})
                return
            body = read
        request = Request(
            method=scope["method"],
            path=[p for p in scope["path"].split("/") if p],
            query=dict(parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True)),
            body=body,
            headers={k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]},
            target=target(scope),
        )
        t0 = time.perf_counter()
        status, answer = await handler(request)
        if isinstance(answer, Reply):
            await _send_reply(send, status, answer, took(t0))
            return
        payload = orjson.dumps(answer)  # encoding is the server's work too
        await respond(send, status, payload, took(t0))

    return app


def make_handler(
    domain: Any, clients: Any, services: tuple[str, ...], settings: GatewaySettings
) -> Handler:
    """The domain's own answers (its ``gateway_handler``), served as they are."""
    handler: Handler = domain.gateway_handler(clients, services, settings)
    return handler


async def serve(
    handler: Handler,
    host: str,
    port: int,
    ready: asyncio.Event | None = None,
    timing: bool = True,
) -> None:
    await serve_http(asgi_app(handler, timing), host, port, ready)
