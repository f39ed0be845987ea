"""The transports' relay level: whole HTTP messages over HTTP/1.1, h2c and CoAP (what the
protocol adapters carry), in process."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import uvloop
from ipclab_services import transports
from ipclab_services.errors import Timeout, Unavailable
from ipclab_services.transports.base import HttpRequest, HttpResponse, ServeConfig

from ipclab.procs import free_port

# Every transport with a relay level (serve_relay/connect_relay), from the registry: a new
# one is checked with no edit here.
STYLES = tuple(
    name for name in transports.available() if hasattr(transports.load(name), "serve_relay")
)
BIG = b"x" * 4000  # more than one CoAP block, more than one h2c frame at small windows


async def echo(request: HttpRequest) -> HttpResponse:
    """What the server saw, as JSON; the path picks extras."""
    path = request.target.partition("?")[0]
    if path.endswith("/slow"):
        await asyncio.sleep(2)
    seen = {
        "method": request.method,
        "target": request.target,
        "cookie": request.header("cookie"),
        "content_type": request.header("content-type"),
        "body": request.body.decode("latin-1"),
        "headers": [k for k, _ in request.headers],
    }
    body = json.dumps(seen).encode()
    status = 404 if path.endswith("/missing") else 401 if path.endswith("/denied") else 200
    headers: tuple[tuple[str, str], ...] = (("content-type", "application/json"),)
    if path.endswith("/login"):
        headers = (
            ("content-type", "text/plain; charset=utf-8"),
            ("set-cookie", "sessionid=abc; Path=/"),
            ("set-cookie", "loggedinuser=uid1@email.com; Path=/"),
        )
        body = b"logged in"
    if path.endswith("/big"):
        body = BIG
    return HttpResponse(status, headers, body)


@asynccontextmanager
async def relay_pair(
    style: str, handler: Callable[[HttpRequest], Any] = echo
) -> AsyncIterator[Any]:
    t = transports.load(style)
    port = free_port()
    config = ServeConfig("127.0.0.1", port)
    server = asyncio.create_task(t.serve_relay(handler, config))
    await asyncio.wait_for(config.ready.wait(), 10)
    relay = await t.connect_relay(f"127.0.0.1:{port}")
    try:
        yield relay
    finally:
        await relay.close()
        server.cancel()
        with pytest.raises(asyncio.CancelledError):
            await server


@pytest.mark.parametrize("style", STYLES)
def test_a_form_post_with_its_cookie_arrives_as_sent(style: str) -> None:
    async def main() -> dict[str, Any]:
        async with relay_pair(style) as relay:
            answer = await relay.request(
                HttpRequest(
                    "POST",
                    "/booking/acmeair-bs/rest/api/bookings/bookflights?x=1&y=a%20b",
                    (
                        ("content-type", "application/x-www-form-urlencoded"),
                        ("cookie", "sessionid=abc; loggedinuser=uid1@email.com"),
                    ),
                    b"userid=uid1%40email.com&toFlightId=F1",
                ),
                5,
            )
        assert answer.status == 200
        return dict(json.loads(answer.body))

    seen = asyncio.run(main())
    assert seen["method"] == "POST"
    assert seen["target"] == "/booking/acmeair-bs/rest/api/bookings/bookflights?x=1&y=a%20b"
    assert seen["cookie"] == "sessionid=abc; loggedinuser=uid1@email.com"
    assert seen["content_type"] == "application/x-www-form-urlencoded"
    assert seen["body"] == "userid=uid1%40email.com&toFlightId=F1"


@pytest.mark.parametrize("style", STYLES)
def test_set_cookies_text_statuses_and_a_multi_block_body_come_back(style: str) -> None:
    async def main() -> list[HttpResponse]:
        async with relay_pair(style) as relay:
            return [
                await relay.request(HttpRequest("POST", path, body=b"login=a"), 5)
                for path in ("/auth/login", "/x/big", "/x/missing", "/x/denied")
            ]

    login, big, missing, denied = asyncio.run(main())
    assert login.status == 200 and login.body == b"logged in"
    cookies = [v for k, v in login.headers if k == "set-cookie"]
    assert cookies == ["sessionid=abc; Path=/", "loggedinuser=uid1@email.com; Path=/"]
    assert dict(login.headers)["content-type"].startswith("text/plain")
    assert big.status == 200 and big.body == BIG
    assert (missing.status, denied.status) == (404, 401)


@pytest.mark.parametrize("style", STYLES)
def test_a_large_request_body_arrives_whole(style: str) -> None:
    async def main() -> dict[str, Any]:
        async with relay_pair(style) as relay:
            answer = await relay.request(HttpRequest("PUT", "/x/echo", body=BIG), 5)
        return dict(json.loads(answer.body))

    assert asyncio.run(main())["body"] == BIG.decode()


@pytest.mark.parametrize("style", STYLES)
def test_a_body_over_1_mib_is_refused_and_the_server_keeps_serving(style: str) -> None:
    async def main() -> tuple[int, int]:
        async with relay_pair(style) as relay:
            big = await relay.request(HttpRequest("PUT", "/x/echo", body=b"x" * (1 << 20 | 1)), 5)
            small = await relay.request(HttpRequest("PUT", "/x/echo", body=b"x"), 5)
        return big.status, small.status

    assert asyncio.run(main()) == (413, 200)


@pytest.mark.parametrize("style", STYLES)
def test_64_in_flight_each_get_their_own_answer(style: str) -> None:
    async def main() -> None:
        async with relay_pair(style) as relay:

            async def one(i: int) -> None:
                cookie = f"sessionid=s{i}"
                answer = await relay.request(
                    HttpRequest("GET", f"/x/{i}?i={i}", (("cookie", cookie),)), 10
                )
                seen = json.loads(answer.body)
                assert (seen["target"], seen["cookie"]) == (f"/x/{i}?i={i}", cookie)

            await asyncio.gather(*(one(i) for i in range(64)))

    asyncio.run(main())


@pytest.mark.parametrize("style", STYLES)
def test_deadline_is_a_timeout_and_nobody_listening_is_unavailable(style: str) -> None:
    async def main() -> None:
        async with relay_pair(style) as relay:
            with pytest.raises(Timeout):
                await relay.request(HttpRequest("GET", "/x/slow"), 0.3)
        relay = await transports.load(style).connect_relay(f"127.0.0.1:{free_port()}")
        try:
            with pytest.raises((Unavailable, Timeout)):
                await relay.request(HttpRequest("GET", "/x/nobody"), 2)
        finally:
            await relay.close()

    asyncio.run(main())


def test_coap_drops_headers_it_has_no_option_for() -> None:
    async def main() -> dict[str, Any]:
        async with relay_pair("coap") as relay:
            answer = await relay.request(
                HttpRequest("GET", "/x/h", (("x-custom", "1"), ("cookie", "a=b"))), 5
            )
        return dict(json.loads(answer.body))

    assert asyncio.run(main())["headers"] == ["cookie"]


def test_coap_a_head_too_large_for_a_datagram_is_refused_with_431_at_once() -> None:
    """A 5 kB cookie: before, the datagram was longer than aiocoap's 4096-byte read and dropped,
    and the call waited for its deadline (504); now 431 at once, never sent."""

    async def main() -> list[tuple[int, float]]:
        async with relay_pair("coap") as relay:
            out = []
            for cookie in ("s=" + "9" * 5000, "s=1"):
                t0 = time.monotonic()
                answer = await relay.request(HttpRequest("GET", "/x", (("cookie", cookie),)), 5)
                out.append((answer.status, time.monotonic() - t0))
            return out

    (big, took), (small, _) = asyncio.run(main())
    assert (big, small) == (431, 200)
    assert took < 0.5


@pytest.mark.parametrize("style", STYLES)
def test_posts_to_one_path_in_flight_get_their_own_multi_block_answers(style: str) -> None:
    """32 POSTs to the same path at once, differing only in their bodies, each answered
    with 4 KB made from its body (four CoAP blocks): no answer takes another's blocks
    (the mix-up the thesis found in Californium; CoAP keeps them apart with an endpoint of
    its own per exchange)."""

    async def grow(request: HttpRequest) -> HttpResponse:
        await asyncio.sleep(0.01)
        return HttpResponse(200, (), (request.body * 4000)[:4000])

    async def main() -> None:
        async with relay_pair(style, grow) as relay:

            async def one(i: int) -> None:
                body = b"%02d;" % i
                answer = await relay.request(HttpRequest("POST", "/x/same", body=body), 10)
                assert answer.body == (body * 4000)[:4000], i

            await asyncio.gather(*(one(i) for i in range(32)))

    asyncio.run(main())


@pytest.mark.parametrize("style", STYLES)
def test_requests_to_one_peer_are_answered_concurrently(style: str) -> None:
    """20 requests whose answers each take 0.3 s finish together, not one after another
    (CoAP: aiocoap's NSTART = 1 per endpoint would queue them; the client's endpoint pool
    keeps one exchange per endpoint)."""

    async def slow(request: HttpRequest) -> HttpResponse:
        await asyncio.sleep(0.3)
        return HttpResponse(200, (), request.target.encode())

    async def main() -> float:
        async with relay_pair(style, slow) as relay:
            loop = asyncio.get_running_loop()
            t0 = loop.time()
            answers = await asyncio.gather(
                *(relay.request(HttpRequest("GET", f"/x/{i}"), 10) for i in range(20))
            )
            assert [a.body for a in answers] == [f"/x/{i}".encode() for i in range(20)]
            return loop.time() - t0

    assert asyncio.run(main()) < 1.5  # one at a time: 6 s


@pytest.mark.parametrize("style", STYLES)
def test_a_failing_handler_answers_500_at_once(style: str) -> None:
    async def failing(request: HttpRequest) -> HttpResponse:
        raise RuntimeError("a bug")

    async def main() -> int:
        async with relay_pair(style, failing) as relay:
            answer = await relay.request(HttpRequest("GET", "/x/bug"), 5)
            return answer.status

    assert asyncio.run(asyncio.wait_for(main(), 4)) == 500


@pytest.mark.parametrize("style", STYLES)
def test_calls_cut_short_leave_the_server_serving(style: str) -> None:
    """Calls cancelled before their answers come (a gateway's deadline, a page whose other
    call failed) must not break the server: with CoAP, an endpoint closed under a late
    answer drew an ICMP port unreachable, after which (uvloop) the server's socket received
    nothing more, for every client."""

    async def slow(request: HttpRequest) -> HttpResponse:
        await asyncio.sleep(0.2)
        return HttpResponse(200, (), b"late")

    async def main() -> list[int]:
        async with relay_pair(style, slow) as relay:
            calls = [asyncio.ensure_future(relay.request(HttpRequest("GET", "/x"), 5))]
            calls += [asyncio.ensure_future(relay.request(HttpRequest("GET", "/y"), 5))]
            await asyncio.sleep(0.05)
            for c in calls:
                c.cancel()
            await asyncio.gather(*calls, return_exceptions=True)
            with pytest.raises(Timeout):
                await relay.request(HttpRequest("GET", "/z"), 0.05)
            await asyncio.sleep(0.4)  # the late answers arrive
            return [(await relay.request(HttpRequest("GET", "/w"), 2)).status for _ in range(3)]

    assert uvloop.run(main()) == [200, 200, 200]  # the stacks' loop
