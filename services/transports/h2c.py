"""h2c: HTTP/2 with prior knowledge over cleartext TCP, one multiplexed connection per peer
(with ``--tls``: HTTP/2 over TLS, ALPN "h2", the same code above the transport).

Both sides are asyncio protocols of this module on the ``h2`` state machine (chosen by
``bench/transports.py`` over hypercorn's server and httpx's client, see docs/transports.md).
The request is REST's: ``GET /{op}?{field}={value}`` answers the operation's JSON document,
byte-identical to REST's, or ``{"error": code, "message": ...}`` with the matching status
(``wire.py``).

- The client opens one connection per service on first use and sends every call to that
  service on it as a stream of its own; a lost connection fails the calls on it
  (``Unavailable``) and the next call opens a new one. Calls beyond the server's
  ``MAX_CONCURRENT_STREAMS`` wait for a stream to close, within their deadline.
- A call past its deadline resets its stream (RST_STREAM CANCEL) and raises ``Timeout``.
- After a GOAWAY (a server may end a connection after so many requests, as hypercorn
  does after 1,000), the calls the server took still get their answers; those it did not
  take (stream ids above its last, or REFUSED_STREAM) are sent again on a new connection,
  as are all calls left unanswered by a GOAWAY with an error or by the connection's end
  after a GOAWAY (calls are GETs, which may be repeated); at most ``ATTEMPTS`` sends per
  call, within its deadline. A connection lost without GOAWAY fails its calls.
- Flow control: the client opens its connection window and per-stream windows wide and
  returns what it reads at once; the server sends what the window allows and the rest
  when WINDOW_UPDATE arrives.
- Writes are coalesced: frames produced in one turn of the event loop leave in one write.

The relay level (``serve_relay``/``connect_relay``, the protocol adapters) carries whole
HTTP messages on the same connections: any method, the end-to-end headers (HPACK-encoded
by ``h2``) and a body both ways. Only GET and HEAD are sent again after a GOAWAY that may
have cut a request the server took; a stream the server did not take is sent again
whatever its method (RFC 9113, 8.7).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings
from h2.errors import ErrorCodes
from ipclab_services import tls, wire
from ipclab_services.errors import Timeout, Unavailable
from ipclab_services.limits import MAX_ANSWER, MAX_BODY
from ipclab_services.transports.base import (
    ConnectConfig,
    Headers,
    HttpRequest,
    HttpResponse,
    PeerRelay,
    RelayHandler,
    ServeConfig,
    ServiceDef,
    end_to_end,
    smuggling,
)

_log = logging.getLogger(__name__)
MAX_STREAMS = 1000  # concurrent streams a server accepts on one connection
WINDOW = 2**24  # the client's receive window, per stream and for the connection
ATTEMPTS = 3  # sends of one call when connections end under it (GOAWAY)

_FAST = {
    "header_encoding": None,  # header names and values stay bytes
    "validate_outbound_headers": False,  # the client checks what it sends (smuggling())
    "normalize_outbound_headers": False,
    # h2's own check of what arrives costs ~20 us per header block (pure Python) and ends
    # the whole connection; the server checks each request itself instead (_refused: the
    # fields that would smuggle a request past the HTTP/1.1 hop), refusing that stream only
    "validate_inbound_headers": False,
}
_JSON = (("content-type", "application/json"),)
_SAFE = frozenset({b"GET", b"HEAD"})  # may be sent again after an unclear connection end


class _Peer(asyncio.Protocol):
    """What both ends share: an H2Connection whose output is written once per loop turn."""

    def __init__(self, client_side: bool) -> None:
        self.h2 = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=client_side, **_FAST)
        )
        self.transport: asyncio.Transport | None = None
        self._flush_soon = False
        self.unsent: dict[int, memoryview] = {}  # stream -> body the window did not allow yet

    def flush(self) -> None:
        self._flush_soon = False
        data = self.h2.data_to_send()
        if data and self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def flush_soon(self) -> None:
        if not self._flush_soon:
            self._flush_soon = True
            asyncio.get_running_loop().call_soon(self.flush)

    def goodbye(self) -> None:
        """End the connection: GOAWAY, then close."""
        if self.transport is not None:
            with contextlib.suppress(h2.exceptions.H2Error):
                self.h2.close_connection()
            self.flush()
            self.transport.close()

    def _send_body(self, stream: int) -> None:
        body = self.unsent.get(stream)
        if body is None:
            return
        try:
            while True:
                n = min(
                    len(body),
                    self.h2.local_flow_control_window(stream),
                    self.h2.max_outbound_frame_size,
                )
                if n == len(body):
                    self.h2.send_data(stream, body.tobytes(), end_stream=True)
                    del self.unsent[stream]
                    return
                if n <= 0:
                    self.unsent[stream] = body  # the rest when the window opens
                    return
                self.h2.send_data(stream, body[:n].tobytes())
                body = body[n:]
        except h2.exceptions.H2Error:
            self.unsent.pop(stream, None)

    def receive(self, data: bytes) -> list[h2.events.Event]:
        try:
            return self.h2.receive_data(data)
        except h2.exceptions.ProtocolError:
            self.flush()  # h2 has queued GOAWAY
            if self.transport is not None:
                self.transport.close()
            self.broken("protocol error from the peer")
            return []

    def broken(self, why: str) -> None:
        """The connection can carry nothing more (the client fails what it had in flight)."""


# --- server -------------------------------------------------------------------------------

_PSEUDO = frozenset({":method", ":scheme", ":authority", ":path"})


@dataclass
class _Incoming:
    """A request being received: its header fields and its body so far (what passes
    ``MAX_BODY`` is counted, not kept)."""

    headers: list[tuple[bytes, bytes]]
    chunks: list[bytes] = field(default_factory=list)
    size: int = 0

    def add(self, data: bytes) -> None:
        self.size += len(data)
        if self.size <= MAX_BODY:
            self.chunks.append(data)


def _refused(fields: list[tuple[str, str]], body: bytes) -> str | None:
    """Why a request must not reach the handler (and its HTTP/1.1 re-emission), or None:
    pseudo-header fields other than a request's, repeated, or with CR, LF, NUL or a space,
    and what :func:`~ipclab_services.transports.base.smuggling` refuses."""
    pseudo = [(k, v) for k, v in fields if k.startswith(":")]
    names = [k for k, _ in pseudo]
    if not set(names) <= _PSEUDO or len(set(names)) != len(names):
        return "pseudo-header fields"
    if any(c in v for _, v in pseudo for c in "\r\n\0 "):
        return "a pseudo-header value"
    return smuggling(tuple((k, v) for k, v in fields if not k.startswith(":")), body)


class _ServerConnection(_Peer):
    def __init__(self, handler: RelayHandler) -> None:
        super().__init__(client_side=False)
        self.handler = handler
        self.requests: dict[int, _Incoming] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.gone = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.h2.local_settings = h2.settings.Settings(
            client=False,
            initial_values={h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: MAX_STREAMS},
        )
        self.h2.initiate_connection()
        self.flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self.gone = True
        for task in self.tasks:
            task.cancel()

    def close(self) -> None:
        if not self.gone:
            self.goodbye()

    def data_received(self, data: bytes) -> None:
        for event in self.receive(data):
            if isinstance(event, h2.events.RequestReceived):
                self.requests[event.stream_id] = _Incoming(list(event.headers))
            elif isinstance(event, h2.events.StreamEnded):
                self._dispatch(event.stream_id)
            elif isinstance(event, h2.events.DataReceived):
                self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                request = self.requests.get(event.stream_id)
                if request is not None:
                    request.add(event.data)
            elif isinstance(event, h2.events.WindowUpdated):
                for stream in [event.stream_id] if event.stream_id else list(self.unsent):
                    self._send_body(stream)
            elif isinstance(event, h2.events.StreamReset):
                self.requests.pop(event.stream_id, None)
                self.unsent.pop(event.stream_id, None)
            elif isinstance(event, h2.events.ConnectionTerminated):
                self.flush()
                if self.transport is not None:
                    self.transport.close()
                return
        self.flush()

    def _dispatch(self, stream: int) -> None:
        request = self.requests.pop(stream, None)
        if request is None:
            return
        task = asyncio.get_running_loop().create_task(self._answer(stream, request))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _answer(self, stream: int, request: _Incoming) -> None:
        fields = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers]
        body = b"".join(request.chunks)
        refused = None if request.size > MAX_BODY else _refused(fields, body)
        if request.size > MAX_BODY:
            answer = HttpResponse(413, (("content-type", "text/plain"),), b"body too large")
        elif refused is not None:
            answer = HttpResponse(400, (("content-type", "text/plain"),), refused.encode())
        else:
            pseudo = {k: v for k, v in fields if k.startswith(":")}
            headers = end_to_end((k, v) for k, v in fields if not k.startswith(":"))
            method, target = pseudo.get(":method", "GET"), pseudo.get(":path", "/")
            try:
                answer = await self.handler(HttpRequest(method, target, headers, body))
            except Exception:  # noqa: BLE001 - a bug answers 500, the stream must not hang
                _log.exception("h2c: the handler failed on %s", target)
                answer = HttpResponse(500, (("content-type", "text/plain"),), b"internal error")
        try:
            self.h2.send_headers(
                stream,
                [
                    (b":status", b"%d" % answer.status),
                    *((k.encode("latin-1"), v.encode("latin-1")) for k, v in answer.headers),
                    (b"content-length", b"%d" % len(answer.body)),
                ],
                end_stream=not answer.body,
            )
        except h2.exceptions.H2Error:  # reset by the client or connection gone meanwhile
            return
        if answer.body:
            self.unsent[stream] = memoryview(answer.body)
            self._send_body(stream)
        self.flush_soon()


async def serve_relay(handler: RelayHandler, config: ServeConfig) -> None:
    """Serve whole HTTP/2 messages with ``handler`` until cancelled."""
    connections: list[_ServerConnection] = []

    def accept() -> _ServerConnection:
        connections[:] = [c for c in connections if not c.gone]
        connections.append(_ServerConnection(handler))
        return connections[-1]

    files = tls.files()  # --tls: HTTP/2 over TLS, "h2" by ALPN (h2c's own name is cleartext)
    context = tls.server_context(files, alpn=("h2",)) if files is not None else None
    handshake = tls.HANDSHAKE_TIMEOUT_S if context is not None else None  # asyncio's: 60 s
    server = await asyncio.get_running_loop().create_server(
        accept, config.host, config.port, backlog=4096, ssl=context,
        ssl_handshake_timeout=handshake,
    )  # fmt: skip
    config.ready.set()
    try:
        async with server:
            await server.serve_forever()
    finally:  # the server's end is the end of its connections too (GOAWAY, then close)
        for connection in connections:
            connection.close()


async def serve(service: ServiceDef, config: ServeConfig) -> None:
    async def operation(request: HttpRequest) -> HttpResponse:
        if request.method != "GET":
            return HttpResponse(405, _JSON, b'{"error":"method_not_allowed"}')
        op, _, query = request.target.partition("?")
        status, body = await wire.answer(
            service, op.strip("/"), dict(parse_qsl(query, keep_blank_values=True))
        )
        return HttpResponse(status, _JSON, body)

    await serve_relay(operation, config)


# --- client -------------------------------------------------------------------------------


class _Retry(Exception):
    """The server did not take the stream (GOAWAY, REFUSED_STREAM): safe to send again."""


@dataclass
class _Pending:
    """A request in flight: its answer's future, status, headers and body so far."""

    future: asyncio.Future[HttpResponse]
    safe: bool  # GET/HEAD: may be sent again when the connection ends unclearly
    status: int = 0
    headers: Headers = ()
    chunks: list[bytes] = field(default_factory=list)
    size: int = 0  # bytes of the answer's body so far (at most MAX_ANSWER)


