"""CoAP inputs (RFC 7252 over UDP) to every listener that speaks it: the services of a CoAP
stack, a CoAP stack's ingress adapters.

Each input is one datagram from a fresh UDP endpoint on 127.0.0.1. A confirmable request
must be answered (a response, or a reset) within the deadline; a datagram that is not a
request (random bytes, a truncated message) may be dropped silently, as RFC 7252 4.2 and
4.3 allow, so for those only an answer's kind is recorded. Bodies over the cap must get
4.13 (Request Entity Too Large) at the block that passes it."""

from __future__ import annotations

import asyncio
import random
import time
import warnings
from collections.abc import Callable

from aiocoap import CON, NON, Message
from aiocoap.numbers.codes import Code
from aiocoap.optiontypes import BlockOption

from ipclab.fuzzing.results import DEADLINE_S, GRACE_S, HOST, ClassResult, drive

Input = tuple[bytes, bool]  # (the datagram, whether an answer is due)
SILENT_WAIT_S = 0.3  # how long a datagram that needs no answer waits for one anyway
_REQUESTS = (Code.GET, Code.POST, Code.PUT, Code.DELETE, Code.FETCH, Code.PATCH, Code.iPATCH)


def _message(r: random.Random, code: Code, path: tuple[str, ...], query: tuple[str, ...] = (),
             payload: bytes = b"", confirmable: bool = True) -> Message:  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        m = Message(code=code, payload=payload, uri_path=path, uri_query=query)
        m.mtype = CON if confirmable else NON
        m.mid = r.randrange(1 << 16)
        m.token = r.randbytes(r.randint(0, 8))
    return m


def _page(page: bytes) -> tuple[tuple[str, ...], tuple[str, ...]]:
    path, _, query = page.decode().partition("?")
    return tuple(s for s in path.split("/") if s), tuple(s for s in query.split("&") if s)


def requests(r: random.Random, page: bytes) -> Input:
    """Confirmable requests with random codes, paths, queries, payloads and options."""
    path, query = _page(page)
    words = ["", "..", "x" * r.randint(1, 300), "\u0663", "%zz", "get", "ping", *path]
    if r.random() < 0.5:
        path = tuple(r.choice(words) for _ in range(r.randint(0, 6)))
    if r.random() < 0.5:
        names, values = ["product_id", "customer_id", "x", ""], ["1", "-1", "9" * 30, "²", ""]
        query = tuple(f"{r.choice(names)}={r.choice(values)}"
                      for _ in range(r.randint(0, 5)))  # fmt: skip
    m = _message(
        r,
        r.choice(_REQUESTS),
        path,
        query,
        r.randbytes(r.randint(0, 900)) if r.random() < 0.3 else b"",
    )
    if r.random() < 0.2:  # an unknown critical option: 4.02 Bad Option (RFC 7252 5.4.1)
        m.opt.add_option(_opaque(r.choice([9, 13, 65001]), r.randbytes(r.randint(0, 20))))
    if r.random() < 0.2:  # an Accept or Content-Format nobody serves
        m.opt.accept = r.randrange(1 << 16)
    return m.encode(), True


def _opaque(number: int, value: bytes):  # type: ignore[no-untyped-def]
    from aiocoap.numbers.optionnumbers import OptionNumber
    from aiocoap.optiontypes import OpaqueOption

    return OpaqueOption(OptionNumber(number), value)


def blockwise(r: random.Random, page: bytes) -> Input:
    """Block1 transfers: announced or reached over the cap (4.13), or started and left
    unfinished (the server keeps at most so many, for ~93 s), or out of order."""
    path, _ = _page(page)
    kind = r.randint(0, 2)
    szx = r.randint(0, 6)
    size = 16 << szx
    m = _message(r, Code.POST, path, payload=r.randbytes(size))
    if kind == 0:
        m.opt.block1 = BlockOption.BlockwiseTuple(0, True, szx)
        m.opt.size1 = r.choice([(1 << 20) + 1, 1 << 30, (1 << 32) - 1])
    elif kind == 1:
        m.opt.block1 = BlockOption.BlockwiseTuple(
            r.choice([(1 << 20) // size + 1, 1 << 19]), True, szx
        )
    else:
        m.opt.block1 = BlockOption.BlockwiseTuple(r.randint(0, 3), r.random() < 0.5, szx)
    return m.encode(), True


def truncated(r: random.Random, page: bytes) -> Input:
    path, query = _page(page)
    raw = _message(r, Code.GET, path, query).encode()
    return raw[: r.randint(0, len(raw) - 1)], False


def random_bytes(r: random.Random, page: bytes) -> Input:
    return r.randbytes(r.randint(1, 1200)), False


CLASSES: dict[str, tuple[Callable[[random.Random, bytes], Input], float]] = {
    "CoAP: requests with random codes, paths, queries, options": (requests, 0.5),
    "CoAP: block-wise bodies over the cap, unfinished, out of order": (blockwise, 0.1),
    "CoAP: truncated messages": (truncated, 0.2),
    "CoAP: random datagrams": (random_bytes, 0.2),
}


class _Catch(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.answer: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

    def datagram_received(self, data: bytes, addr: object) -> None:
        if not self.answer.done():
            self.answer.set_result(data)

    def error_received(self, exc: Exception) -> None:
        if not self.answer.done():
            self.answer.set_exception(exc)


def _kind(data: bytes) -> str:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = Message.decode(data)
    except Exception:  # noqa: BLE001 - bytes that are not CoAP
        return "other bytes"
    if m.mtype.name == "RST":
        return "reset"
    if m.code == Code.EMPTY:
        return "empty ACK"
    return str(m.code.dotted)


async def one(port: int, data: bytes, due: bool) -> tuple[str, float]:
    loop = asyncio.get_running_loop()
    t0 = time.monotonic()
    transport, proto = await loop.create_datagram_endpoint(
        _Catch, local_addr=(HOST, 0), remote_addr=(HOST, port)
    )
    try:
        transport.sendto(data)
        answer = await asyncio.wait_for(
            proto.answer, DEADLINE_S + GRACE_S if due else SILENT_WAIT_S
        )
        return _kind(answer), time.monotonic() - t0
    except TimeoutError:
        return ("no answer" if due else "dropped (no answer due)"), time.monotonic() - t0
    except OSError:
        return "ICMP unreachable", time.monotonic() - t0
    finally:
        transport.close()


async def fuzz(
    res: ClassResult,
    ports: list[int],
    gen: Callable[[random.Random, bytes], Input],
    page: bytes,
    n: int,
    seed: int,
) -> None:
    await drive(res, ports, lambda port, r: one(port, *gen(r, page)), n, seed)
