"""The AcmeAir stand-in (issue 14): its services in one event loop over CoAP with the
HTTP/1.1 session check, then the three stacks on the local backend answering the same."""

from __future__ import annotations

import asyncio
import contextlib
import http.cookiejar
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from typing import Any

import orjson
import pytest
import uvloop
from ipclab_services import transports
from ipclab_services.domains import acmeair
from ipclab_services.domains.acmeair import validator
from ipclab_services.errors import Forbidden, Unauthorized
from ipclab_services.transports.base import Clients, ConnectConfig, ServeConfig

from ipclab.backends import get_backend
from ipclab.backends.base import StackOptions
from ipclab.backends.local import LocalStack
from ipclab.procs import free_ports
from ipclab.stacks import resolve


@contextlib.asynccontextmanager
async def acmeair_over(style: str) -> AsyncIterator[Clients]:
    """The four services over ``style``, auth also on HTTP/1.1, validated through it."""
    ports = free_ports(5)
    auth_http = f"127.0.0.1:{ports[4]}"
    defs = acmeair.build_services(validator.over_http(auth_http))
    transport, rest = transports.load(style), transports.load("rest")
    tasks, readies = [], []
    for name, port in zip(acmeair.SERVICES, ports, strict=False):
        cfg = ServeConfig("127.0.0.1", port)
        readies.append(cfg.ready)
        tasks.append(asyncio.create_task(transport.serve(defs[name], cfg)))
    http_cfg = ServeConfig("127.0.0.1", ports[4])
    readies.append(http_cfg.ready)
    tasks.append(asyncio.create_task(rest.serve(defs["auth"], http_cfg)))
    await asyncio.wait_for(asyncio.gather(*(r.wait() for r in readies)), 10)
    addresses = {n: f"127.0.0.1:{p}" for n, p in zip(acmeair.SERVICES, ports, strict=False)}
    clients = await transport.connect(list(defs.values()), ConnectConfig(addresses))
    try:
        yield clients
    finally:
        await clients.close()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


