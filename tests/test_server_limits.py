"""Issue 28, item 4: the gateways' HTTP servers, Python (uvicorn) and Go (net/http), grant a
client the same limits (``services/limits.py``, ``services/go/limits.go``): a header
timeout, a whole-request timeout, an idle timeout, a head size limit (431) and a body
limit (413); a slow client cannot hold a gateway."""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
import uvloop
from ipclab_services import limits

from ipclab.backends import StackOptions, get_backend
from ipclab.backends.local import LocalStack
from tests.conftest import LEFT_OUT, started_together

ROOT = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"
# One gateway per server implementation: every Python gateway is the same uvicorn front
# (asgi.serve_http), every Go one the same net/http server (limits.go's newServer), every
# Node.js one the same node:http server (limits.js's newServer).
GATEWAYS = ("shop-rest", "shop-rest-go", "shop-rest-node")
HALF_SENT = 300  # connections per gateway that send half a request and then nothing
GRACE_S = 2.0  # on a shared 2-core machine, a timer may fire this late
PAGE_DEADLINE_S = 2.0  # the gateway's own call deadline (StackOptions.call_timeout_s)


def test_go_and_python_limits_are_the_same_values() -> None:
    text = (ROOT / "services" / "go" / "limits.go").read_text()

    def go(name: str) -> float:
        m = re.search(rf"^\s*{name}\s*=\s*(\d+)\s*(<<|\*)\s*(\d+|time\.Second)", text, re.M)
        assert m, f"{name} not found in limits.go"
        a, op, b = m.groups()
        return int(a) << int(b) if op == "<<" else float(a)

    assert go("maxBody") == limits.MAX_BODY
    assert go("maxHeaderBytes") == limits.MAX_HEADER_BYTES
    assert go("headerTimeout") == limits.HEADER_TIMEOUT_S
    assert go("readTimeout") == limits.READ_TIMEOUT_S
    assert go("idleTimeout") == limits.IDLE_TIMEOUT_S
    assert go("maxAnswer") == limits.MAX_ANSWER


@pytest.fixture(scope="module")
def gateways() -> Iterator[dict[str, LocalStack]]:
    """Every gateway up (a Go or Node.js stack is left out, named, without its toolchain)."""
    names = tuple(name for name in GATEWAYS if name not in LEFT_OUT)
    yield from started_together(get_backend("local"), names, StackOptions())


def _port(stack: LocalStack) -> int:
    return int(stack.gateway_url.rsplit(":", 1)[1])


async def _exchange(port: int, data: bytes, wait: float = 10.0) -> bytes:
    """``data`` sent on a new connection, and everything the server sends until it closes
    (or ``wait`` seconds)."""
    reader, writer = await asyncio.open_connection(HOST, port)
    try:
        writer.write(data)
        await writer.drain()
        got = b""
        with contextlib.suppress(TimeoutError, ConnectionResetError):
            async with asyncio.timeout(wait):
                while chunk := await reader.read(65536):
                    got += chunk
        return got
    finally:
        writer.close()


def _status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0


def _request(method: bytes, headers: bytes = b"", body: bytes = b"") -> bytes:
    return (
        method + b" /product/1 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        b"Content-Length: %d\r\n%s\r\n%s" % (len(body), headers, body)
    )


@pytest.mark.parametrize("name", GATEWAYS)
def test_a_body_over_the_limit_is_413_a_small_one_405_a_huge_head_431(
    name: str, gateways: dict[str, LocalStack]
) -> None:
    if name not in gateways:
        pytest.skip(f"{name}: {LEFT_OUT[name]}")
    port = _port(gateways[name])

    async def main() -> dict[str, bytes]:
        return {
            "over": await _exchange(port, _request(b"POST", body=b"x" * (limits.MAX_BODY + 1))),
            "at": await _exchange(port, _request(b"POST", body=b"x" * limits.MAX_BODY)),
            "small": await _exchange(port, _request(b"PUT", body=b"{}")),
            "head": await _exchange(
                port, _request(b"GET", b"X-Big: " + b"a" * limits.MAX_HEADER_BYTES + b"\r\n")
            ),
        }

    got = uvloop.run(main())
    assert _status(got["over"]) == 413, got["over"][:200]
    body = got["over"].partition(b"\r\n\r\n")[2]
    assert orjson.loads(body)["error"] == "too_large"
    assert _status(got["at"]) == 405 and _status(got["small"]) == 405
    assert _status(got["head"]) == 431, got["head"][:200]


