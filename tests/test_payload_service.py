"""The Buono & Petrovic services (issue 16, must-show 1): JSON and protobuf answers decode
to the same data for every structure and count up to 650; malformed input gets a 4xx within
the deadline and the service keeps serving; gzip, the cache and Server-Timing; the edge
service passes bodies through over a real HTTP hop."""

from __future__ import annotations

import asyncio
import gzip
import socket
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import pytest
from ipclab_services.asgi import serve_http
from ipclab_services.domains.payload import codec, data
from ipclab_services.domains.payload.http import (
    DataService,
    EdgeService,
    Settings,
    inflate,
    zlib_gzip,
)

App = Callable[..., Awaitable[None]]
DEADLINE_S = 2.0


async def call(
    app: App,
    method: str,
    path: str,
    query: str = "",
    body: bytes = b"",
    headers: dict[str, str] | None = None,
    chunk: int = 1 << 16,
) -> tuple[int, dict[str, str], bytes]:
    """One request to an ASGI app, in process: status, headers, body."""
    chunks = [body[i : i + chunk] for i in range(0, len(body), chunk)] or [b""]
    pending = list(chunks)

    async def receive() -> dict[str, Any]:
        piece = pending.pop(0)
        return {"type": "http.request", "body": piece, "more_body": bool(pending)}

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": query.encode(),
        "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()],
    }
    await asyncio.wait_for(app(scope, receive, send), DEADLINE_S)
    start = sent[0]
    hdrs = {k.decode(): v.decode() for k, v in start["headers"]}
    return start["status"], hdrs, b"".join(m.get("body", b"") for m in sent[1:])


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(coro)  # type: ignore[arg-type]


def _as_documents(structure: data.Structure, fmt: str, body: bytes) -> Any:
    if fmt == "json":
        return orjson.loads(body)
    return codec.message_to_document(codec.decode_protobuf(structure, body))


@pytest.mark.parametrize("structure", data.STRUCTURES)
def test_json_and_protobuf_answers_hold_the_same_data_up_to_650(structure: str) -> None:
    app = DataService()

    async def check() -> None:
        for count in (0, 1, 5, 50, 100, 325, 650):  # the grid's counts up to 650, and edges
            docs = []
            for fmt in ("json", "protobuf"):
                status, hdrs, body = await call(app, "GET", f"/{fmt}/{structure}", f"count={count}")
                assert status == 200, body
                assert hdrs["content-type"] == codec.CONTENT_TYPES[fmt]
                assert hdrs["x-elements"] == str(count)
                assert hdrs["server-timing"].startswith("ser;dur=")
                docs.append(_as_documents(structure, fmt, body))  # type: ignore[arg-type]
            key = data.WRAPPER[structure]  # type: ignore[index]
            assert docs[0][key] == docs[1].get(key, []), (structure, count)

    run(check())


def test_both_json_encoders_answer_the_same_bytes() -> None:
    async def bodies(library: str) -> list[bytes]:
        app = DataService(Settings(json_library=library))  # type: ignore[arg-type]
        return [(await call(app, "GET", f"/json/{s}", "count=50"))[2] for s in data.STRUCTURES]

    assert run(bodies("json")) == run(bodies("orjson"))


@pytest.mark.parametrize("structure", data.STRUCTURES)
def test_a_post_is_deserialised_and_acknowledged_in_both_formats(structure: str) -> None:
    ds = data.dataset(structure, 50)  # type: ignore[arg-type]
    app = DataService()
    bodies = {"json": codec.encode_json(ds.document), "protobuf": codec.encode_protobuf(ds.message)}

    async def check() -> None:
        for fmt, body in bodies.items():
            ctype = {"content-type": codec.CONTENT_TYPES[fmt]}
            status, hdrs, ack = await call(app, "POST", f"/{fmt}/{structure}", body=body,
                                           headers=ctype)  # fmt: skip
            assert (status, orjson.loads(ack)) == (200, {"received": 50})
            assert "deser;dur=" in hdrs["server-timing"]

    run(check())


