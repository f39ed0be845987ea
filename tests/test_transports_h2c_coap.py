"""The h2c and CoAP transports on their own: many calls in flight, block-wise transfer,
the error mapping and the call deadline (server and client in one event loop)."""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiocoap
import h2.config
import h2.connection
import h2.events
import psutil
import pytest
import uvloop
from aiocoap.numbers.codes import Code
from ipclab_services import transports
from ipclab_services.domains.shop import data, services
from ipclab_services.errors import BadRequest, NotFound, Timeout, Unavailable
from ipclab_services.limits import MAX_BODY
from ipclab_services.proto import shop_pb2 as pb
from ipclab_services.transports import coap, h2c
from ipclab_services.transports.base import (
    Clients,
    ConnectConfig,
    HttpRequest,
    HttpResponse,
    Operation,
    ServeConfig,
    ServiceDef,
)

from ipclab.procs import free_port

STYLES = ("h2c", "coap")
SIZES = (0, 40, 700, 1023, 1025, 3000, 9000, 40000)  # bytes of filler; > 1 KiB is block-wise


async def _sized(request: dict[str, Any]) -> dict[str, Any]:
    """A document of ``size`` bytes of filler that names the call it answers."""
    await asyncio.sleep(random.random() / 100)  # answers leave out of order
    size = int(request["size"])
    return {"call": request["call"], "size": size, "filler": "ab" * (size // 2) + "c" * (size % 2)}


async def _slow(request: dict[str, Any]) -> dict[str, Any]:
    await asyncio.sleep(float(request["seconds"]))
    return {}


TEST_SERVICE = ServiceDef(
    "sized",
    "ipclab.test.Sized",
    {
        "get": Operation(_sized, pb.Empty, pb.Empty),
        "slow": Operation(_slow, pb.Empty, pb.Empty),
    },
)


@contextlib.asynccontextmanager
async def served(style: str, service: ServiceDef, port: int = 0) -> AsyncIterator[Clients]:
    """``service`` served over ``style`` on a free port, and clients connected to it."""
    port = port or free_port()
    transport = transports.load(style)
    config = ServeConfig(port=port)
    server = asyncio.create_task(transport.serve(service, config))
    await asyncio.wait_for(config.ready.wait(), 10)
    clients = await transport.connect([service], ConnectConfig({service.name: f"127.0.0.1:{port}"}))
    try:
        yield clients
    finally:
        await clients.close()
        server.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await server


def run(test: Callable[[], Awaitable[None]]) -> None:
    uvloop.run(asyncio.wait_for(test(), 60))


@pytest.mark.parametrize("style", STYLES)
def test_64_calls_in_flight_of_mixed_sizes_each_get_their_own_answer(style: str) -> None:
    async def main() -> None:
        async with served(style, TEST_SERVICE) as clients:
            for _ in range(3):
                sizes = [SIZES[i % len(SIZES)] for i in range(64)]
                random.shuffle(sizes)
                replies = await asyncio.gather(
                    *(
                        clients.call("sized", "get", {"call": f"c{i}", "size": n}, 10)
                        for i, n in enumerate(sizes)
                    )
                )
                for i, (n, reply) in enumerate(zip(sizes, replies, strict=True)):
                    assert reply["call"] == f"c{i}" and reply["size"] == n
                    assert len(reply["filler"]) == n

    run(main)


@pytest.mark.parametrize("style", STYLES)
def test_unknown_product_is_not_found_and_malformed_id_bad_request(style: str) -> None:
    product_info = services.build(data.ShopConfig())["product-info"]

    async def main() -> None:
        async with served(style, product_info) as clients:
            assert (await clients.call("product-info", "get", {"product_id": 7}, 5)) == (
                data.product(data.ShopConfig(), 7)
            )
            with pytest.raises(NotFound):
                await clients.call("product-info", "get", {"product_id": 10**6}, 5)
            for bad in ("abc", "-1", ""):
                with pytest.raises(BadRequest):
                    await clients.call("product-info", "get", {"product_id": bad}, 5)

    run(main)


@pytest.mark.parametrize("style", STYLES)
def test_deadline_gives_timeout_and_the_peer_stays_usable(style: str) -> None:
    async def main() -> None:
        async with served(style, TEST_SERVICE) as clients:
            started = time.monotonic()
            with pytest.raises(Timeout):
                await clients.call("sized", "slow", {"seconds": 3}, 0.3)
            assert time.monotonic() - started < 1.0
            reply = await clients.call("sized", "get", {"call": "after", "size": 5000}, 5)
            assert reply["call"] == "after"

    run(main)


@pytest.mark.parametrize("style", STYLES)
def test_nobody_listening_is_unavailable_and_a_restarted_server_is_found(style: str) -> None:
    async def main() -> None:
        port = free_port()
        clients = await transports.load(style).connect(
            [TEST_SERVICE], ConnectConfig({"sized": f"127.0.0.1:{port}"})
        )
        try:
            with pytest.raises((Unavailable, Timeout)):
                await clients.call("sized", "get", {"call": "x", "size": 1}, 1)
            async with served(style, TEST_SERVICE, port):
                reply = await clients.call("sized", "get", {"call": "y", "size": 2000}, 5)
                assert reply["call"] == "y"
            with pytest.raises((Unavailable, Timeout)):  # the server went away again
                await clients.call("sized", "get", {"call": "z", "size": 1}, 1)
            async with served(style, TEST_SERVICE, port):
                reply = await clients.call("sized", "get", {"call": "w", "size": 1}, 5)
                assert reply["call"] == "w"
        finally:
            await clients.close()

    run(main)


def test_h2c_calls_beyond_the_stream_limit_wait_for_a_free_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(h2c, "MAX_STREAMS", 4)

    async def main() -> None:
        async with served("h2c", TEST_SERVICE) as clients:
            await clients.call("sized", "get", {"call": "first", "size": 1}, 5)  # settings known
            replies = await asyncio.gather(
                *(clients.call("sized", "get", {"call": i, "size": 100}, 10) for i in range(64))
            )
            assert [r["call"] for r in replies] == [str(i) for i in range(64)]
            assert clients.stats()["connections_opened"] == 1

    run(main)


def test_h2c_calls_a_leaving_server_did_not_answer_are_sent_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server that takes 5 streams per connection, then says GOAWAY and hangs up (as
    hypercorn does after 1,000 requests): every call still gets its own answer, each sent
    at most ``h2c.ATTEMPTS`` (3) times."""

    class Leaving(h2c._ServerConnection):
        taken = 0

        def _dispatch(self, stream: int) -> None:
            self.taken += 1
            if self.taken <= 5:
                super()._dispatch(stream)
            elif self.taken == 6:
                asyncio.get_running_loop().create_task(self._leave(last=stream - 2))

        async def _leave(self, last: int) -> None:
            """Answer what was taken, then GOAWAY (h2 sends nothing after it) and hang up."""
            await asyncio.gather(*self.tasks)
            self.h2.close_connection(last_stream_id=last)
            self.flush()
            if self.transport is not None:
                self.transport.close()

    monkeypatch.setattr(h2c, "_ServerConnection", Leaving)

    async def main() -> None:
        async with served("h2c", TEST_SERVICE) as clients:
            replies = await asyncio.gather(
                *(clients.call("sized", "get", {"call": i, "size": 10}, 10) for i in range(12))
            )
            assert [r["call"] for r in replies] == [str(i) for i in range(12)]
            assert clients.stats()["connections_opened"] > 1

    run(main)


# --- issue 28: limits, bound addresses, header validation --------------------------------


@contextlib.asynccontextmanager
async def relay_server(style: str, seen: list[HttpRequest]) -> AsyncIterator[int]:
    """A relay server of ``style`` on a free loopback port that records what reaches it."""

    async def handler(request: HttpRequest) -> HttpResponse:
        seen.append(request)
        return HttpResponse(200, (("content-type", "text/plain"),), b"%d" % len(request.body))

    port = free_port()
    config = ServeConfig("127.0.0.1", port)
    server = asyncio.create_task(transports.load(style).serve_relay(handler, config))
    await asyncio.wait_for(config.ready.wait(), 10)
    try:
        yield port
    finally:
        server.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await server


def test_coap_body_over_the_limit_is_refused_with_4_13_and_never_reaches_the_handler() -> None:
    """The cap is the REST and h2c relays' (limits.MAX_BODY): announced (Size1, as aiocoap's
    client sends it) it is refused at the first block; not announced, at the block that
    passes it; a body of exactly the cap arrives whole."""

    async def main() -> None:
        seen: list[HttpRequest] = []
        async with relay_server("coap", seen) as port:
            relay = await coap.connect_relay(f"127.0.0.1:{port}")
            try:
                t0 = time.monotonic()
                big = HttpRequest("POST", "/x", (), b"x" * (MAX_BODY + 1))
                assert (await relay.request(big, 10)).status == 413
                assert time.monotonic() - t0 < 1.0 and seen == []  # at the first block
                whole = await relay.request(HttpRequest("POST", "/x", (), b"y" * MAX_BODY), 30)
                assert (whole.status, whole.body) == (200, b"%d" % MAX_BODY)
            finally:
                await relay.close()
            answer = await _blocks_without_size1(port, MAX_BODY // 1024 + 1)
            assert answer.code == Code.REQUEST_ENTITY_TOO_LARGE
            assert answer.opt.size1 == MAX_BODY
            assert len(seen) == 1

    run(main)


async def _blocks_without_size1(port: int, blocks: int) -> aiocoap.Message:
    """A POST sent block by block (1 KiB each, no Size1) until the server stops asking for
    more: its last answer."""
    context = await aiocoap.Context.create_server_context(
        None, bind=("127.0.0.1", 0), transports=["udp6"]
    )
    try:
        for n in range(blocks):
            message = aiocoap.Message(
                code=aiocoap.POST, uri=f"coap://127.0.0.1:{port}/x", payload=b"z" * 1024
            )
            message.opt.block1 = (n, n < blocks - 1, 6)
            answer = await context.request(message, handle_blockwise=False).response
            if answer.code != Code.CONTINUE:
                return answer
        return answer
    finally:
        await context.shutdown()


def test_coap_reassembles_at_most_max_assemblies_requests_at_once() -> None:
    async def main() -> None:
        async with relay_server("coap", []) as port:
            context = await aiocoap.Context.create_server_context(
                None, bind=("127.0.0.1", 0), transports=["udp6"]
            )
            try:
                codes = []
                for n in range(coap.MAX_ASSEMBLIES + 1):  # each its own path: its own assembly
                    message = aiocoap.Message(
                        code=aiocoap.POST, uri=f"coap://127.0.0.1:{port}/p{n}", payload=b"a" * 1024
                    )
                    message.opt.block1 = (0, True, 6)
                    codes.append(
                        (await context.request(message, handle_blockwise=False).response).code
                    )
            finally:
                await context.shutdown()
            assert codes[:-1] == [Code.CONTINUE] * coap.MAX_ASSEMBLIES
            assert codes[-1] == Code.SERVICE_UNAVAILABLE

    run(main)


def _udp_addresses() -> set[str]:
    return {c.laddr.ip for c in psutil.Process().net_connections("udp")}


def test_coap_client_endpoints_bind_loopback_not_every_address() -> None:
    """The gateway's CoAP endpoints bind the address that reaches their peer (here
    loopback), as the services do: no UDP socket of the process is on ``*``."""
    assert coap.source_address("127.0.0.1", 5683) == "127.0.0.1"
    assert coap.source_address("::1", 5683) == "::1"

    async def main() -> None:
        async with served("coap", TEST_SERVICE) as clients:
            replies = await asyncio.gather(
                *(clients.call("sized", "get", {"call": i, "size": 10}, 10) for i in range(8))
            )
            assert len(replies) == 8 and clients.stats()["endpoints_opened"] >= 1
            addresses = _udp_addresses()
            assert addresses and addresses <= LOOPBACK, addresses

    run(main)


LOOPBACK = {"127.0.0.1", "::1", "::ffff:127.0.0.1"}


def test_coap_no_socket_shares_its_port_with_another() -> None:
    """No CoAP socket sets SO_REUSEPORT. With it, a port-0 bind may be given a port that a
    server already holds, and the kernel then splits the server's datagrams between the two
    sockets (a client endpoint answered some of a service's calls "4.04 not a server")."""

    async def main() -> None:
        port = free_port()
        async with served("coap", TEST_SERVICE, port) as clients:
            await clients.call("sized", "get", {"call": "c", "size": 1}, 10)
            endpoints = [*clients._every]
            assert endpoints
            for context in endpoints:
                interface = context.request_interfaces[0].token_interface.message_interface
                sock = interface.transport.get_extra_info("socket")
                assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT) == 0
            with pytest.raises(OSError):
                await aiocoap.Context.create_server_context(
                    None, bind=("127.0.0.1", port), transports=["udp6"]
                )

    run(main)


