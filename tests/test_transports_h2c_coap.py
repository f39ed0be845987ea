"""The h2c and CoAP transports on their own: many calls in flight, block-wise transfer,
the error mapping and the call deadline (server and client in one event loop)."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import uvloop
from ipclab_services import transports
from ipclab_services.domains.shop import data, services
from ipclab_services.errors import BadRequest, NotFound, Timeout, Unavailable
from ipclab_services.proto import shop_pb2 as pb
from ipclab_services.transports import h2c
from ipclab_services.transports.base import (
    Clients,
    ConnectConfig,
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
