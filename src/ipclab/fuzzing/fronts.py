"""Inputs for one front or domain, sent to the gateway front on top of the generic HTTP/1.1
classes: GraphQL documents, the bundle's REST routes, the payload service's bodies (gzip
bombs, truncated and random Protobuf, wrong content types) and AcmeAir's forms, sessions
and the headers its protocol adapters relay. Chosen by the stack's declared front, then
domain (``extra_classes``); a stack of another domain gets the generic classes only."""

from __future__ import annotations

import gzip
import random
import zlib
from functools import lru_cache

import orjson

from ipclab.fuzzing.http1 import Gen, post, q, req
from ipclab.stacks import StackSpec

Classes = dict[str, tuple[Gen, float]]  # name: (generator, share of the target's count)


# --- GraphQL (the bundle's graphql front, POST /api/graphql) ------------------------------
GRAPHQL = b"/api/graphql"
_FIELD = {"person": "id", "animal": "type", "car": "model", "building": "address"}  # one each
_TABLES = tuple(_FIELD)


def _gql(query: str, extra: dict[str, object] | None = None) -> bytes:
    return post(GRAPHQL, b"application/json", orjson.dumps({"query": query, **(extra or {})}))


def gql_deep(r: random.Random) -> bytes:
    depth = r.randint(2, 3000)
    table = r.choice(_TABLES)  # nesting a list in itself: no such field below the first
    return _gql("{" + f"{table} {{ {_FIELD[table]} " * depth + "}" * depth + "}")


def gql_aliases(r: random.Random) -> bytes:
    n = r.randint(2, 2000)
    return _gql(
        "{"
        + " ".join(
            f"a{i}: {t} {{ {_FIELD[t]} }}"
            for i, t in enumerate(r.choice(_TABLES) for _ in range(n))
        )
        + "}"
    )


def gql_fragments(r: random.Random) -> bytes:
    kind = r.randint(0, 3)
    table = r.choice(_TABLES)
    if kind == 0:  # one fragment spread under many aliases (issue 28, item 7)
        n = r.randint(2, 500)
        body = " ".join(f"a{i}: {table} {{ ...F }}" for i in range(n))
        return _gql(f"{{ {body} }} fragment F on {table.capitalize()} {{ {_FIELD[table]} }}")
    if kind == 1:  # fragments that spread each other (a cycle)
        return _gql(
            f"{{ {table} {{ ...A }} }} fragment A on X {{ ...B }} fragment B on X {{ ...A }}"
        )
    if kind == 2:  # a chain of fragments, each spreading the next
        n = r.randint(2, 300)
        frags = " ".join(f"fragment F{i} on X {{ ...F{i + 1} }}" for i in range(n))
        return _gql(f"{{ {table} {{ ...F0 }} }} {frags} fragment F{n} on X {{ {_FIELD[table]} }}")
    return _gql(f"{{ {table} {{ ...Missing }} }}")


def gql_malformed(r: random.Random) -> bytes:
    good = "query Q($x: Int) { person { id } animal { id } }"
    kind = r.randint(0, 5)
    if kind == 0:
        return _gql(good[: r.randint(0, len(good) - 1)])
    if kind == 1:
        return _gql(good, {"variables": r.choice([[], "x", {"x": "no"}, None, 7])})
    if kind == 2:
        return post(GRAPHQL, b"application/json", r.randbytes(r.randint(0, 500)))
    if kind == 3:
        doc = r.choice([[1], "q", {"query": 7}, {"query": None}, {"query": ["{ person }"]}])
        return post(GRAPHQL, b"application/json", orjson.dumps(doc))
    if kind == 4:  # the document in the URL, mutated
        text = "".join(r.choice('{}()[]:$@!#.,"\\ aperson') for _ in range(r.randint(0, 80)))
        return req(GRAPHQL + b"?query=" + q(text.encode()))
    return post(GRAPHQL, r.choice([b"text/plain", b"application/graphql", b""]), good.encode())


GRAPHQL_CLASSES: Classes = {
    "GraphQL: deep nesting": (gql_deep, 0.04),
    "GraphQL: many aliases": (gql_aliases, 0.04),
    "GraphQL: fragments (shared, cyclic, chained, missing)": (gql_fragments, 0.06),
    "GraphQL: malformed documents": (gql_malformed, 0.06),
}