@pytest.mark.parametrize("style", ["coap", "h2c"])
def test_two_users_sessions_never_cross(style: str) -> None:
    """Two customers logged in at once, their calls interleaved many in flight: each
    sees only their own bookings and profile; a session used for the other customer is
    refused (403), and after logout it is no session at all (401)."""

    async def main() -> None:
        async with acmeair_over(style) as c:
            a, b = "uid1@email.com", "uid2@email.com"
            sa = (await c.call("auth", "login", {"login": a, "password": "password"}, 5))["session"]
            sb = (await c.call("auth", "login", {"login": b, "password": "password"}, 5))["session"]
            assert sa != sb

            async def book(who: str, session: str, i: int) -> dict[str, Any]:
                req = {
                    "user": who,
                    "session": session,
                    "toFlightId": f"{who}-{i}",
                    "oneWayFlight": "true",
                }
                return await c.call("booking", "book", req, 5)

            await asyncio.gather(*(book(w, s, i) for i in range(16) for w, s in ((a, sa), (b, sb))))
            views = await asyncio.gather(
                *(
                    c.call(svc, op, {"user": w, "session": s}, 5)
                    for _ in range(8)
                    for w, s in ((a, sa), (b, sb))
                    for svc, op in (("booking", "list"), ("customer", "view"))
                )
            )
            for i, doc in enumerate(views):
                who = (a, b)[(i // 2) % 2]
                if "bookings" in doc:
                    assert len(doc["bookings"]) == 16
                    assert {x["customerId"] for x in doc["bookings"]} == {who}
                    assert all(x["flightId"].startswith(who) for x in doc["bookings"])
                else:
                    assert doc["_id"] == who
            with pytest.raises(Forbidden):
                await c.call("booking", "list", {"user": b, "session": sa}, 5)
            with pytest.raises(Forbidden):
                await c.call("customer", "view", {"user": a, "session": sb}, 5)
            await c.call("auth", "logout", {"session": sa}, 5)
            with pytest.raises(Unauthorized):
                await c.call("booking", "list", {"user": a, "session": sa}, 5)
            assert (await c.call("customer", "view", {"user": b, "session": sb}, 5))["_id"] == b
            with pytest.raises(Unauthorized):
                await c.call("auth", "login", {"login": a, "password": "wrong"}, 5)

    uvloop.run(main())


def test_queryflights_is_several_kilobytes_of_json() -> None:
    defs = acmeair.build_services(validator.over_http("127.0.0.1:9"))
    req = {"fromAirport": "OSL", "toAirport": "TRD", "fromDate": "2017-06-01"}
    doc = asyncio.run(defs["flight"].invoke("query", {**req, "returnDate": "2017-06-08"}))
    size = len(orjson.dumps(doc))
    assert 3000 < size < 10000, size  # several KB: CoAP carries it block-wise (> 1 KiB)
    assert doc["tripLegs"] == 2
    assert doc == asyncio.run(defs["flight"].invoke("query", {**req, "returnDate": "2017-06-08"}))


# --- the three stacks on the local backend ---------------------------------------------
STACKS = ("acmeair-http1", "acmeair-h2c", "acmeair-coap")


@pytest.fixture(scope="module")
def acmeair_stacks() -> Iterator[dict[str, LocalStack]]:
    backend = get_backend("local")
    stacks: dict[str, LocalStack] = {}
    try:
        for name in STACKS:
            stacks[name] = backend.start(resolve(name), StackOptions(call_timeout_s=2.0))
        yield stacks
    finally:
        for stack in stacks.values():
            stack.stop()


class Browser:
    """One user: its own cookie jar, as a Locust user has."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def send(
        self, method: str, path: str, body: bytes | None = None, ctype: str = ""
    ) -> tuple[int, str, bytes]:
        headers = {"Content-Type": ctype} if ctype else {}
        req = urllib.request.Request(self.base + path, body, headers, method=method)
        try:
            with self.opener.open(req, timeout=10) as r:
                return r.status, r.headers.get("content-type", ""), r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers.get("content-type", ""), e.read()

    def form(self, path: str, text: str) -> tuple[int, str, bytes]:
        return self.send("POST", path, text.encode(), "application/x-www-form-urlencoded")


def script(base: str) -> list[tuple[str, int, str, bytes]]:
    """The eight test cases once, plus the refusals; (what, status, type, body)."""
    u, api = "uid7@email.com", "/rest/api"
    b = Browser(base)
    out = [("no session", *b.send("GET", f"{api}/bookings/byuser/{u}"))]
    out.append(("bad login", *b.form(f"{api}/login", f"login={u}&password=x")))
    out.append(("Login", *b.form(f"{api}/login", f"login={u}&password=password")))
    assert {c.name for c in b.jar} == {"sessionid", "loggedinuser"}
    out.append(("View Profile Information", *b.send("GET", f"{api}/customer/byid/{u}")))
    profile = orjson.dumps({"_id": u, "phoneNumber": "919-123-4567", "address": {"city": "X"}})
    out.append(
        (
            "Update Customer",
            *b.send("POST", f"{api}/customer/byid/{u}", profile, "application/json"),
        )
    )
    q = "fromAirport=OSL&toAirport=TRD&fromDate=2017-06-01&returnDate=2017-06-08&oneWay=false"
    out.append(("Query Flight", *b.form(f"{api}/flights/queryflights", q)))
    trips = orjson.loads(out[-1][3])["tripFlights"]
    ids = [t["flightsOptions"][0]["_id"] for t in trips]
    book = f"userid={u}&toFlightId={ids[0]}&retFlightId={ids[1]}&oneWayFlight=false"
    out.append(("Book Flight", *b.form(f"{api}/bookings/bookflights", book)))
    out.append(("List Bookings", *b.send("GET", f"{api}/bookings/byuser/{u}")))
    number = orjson.loads(out[-1][3])["bookings"][0]["_id"]
    out.append(
        ("Cancel Booking", *b.form(f"{api}/bookings/cancelbooking", f"number={number}&userid={u}"))
    )
    out.append(("other user", *b.send("GET", f"{api}/customer/byid/uid8@email.com")))
    out.append(("Logout", *b.send("GET", f"{api}/login/logout?login={u}")))
    out.append(("after logout", *b.send("GET", f"{api}/bookings/byuser/{u}")))
    return out


@pytest.mark.slow
def test_same_answers_over_every_protocol(acmeair_stacks: dict[str, LocalStack]) -> None:
    runs = {name: script(stack.gateway_url) for name, stack in acmeair_stacks.items()}
    first = runs["acmeair-http1"]
    statuses = {what: status for what, status, _, _ in first}
    assert statuses == {
        "no session": 401,
        "bad login": 401,
        "Login": 200,
        "View Profile Information": 200,
        "Update Customer": 200,
        "Query Flight": 200,
        "Book Flight": 200,
        "List Bookings": 200,
        "Cancel Booking": 200,
        "other user": 403,
        "Logout": 200,
        "after logout": 401,
    }
    login = next(r for r in first if r[0] == "Login")
    assert login[2].startswith("text/plain") and login[3] == b"logged in"
    query = next(r for r in first if r[0] == "Query Flight")
    assert query[2] == "application/json" and len(query[3]) > 3000
    for name, rows in runs.items():
        for mine, ref in zip(rows, first, strict=True):
            # booking numbers are per service process and equal in fresh stacks
            assert mine == ref, f"{name} differs from acmeair-http1 on {ref[0]}"


@pytest.mark.slow
def test_healthz_names_every_service(acmeair_stacks: dict[str, LocalStack]) -> None:
    for stack in acmeair_stacks.values():
        status, _, body = Browser(stack.gateway_url).send("GET", "/healthz")
        assert status == 200
        assert set(orjson.loads(body)["services"]) == set(acmeair.SERVICES)
