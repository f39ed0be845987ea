"""CoAP (RFC 7252) over UDP with aiocoap on both sides.

``GET coap://host:port/{op}?{field}={value}`` (one Uri-Query option per field) answers
2.05 Content with the operation's JSON document, byte-identical to REST's (Content-Format
50, application/json), or the error document ``{"error": code, "message": ...}`` under
the CoAP code of the HTTP status (4.04, 4.00, 5.03, 5.04; ``wire.py``).

- Confirmable requests, piggybacked responses. A document larger than one block (1024
  bytes) travels block-wise (RFC 7959, Block2): aiocoap slices it on the server and
  reassembles it on the client, one request per block; a request body larger than a block
  goes block-wise too (Block1).
- A pool of client contexts (UDP endpoints) per peer, one per exchange in flight
  (``_Contexts``: aiocoap keeps NSTART = 1 per endpoint); aiocoap gives every request its
  own token and matches responses by token and peer (``tests/test_transports_h2c_coap.py``
  checks 64 calls in flight of mixed sizes). The client keeps no cookie jar: nothing is
  carried from one response to the next request.
- Block-wise answers and concurrency: aiocoap's server keeps a multi-block answer for its
  later blocks under a key of the client's endpoint, the code and the cache-key options,
  not the payload. Two POSTs to one path in flight at once from one endpoint, with
  different bodies (two Query Flights), would get each other's later blocks: the response
  mix-up the thesis found in Californium. Each exchange has an endpoint of its own here
  (the pool below), which keeps them apart (``tests/test_relay.py`` checks it).
- A peer named by host name is resolved once, when the client starts (IPv4 first), and
  again after a network error: aiocoap would otherwise look the name up for every request.
- Limits: a request body over ``limits.MAX_BODY`` (the REST and h2c relays' cap) is refused
  with 4.13 Request Entity Too Large (Size1 = the cap) as soon as its Block1 transfer
  announces (Size1) or reaches more than that, and what was reassembled is dropped; at
  most ``MAX_ASSEMBLIES`` block-wise requests are reassembled at once (5.03 beyond), so a
  server holds at most that many times the cap for the ~93 s aiocoap keeps an unfinished
  one. A client endpoint is bound to the address the host sends from to reach its peer
  (loopback for a peer on loopback, the container's own address on the stack's network),
  never to every address.

"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import socket
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode

import aiocoap
import aiocoap.error
import aiocoap.resource
from aiocoap.blockwise import Block1Spool, _extract_block_key
from aiocoap.numbers.codes import Code
from aiocoap.optiontypes import StringOption
from aiocoap.util import socknumbers
from ipclab_services import tls, wire
from ipclab_services.errors import Timeout, Unavailable
from ipclab_services.limits import MAX_BODY
from ipclab_services.transports.base import (
    ConnectConfig,
    Headers,
    HttpRequest,
    HttpResponse,
    PeerRelay,
    RelayHandler,
    ServeConfig,
    ServiceDef,
)

# aiocoap sets SO_REUSEPORT on every socket it binds. Two sockets of one user that both set
# it may share a port, and the kernel may give a port-0 bind a port already bound so: a
# client endpoint then received part of a server's datagrams on loopback and answered them
# "4.04 not a server" (seen in CI: one call in 192). Its documented switch turns it off, for
# servers too (a second socket on a service's port is refused: EADDRINUSE).
os.environ["AIOCOAP_REUSE_PORT"] = "0"

JSON = 50  # Content-Format application/json (RFC 7252, 12.3)

#: Content-Type (media type, lower case) <-> Content-Format. 0 and 50 are RFC 7252's; the
#: experimental range (65000-65535) holds the three the thesis added to Californium.
CONTENT_FORMATS = {
    "text/plain": 0,  # text/plain;charset=utf-8
    "application/json": JSON,
    "application/x-www-form-urlencoded": 65000,
    "text/css": 65001,
    "application/x-javascript": 65002,
}
_MEDIA_TYPE = {0: "text/plain; charset=utf-8"} | {
    n: t for t, n in CONTENT_FORMATS.items() if n != 0
}
#: Experimental option numbers (RFC 7252 5.4.6: even = elective, so a peer that does not
#: know them ignores them; safe-to-forward; not NoCacheKey). Set-Cookie repeats.
COOKIE = 65000
SET_COOKIE = 65004
LINGER_S = 10.0  # an endpoint whose exchange was cut short stays open this long
POOL_PER_PEER = 100  # client endpoints (exchanges in flight) per peer, as rest.POOL_PER_HOST
MAX_ASSEMBLIES = 64  # block-wise request bodies a server reassembles at once
#: A request's options (path, query, cookie) go whole in every datagram of its exchange,
#: beside a block of up to 1024 bytes; aiocoap reads a datagram into 4096 bytes and drops a
#: longer one unparsed, so the client would retransmit it until its deadline (a 4 kB cookie
#: held an endpoint 2 s and got 504, found by the fuzzing campaign). Over this: 431 at once.
MAX_OPTION_BYTES = 2048
_METHODS = {"GET": aiocoap.GET, "POST": aiocoap.POST, "PUT": aiocoap.PUT, "DELETE": aiocoap.DELETE}
_SPECIAL = {200: Code.CONTENT, 201: Code.CREATED, 204: Code.CHANGED}
_SPECIAL_BACK = {Code.CONTENT: 200, Code.CREATED: 201, Code.CHANGED: 204, Code.DELETED: 200}


def code_of(status: int) -> Code:
    """The CoAP code of an HTTP status: 200 -> 2.05 Content, 404 -> 4.04, 503 -> 5.03 ...
    (a detail above 31, which CoAP cannot hold, becomes the class's x.00)."""
    if status in _SPECIAL:
        return _SPECIAL[status]
    detail = status % 100
    return Code((status // 100) << 5 | (detail if detail < 32 else 0))


def status_of(code: Code) -> int:
    return _SPECIAL_BACK.get(code, code.class_ * 100 + (code & 0x1F))


def _content_format(content_type: str | None) -> int | None:
    if content_type is None:
        return None
    return CONTENT_FORMATS.get(content_type.split(";", 1)[0].strip().lower())


def _to_coap(message: HttpRequest, base: str) -> aiocoap.Message:
    """An HTTP request as a CoAP request to ``base`` (``coap://host:port``)."""
    path, _, query = message.target.partition("?")
    out = aiocoap.Message(code=_METHODS[message.method], uri=base, payload=message.body)
    out.opt.uri_path = tuple(s for s in path.split("/") if s)
    out.opt.uri_query = tuple(q for q in query.split("&") if q)
    _put_headers(out, message.headers, "cookie", COOKIE)
    return out


def _put_headers(out: aiocoap.Message, headers: Headers, cookie: str, option: int) -> None:
    """The headers CoAP has a place for: Content-Type as the Content-Format, ``cookie``
    (Cookie or Set-Cookie) as the experimental ``option``; the others are dropped."""
    for name, value in headers:
        if name == "content-type":
            fmt = _content_format(value)
            if fmt is not None:
                out.opt.content_format = fmt
        elif name == cookie:
            out.opt.add_option(StringOption(option, value))


def _get_headers(message: aiocoap.Message, cookie: str, option: int) -> Headers:
    """The headers :func:`_put_headers` carried, back from the options."""
    headers: list[tuple[str, str]] = []
    fmt = message.opt.content_format
    if fmt is not None and int(fmt) in _MEDIA_TYPE:
        headers.append(("content-type", _MEDIA_TYPE[int(fmt)]))
    headers += [(cookie, _text(o.value)) for o in message.opt.get_option(option)]
    return tuple(headers)


def _text(value: object) -> str:
    """An option's value as text (an option number aiocoap does not know arrives opaque)."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _from_coap(request: aiocoap.Message) -> HttpRequest:
    """A CoAP request (at the receiving adapter) as the HTTP request it stands for."""
    target = "/" + "/".join(request.opt.uri_path)
    if request.opt.uri_query:
        target += "?" + "&".join(request.opt.uri_query)
    method = next((m for m, c in _METHODS.items() if c == request.code), "GET")
    return HttpRequest(method, target, _get_headers(request, "cookie", COOKIE), request.payload)


def _answer_coap(answer: HttpResponse) -> aiocoap.Message:
    out = aiocoap.Message(code=code_of(answer.status), payload=answer.body)
    _put_headers(out, answer.headers, "set-cookie", SET_COOKIE)
    return out


def _answer_http(response: aiocoap.Message) -> HttpResponse:
    headers = _get_headers(response, "set-cookie", SET_COOKIE)
    return HttpResponse(status_of(response.code), headers, response.payload)


class _TooLarge(aiocoap.error.RequestEntityTooLarge):
    """4.13 with Size1: the largest body this server takes (RFC 7959, 2.9.3)."""

    def to_message(self) -> aiocoap.Message:
        message = super().to_message()
        message.opt.size1 = MAX_BODY
        return message


class _Busy(aiocoap.error.ConstructionRenderableError):
    code = Code.SERVICE_UNAVAILABLE


class _CappedSpool(Block1Spool):
    """aiocoap's Block1 reassembly with a size cap and a cap on assemblies at once."""

    def feed_and_take(self, req: aiocoap.Message) -> aiocoap.Message:
        block1 = req.opt.block1
        if block1 is None:
            return super().feed_and_take(req)
        pending: dict[Any, aiocoap.Message] = getattr(self._assemblies, "_items", {})
        key = _extract_block_key(req)
        announced = req.opt.size1 or 0
        if block1.start + len(req.payload) > MAX_BODY or announced > MAX_BODY:
            pending.pop(key, None)
            raise _TooLarge()
        if block1.block_number == 0 and key not in pending and len(pending) >= MAX_ASSEMBLIES:
            raise _Busy()
        return super().feed_and_take(req)


class _Relay(aiocoap.resource.Resource):
    """Every path and method of the server, handed to one HTTP handler."""

    def __init__(self, handler: RelayHandler) -> None:
        super().__init__()
        self.handler = handler
        self._block1 = _CappedSpool()

    async def render(self, request: aiocoap.Message) -> aiocoap.Message:
        if len(request.payload) > MAX_BODY:  # in one message (CoAP over TCP)
            raise _TooLarge()
        return _answer_coap(await self.handler(_from_coap(request)))


def _no_icmp_errors(context: aiocoap.Context) -> int:
    """Turn off IPV6_RECVERR and IP_RECVERR on a server context's UDP sockets; how many.

    aiocoap asks for ICMP errors on its sockets; a client that closes its port before the
    answer arrives makes the answer bounce as port unreachable, the error wakes the socket's
    poll with POLLERR, and under uvloop the socket then receives nothing more: one request
    sent from a socket closed at once stopped a service for good (the fuzzing campaign's
    CoAP requests, issue 28). Without the option the kernel drops such errors for an
    unconnected socket; a server has no use for them (a lost answer's exchange times out)."""
    found = 0
    for sock in _udp_sockets(context):
        sock.setsockopt(socket.IPPROTO_IPV6, socknumbers.IPV6_RECVERR, 0)
        sock.setsockopt(socket.IPPROTO_IP, socknumbers.IP_RECVERR, 0)  # IPv4 peers
        found += 1
    return found


def _udp_sockets(context: aiocoap.Context) -> list[socket.socket]:
    """A context's UDP sockets (aiocoap's interfaces, read where it keeps them)."""
    out = []
    for interface in context.request_interfaces:
        messages = getattr(getattr(interface, "token_interface", None), "message_interface", None)
        transport = getattr(messages, "transport", None)
        sock = transport.get_extra_info("socket") if transport is not None else None
        if sock is not None and sock.type == socket.SOCK_DGRAM:
            out.append(sock)
    return out


def bound_ports(context: aiocoap.Context) -> set[int]:
    """The local ports a context's UDP sockets are bound to."""
    return {int(sock.getsockname()[1]) for sock in _udp_sockets(context)}


async def serve_relay(handler: RelayHandler, config: ServeConfig) -> None:
    """Serve CoAP requests, translated to HTTP messages for ``handler``, until cancelled."""
    # UDP only: aiocoap's default server transports add TCP, TLS and WebSocket listeners on
    # the same port number, which no stack uses, and whose TCP bind can collide with another
    # process's ephemeral port (seen: "address already in use" from the websockets listener)
    context = await aiocoap.Context.create_server_context(
        _Relay(handler), bind=(config.host, config.port), transports=["udp6"]
    )
    if not _no_icmp_errors(context):
        raise RuntimeError("coap: no UDP socket found in aiocoap's server context")
    config.ready.set()
    try:
        await asyncio.Future()  # until cancelled
    finally:
        await context.shutdown()


NO_DTLS = (
    "CoAP over DTLS is not built here: aiocoap secures a client's exchanges only (its "
    "tinydtls transport, through the DTLSSocket package), not a server's, so a CoAP stack "
    "runs without --tls"
)


def _refuse_tls() -> None:
    if tls.enabled():
        raise tls.TlsConfigError(NO_DTLS)


async def serve(service: ServiceDef, config: ServeConfig) -> None:
    _refuse_tls()

    async def operation(request: HttpRequest) -> HttpResponse:
        if request.method != "GET":
            return HttpResponse(405, (("content-type", "application/json"),), b"{}")
        op, _, query = request.target.partition("?")
        status, body = await wire.answer(
            service, op.strip("/"), dict(parse_qsl(query, keep_blank_values=True))
        )
        return HttpResponse(status, (("content-type", "application/json"),), body)

    await serve_relay(operation, config)


#: new endpoints tried before giving up, each on a new ephemeral port
OPEN_TRIES = 5


def source_address(host: str, port: int) -> str:
    """The local address this host sends from to reach ``host:port`` (a UDP socket's
    ``connect`` sends nothing: the kernel only picks the route and the address)."""
    address = ipaddress.ip_address(host)  # a name not resolved yet: ValueError, no lookup
    family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        probe.connect((host, port))
        return str(probe.getsockname()[0])


class _Contexts:
    """A pool of aiocoap client contexts (UDP endpoints) per peer, one per exchange in
    flight.

    aiocoap keeps RFC 7252's default NSTART = 1: one confirmable exchange at a time between
    a client endpoint and a server, the others queued behind it. With one endpoint per
    peer, every call to a service would wait for the previous one's round trip (measured:
    CoAP at 2 ms of added delay gave a 107 ms mean where HTTP/1.1 gave 19). As HTTP/1.1
    opens up to ``POOL_PER_PEER`` keep-alive connections per peer and h2c multiplexes
    streams, an exchange here takes an endpoint of its own from the peer's pool (opened on
    demand, up to ``POOL_PER_PEER``, then reused), the fix the thesis made in Californium
    (a pool of endpoint managers). An endpoint whose exchange met a network error (under
    uvloop, a socket that received an ICMP error receives nothing more) is closed; one whose
    exchange was cut short (deadline, cancellation) is not reused and closes
    ``LINGER_S`` later (``_retire``).
    """

    def __init__(self, addresses: dict[str, str]) -> None:
        self._addresses = dict(addresses)
        self._base = {name: f"coap://{addr}" for name, addr in addresses.items()}
        self._idle: dict[str, list[aiocoap.Context]] = {p: [] for p in addresses}
        self._slots = {p: asyncio.Semaphore(POOL_PER_PEER) for p in addresses}
        self._every: set[aiocoap.Context] = set()
        self._closing: set[asyncio.Task[None]] = set()
        self._lingering: dict[aiocoap.Context, asyncio.TimerHandle] = {}
        self.opened = self.discarded = 0

    async def start(self) -> None:
        """Every peer's address resolved and one endpoint per peer ready before the first
        call (when the peer's name resolves already)."""
        for peer in self._base:
            await self._resolve(peer)
            with contextlib.suppress(aiocoap.error.NetworkError):
                self._idle[peer].append(await self._open(peer))

    async def _resolve(self, peer: str) -> None:
        """``coap://<address>`` of ``peer``, its host name looked up once (IPv4 first)."""
        host, _, port = self._addresses[peer].rpartition(":")
        with contextlib.suppress(OSError):
            found = await asyncio.get_running_loop().getaddrinfo(
                host, int(port), type=socket.SOCK_DGRAM
            )
            found.sort(key=lambda info: info[0] != socket.AF_INET)
            if found:
                ip = str(found[0][4][0])
                self._base[peer] = f"coap://{f'[{ip}]' if ':' in ip else ip}:{port}"

    async def _open(self, peer: str) -> aiocoap.Context:
        """A client endpoint for ``peer``: a UDP socket bound to the address this host
        sends from to reach the peer (aiocoap's client contexts bind every address). Never
        on the peer's own port: once the peer died its port is free, an ephemeral bind can
        take it, and the endpoint then sends its requests to itself and answers them with
        no resource (a non-JSON answer, a 500 at the gateway: seen after a service was
        killed mid-run under load)."""
        host, _, port = self._base[peer].removeprefix("coap://").rpartition(":")
        for _ in range(OPEN_TRIES):
            try:
                local = source_address(host.strip("[]"), int(port))
                context = await aiocoap.Context.create_server_context(
                    None, bind=(local, 0), transports=["udp6"]
                )
            except (OSError, ValueError) as e:  # the peer's name not resolved (yet), no route
                raise aiocoap.error.NetworkError(f"no local address for {peer}: {e}") from None
            if local != host.strip("[]") or int(port) not in bound_ports(context):
                break
            await context.shutdown()  # it took a dead peer's port: it would ask itself
        else:
            raise aiocoap.error.NetworkError(f"{peer}: every new endpoint took its port")
        self._every.add(context)
        self.opened += 1
        return context

    def _discard(self, context: aiocoap.Context) -> None:
        self._lingering.pop(context, None)
        self._every.discard(context)
        self.discarded += 1
        task = asyncio.get_running_loop().create_task(context.shutdown())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def send(self, peer: str, message: HttpRequest, timeout: float) -> HttpResponse:
        if message.method not in _METHODS:
            return HttpResponse(405, (("content-type", "text/plain; charset=utf-8"),), b"")
        if len(_to_coap(message, "coap://127.0.0.1").opt.encode()) > MAX_OPTION_BYTES:
            why = b"request head too large for a CoAP datagram"
            return HttpResponse(431, (("content-type", "text/plain; charset=utf-8"),), why)
        context: aiocoap.Context | None = None
        fate = "retire"  # an exchange cut short (deadline, cancel): its endpoint lingers
        try:
            async with asyncio.timeout(timeout):
                async with self._slots[peer]:
                    idle = self._idle[peer]
                    context = idle.pop() if idle else await self._open(peer)
                    request = _to_coap(message, self._base[peer])
                    response = await context.request(request).response
                    fate = "reuse"
                    idle.append(context)
        except TimeoutError:
            raise Timeout(f"{peer} did not answer within {timeout}s") from None
        except aiocoap.error.TimeoutError as e:  # retransmissions exhausted
            raise Timeout(f"{peer}: {e}") from None
        except aiocoap.error.Error as e:
            if isinstance(e, aiocoap.error.NetworkError):  # the endpoint receives no more
                fate = "discard"
                await self._resolve(peer)  # the peer may have moved
            raise Unavailable(f"{peer}: {e!r}") from None
        finally:
            if context is not None and fate == "retire":
                self._retire(context)
            elif context is not None and fate == "discard":
                self._discard(context)
        return _answer_http(response)

    def _retire(self, context: aiocoap.Context) -> None:
        """Close an endpoint whose exchange was cut short only after ``LINGER_S``: the
        peer's late answer must find the port open. Closed at once, the port answers with
        an ICMP port unreachable, and under uvloop a server socket that received one
        receives nothing more (every later request to that service timed out)."""
        handle = asyncio.get_running_loop().call_later(LINGER_S, self._discard, context)
        self._lingering[context] = handle

    async def close(self) -> None:
        for handle in self._lingering.values():
            handle.cancel()
        self._lingering.clear()
        for context in list(self._every):
            with contextlib.suppress(Exception):
                await context.shutdown()
        self._every.clear()
        for task in list(self._closing):
            with contextlib.suppress(Exception):
                await task


class CoapClients(_Contexts):
    async def call(
        self, service: str, op: str, request: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        target = f"/{op}?{urlencode(wire.query_pairs(request))}"
        answer = await self.send(service, HttpRequest("GET", target), timeout)
        return wire.outcome(service, answer.status, answer.body)

    def stats(self) -> dict[str, Any]:
        return {"endpoints_opened": self.opened, "endpoints_discarded": self.discarded}


async def connect(services: Sequence[ServiceDef], config: ConnectConfig) -> CoapClients:
    _refuse_tls()
    clients = CoapClients({s.name: config.addresses[s.name] for s in services})
    await clients.start()
    return clients


async def connect_relay(address: str) -> PeerRelay:
    """Whole HTTP messages to one peer, each a CoAP exchange of its own endpoint."""
    contexts = _Contexts({address: address})
    await contexts.start()
    return PeerRelay(contexts, address)
