"""A minimal JSON-over-HTTP layer on raw ASGI, served by uvicorn with httptools.

Both the gateway (in every style) and the REST services use it, so the client-facing HTTP
path is the same code everywhere. No framework: routing is a path split, bodies are orjson.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl

import orjson
import uvicorn

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
Route = Callable[[list[str], dict[str, str]], Awaitable[tuple[int, Any]]]

_JSON = [(b"content-type", b"application/json")]


async def respond(
    send: Send, status: int, body: Any, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    payload = body if isinstance(body, bytes) else orjson.dumps(body)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                *_JSON,
                (b"content-length", str(len(payload)).encode()),
                *(headers or ()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


def target(scope: Scope) -> str:
    """The request's path and query as sent (what a proxy passes on)."""
    query = scope["query_string"].decode("latin-1")
    return scope["raw_path"].decode("latin-1") + (f"?{query}" if query else "")


async def read_body(receive: Receive, limit: int) -> bytes | None:
    """A request's body, or None when it is longer than ``limit`` bytes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


def json_app(route: Route) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """An ASGI app answering GET requests: ``route(path_parts, query) -> (status, body)``."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope["method"] != "GET":
            await respond(send, 405, {"error": "method_not_allowed"})
            return
        parts = [p for p in scope["path"].split("/") if p]
        query = dict(parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True))
        status, body = await route(parts, query)
        await respond(send, status, body)

    return app


async def serve_http(
    app: Callable[[Scope, Receive, Send], Awaitable[None]],
    host: str,
    port: int,
    ready: asyncio.Event | None = None,
) -> None:
    """Serve until cancelled or until SIGINT/SIGTERM (uvicorn's own handling)."""
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http="httptools",
        lifespan="off",
        log_level="warning",
        access_log=False,
        backlog=4096,
        timeout_keep_alive=75,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        while not server.started and not task.done():
            await asyncio.sleep(0.01)
        if ready is not None:
            ready.set()
        await task
    finally:
        if not task.done():
            server.should_exit = True
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait_for(task, 5)