# --- the bundle's REST routes (GET /api/<Table>/) -----------------------------------------
def bundle_routes(r: random.Random) -> bytes:
    name = r.choice(
        [*_TABLES, "Databundle", "databundle", "DATABUNDLE", "nosuch", "", "..", "%2e%2e"]
    )
    case = "".join(c.upper() if r.random() < 0.3 else c for c in name)
    tail = r.choice(["/", "", "//", "/1", "/-1", "/%00", "/?id=" + "9" * r.randint(1, 40), "/x/y"])
    method = r.choice([b"GET", b"GET", b"HEAD", b"POST", b"PUT", b"DELETE", b"OPTIONS", b"BREW"])
    target = ("/api/" + case + tail).encode()
    if method in (b"POST", b"PUT"):
        return post(target, b"application/json", orjson.dumps({"id": r.randint(-9, 9)}))
    return req(target, method=method)


BUNDLE_REST_CLASSES: Classes = {"bundle REST: tables, cases, ids, methods": (bundle_routes, 0.2)}


# --- the payload service (JSON and Protobuf bodies, gzip) ---------------------------------
@lru_cache(maxsize=4)
def _valid(fmt: str, structure: str) -> bytes:
    from ipclab_services.domains.payload import codec, data

    one = data.user if structure == "flat" else data.payment
    doc = {data.WRAPPER[structure]: [one(1, i) for i in range(20)]}  # type: ignore[index]
    if fmt == "json":
        return orjson.dumps(doc)
    return codec.encode_protobuf(data.to_message(structure, doc))  # type: ignore[arg-type]


_CTYPE = {"json": b"application/json", "protobuf": b"application/x-protobuf"}


def _payload_target(r: random.Random) -> tuple[str, str, bytes]:
    fmt, structure = r.choice(["json", "protobuf"]), r.choice(["flat", "nested"])
    return fmt, structure, f"/{fmt}/{structure}".encode()


