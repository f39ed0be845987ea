"""h2c: HTTP/2 with prior knowledge over cleartext TCP, one multiplexed connection per peer.

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
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings
from h2.errors import ErrorCodes
from ipclab_services import wire
from ipclab_services.errors import Timeout, Unavailable
from ipclab_services.transports.base import ConnectConfig, ServeConfig, ServiceDef

MAX_STREAMS = 1000  # concurrent streams a server accepts on one connection
WINDOW = 2**24  # the client's receive window, per stream and for the connection
ATTEMPTS = 3  # sends of one call when connections end under it (GOAWAY)

_FAST = {
    "header_encoding": None,  # header names and values stay bytes
    "validate_outbound_headers": False,
    "normalize_outbound_headers": False,
    "validate_inbound_headers": False,
}
_JSON = (b"content-type", b"application/json")


class _Peer(asyncio.Protocol):
    """What both ends share: an H2Connection whose output is written once per loop turn."""

    def __init__(self, client_side: bool) -> None:
        self.h2 = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=client_side, **_FAST)
        )
        self.transport: asyncio.Transport | None = None
        self._flush_soon = False

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

    def receive(self, data: bytes) -> list[h2.events.Event]:
        try:
            return self.h2.receive_data(data)
        except h2.exceptions.ProtocolError:
            self.flush()  # h2 has queued GOAWAY
            if self.transport is not None:
                self.transport.close()
            return []


# --- server -------------------------------------------------------------------------------


class _ServerConnection(_Peer):
    def __init__(self, service: ServiceDef) -> None:
        super().__init__(client_side=False)
        self.service = service
        self.requests: dict[int, tuple[bytes, bytes]] = {}  # stream -> (method, path)
        self.unsent: dict[int, memoryview] = {}  # stream -> body the window did not allow yet
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
                headers = dict(event.headers)
                self.requests[event.stream_id] = (headers[b":method"], headers[b":path"])
            elif isinstance(event, h2.events.StreamEnded):
                self._dispatch(event.stream_id)
            elif isinstance(event, h2.events.DataReceived):
                self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
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
        task = asyncio.get_running_loop().create_task(self._answer(stream, *request))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _answer(self, stream: int, method: bytes, path: bytes) -> None:
        if method != b"GET":
            status, body = 405, b'{"error":"method_not_allowed"}'
        else:
            op, _, query = path.decode("latin-1").partition("?")
            status, body = await wire.answer(
                self.service, op.strip("/"), dict(parse_qsl(query, keep_blank_values=True))
            )
        try:
            self.h2.send_headers(
                stream,
                [(b":status", str(status).encode()), _JSON, (b"content-length", b"%d" % len(body))],
            )
        except h2.exceptions.H2Error:  # reset by the client or connection gone meanwhile
            return
        self.unsent[stream] = memoryview(body)
        self._send_body(stream)
        self.flush_soon()

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


async def serve(service: ServiceDef, config: ServeConfig) -> None:
    connections: list[_ServerConnection] = []

    def accept() -> _ServerConnection:
        connections[:] = [c for c in connections if not c.gone]
        connections.append(_ServerConnection(service))
        return connections[-1]

    server = await asyncio.get_running_loop().create_server(
        accept, config.host, config.port, backlog=4096
    )
    config.ready.set()
    try:
        async with server:
            await server.serve_forever()
    finally:  # the server's end is the end of its connections too (GOAWAY, then close)
        for connection in connections:
            connection.close()


# --- client -------------------------------------------------------------------------------


class _Retry(Exception):
    """The server did not take the stream (GOAWAY, REFUSED_STREAM): safe to send again."""


class _ClientConnection(_Peer):
    def __init__(self, authority: bytes) -> None:
        super().__init__(client_side=True)
        self.authority = authority
        self.replies: dict[int, tuple[asyncio.Future[tuple[int, bytes]], list[bytes]]] = {}
        self.status: dict[int, int] = {}
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
        GOAWAY (it meant to close), are sent again elsewhere."""
        self.closed = True
        for future, _ in self.replies.values():
            if not future.done():
                future.set_exception(_Retry() if self.leaving else Unavailable(why))
        self.replies.clear()
        self._wake()

    def _goaway(self, event: h2.events.ConnectionTerminated) -> None:
        """No new streams here. A graceful GOAWAY: the streams the server took still get
        their answers, the others are sent again elsewhere. Any other: every unanswered
        call is sent again (all calls are GETs, which may be repeated)."""
        self.closed = self.leaving = True
        last = event.last_stream_id if event.last_stream_id is not None else 2**31
        if event.error_code != ErrorCodes.NO_ERROR:
            last = 0
        for stream in [s for s in self.replies if s > last]:
            future, _ = self.replies.pop(stream)
            if not future.done():
                future.set_exception(_Retry())
        if not self.replies and self.transport is not None:
            self.transport.close()
        self._wake()

    def _wake(self) -> None:
        while self.waiting and len(self.replies) < self._limit():
            future = self.waiting.pop(0)
            if not future.done():
                future.set_result(None)
                return

    def _limit(self) -> int:
        return int(self.h2.remote_settings.max_concurrent_streams)

    def data_received(self, data: bytes) -> None:
        for event in self.receive(data):
            if isinstance(event, h2.events.ResponseReceived):
                self.status[event.stream_id] = int(dict(event.headers)[b":status"])
            elif isinstance(event, h2.events.DataReceived):
                self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                reply = self.replies.get(event.stream_id)
                if reply is not None:
                    reply[1].append(event.data)
            elif isinstance(event, h2.events.StreamEnded):
                self._done(event.stream_id, None)
            elif isinstance(event, h2.events.StreamReset):
                self._done(
                    event.stream_id,
                    f"stream reset by the server ({event.error_code!r})",
                    retry=event.error_code == ErrorCodes.REFUSED_STREAM,
                )
            elif isinstance(event, h2.events.ConnectionTerminated):
                self._goaway(event)
            elif isinstance(event, h2.events.RemoteSettingsChanged):
                self._wake()
        self.flush()

    def _done(self, stream: int, error: str | None, retry: bool = False) -> None:
        status = self.status.pop(stream, 0)
        reply = self.replies.pop(stream, None)
        if reply is not None and not reply[0].done():
            if retry:
                reply[0].set_exception(_Retry())
            elif error is None:
                reply[0].set_result((status, b"".join(reply[1])))
            else:
                reply[0].set_exception(Unavailable(error))
        if self.closed and not self.replies and self.transport is not None:
            self.transport.close()  # after a GOAWAY, once the last answer is in
        self._wake()

    async def request(self, path: bytes) -> tuple[int, bytes]:
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
        stream = self.h2.get_next_available_stream_id()
        self.h2.send_headers(
            stream,
            [
                (b":method", b"GET"),
                (b":scheme", b"http"),
                (b":authority", self.authority),
                (b":path", path),
            ],
            end_stream=True,
        )
        future: asyncio.Future[tuple[int, bytes]] = loop.create_future()
        self.replies[stream] = (future, [])
        self.flush_soon()
        try:
            return await future
        except asyncio.CancelledError:  # the caller's deadline: tell the server
            if self.replies.pop(stream, None) is not None:
                self.status.pop(stream, None)
                with contextlib.suppress(h2.exceptions.H2Error):
                    self.h2.reset_stream(stream, ErrorCodes.CANCEL)
                self.flush_soon()
                self._wake()
            raise

    def close(self) -> None:
        if not self.closed:
            self.goodbye()
        self.closed = True


