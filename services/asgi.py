"""A minimal JSON-over-HTTP layer on raw ASGI, served by uvicorn with httptools.

Both the gateway (in every style) and the REST services use it, so the client-facing HTTP
path is the same code everywhere. No framework: routing is a path split, bodies are orjson.

uvicorn has a keep-alive timeout but neither a header timeout nor a head size limit: a
client that opens a connection and sends half a request kept it for ever. The server runs
:class:`GuardedHttpTools`, uvicorn's httptools protocol with the limits of
``ipclab_services.limits`` (the Go servers' values): the head within ``HEADER_TIMEOUT_S``
and ``MAX_HEADER_BYTES`` (431 beyond), the whole request within ``READ_TIMEOUT_S``, an idle
keep-alive connection closed after ``IDLE_TIMEOUT_S``. Over TLS the handshake gets
``tls.HANDSHAKE_TIMEOUT_S`` first (:class:`TlsServer`; uvicorn leaves asyncio's 60 s).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl

import orjson
import uvicorn
from ipclab_services import tls
from ipclab_services.limits import (
    HEADER_TIMEOUT_S,
    IDLE_TIMEOUT_S,
    MAX_HEADER_BYTES,
    READ_TIMEOUT_S,
)
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

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
    """A request's body, or None when it is longer than ``limit`` bytes or the client went
    away before sending all of it (the answer then goes nowhere)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
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


_TOO_LARGE = b'{"error":"header_too_large","message":"request head too large"}'
_431 = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\n"
    b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(_TOO_LARGE), _TOO_LARGE)
)


class GuardedHttpTools(HttpToolsProtocol):
    """uvicorn's httptools protocol with a header timeout, a whole-request timeout and a
    head size limit (``ipclab_services.limits``), as Go's ``http.Server`` has them.

    A deadline runs from the connection's opening, and again from the first byte of each
    request, to the end of the request's head (``HEADER_TIMEOUT_S``), then to the end of its
    body (``READ_TIMEOUT_S`` from the first byte); past it the connection is closed without
    an answer (what Go does). Between requests uvicorn's keep-alive timeout applies. The
    bytes of a head are counted as they arrive, before httptools buffers them: past
    ``MAX_HEADER_BYTES`` the client gets 431 and the connection is closed.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._due: float | None = None  # loop time the current deadline ends, if one runs
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self._began = 0.0  # loop time the current head's deadline counts from
        self._head_left: int | None = MAX_HEADER_BYTES  # None: not inside a head
        self._heads = 0  # request heads read whole on this connection

    def _arm(self, due: float) -> None:
        """The deadline ends at loop time ``due``. One timer per connection, moved only
        when a deadline comes earlier than it: most deadlines cost no timer."""
        self._due = due
        if self._timer is not None and self._timer_at <= self._due:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = self._due
        self._timer = self.loop.call_at(self._due, self._expired)

    def _disarm(self) -> None:
        self._due = None

    def _expired(self) -> None:
        self._timer = None
        if self._due is None or self.transport.is_closing():
            return
        if self.loop.time() < self._due:  # the deadline moved on meanwhile
            self._timer_at = self._due
            self._timer = self.loop.call_at(self._due, self._expired)
            return
        self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._began = self.loop.time()  # the first head counts from the connection's start
        self._arm(self._began + HEADER_TIMEOUT_S)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        left = self._head_left
        if left is None or len(data) <= left:
            if left is not None:
                self._head_left = left - len(data)
            super().data_received(data)
            return
        heads = self._heads
        if left > 0:
            super().data_received(data[:left])  # may end the head (and begin the next)
        if self._heads == heads:  # the head is not over after MAX_HEADER_BYTES
            self._refuse_head()
        elif not self.transport.is_closing():
            self.data_received(data[left:])

    def _refuse_head(self) -> None:
        self._disarm()
        if self.transport.is_closing():
            return
        if self.cycle is None or self.cycle.response_complete:
            self.transport.write(_431)
        self.transport.close()

    def on_message_begin(self) -> None:
        # the head's bytes count from where the last request ended (or the connection
        # began), never again from here: resetting here forgot the bytes of the chunk that
        # began the head, so a 64 KiB head read in two chunks passed (a flaky 200, not 431)
        super().on_message_begin()
        if self._heads:  # a later request: its head counts from its first byte
            self._began = self.loop.time()
            self._arm(self._began + HEADER_TIMEOUT_S)

    def on_headers_complete(self) -> None:
        self._head_left = None
        self._heads += 1
        self._arm(self._began + READ_TIMEOUT_S)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._disarm()
        self._head_left = MAX_HEADER_BYTES  # the next request's head counts from here
        super().on_message_complete()


class TlsServer(uvicorn.Server):
    """uvicorn's server whose TLS listener bounds the handshake (``tls.HANDSHAKE_TIMEOUT_S``).

    uvicorn has no setting for it and leaves asyncio's default (60 s), ahead of the head
    timeout, which runs only once the handshake is done. Its ``startup`` for a host and a
    port, as uvicorn's own (no lifespan here; the protocol made as uvicorn makes it), with
    ``ssl_handshake_timeout`` passed to ``create_server``."""

    async def startup(self, sockets: list[Any] | None = None) -> None:
        config = self.config
        if sockets is not None or config.fd is not None or config.uds is not None:
            raise ValueError("TlsServer listens on a host and a port only")
        await self.lifespan.startup()

        def protocol(_loop: asyncio.AbstractEventLoop | None = None) -> asyncio.Protocol:
            return config.http_protocol_class(  # type: ignore[call-arg]
                config=config, server_state=self.server_state, app_state=self.lifespan.state,
                _loop=_loop,
            )  # fmt: skip

        server = await asyncio.get_running_loop().create_server(
            protocol, host=config.host, port=config.port, ssl=config.ssl,
            backlog=config.backlog, ssl_handshake_timeout=tls.HANDSHAKE_TIMEOUT_S,
        )  # fmt: skip
        self.servers = [server]
        self.started = True


async def serve_http(
    app: Callable[[Scope, Receive, Send], Awaitable[None]],
    host: str,
    port: int,
    ready: asyncio.Event | None = None,
) -> None:
    """Serve until cancelled or until SIGINT/SIGTERM (uvicorn's own handling); over TLS
    (HTTPS, TLS 1.3 at least, the handshake within ``tls.HANDSHAKE_TIMEOUT_S``) when the
    role's environment gives the stack's TLS files."""
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=GuardedHttpTools,
        lifespan="off",
        log_level="warning",
        access_log=False,
        backlog=4096,
        timeout_keep_alive=int(IDLE_TIMEOUT_S),
    )
    server: uvicorn.Server
    if (files := tls.files()) is not None:
        config.load()
        config.ssl = tls.server_context(files, alpn=("http/1.1",))  # uvicorn serves HTTP/1.1
        server = TlsServer(config)
    else:
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