@lru_cache(maxsize=1)
def _bomb() -> bytes:
    """256 MiB of zeros in ~250 kB of gzip: past the service's 128 MiB inflate limit."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = bytes(1 << 20)
    return b"".join([*(z.compress(chunk) for _ in range(256)), z.flush()])


def gzip_bodies(r: random.Random) -> bytes:
    fmt, structure, target = _payload_target(r)
    kind = r.randint(0, 3)
    if kind == 0:
        body = _bomb()
    elif kind == 1:
        body = gzip.compress(_valid(fmt, structure))[: r.randint(1, 60)]  # truncated gzip
    elif kind == 2:
        body = b"\x1f\x8b" + r.randbytes(r.randint(0, 300))  # a gzip magic, then noise
    else:
        body = gzip.compress(r.randbytes(r.randint(0, 3000)))  # inflates to garbage
    return post(target, _CTYPE[fmt], body, [b"Content-Encoding: gzip"])


def protobuf_bodies(r: random.Random) -> bytes:
    structure = r.choice(["flat", "nested"])
    good = _valid("protobuf", structure)
    kind = r.randint(0, 2)
    if kind == 0:
        body = good[: r.randint(0, len(good) - 1)]  # truncated
    elif kind == 1:
        body = r.randbytes(r.randint(0, 4000))  # random
    else:  # a few bytes flipped
        raw = bytearray(good)
        for _ in range(r.randint(1, 8)):
            raw[r.randrange(len(raw))] = r.randrange(256)
        body = bytes(raw)
    return post(f"/protobuf/{structure}".encode(), _CTYPE["protobuf"], body)


def payload_types(r: random.Random) -> bytes:
    fmt, structure, target = _payload_target(r)
    other = "protobuf" if fmt == "json" else "json"
    ctype = r.choice([_CTYPE[other], b"text/plain", b"", b"application/json; charset=\xff", b"*/*"])
    extra = r.choice([[], [b"Content-Encoding: br"], [b"Content-Encoding: gzip, gzip"]])
    return post(target, ctype, _valid(r.choice(["json", "protobuf"]), structure), extra)


def payload_counts(r: random.Random) -> bytes:
    _, _, target = _payload_target(r)
    count = r.choice(["-1", "300001", "1e3", "", "0x10", "9" * 40, "5&count=6", "٣"])
    return req(target + b"?count=" + q(count.encode()), [b"Accept-Encoding: gzip"])


PAYLOAD_CLASSES: Classes = {
    "payload: gzip bombs and broken gzip": (gzip_bodies, 0.03),
    "payload: truncated, random and flipped Protobuf": (protobuf_bodies, 0.07),
    "payload: wrong content types and encodings": (payload_types, 0.05),
    "payload: bad counts": (payload_counts, 0.05),
}


# --- AcmeAir (forms, sessions, and what its protocol adapters relay) -----------------------
_APIS = ("/auth/acmeair-as/rest/api", "/flight/acmeair-fs/rest/api",
         "/booking/acmeair-bs/rest/api", "/customer/acmeair-cs/rest/api")  # fmt: skip
_FORM = b"application/x-www-form-urlencoded"


def acmeair_forms(r: random.Random) -> bytes:
    target = r.choice([
        "/auth/acmeair-as/rest/api/login", "/flight/acmeair-fs/rest/api/flights/queryflights",
        "/booking/acmeair-bs/rest/api/bookings/bookflights",
        "/booking/acmeair-bs/rest/api/bookings/cancelbooking",
    ]).encode()  # fmt: skip
    kind = r.randint(0, 3)
    if kind == 0:
        body = b"&".join(q(r.randbytes(r.randint(0, 8))) + b"=" + q(r.randbytes(r.randint(0, 30)))
                         for _ in range(r.randint(0, 40)))  # fmt: skip
    elif kind == 1:
        body = b"login=uid%d@email.com&password=" % r.randint(-5, 10**6) + b"x" * r.randint(0, 9000)
    elif kind == 2:
        body = b"fromAirport=%s&toAirport=%s&fromDate=%s&oneWay=%s" % (
            r.choice([b"OSL", b"", b"\xff", b"%00", b"X" * 500]), r.choice([b"TRD", b"OSL"]),
            r.choice([b"2017-06-01", b"2017-13-45", b"-1", b"9" * 30]), r.choice([b"true", b"2"]),
        )  # fmt: skip
    else:
        body = r.randbytes(r.randint(0, 3000))
    return post(target, r.choice([_FORM, _FORM, b"application/json", b"multipart/form-data"]), body)


def acmeair_sessions(r: random.Random) -> bytes:
    user = r.choice(["uid7@email.com", "uid0@email.com", "nobody", "", "a" * 300])
    target = r.choice([f"/booking/acmeair-bs/rest/api/bookings/byuser/{user}",
                       f"/customer/acmeair-cs/rest/api/customer/byid/{user}"]).encode()  # fmt: skip
    cookie = r.choice([
        b"sessionid=" + r.randbytes(16).hex().encode() + b"; loggedinuser=uid7@email.com",
        b"sessionid=; loggedinuser=", b"sessionid=" + b"\xff" * 20, b"=;=;=",
        b"sessionid=" + b"9" * 4000,
    ])  # fmt: skip
    if r.random() < 0.3:
        return post(target, b"application/json", r.choice([b"{}", b"[]", b"{\"_id\":7}", b"{"]),
                    [b"Cookie: " + cookie])  # fmt: skip
    return req(target, [b"Cookie: " + cookie])


def acmeair_relayed(r: random.Random) -> bytes:
    """Headers the adapters carry between HTTP/1.1 and h2c/CoAP: the shapes of smuggling."""
    target = (
        r.choice(_APIS) + r.choice(["/login/logout?login=x", "/flights/queryflights", "/x"])
    ).encode()
    kind = r.randint(0, 5)
    if kind == 0:
        return req(
            target,
            [b"Content-Length: 5", b"Transfer-Encoding: chunked"],
            b"0\r\n\r\nGET / HTTP/1.1\r\n\r\n",
            b"POST",
        )
    if kind == 1:
        return req(target, [b"X_Smuggled: 1", b"Connection: keep-alive, X-Drop", b"X-Drop: 1"])
    if kind == 2:
        return req(
            target,
            [
                b"Upgrade: h2c",
                b"HTTP2-Settings: AAMAAABkAAQAAP__",
                b"Connection: Upgrade, HTTP2-Settings",
            ],
        )
    if kind == 3:
        return req(target, [b"X-Bad: a\rb", b"X-Nul: \x00"])
    if kind == 4:
        return req(
            target, [b"Transfer-Encoding: gzip, chunked"], b"5\r\nhello\r\n0\r\n\r\n", b"POST"
        )
    return req(
        b"/"
        + r.choice(_APIS).split("/")[1].encode()
        + b"/../"
        + r.choice(_APIS)[1:].encode()
        + b"/x"
    )


ACMEAIR_CLASSES: Classes = {
    "AcmeAir: random and overlong forms": (acmeair_forms, 0.08),
    "AcmeAir: forged and broken sessions": (acmeair_sessions, 0.06),
    "AcmeAir: headers the adapters relay": (acmeair_relayed, 0.06),
}

BY_FRONT: dict[str, Classes] = {"graphql": GRAPHQL_CLASSES}
BY_DOMAIN: dict[str, Classes] = {
    "bundle": BUNDLE_REST_CLASSES,
    "payload": PAYLOAD_CLASSES,
    "acmeair": ACMEAIR_CLASSES,
}


def warm() -> None:
    """Build the inputs that are built once, before any connection waits on them."""
    _bomb()


def extra_classes(spec: StackSpec) -> Classes:
    """The stack's own classes: its front's if it has some, else its domain's."""
    return BY_FRONT.get(spec.front) or BY_DOMAIN.get(spec.domain, {})