class H2cClients:
    def __init__(self, addresses: dict[str, str]) -> None:
        self._addresses = addresses
        self._connections: dict[str, _ClientConnection] = {}
        self._opening: dict[str, asyncio.Task[_ClientConnection]] = {}
        self.opened = 0

    async def _open(self, service: str) -> _ClientConnection:
        host, port = self._addresses[service].rsplit(":", 1)
        _, connection = await asyncio.get_running_loop().create_connection(
            lambda: _ClientConnection(self._addresses[service].encode()), host, int(port)
        )
        self._connections[service] = connection
        self.opened += 1
        return connection

    async def _connection(self, service: str) -> _ClientConnection:
        connection = self._connections.get(service)
        if connection is not None and not connection.closed:
            return connection
        task = self._opening.get(service)
        if task is None:  # one connection attempt at a time per service, shared by callers
            task = self._opening[service] = asyncio.get_running_loop().create_task(
                self._open(service)
            )
            task.add_done_callback(lambda _: self._opening.pop(service, None))
        return await asyncio.shield(task)

    async def call(
        self, service: str, op: str, request: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        path = f"/{op}?{urlencode(wire.query_pairs(request))}".encode()
        try:
            async with asyncio.timeout(timeout):
                for _ in range(ATTEMPTS):
                    connection = await self._connection(service)
                    with contextlib.suppress(_Retry):
                        status, body = await connection.request(path)
                        break
                else:
                    raise Unavailable(f"{service}: connection ended {ATTEMPTS} times")
        except TimeoutError:
            raise Timeout(f"{service} did not answer within {timeout}s") from None
        except OSError as e:
            raise Unavailable(f"{service}: {e}") from None
        return wire.outcome(service, status, body)

    def stats(self) -> dict[str, Any]:
        return {"connections_opened": self.opened}

    async def close(self) -> None:
        for task in self._opening.values():
            task.cancel()
        for connection in self._connections.values():
            connection.close()
        await asyncio.sleep(0)


async def connect(services: Sequence[ServiceDef], config: ConnectConfig) -> H2cClients:
    return H2cClients({s.name: config.addresses[s.name] for s in services})