async def _in_pieces(port: int, data: bytes, cut: int) -> bytes:
    """``data`` sent as two writes (the first ``cut`` bytes, a pause, the rest) on a new
    connection, and what the server answers."""
    reader, writer = await asyncio.open_connection(HOST, port)
    try:
        writer.write(data[:cut])
        await writer.drain()
        await asyncio.sleep(0.2)  # the server reads the first piece alone
        writer.write(data[cut:])
        await writer.drain()
        got = b""
        with contextlib.suppress(TimeoutError, ConnectionResetError):
            async with asyncio.timeout(10.0):
                while chunk := await reader.read(65536):
                    got += chunk
        return got
    finally:
        writer.close()


@pytest.mark.parametrize("cut", [40, limits.MAX_HEADER_BYTES - 100, limits.MAX_HEADER_BYTES])
@pytest.mark.parametrize("name", GATEWAYS)
def test_a_huge_head_read_in_two_pieces_is_still_431(
    name: str, cut: int, gateways: dict[str, LocalStack]
) -> None:
    """However the head's bytes arrive, every byte counts (reading the first piece alone
    once let a 64 KiB head through with 200)."""
    if name not in gateways:
        pytest.skip(f"{name}: {LEFT_OUT[name]}")
    head = _request(b"GET", b"X-Big: " + b"a" * limits.MAX_HEADER_BYTES + b"\r\n")
    got = uvloop.run(_in_pieces(_port(gateways[name]), head, cut))
    assert _status(got) == 431, got[:200]


async def _held(port: int) -> float:
    """Half a request on a new connection, then nothing: the seconds until the server
    closes it without an answer (inf: still open after the header timeout and the grace;
    -1: it answered)."""
    loop = asyncio.get_running_loop()
    reader, writer = await asyncio.open_connection(HOST, port)
    t0 = loop.time()
    try:
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        await writer.drain()
        async with asyncio.timeout(limits.HEADER_TIMEOUT_S + GRACE_S):
            data = await reader.read(1)
    except TimeoutError:
        return math.inf
    except ConnectionResetError:
        data = b""
    finally:
        writer.close()
    return loop.time() - t0 if not data else -1.0


async def _pages(port: int, until: asyncio.Event) -> list[tuple[int, float]]:
    """A normal client: product pages one after another, each on a new connection, until
    ``until`` is set: (status, seconds) of each."""
    out: list[tuple[int, float]] = []
    i = 0
    while not until.is_set():
        i += 1
        t0 = time.monotonic()
        path = b"/product/%d?customer_id=%d" % (i % 1000 + 1, i % 500 + 1)
        try:
            async with asyncio.timeout(PAGE_DEADLINE_S):
                answer = await _exchange(
                    port,
                    b"GET " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                )
        except (TimeoutError, OSError):
            answer = b""
        out.append((_status(answer), time.monotonic() - t0))
        await asyncio.sleep(0.05)
    return out


def test_half_sent_requests_are_closed_within_the_header_timeout_while_pages_flow(
    gateways: dict[str, LocalStack],
) -> None:
    """300 half-sent requests held open against each gateway at once: a normal client
    still gets every page within its deadline, and the server closes every half-open
    connection, without an answer, within the header timeout (plus a timer's grace)."""
    if not gateways:
        pytest.skip("no gateway could start")

    async def main() -> dict[str, tuple[list[float], list[tuple[int, float]]]]:
        out = {}
        for name, stack in gateways.items():  # one gateway at a time: its own numbers
            port = _port(stack)
            done = asyncio.Event()
            pages = asyncio.create_task(_pages(port, done))
            held = await asyncio.gather(*(_held(port) for _ in range(HALF_SENT)))
            await asyncio.sleep(0.5)
            done.set()
            out[name] = (held, await pages)
        return out

    results = uvloop.run(main())
    for name, (held, pages) in results.items():
        closed = sorted(held)
        print(
            f"{name}: {len(held)} half-sent closed after {closed[0]:.2f}-{closed[-1]:.2f} s; "
            f"{len(pages)} pages, slowest {max(s for _, s in pages):.3f} s"
        )
        assert -1.0 not in held, f"{name} answered a half-sent request"
        assert closed[-1] <= limits.HEADER_TIMEOUT_S + GRACE_S, (name, closed[-5:])
        assert closed[0] >= limits.HEADER_TIMEOUT_S - 0.5, (name, closed[:5])  # the timeout
        assert len(pages) >= 20, name
        assert all(status == 200 for status, _ in pages), (name, pages)
        assert max(s for _, s in pages) < PAGE_DEADLINE_S, name