def test_coap_clients_that_leave_before_their_answer_do_not_stop_the_server() -> None:
    """Requests sent from sockets closed at once: each answer bounces as ICMP port
    unreachable. Before, under uvloop, the first such error stopped the server's socket
    for good (every later call timed out); the fuzzing campaign found it."""

    async def main() -> None:
        port = free_port()
        async with served("coap", TEST_SERVICE, port) as clients:
            for i in range(20):
                request = aiocoap.Message(code=Code.GET, uri_path=("get",))
                request.mtype, request.mid, request.token = aiocoap.CON, i, b"t%d" % i
                with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as leaving:
                    leaving.sendto(request.encode(), ("127.0.0.1", port))
            await asyncio.sleep(0.3)  # the answers bounce
            answer = await clients.call("sized", "get", {"call": "c", "size": 1}, 5)
            assert answer is not None

    run(main)


#: Headers that would smuggle a second request past an HTTP/1.1 hop, as raw HTTP/2 fields.
SMUGGLING = {
    "CR LF in a value": [(b"x-a", b"1\r\nTransfer-Encoding: chunked")],
    "NUL in a value": [(b"x-a", b"1\x002")],
    "transfer-encoding": [(b"transfer-encoding", b"chunked")],
    "connection": [(b"connection", b"close")],
    "upgrade": [(b"upgrade", b"websocket")],
    "conflicting content-length": [(b"content-length", b"0"), (b"content-length", b"5")],
    "repeated content-length": [(b"content-length", b"0"), (b"content-length", b"0")],
    "upper-case name": [(b"X-Upper", b"1")],
    "a second :path": [(b":path", b"/other")],
    "space in :path": [(b":path", b"/a HTTP/1.1\r\nx: y")],
}


