"""h2c inputs (HTTP/2 with prior knowledge) to every listener that speaks it: the services
of an h2c stack, an h2c stack's ingress adapters (Python's relay or nghttpx).

Each input is one connection. Requests built with ``h2`` (its outbound checks off, so
invalid header fields get through) wait for their stream's answer; raw inputs (random
bytes, random frames) half-close the connection after sending, and the server must close
it within the deadline. The outcome is the answer's status class, or the GOAWAY or
RST_STREAM the server sent, or how the connection ended."""

from __future__ import annotations

import asyncio
import random
import struct
import time
from collections.abc import Callable

import h2.config
import h2.connection
import hpack

from ipclab.fuzzing.results import DEADLINE_S, GRACE_S, HOST, ClassResult, drive

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # an empty SETTINGS frame
Input = tuple[bytes, bool]  # (bytes to send, whether a stream 1 answer is awaited)


def _h2(headers: list[tuple[bytes, bytes]], body: bytes = b"") -> bytes:
    c = h2.connection.H2Connection(
        h2.config.H2Configuration(
            client_side=True, validate_outbound_headers=False, normalize_outbound_headers=False
        )
    )
    c.initiate_connection()
    c.send_headers(1, headers, end_stream=not body)
    if body:
        c.send_data(1, body[:16_384], end_stream=True)
    return c.data_to_send()


def _base(path: bytes, method: bytes = b"GET") -> list[tuple[bytes, bytes]]:
    return [
        (b":method", method),
        (b":scheme", b"http"),
        (b":authority", b"127.0.0.1"),
        (b":path", path),
    ]


def requests(r: random.Random, page: bytes) -> Input:
    """Well-framed requests with random paths, methods, queries and header fields."""
    alphabet = b"abcxyz0123456789/-._~%?&=\xff\x00"
    path = r.choice([page, b"/" + bytes(r.choice(alphabet) for _ in range(r.randint(0, 60)))])
    headers = _base(path, r.choice([b"GET", b"GET", b"POST", b"HEAD", b"DELETE", b"BREW"]))
    kind = r.randint(0, 5)
    if kind == 1:
        headers.append((b"x-big", b"a" * r.randint(1_000, 15_000)))
    elif kind == 2:  # connection-specific or smuggling fields (RFC 9113, 8.2.2)
        headers += r.sample(
            [
                (b"connection", b"close"),
                (b"transfer-encoding", b"chunked"),
                (b"content-length", b"-1"),
                (b"upgrade", b"h2c"),
                (b"te", b"trailers, gzip"),
                (b"host", b"evil"),
            ],
            r.randint(1, 3),
        )
    elif kind == 3:  # invalid names and values
        headers += [(b"X-Upper", b"1"), (b"bad name", b"x"), (b"x-crlf", b"a\r\nb: c"), (b"", b"e")]
    elif kind == 4:  # pseudo-headers missing, twice, or after a regular field
        headers = r.choice([headers[1:], headers + [(b":path", b"/x")], [(b"x", b"1"), *headers]])
    body = r.randbytes(r.randint(1, 20_000)) if kind == 5 else b""
    if kind == 5 and r.random() < 0.5:
        headers.append((b"content-length", b"%d" % r.randint(0, 40_000)))
    try:
        return _h2(headers, body), True
    except Exception:  # noqa: BLE001 - a field even h2's unchecked path cannot frame
        return _h2(_base(page)), True


def random_frames(r: random.Random, page: bytes) -> Input:
    """After a valid preface and SETTINGS: frames of random type, flags, stream and payload."""
    out = [PREFACE, _SETTINGS]
    for _ in range(r.randint(1, 8)):
        payload = r.randbytes(r.randint(0, 64))
        ftype = r.choice([r.randrange(0, 10), r.randrange(256)])
        stream = r.choice([0, 1, 2, 3, r.getrandbits(31)])
        out.append(struct.pack(">I", len(payload))[1:] + bytes([ftype, r.randrange(256)]) +
                   struct.pack(">I", stream) + payload)  # fmt: skip
    return b"".join(out), False


def random_after_preface(r: random.Random, page: bytes) -> Input:
    return PREFACE + r.randbytes(r.randint(1, 2000)), False


def random_bytes(r: random.Random, page: bytes) -> Input:
    return r.randbytes(r.randint(1, 2000)), False


CLASSES: dict[str, tuple[Callable[[random.Random, bytes], Input], float]] = {
    "h2: requests with random paths, methods, fields": (requests, 0.4),
    "h2: random frames after the preface": (random_frames, 0.3),
    "h2: random bytes after the preface": (random_after_preface, 0.15),
    "h2: random bytes, no preface": (random_bytes, 0.15),
}


def _frames(buf: bytearray) -> list[tuple[int, int, int, bytes]]:
    out = []
    while len(buf) >= 9:
        length = int.from_bytes(buf[:3], "big")
        if len(buf) < 9 + length:
            break
        ftype, flags = buf[3], buf[4]
        stream = int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
        out.append((ftype, flags, stream, bytes(buf[9 : 9 + length])))
        del buf[: 9 + length]
    return out


async def one(port: int, data: bytes, wait_answer: bool) -> tuple[str, float]:
    t0 = time.monotonic()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port), GRACE_S)
    except (OSError, TimeoutError):
        return "connect refused", time.monotonic() - t0
    decoder = hpack.Decoder()
    buf = bytearray()
    outcome = "closed, no frame"
    try:
        writer.write(data)
        if not wait_answer and writer.can_write_eof():
            writer.write_eof()
        await writer.drain()
        deadline = t0 + DEADLINE_S + GRACE_S
        while True:
            chunk = await asyncio.wait_for(
                reader.read(65536), max(0.01, deadline - time.monotonic())
            )
            if not chunk:
                break
            buf += chunk
            for ftype, _flags, stream, payload in _frames(buf):
                if ftype == 0x7:  # GOAWAY
                    outcome = f"GOAWAY {int.from_bytes(payload[4:8], 'big')}"
                elif ftype == 0x3 and stream == 1:  # RST_STREAM
                    return f"RST_STREAM {int.from_bytes(payload[:4], 'big')}", time.monotonic() - t0
                elif ftype == 0x1 and stream == 1:  # HEADERS (no padding/priority from servers)
                    try:
                        fields = dict(decoder.decode(payload))
                        status = fields.get(":status", fields.get(b":status", "?"))
                        status = status.decode() if isinstance(status, bytes) else status
                        return f"{status[:1]}xx", time.monotonic() - t0
                    except Exception:  # noqa: BLE001 - a block we cannot read is still an answer
                        return "HEADERS", time.monotonic() - t0
            if outcome.startswith("GOAWAY") and wait_answer:
                break
    except TimeoutError:
        return ("no answer" if wait_answer else "not closed"), time.monotonic() - t0
    except OSError:
        return "connection reset", time.monotonic() - t0
    finally:
        writer.close()
    return outcome, time.monotonic() - t0


async def fuzz(
    res: ClassResult,
    ports: list[int],
    gen: Callable[[random.Random, bytes], Input],
    page: bytes,
    n: int,
    seed: int,
) -> None:
    late = ("no answer", "not closed")
    await drive(res, ports, lambda port, r: one(port, *gen(r, page)), n, seed, late)