def _bomb(inflated: int) -> bytes:
    return zlib_gzip(b"0" * inflated)


MALFORMED = [
    # (name, method, path, query, body, headers, status)
    ("unknown format", "GET", "/xml/flat", "count=5", b"", {}, 404),
    ("unknown structure", "GET", "/json/deep", "count=5", b"", {}, 404),
    ("count -1", "GET", "/json/flat", "count=-1", b"", {}, 400),
    ("count 10^9", "GET", "/protobuf/flat", "count=1000000000", b"", {}, 400),
    ("count not a number", "GET", "/json/nested", "count=five", b"", {}, 400),
    ("no count", "GET", "/json/nested", "", b"", {}, 400),
    ("PUT", "PUT", "/json/flat", "", b"{}", {}, 405),
    ("truncated protobuf", "POST", "/protobuf/flat", "", "TRUNCATED", {}, 400),
    ("invalid JSON", "POST", "/json/flat", "", b'{"users": [', {}, 400),
    ("JSON of another shape", "POST", "/json/nested", "", b'{"users": []}', {}, 400),
    ("wrong content type", "POST", "/protobuf/flat", "", b"{}", {"content-type": "text/plain"},
     415),
    ("JSON sent as protobuf", "POST", "/json/flat", "", b"{}",
     {"content-type": "application/x-protobuf"}, 415),
    ("gzip bomb", "POST", "/json/flat", "", "BOMB", {"content-encoding": "gzip"}, 413),
    ("truncated gzip", "POST", "/json/flat", "", "HALFGZIP", {"content-encoding": "gzip"}, 400),
    ("unknown encoding", "POST", "/json/flat", "", b"{}", {"content-encoding": "br"}, 415),
    ("body over the limit", "POST", "/json/flat", "", "HUGE", {}, 413),
]  # fmt: skip


def test_malformed_input_gets_a_4xx_within_the_deadline_and_the_service_keeps_serving() -> None:
    limits = Settings(gzip=True, max_body_bytes=1 << 20, max_inflated_bytes=4 << 20)
    app = DataService(limits)
    users = data.dataset("flat", 5)
    whole = codec.encode_protobuf(users.message)
    special = {
        "TRUNCATED": whole[:-1],
        "BOMB": _bomb(1 << 30),  # 1 GiB of zeros in about 1 MB
        "HALFGZIP": zlib_gzip(codec.encode_json(users.document))[:40],
        "HUGE": b" " * ((1 << 20) + 1),
    }

    async def check() -> None:
        for name, method, path, query, body, headers, want in MALFORMED:
            fmt = path.split("/")[1]
            h = {"content-type": codec.CONTENT_TYPES.get(fmt, "application/json"), **headers}
            b = special[body] if isinstance(body, str) else body
            status, hdrs, answer = await call(app, method, path, query, b, h)
            assert status == want, (name, status, answer)
            assert orjson.loads(answer)["error"], name
            # and it keeps serving
            ok, _, again = await call(app, "GET", "/protobuf/flat", "count=5")
            assert (ok, again) == (200, whole), name

    run(check())


def test_a_bomb_is_refused_after_inflating_no_more_than_the_limit() -> None:
    from ipclab_services.domains.payload.http import Refused

    with pytest.raises(Refused) as e:
        inflate(_bomb(64 << 20), limit=1 << 20)
    assert e.value.status == 413
    assert inflate(_bomb(1 << 20), limit=1 << 20) == b"0" * (1 << 20)


