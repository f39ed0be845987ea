"""The two services of the JSON-against-protobuf experiment, raw ASGI apps on ``serve_http``:

* the **data service** builds, serialises and deserialises ``Users`` (flat) and ``Payments``
  (nested): ``GET /{format}/{structure}?count=N`` answers N elements, ``POST
  /{format}/{structure}`` deserialises the body and answers a small acknowledgement;
  ``format`` is ``json`` (``application/json``) or ``protobuf``
  (``application/x-protobuf``);
* the **edge service** answers the same routes by calling the data service over HTTP/1.1
  (keep-alive), passing bodies, content types and encodings through unchanged: the chained
  hop of the study.

Knobs (``Settings``, from the environment): the JSON encoder (``IPCLAB_JSON_LIBRARY``:
orjson or the standard library; a factor, not a hidden choice), gzip on or off
(``IPCLAB_GZIP``: answers are compressed when the client accepts gzip, gzip bodies are
accepted), an in-memory cache of serialised answers (``IPCLAB_CACHE``) and the data seed.

What each answer says about itself: ``Server-Timing`` gives the data service's
serialisation (``ser``), compression (``gzip``), decompression (``gunzip``) and
deserialisation (``deser``) times in ms; ``X-Cache`` ``hit`` or ``miss``; ``X-Elements``
the count; with ``IPCLAB_TRACE_ALLOC`` a GET's ``X-Alloc-Peak`` is the peak of Python's
traced allocations (bytes) while it built and serialised the list. Bad input gets a 4xx at
once and the service keeps serving: an unknown route 404, a count that is not an integer in
0..``data.MAX_COUNT`` 400, a body of the wrong content type or encoding 415, a body that
does not decode (truncated protobuf, invalid JSON, a document of another shape) 400, a body
over ``max_body_bytes`` or a gzip body that inflates past ``max_inflated_bytes`` (a
decompression bomb) 413, read and inflated with those limits so memory stays bounded. The
acknowledgement is the same compact JSON for both formats (``{"received": N}``), so it adds
the same bytes to either.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
import tracemalloc
import zlib
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

import aiohttp
import orjson
from google.protobuf.message import DecodeError
from ipclab_services.domains.payload import codec, data
from ipclab_services.transports.rest import POOL_IDLE_S

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
Headers = list[tuple[bytes, bytes]]

FORMATS = tuple(codec.CONTENT_TYPES)  # ("json", "protobuf")
GZIP_LEVEL = 6
_PASSED = (
    b"content-type", b"content-encoding", b"server-timing", b"x-cache", b"x-elements",
    b"x-alloc-peak",
)  # fmt: skip


def _flag(env: dict[str, str], name: str) -> bool:
    raw = env.get(name, "0").strip().lower()
    if raw not in ("0", "1", "true", "false", "on", "off", ""):
        raise ValueError(f"{name}={raw!r}: use 1 or 0")
    return raw in ("1", "true", "on")


@dataclass(frozen=True)
class Settings:
    json_library: codec.JsonLibrary = "orjson"
    gzip: bool = False
    cache: bool = False
    seed: int = data.DEFAULT_SEED
    max_body_bytes: int = 64 * 2**20  # a request body as sent (flat 300,000 is ~63 MB JSON)
    max_inflated_bytes: int = 128 * 2**20  # a gzip body once inflated
    # trace Python's allocations (tracemalloc): a GET answers its peak in X-Alloc-Peak; slows
    # allocation and takes memory of its own, so not with timings or under a memory limit
    trace_alloc: bool = False

    def __post_init__(self) -> None:
        if self.json_library not in codec.JSON_LIBRARIES:
            raise ValueError(
                f"unknown JSON library {self.json_library!r}; "
                f"known: {', '.join(codec.JSON_LIBRARIES)}"
            )

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        e = dict(os.environ if env is None else env)
        return cls(
            json_library=e.get("IPCLAB_JSON_LIBRARY", "orjson"),  # type: ignore[arg-type]
            gzip=_flag(e, "IPCLAB_GZIP"),
            cache=_flag(e, "IPCLAB_CACHE"),
            seed=int(e.get("IPCLAB_SEED", str(data.DEFAULT_SEED))),
            max_body_bytes=int(e.get("IPCLAB_MAX_BODY_BYTES", str(cls.max_body_bytes))),
            max_inflated_bytes=int(e.get("IPCLAB_MAX_INFLATED_BYTES", str(cls.max_inflated_bytes))),
            trace_alloc=_flag(e, "IPCLAB_TRACE_ALLOC"),
        )


class Refused(Exception):
    """A request answered with a 4xx: ``status`` and an error document."""

    def __init__(self, status: int, error: str, message: str) -> None:
        super().__init__(message)
        self.status, self.error = status, error


async def _respond(send: Send, status: int, body: bytes, headers: Headers) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-length", str(len(body)).encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _refuse(send: Send, e: Refused) -> None:
    body = orjson.dumps({"error": e.error, "message": str(e)})
    await _respond(send, e.status, body, [(b"content-type", b"application/json")])


def _header(scope: Scope, name: bytes) -> str:
    for k, v in scope.get("headers", ()):
        if k.lower() == name:
            return bytes(v).decode("latin-1")
    return ""


def _route(scope: Scope) -> tuple[str, data.Structure]:
    parts = [p for p in scope["path"].split("/") if p]
    if len(parts) != 2 or parts[0] not in FORMATS or parts[1] not in data.STRUCTURES:
        raise Refused(404, "not_found", "routes: /{json|protobuf}/{flat|nested}")
    return parts[0], parts[1]  # type: ignore[return-value]


def _count(scope: Scope) -> int:
    query = dict(parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True))
    raw = query.get("count", "")
    if not raw.isascii() or not raw.isdigit():
        raise Refused(400, "bad_request", f"count must be an integer in 0..{data.MAX_COUNT}")
    count = int(raw)
    if count > data.MAX_COUNT:
        raise Refused(400, "bad_request", f"count must be in 0..{data.MAX_COUNT}, not {count}")
    return count


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f}"


async def _read_body(receive: Receive, limit: int) -> bytes:
    """The request body, refused with a 413 as soon as it passes ``limit`` bytes."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Refused(400, "bad_request", "the client went away mid-body")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise Refused(413, "too_large", f"the body passes {limit} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