async def _raw_h2(port: int, *requests: list[tuple[bytes, bytes]]) -> list[int]:
    """Requests with these extra fields, one after another on one connection of a client
    that validates nothing: each one's status (0: the connection ended instead)."""
    connection = h2.connection.H2Connection(
        h2.config.H2Configuration(
            client_side=True,
            header_encoding=None,
            validate_outbound_headers=False,
            normalize_outbound_headers=False,  # sent exactly as written
        )
    )
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    statuses: list[int] = []
    try:
        connection.initiate_connection()
        for extra in requests:
            fields = [(b":method", b"GET"), (b":scheme", b"http"), (b":authority", b"x"),
                      (b":path", b"/get?size=1"), *extra]  # fmt: skip
            connection.send_headers(connection.get_next_available_stream_id(), fields, True)
            writer.write(connection.data_to_send())
            statuses.append(await _status_of(connection, reader, writer))
            if statuses[-1] == 0:
                break
        return statuses
    finally:
        writer.close()


async def _status_of(
    connection: h2.connection.H2Connection,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
) -> int:
    async with asyncio.timeout(5):
        while data := await reader.read(65536):
            for event in connection.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    return int(dict(event.headers)[b":status"])
                if isinstance(event, h2.events.ConnectionTerminated):
                    return 0
            writer.write(connection.data_to_send())
    return 0