def test_a_page_is_served_while_bombs_inflate() -> None:
    """Bombs inflate in steps with the event loop free between them: a GET that arrives
    after four bombs is answered before the last bomb is done (before, each bomb held the
    loop until it reached the limit; the fuzzing campaign's page check timed out)."""
    app = DataService(Settings(gzip=True, max_inflated_bytes=32 << 20))
    bomb = _bomb(1 << 30)
    done: dict[str, float] = {}

    async def timed(name: str, *args: Any, **kwargs: Any) -> int:
        status, _, _ = await call(app, *args, **kwargs)
        done[name] = time.monotonic()
        return status

    async def check() -> list[int]:
        gz = {"content-type": "application/json", "content-encoding": "gzip"}
        bombs = [timed(f"bomb{i}", "POST", "/json/flat", "", bomb, gz) for i in range(4)]
        return await asyncio.gather(*bombs, timed("page", "GET", "/protobuf/flat", "count=5"))

    assert run(check()) == [413, 413, 413, 413, 200]
    assert done["page"] < max(v for k, v in done.items() if k.startswith("bomb"))


def test_gzip_both_ways_and_the_cache() -> None:
    app = DataService(Settings(gzip=True, cache=True))
    ds = data.dataset("nested", 50)

    async def check() -> None:
        s, h, raw = await call(app, "GET", "/json/nested", "count=50")
        assert "content-encoding" not in h  # the client did not ask for gzip
        s, h, gz = await call(app, "GET", "/json/nested", "count=50", headers={
            "accept-encoding": "gzip, deflate"})  # fmt: skip
        assert h["content-encoding"] == "gzip" and gzip.decompress(gz) == raw
        assert h["x-cache"] == "miss" and "gzip;dur=" in h["server-timing"]
        s, h, again = await call(app, "GET", "/json/nested", "count=50", headers={
            "accept-encoding": "gzip"})  # fmt: skip
        assert (h["x-cache"], again) == ("hit", gz) and "server-timing" not in h
        body = zlib_gzip(codec.encode_protobuf(ds.message))
        s, h, ack = await call(app, "POST", "/protobuf/nested", body=body, headers={
            "content-type": "application/x-protobuf", "content-encoding": "gzip"})  # fmt: skip
        assert (s, orjson.loads(ack)) == (200, {"received": 50})
        assert "gunzip;dur=" in h["server-timing"]

    run(check())
    # gzip off: a gzip body is refused, answers are never compressed
    plain = DataService(Settings(gzip=False))
    s, h, _ = run(call(plain, "GET", "/json/flat", "count=5", headers={"accept-encoding": "gzip"}))
    assert s == 200 and "content-encoding" not in h


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_edge_passes_bodies_through_a_real_http_hop_and_says_503_without_data() -> None:
    async def check() -> None:
        port = _free_port()
        ready = asyncio.Event()
        server = asyncio.create_task(
            serve_http(DataService(Settings(gzip=True)), "127.0.0.1", port, ready)
        )
        await asyncio.wait_for(ready.wait(), 10)
        edge = EdgeService(f"http://127.0.0.1:{port}", timeout_s=5)
        try:
            direct = await call(DataService(), "GET", "/protobuf/nested", "count=5")
            s, h, body = await call(edge, "GET", "/protobuf/nested", "count=5")
            assert (s, body) == (200, direct[2])
            assert (
                h["content-type"] == "application/x-protobuf" and "ser;dur=" in h["server-timing"]
            )
            s, h, gz = await call(edge, "GET", "/json/flat", "count=5",
                                  headers={"accept-encoding": "gzip"})  # fmt: skip
            assert h["content-encoding"] == "gzip" and orjson.loads(gzip.decompress(gz))
            s, h, answer = await call(edge, "GET", "/json/flat", "count=-1")
            assert s == 400 and orjson.loads(answer)["error"] == "bad_request"
            post = codec.encode_json(data.dataset("flat", 5).document)
            s, h, ack = await call(edge, "POST", "/json/flat", body=post,
                                   headers={"content-type": "application/json"})  # fmt: skip
            assert (s, orjson.loads(ack)) == (200, {"received": 5})
        finally:
            server.cancel()
            await asyncio.gather(server, return_exceptions=True)
        await edge.close()
        gone = EdgeService(f"http://127.0.0.1:{_free_port()}", timeout_s=5)  # nothing listens
        s, _, answer = await call(gone, "GET", "/json/flat", "count=5")
        assert s == 503 and orjson.loads(answer)["error"] == "unavailable"
        await gone.close()

    run(check())