class _ClientConnection(_Peer):
    def __init__(self, authority: bytes, scheme: bytes = b"http") -> None:
        super().__init__(client_side=True)
        self.authority = authority
        self.scheme = scheme  # b"https" over TLS
        self.replies: dict[int, _Pending] = {}
        self.waiting: list[asyncio.Future[None]] = []  # calls waiting for a free stream
        self.closed = False
        self.leaving = False  # the server sent GOAWAY

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.h2.local_settings = h2.settings.Settings(
            client=True,
            initial_values={
                h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: WINDOW,
                h2.settings.SettingCodes.ENABLE_PUSH: 0,
            },
        )
        self.h2.initiate_connection()
        self.h2.increment_flow_control_window(WINDOW - 65535)
        self.flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(f"connection lost: {exc!r}" if exc else "connection closed by the server")

    def _fail(self, why: str) -> None:
        """The connection is gone: its unanswered calls fail, or, if the server had said
        GOAWAY (it meant to close), the safe ones are sent again elsewhere."""
        self.closed = True
        for pending in self.replies.values():
            if not pending.future.done():
                again = self.leaving and pending.safe
                pending.future.set_exception(_Retry() if again else Unavailable(why))
        self.replies.clear()
        self.unsent.clear()
        self._wake()

    def _goaway(self, event: h2.events.ConnectionTerminated) -> None:
        """No new streams here. A graceful GOAWAY: the streams the server took still get
        their answers, the others are sent again elsewhere. Any other: every unanswered
        safe call (GET, HEAD) is sent again, the others fail."""
        self.closed = self.leaving = True
        last = event.last_stream_id if event.last_stream_id is not None else 2**31
        failed = event.error_code != ErrorCodes.NO_ERROR
        for stream in [s for s in self.replies if s > last or failed]:
            pending = self.replies.pop(stream)
            if pending.future.done():
                continue
            if stream > last or pending.safe:
                pending.future.set_exception(_Retry())
            else:
                pending.future.set_exception(Unavailable(f"GOAWAY ({event.error_code!r})"))
        if not self.replies and self.transport is not None:
            self.transport.close()
        self._wake()

    def _wake(self) -> None:
        """Let a call waiting for a free stream go on; every one once the connection is
        closed (each then goes to a new connection)."""
        while self.waiting and (self.closed or len(self.replies) < self._limit()):
            future = self.waiting.pop(0)
            if not future.done():
                future.set_result(None)
                if not self.closed:
                    return

    def broken(self, why: str) -> None:
        self._fail(why)

    def _limit(self) -> int:
        return int(self.h2.remote_settings.max_concurrent_streams)

    def data_received(self, data: bytes) -> None:
        for event in self.receive(data):
            if isinstance(event, h2.events.ResponseReceived):
                pending = self.replies.get(event.stream_id)
                if pending is not None:
                    pending.status = int(dict(event.headers)[b":status"])
                    pending.headers = end_to_end(
                        (k.decode("latin-1"), v.decode("latin-1"))
                        for k, v in event.headers
                        if not k.startswith(b":")
                    )
            elif isinstance(event, h2.events.DataReceived):
                self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                self._collect(event.stream_id, event.data)
            elif isinstance(event, h2.events.StreamEnded):
                self._done(event.stream_id, None)
            elif isinstance(event, h2.events.StreamReset):
                self._done(
                    event.stream_id,
                    f"stream reset by the server ({event.error_code!r})",
                    retry=event.error_code == ErrorCodes.REFUSED_STREAM,
                )
            elif isinstance(event, h2.events.WindowUpdated):
                for stream in [event.stream_id] if event.stream_id else list(self.unsent):
                    self._send_body(stream)
            elif isinstance(event, h2.events.ConnectionTerminated):
                self._goaway(event)
            elif isinstance(event, h2.events.RemoteSettingsChanged):
                self._wake()
        self.flush()

    def _collect(self, stream: int, data: bytes) -> None:
        """A piece of an answer's body; an answer past ``MAX_ANSWER`` bytes fails its call
        (Unavailable) and its stream is reset, so the client never holds more."""
        pending = self.replies.get(stream)
        if pending is None:
            return
        pending.size += len(data)
        if pending.size <= MAX_ANSWER:
            pending.chunks.append(data)
            return
        with contextlib.suppress(h2.exceptions.H2Error):
            self.h2.reset_stream(stream, ErrorCodes.CANCEL)
        self._done(stream, f"an answer longer than {MAX_ANSWER} bytes")

    def _done(self, stream: int, error: str | None, retry: bool = False) -> None:
        pending = self.replies.pop(stream, None)
        self.unsent.pop(stream, None)
        if pending is not None and not pending.future.done():
            if retry:
                pending.future.set_exception(_Retry())
            elif error is None:
                answer = HttpResponse(pending.status, pending.headers, b"".join(pending.chunks))
                pending.future.set_result(answer)
            else:
                pending.future.set_exception(Unavailable(error))
        if self.closed and not self.replies and self.transport is not None:
            self.transport.close()  # after a GOAWAY, once the last answer is in
        self._wake()

    async def request(self, message: HttpRequest) -> HttpResponse:
        loop = asyncio.get_running_loop()
        while len(self.replies) >= self._limit() and not self.closed:
            wait = loop.create_future()
            self.waiting.append(wait)
            try:
                await wait
            finally:
                if wait in self.waiting:
                    self.waiting.remove(wait)
        if self.closed:
            raise _Retry()
        method = message.method.encode("latin-1")
        try:
            stream = self.h2.get_next_available_stream_id()
            self.h2.send_headers(
                stream,
                [
                    (b":method", method),
                    (b":scheme", self.scheme),
                    (b":authority", self.authority),
                    (b":path", message.target.encode("latin-1")),
                    *((k.encode("latin-1"), v.encode("latin-1")) for k, v in message.headers),
                    *([(b"content-length", b"%d" % len(message.body))] if message.body else []),
                ],
                end_stream=not message.body,
            )
        except h2.exceptions.H2Error:  # the connection ended meanwhile: nothing was sent
            self.closed = True
            raise _Retry() from None
        future: asyncio.Future[HttpResponse] = loop.create_future()
        self.replies[stream] = _Pending(future, method in _SAFE)
        if message.body:
            self.unsent[stream] = memoryview(message.body)
            self._send_body(stream)
        self.flush_soon()
        try:
            return await future
        except asyncio.CancelledError:  # the caller's deadline: tell the server
            if self.replies.pop(stream, None) is not None:
                self.unsent.pop(stream, None)
                with contextlib.suppress(h2.exceptions.H2Error):
                    self.h2.reset_stream(stream, ErrorCodes.CANCEL)
                self.flush_soon()
                self._wake()
            raise

    def close(self) -> None:
        if not self.closed:
            self.goodbye()
        self.closed = True