@pytest.mark.parametrize("what", SMUGGLING)
def test_h2c_a_smuggling_shaped_header_is_refused_and_never_relayed(what: str) -> None:
    """Refused twice: by the h2c server (400 on that stream, the handler sees nothing, the
    connection serves on) and, before that, by the relay client, which answers 400 itself
    rather than send it on a connection other calls share."""

    async def main() -> None:
        seen: list[HttpRequest] = []
        async with relay_server("h2c", seen) as port:
            statuses = await _raw_h2(port, [], SMUGGLING[what], [])
            # conflicting content-lengths: h2 itself ends the connection (always checked)
            assert statuses == ([200, 0] if what.startswith("conflicting") else [200, 400, 200])
            assert len(seen) == len(statuses) - 1
            relay = await h2c.connect_relay(f"127.0.0.1:{port}")
            try:
                headers = tuple(
                    (k.decode("latin-1"), v.decode("latin-1")) for k, v in SMUGGLING[what]
                )
                answer = await relay.request(HttpRequest("GET", "/x", headers), 5)
                assert answer.status == 400, answer
                assert (await relay.request(HttpRequest("GET", "/x"), 5)).status == 200
            finally:
                await relay.close()
            assert len(seen) == len(statuses)

    run(main)


def test_h2c_a_body_over_the_limit_is_not_kept_and_is_refused_with_413() -> None:
    async def main() -> None:
        seen: list[HttpRequest] = []
        async with relay_server("h2c", seen) as port:
            relay = await h2c.connect_relay(f"127.0.0.1:{port}")
            try:
                big = HttpRequest("POST", "/x", (), b"x" * (MAX_BODY + 1))
                assert (await relay.request(big, 10)).status == 413
                whole = await relay.request(HttpRequest("POST", "/x", (), b"y" * MAX_BODY), 10)
                assert (whole.status, whole.body) == (200, b"%d" % MAX_BODY)
            finally:
                await relay.close()
            assert len(seen) == 1

    run(main)


