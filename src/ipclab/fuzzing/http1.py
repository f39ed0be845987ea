"""HTTP/1.1 inputs over raw sockets: the gateway fronts and every HTTP/1.1 listener.

Each generator takes the random source and the stack's own known-good page target (e.g.
``/product/1?customer_id=1``), so a path that reaches the stack's routes is mutated rather
than one that 404s at once."""

from __future__ import annotations

import asyncio
import random
import re
import time
from collections.abc import Callable

from ipclab.fuzzing.results import DEADLINE_S, GRACE_S, HOST, ClassResult, drive

UNICODE_DIGITS = "²³¹٣٤۵߁०१২੩૪୫௬౭೮൯๑໒༣၄႕០᠑१𝟏𝟙１"
Gen = Callable[[random.Random], bytes]  # one input
PageGen = Callable[[random.Random, bytes], bytes]  # one input, given the page's target


def q(raw: bytes) -> bytes:
    return b"".join(b"%%%02X" % c for c in raw)


def req(
    target: bytes, headers: list[bytes] | None = None, body: bytes = b"", method: bytes = b"GET"
) -> bytes:
    head = [method + b" " + target + b" HTTP/1.1", b"Host: 127.0.0.1", *(headers or [])]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


def post(target: bytes, ctype: bytes, body: bytes, extra: list[bytes] | None = None) -> bytes:
    head = [b"Content-Type: " + ctype, b"Content-Length: %d" % len(body), *(extra or [])]
    return req(target, head, body, b"POST")


def _path(page: bytes) -> bytes:
    return page.partition(b"?")[0]


def random_path(r: random.Random, page: bytes) -> bytes:
    alphabet = b"abcxyz0123456789/-._~!$&'()*+,;=:@%?#"
    tail = bytes(r.choice(alphabet) for _ in range(r.randint(0, 60)))
    return req((_path(page) if r.random() < 0.5 else b"") + b"/" + tail)


def overlong(r: random.Random, page: bytes) -> bytes:
    if r.random() < 0.5:
        return req(_path(page) + b"/" + b"9" * r.randint(20, 200_000))
    fields = b"&".join(b"f%d=%d" % (i, i) for i in range(r.randint(17, 20_000)))
    return req(_path(page) + b"?" + fields)


def bad_encoding(r: random.Random, page: bytes) -> bytes:
    pick = r.choice(
        [b"%zz", b"%C3", b"%FF%FE", b"%", b"%%", b"\xff\xfe", b"\xc3(", b"%00", b"%E2%82"]
    )
    return req(_path(page) + b"/" + pick + (b"?x=" + pick if r.random() < 0.5 else b""))


def unicode_digits(r: random.Random, page: bytes) -> bytes:
    """The page's own numbers (ids, counts) as other scripts' digits; a page without one
    gets them as an extra path segment."""

    def digits(_: re.Match[bytes]) -> bytes:
        return q("".join(r.choice(UNICODE_DIGITS) for _ in range(r.randint(1, 4))).encode())

    mutated = re.sub(rb"\d+", digits, page)
    return req(mutated if mutated != page else page + b"/" + digits(None))  # type: ignore[arg-type]


def huge_headers(r: random.Random, page: bytes) -> bytes:
    return req(page, [b"X-Big: " + b"a" * r.randint(8_000, 300_000)])


def dup_headers(r: random.Random, page: bytes) -> bytes:
    kind = r.randint(0, 2)
    if kind == 0:
        return req(page, [b"Host: evil"] * r.randint(1, 50))
    if kind == 1:
        return req(page, [b"Content-Length: 3", b"Content-Length: 7"], b"abc")
    return req(page, [b"X-A: %d" % i for i in range(r.randint(100, 3000))])


def body_on_get(r: random.Random, page: bytes) -> bytes:
    body = r.randbytes(r.randint(1, 5000))
    if r.random() < 0.5:
        return req(page, [b"Content-Length: %d" % len(body)], body)
    return req(
        page, [b"Transfer-Encoding: chunked"], b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"
    )


def random_bytes(r: random.Random, page: bytes) -> bytes:
    return r.randbytes(r.randint(1, 2000))


def partial_stall(r: random.Random, page: bytes) -> bytes:
    full = req(page)
    return full[: r.randint(1, len(full) - 1)]


STALL = "partial request, stalled"
CLASSES: dict[str, tuple[PageGen, float]] = {
    # name: (generator, share of the target's count)
    "random path": (random_path, 0.16),
    "overlong path/query": (overlong, 0.08),
    "invalid UTF-8 / percent-encoding": (bad_encoding, 0.14),
    "unicode digits": (unicode_digits, 0.14),
    "huge headers": (huge_headers, 0.06),
    "duplicated headers": (dup_headers, 0.12),
    "body on GET": (body_on_get, 0.12),
    "random bytes": (random_bytes, 0.14),
    STALL: (partial_stall, 0.04),
}
# what every HTTP/1.1 service listener gets (the gateway front gets all of CLASSES)
SERVICE_CLASSES = ("random path", "random bytes", "duplicated headers", "body on GET")


async def one(port: int, payload: bytes, stall: bool, eof: bool = False) -> tuple[str, float]:
    """Send ``payload`` on a fresh connection; the answer's status class, or what happened.
    ``eof``: half-close after sending (random bytes may be a request line not yet ended, for
    which a server rightly waits up to its header timeout; after EOF it must answer or close)."""
    t0 = time.monotonic()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port), GRACE_S)
    except (OSError, TimeoutError):
        return "connect refused", time.monotonic() - t0
    try:
        writer.write(payload)
        if eof and writer.can_write_eof():
            writer.write_eof()
        await writer.drain()
        if stall:
            try:  # the client stalls; the server may answer (408/400) or wait
                data = await asyncio.wait_for(reader.read(64), 0.5)
            except TimeoutError:
                return "no answer while stalled (client left)", time.monotonic() - t0
        else:
            data = await asyncio.wait_for(reader.read(64), DEADLINE_S + GRACE_S)
    except TimeoutError:
        return "no answer", time.monotonic() - t0
    except OSError:
        return "connection reset", time.monotonic() - t0
    finally:
        writer.close()
    took = time.monotonic() - t0
    if not data:
        return "closed, no answer", took
    if data[:7] == b"HTTP/1." and data[9:12].isdigit():
        return f"{data[9:10].decode()}xx", took
    return "other bytes", took


HALF_CLOSED = ("random bytes",)  # the classes after which the client half-closes


async def fuzz(
    res: ClassResult, ports: list[int], gen: Gen, n: int, seed: int, stall: bool = False
) -> None:
    """``n`` inputs from ``gen`` to each port (``results.drive``)."""
    half_close = res.name in HALF_CLOSED
    await drive(res, ports, lambda port, r: one(port, gen(r), stall, half_close), n, seed)
