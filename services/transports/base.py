"""What every transport adapter provides, and the service definitions they carry.

A service is transport-free: a name and a few operations, each an ``async`` or plain
function from a request dict to a response dict. A transport module provides

    async def serve(service: ServiceDef, config: ServeConfig) -> None
        # serve until cancelled; ``ready`` is set once it accepts calls
    async def connect(services: Sequence[ServiceDef], config: ConnectConfig) -> Clients

and, to carry whole HTTP messages (the protocol adapters of ``services/adapters``: an
HTTP/1.1 request translated to the transport's protocol and back),

    async def serve_relay(handler: RelayHandler, config: ServeConfig) -> None
    async def connect_relay(address: str) -> Relay  # "host:port" of a serve_relay peer

Binary transports use the protobuf classes named on each operation.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from google.protobuf.message import Message

Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]] | dict[str, Any]]


@dataclass(frozen=True)
class Operation:
    handler: Handler
    request: type[Message]
    response: type[Message]


@dataclass(frozen=True)
class ServiceDef:
    name: str  # role name, e.g. "product-info"
    proto_service: str  # fully qualified protobuf service, e.g. "ipclab.shop.ProductInfo"
    ops: Mapping[str, Operation]  # op name ("get", "ping") -> operation

    async def invoke(self, op: str, request: dict[str, Any]) -> dict[str, Any]:
        result = self.ops[op].handler(request)
        if inspect.isawaitable(result):
            result = await result
        return result


@dataclass
class ServeConfig:
    host: str = "127.0.0.1"
    port: int = 0
    amqp_url: str = ""
    ready: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class ConnectConfig:
    addresses: Mapping[str, str] = field(default_factory=dict)  # role -> "host:port"
    amqp_url: str = ""


class Clients(Protocol):
    """Calls to every service of a stack, over one transport."""

    async def call(
        self, service: str, op: str, request: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        """Raise ipclab_services.errors: NotFound, BadRequest, Unavailable or Timeout."""
        ...

    def stats(self) -> dict[str, Any]:
        """Transport counters (e.g. AMQP messages published and replies consumed)."""
        ...

    async def close(self) -> None: ...


# --- whole HTTP messages (the relay level) ----------------------------------------------

#: Hop-by-hop headers (RFC 9110 7.6.1) and the ones each hop sets itself (Host,
#: Content-Length): never relayed. The origin's Date and Server pass end to end, as the
#: thesis's nginx and nghttpx adapters passed them (``proxy_pass_header``,
#: ``no-server-rewrite``); the gateway hides them, as a front proxy does.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)

Headers = tuple[tuple[str, str], ...]  # lower-case names, in order, repeats kept


@dataclass(frozen=True)
class HttpRequest:
    """An HTTP request as a relay carries it: ``target`` is the path with its query."""

    method: str
    target: str
    headers: Headers = ()
    body: bytes = b""

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k == name), None)


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: Headers = ()
    body: bytes = b""


def end_to_end(headers: Iterable[tuple[str, str]]) -> Headers:
    """The headers a relay passes on: names lower-cased, hop-by-hop ones dropped."""
    out = []
    for name, value in headers:
        low = name.lower()
        if low not in HOP_BY_HOP:
            out.append((low, value))
    return tuple(out)


#: Headers that are about one connection (RFC 9113 8.2.2): a request carrying one is not
#: relayed (they smuggle a second request's framing past the next hop).
CONNECTION_SPECIFIC = frozenset(
    {"connection", "proxy-connection", "keep-alive", "transfer-encoding", "upgrade"}
)
_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz")


def smuggling(headers: Headers, body: bytes = b"") -> str | None:
    """Why a request with ``headers`` (lower-case names) and ``body`` must not be relayed,
    or None: a name that is not a lower-case token, a value with CR, LF or NUL or with
    whitespace around it, a connection-specific header, TE other than ``trailers``, or a
    Content-Length that repeats or disagrees with the body. What HTTP/2's own validation
    refuses (RFC 9113 8.2.1), checked before a request reaches a shared connection."""
    lengths = [v for k, v in headers if k == "content-length"]
    if len(lengths) > 1 or (lengths and lengths[0] != str(len(body))):
        return "a repeated or wrong content-length"
    for name, value in headers:
        if not name or not set(name) <= _TOKEN:
            return f"header name {name!r}"
        if "\r" in value or "\n" in value or "\0" in value or value != value.strip(" \t"):
            return f"the value of {name}"
        if name in CONNECTION_SPECIFIC or (name == "te" and value.lower() != "trailers"):
            return f"the connection-specific header {name}"
    return None


RelayHandler = Callable[[HttpRequest], Awaitable[HttpResponse]]


class Relay(Protocol):
    """HTTP messages to one peer over a transport's protocol."""

    async def request(self, message: HttpRequest, timeout: float) -> HttpResponse:
        """Raise ipclab_services.errors.Unavailable or Timeout when no answer comes."""
        ...

    async def close(self) -> None: ...


class Peers(Protocol):
    """A client of several peers, each by name."""

    async def send(self, peer: str, message: HttpRequest, timeout: float) -> HttpResponse: ...

    async def close(self) -> None: ...


@dataclass(frozen=True)
class PeerRelay:
    """The :class:`Relay` to one peer of a client of several (``peers``)."""

    peers: Peers
    peer: str

    async def request(self, message: HttpRequest, timeout: float) -> HttpResponse:
        return await self.peers.send(self.peer, message, timeout)

    async def close(self) -> None:
        await self.peers.close()


class Transport(Protocol):
    async def serve(self, service: ServiceDef, config: ServeConfig) -> None: ...

    async def connect(self, services: Sequence[ServiceDef], config: ConnectConfig) -> Clients: ...

    async def serve_relay(self, handler: RelayHandler, config: ServeConfig) -> None: ...

    async def connect_relay(self, address: str) -> Relay: ...