def test_h2c_an_answer_over_max_answer_fails_the_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(h2c, "MAX_ANSWER", 5000)

    async def main() -> None:
        async with served("h2c", TEST_SERVICE) as clients:
            with pytest.raises(Unavailable, match="longer than 5000"):
                await clients.call("sized", "get", {"call": "big", "size": 9000}, 5)
            assert (await clients.call("sized", "get", {"call": "ok", "size": 10}, 5))["size"] == 10

    run(main)


def test_a_coap_client_endpoint_never_takes_its_dead_peers_port(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Once a peer died its UDP port is free and a new ephemeral endpoint can take it; the
    endpoint would then send to itself and answer with no resource (a 500 at the gateway,
    seen in a kill-mid-run test). The first endpoint is forced onto the dead peer's port:
    it is closed and a new one opened on another."""
    from ipclab_services.transports import coap

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]  # a peer that was here and is gone
    real = aiocoap.Context.create_server_context
    binds: list[tuple[str, int]] = []

    async def forced(site: Any, bind: tuple[str, int], **kw: Any) -> aiocoap.Context:
        bind = (bind[0], dead) if not binds else bind
        binds.append(bind)
        return await real(site, bind=bind, **kw)

    async def main() -> set[int]:
        monkeypatch.setattr(aiocoap.Context, "create_server_context", forced)
        clients = coap.CoapClients({"reviews": f"127.0.0.1:{dead}"})
        try:
            context = await clients._open("reviews")
            return coap.bound_ports(context)
        finally:
            await clients.close()

    ports = asyncio.run(main())
    assert binds[0][1] == dead and len(binds) == 2
    assert ports and dead not in ports