class _Connections:
    """One connection per peer, opened on first use and again after it ended."""

    def __init__(self, addresses: dict[str, str]) -> None:
        self._addresses = addresses
        self._connections: dict[str, _ClientConnection] = {}
        self._opening: dict[str, asyncio.Task[_ClientConnection]] = {}
        self.opened = 0
        files = tls.client_files()  # --tls: one TLS handshake per connection, so per peer
        self._tls = tls.client_context(files, alpn=("h2",)) if files is not None else None

    async def _open(self, peer: str) -> _ClientConnection:
        host, port = self._addresses[peer].rsplit(":", 1)
        secure: dict[str, Any] = {"ssl": self._tls, "server_hostname": host} if self._tls else {}
        scheme = b"https" if self._tls else b"http"
        _, connection = await asyncio.get_running_loop().create_connection(
            lambda: _ClientConnection(self._addresses[peer].encode(), scheme),
            host,
            int(port),
            **secure,
        )
        transport = connection.transport
        alpn = transport.get_extra_info("ssl_object") if self._tls and transport else None
        if alpn is not None and alpn.selected_alpn_protocol() != "h2":
            connection.close()
            raise Unavailable(f"{peer}: TLS without h2 by ALPN")
        self._connections[peer] = connection
        self.opened += 1
        return connection

    async def _connection(self, peer: str) -> _ClientConnection:
        connection = self._connections.get(peer)
        if connection is not None and not connection.closed:
            return connection
        task = self._opening.get(peer)
        if task is None:  # one connection attempt at a time per peer, shared by callers
            task = self._opening[peer] = asyncio.get_running_loop().create_task(self._open(peer))
            task.add_done_callback(lambda _: self._opening.pop(peer, None))
        return await asyncio.shield(task)

    async def send(self, peer: str, message: HttpRequest, timeout: float) -> HttpResponse:
        """``message`` to ``peer``, sent again (at most ``ATTEMPTS`` times) where a
        connection's end allows it; Timeout past ``timeout``, Unavailable otherwise. A
        request whose headers the peer would refuse (``smuggling``), which would end the
        connection every other call shares, is answered 400 here and never sent."""
        refused = smuggling(message.headers, message.body)
        if refused is not None:
            return HttpResponse(
                400, (("content-type", "text/plain"),), b"refused: " + refused.encode()
            )
        try:
            async with asyncio.timeout(timeout):
                for _ in range(ATTEMPTS):
                    connection = await self._connection(peer)
                    with contextlib.suppress(_Retry):
                        return await connection.request(message)
                raise Unavailable(f"{peer}: connection ended {ATTEMPTS} times")
        except TimeoutError:
            raise Timeout(f"{peer} did not answer within {timeout}s") from None
        except OSError as e:
            raise Unavailable(f"{peer}: {e}") from None

    async def close(self) -> None:
        for task in self._opening.values():
            task.cancel()
        for connection in self._connections.values():
            connection.close()
        await asyncio.sleep(0)


class H2cClients(_Connections):
    async def call(
        self, service: str, op: str, request: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        target = f"/{op}?{urlencode(wire.query_pairs(request))}"
        answer = await self.send(service, HttpRequest("GET", target), timeout)
        return wire.outcome(service, answer.status, answer.body)

    def stats(self) -> dict[str, Any]:
        return {"connections_opened": self.opened}


async def connect(services: Sequence[ServiceDef], config: ConnectConfig) -> H2cClients:
    return H2cClients({s.name: config.addresses[s.name] for s in services})


async def connect_relay(address: str) -> PeerRelay:
    """Whole HTTP messages to one peer over one multiplexed h2c connection."""
    return PeerRelay(_Connections({address: address}), address)