INFLATE_STEP = 1 << 20  # bytes inflated between two turns of the event loop


def _inflating(body: bytes, limit: int) -> Iterator[bytes]:
    """A gzip body inflated in pieces of at most ``INFLATE_STEP`` bytes, refused (413) once
    it would pass ``limit`` bytes: a decompression bomb costs at most ``limit`` bytes of
    memory. A body that is not whole gzip is a 400."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    size, rest = 0, body
    try:
        while True:
            piece = d.decompress(rest, min(INFLATE_STEP, limit + 1 - size))
            size += len(piece)
            if size > limit:
                raise Refused(413, "too_large", f"the gzip body inflates past {limit} bytes")
            yield piece
            rest = d.unconsumed_tail
            if not rest:
                break
    except zlib.error as e:
        raise Refused(400, "bad_request", f"the gzip body does not inflate: {e}") from None
    if not d.eof:
        raise Refused(400, "bad_request", "the gzip body is truncated")


def inflate(body: bytes, limit: int) -> bytes:
    return b"".join(_inflating(body, limit))


async def inflate_stepwise(body: bytes, limit: int) -> bytearray:
    """``inflate``, giving the event loop a turn after every step: a bomb (250 kB of gzip
    inflating to the 128 MiB limit takes ~0.3 s of CPU, seconds on a busy host) no longer
    holds every other request of the service for that long (the fuzzing campaign's bombs
    made the payload stack's page time out, issue 28). The pieces grow one buffer (a join
    of them would hold the inflated body twice at its end: up to twice the limit)."""
    out = bytearray()
    for piece in _inflating(body, limit):
        out += piece
        await asyncio.sleep(0)
    return out  # bytes-like: the decoders read it as they read bytes


def decode(
    fmt: str, structure: data.Structure, raw: bytes | bytearray, library: codec.JsonLibrary
) -> int:
    """How many elements ``raw`` holds, or a 400 when it is not a ``structure`` document."""
    key = data.WRAPPER[structure]
    if fmt == "protobuf":
        try:
            return len(getattr(codec.decode_protobuf(structure, raw), key))
        except DecodeError as e:
            raise Refused(400, "bad_request", f"not a {structure} protobuf: {e}") from None
    try:
        doc = codec.decode_json(raw, library)
    except ValueError as e:  # orjson.JSONDecodeError and json's are ValueErrors
        raise Refused(400, "bad_request", f"invalid JSON: {e}") from None
    elements = doc.get(key) if isinstance(doc, dict) else None
    if not isinstance(elements, list) or not all(isinstance(x, dict) for x in elements):
        raise Refused(400, "bad_request", f'a {structure} document is {{"{key}": [{{...}}]}}')
    return len(elements)


class DataService:
    """The data service (an ASGI app)."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self._cache: dict[tuple[str, str, int, bool], bytes] = {}
        self._inflating = asyncio.Lock()  # one body inflates at a time: memory as before
        if self.settings.trace_alloc and not tracemalloc.is_tracing():
            tracemalloc.start()

    def describe(self) -> bytes:
        """``/healthz``: ready, with the knobs it runs with and the protobuf backend (a
        client and a run's records learn from it what the service did)."""
        settings = dataclasses.asdict(self.settings)
        return orjson.dumps({"ok": True, "settings": settings, **codec.protobuf_backend()})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        try:
            if scope["path"] == "/healthz":
                await _respond(send, 200, self.describe(), [(b"content-type", b"application/json")])
                return
            fmt, structure = _route(scope)
            if scope["method"] == "GET":
                await self._get(scope, send, fmt, structure)
            elif scope["method"] == "POST":
                await self._post(scope, receive, send, fmt, structure)
            else:
                raise Refused(405, "method_not_allowed", "GET or POST")
        except Refused as e:
            await _refuse(send, e)

    async def _get(self, scope: Scope, send: Send, fmt: str, structure: data.Structure) -> None:
        count = _count(scope)
        gz = self.settings.gzip and "gzip" in _header(scope, b"accept-encoding")
        key = (fmt, structure, count, gz)
        timing = []
        body = self._cache.get(key) if self.settings.cache else None
        hit = body is not None
        if body is None:
            if self.settings.trace_alloc:
                tracemalloc.reset_peak()
            # this format's form, built once per (structure, count, seed), outside the timing
            ds = data.dataset(structure, count, self.settings.seed)
            value = await asyncio.to_thread(lambda: ds.document if fmt == "json" else ds.message)
            t0 = time.perf_counter()
            if fmt == "json":
                body = codec.encode_json(value, self.settings.json_library)
            else:
                body = codec.encode_protobuf(value)
            timing.append(f"ser;dur={_ms(time.perf_counter() - t0)}")
            if gz:
                t0 = time.perf_counter()
                body = zlib_gzip(body)
                timing.append(f"gzip;dur={_ms(time.perf_counter() - t0)}")
            if self.settings.cache:
                self._cache[key] = body
        headers: Headers = [
            (b"content-type", codec.CONTENT_TYPES[fmt].encode()),
            (b"x-cache", b"hit" if hit else b"miss"),
            (b"x-elements", str(count).encode()),
        ]
        if gz:
            headers.append((b"content-encoding", b"gzip"))
        if timing:
            headers.append((b"server-timing", ", ".join(timing).encode()))
        if self.settings.trace_alloc and not hit:
            headers.append((b"x-alloc-peak", str(tracemalloc.get_traced_memory()[1]).encode()))
        await _respond(send, 200, body, headers)

    async def _post(
        self, scope: Scope, receive: Receive, send: Send, fmt: str, structure: data.Structure
    ) -> None:
        ctype = _header(scope, b"content-type").split(";")[0].strip().lower()
        if ctype != codec.CONTENT_TYPES[fmt]:
            raise Refused(415, "unsupported_media_type", f"send {codec.CONTENT_TYPES[fmt]}")
        encoding = _header(scope, b"content-encoding").strip().lower()
        if encoding not in ("", "identity") and not (encoding == "gzip" and self.settings.gzip):
            raise Refused(415, "unsupported_media_type", f"content-encoding {encoding!r}")
        raw: bytes | bytearray = await _read_body(receive, self.settings.max_body_bytes)
        timing = []
        if encoding == "gzip":
            async with self._inflating:
                t0 = time.perf_counter()
                raw = await inflate_stepwise(raw, self.settings.max_inflated_bytes)
            timing.append(f"gunzip;dur={_ms(time.perf_counter() - t0)}")
        t0 = time.perf_counter()
        n = decode(fmt, structure, raw, self.settings.json_library)
        timing.append(f"deser;dur={_ms(time.perf_counter() - t0)}")
        headers: Headers = [
            (b"content-type", b"application/json"),
            (b"x-elements", str(n).encode()),
            (b"server-timing", ", ".join(timing).encode()),
        ]
        await _respond(send, 200, orjson.dumps({"received": n}), headers)


def zlib_gzip(body: bytes) -> bytes:
    """gzip at level 6 (``gzip.compress`` writes the same stream with a time in its header)."""
    c = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return c.compress(body) + c.flush()


class EdgeService:
    """The edge service (an ASGI app): every route of the data service, through one
    keep-alive HTTP/1.1 session, bodies and their headers passed through; the data service
    unreachable is a 503, slower than ``timeout_s`` a 504."""

    def __init__(self, upstream: str, timeout_s: float = 30.0) -> None:
        self.upstream = upstream.rstrip("/")
        self.timeout_s = timeout_s
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=100, keepalive_timeout=POOL_IDLE_S),
                auto_decompress=False,
                skip_auto_headers=("Accept-Encoding", "Content-Type", "User-Agent"),
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        try:
            if scope["path"] == "/healthz":
                await self._health(send)
                return
            _route(scope)
            body = b""
            if scope["method"] == "POST":
                body = await _read_body(receive, Settings.max_body_bytes)
            await self._forward(scope, body, send)
        except Refused as e:
            await _refuse(send, e)

    async def _health(self, send: Send) -> None:
        """200 once the data service answers its own ``/healthz`` (within 1 s), else 503:
        the gateway's readiness, as in every stack."""
        try:
            async with self._client().get(
                self.upstream + "/healthz", timeout=aiohttp.ClientTimeout(total=1.0)
            ) as r:
                state = "ok" if r.status == 200 else f"HTTP {r.status}"
                described = orjson.loads(await r.read()) if r.status == 200 else None
        except (TimeoutError, aiohttp.ClientError, orjson.JSONDecodeError) as e:
            state, described = type(e).__name__, None
        ready = state == "ok"
        body = orjson.dumps({"ready": ready, "services": {"data": state}, "data": described})
        await _respond(send, 200 if ready else 503, body, [(b"content-type", b"application/json")])

    async def _forward(self, scope: Scope, body: bytes, send: Send) -> None:
        url = self.upstream + scope["path"]
        if scope["query_string"]:
            url += "?" + scope["query_string"].decode("latin-1")
        headers = {
            k.decode("latin-1"): bytes(v).decode("latin-1")
            for k, v in scope.get("headers", ())
            if k.lower() in (b"content-type", b"content-encoding", b"accept-encoding")
        }
        try:
            async with self._client().request(
                scope["method"],
                url,
                data=body if scope["method"] == "POST" else None,
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=self.timeout_s),
            ) as r:
                answer = await r.read()
                passed = [
                    (k.lower(), v)
                    for k, v in r.raw_headers
                    if k.lower() in _PASSED
                ]  # fmt: skip
                await _respond(send, r.status, answer, passed)
        except TimeoutError:
            raise Refused(
                504, "timeout", f"the data service took over {self.timeout_s} s"
            ) from None
        except aiohttp.ClientError as e:
            raise Refused(503, "unavailable", f"the data service: {type(e).__name__}") from None
