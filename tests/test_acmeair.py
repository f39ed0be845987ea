"""The AcmeAir stand-in (issue 14): its data, then the stacks on the local backend (gateway,
services and the protocol adapters between them) answering the same over every protocol,
keeping two users' sessions apart and matching many answers in flight to their requests."""

from __future__ import annotations

import asyncio
import http.cookiejar
import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import aiohttp
import orjson
import pytest
from ipclab_services.domains import acmeair
from ipclab_services.domains.acmeair import validator
from ipclab_services.domains.acmeair.routes import api

from ipclab.backends import get_backend
from ipclab.backends.base import StackOptions
from ipclab.backends.local import LocalStack
from ipclab.stacks import resolve
from ipclab.studies.nyflott.stacks import ACMEAIR

# the services' API roots (not from the Locust user module: importing Locust patches this
# process with gevent, which deadlocks grpc's threads in later tests)
AUTH, FLIGHT, BOOKING, CUSTOMER = (api(s) for s in ("auth", "flight", "booking", "customer"))
FORM = "application/x-www-form-urlencoded"
QUERY = "fromAirport={}&toAirport={}&fromDate=2017-06-01&returnDate=2017-06-08&oneWay=false"
NATIVE_BINARIES = {
    "acmeair-http1-nginx": "nginx",
    "acmeair-h2c-nghttpx": "nghttpx",
    "acmeair-coap-californium": "java",
}


def test_queryflights_is_several_kilobytes_of_json() -> None:
    defs = acmeair.build_services(validator.over_http("127.0.0.1:9"))
    req = {"fromAirport": "OSL", "toAirport": "TRD", "fromDate": "2017-06-01"}
    doc = asyncio.run(defs["flight"].invoke("query", {**req, "returnDate": "2017-06-08"}))
    size = len(orjson.dumps(doc))
    assert 3000 < size < 10000, size  # several KB: CoAP carries it block-wise (> 1 KiB)
    assert doc["tripLegs"] == 2
    assert doc == asyncio.run(defs["flight"].invoke("query", {**req, "returnDate": "2017-06-08"}))


def test_every_acmeair_stack_has_an_adapter_beside_each_host() -> None:
    for spec in ACMEAIR:
        hosts = spec.hosts()
        assert hosts["egress"] == "gateway"
        assert {hosts[f"{s}-ingress"] for s in acmeair.SERVICES} == set(acmeair.SERVICES)
        assert spec.declaration()["adapters"] in ("python", "native")


# --- the stacks on the local backend ----------------------------------------------------


def _missing(name: str) -> str | None:
    """Why stack ``name`` cannot run here (its adapters' program or build), or None."""
    binary = NATIVE_BINARIES.get(name)
    if binary is not None and shutil.which(binary) is None:
        return f"{binary} is not installed"
    return resolve(name).unavailable()


def _available(name: str) -> bool:
    return _missing(name) is None


STACKS = tuple(
    pytest.param(
        s.name, marks=pytest.mark.skipif(not _available(s.name), reason=str(_missing(s.name)))
    )
    for s in ACMEAIR
)


@pytest.fixture(scope="module")
def acmeair_stacks() -> Iterator[dict[str, LocalStack]]:
    backend = get_backend("local")
    stacks: dict[str, LocalStack] = {}
    try:
        for spec in ACMEAIR:
            if _available(spec.name):
                stacks[spec.name] = backend.start(resolve(spec.name), StackOptions())
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
        return self.send("POST", path, text.encode(), FORM)


def script(base: str) -> list[tuple[str, int, str, bytes]]:
    """The eight test cases once, plus the refusals; (what, status, type, body)."""
    u = "uid7@email.com"
    b = Browser(base)
    out = [("no session", *b.send("GET", f"{BOOKING}/bookings/byuser/{u}"))]
    out.append(("bad login", *b.form(f"{AUTH}/login", f"login={u}&password=x")))
    out.append(("Login", *b.form(f"{AUTH}/login", f"login={u}&password=password")))
    assert {c.name for c in b.jar} == {"sessionid", "loggedinuser"}
    out.append(("View Profile Information", *b.send("GET", f"{CUSTOMER}/customer/byid/{u}")))
    profile = orjson.dumps({"_id": u, "phoneNumber": "919-123-4567", "address": {"city": "X"}})
    out.append(
        (
            "Update Customer",
            *b.send("POST", f"{CUSTOMER}/customer/byid/{u}", profile, "application/json"),
        )
    )
    out.append(
        ("Query Flight", *b.form(f"{FLIGHT}/flights/queryflights", QUERY.format("OSL", "TRD")))
    )
    trips = orjson.loads(out[-1][3])["tripFlights"]
    ids = [t["flightsOptions"][0]["_id"] for t in trips]
    book = f"userid={u}&toFlightId={ids[0]}&retFlightId={ids[1]}&oneWayFlight=false"
    out.append(("Book Flight", *b.form(f"{BOOKING}/bookings/bookflights", book)))
    out.append(("List Bookings", *b.send("GET", f"{BOOKING}/bookings/byuser/{u}")))
    number = orjson.loads(out[-1][3])["bookings"][0]["_id"]
    cancel = f"number={number}&userid={u}"
    out.append(("Cancel Booking", *b.form(f"{BOOKING}/bookings/cancelbooking", cancel)))
    out.append(("other user", *b.send("GET", f"{CUSTOMER}/customer/byid/uid8@email.com")))
    out.append(("no such path", *b.send("GET", "/nowhere/at/all")))
    out.append(("Logout", *b.send("GET", f"{AUTH}/login/logout?login={u}")))
    out.append(("after logout", *b.send("GET", f"{BOOKING}/bookings/byuser/{u}")))
    return out


@pytest.mark.slow
def test_same_answers_over_every_protocol_and_adapter(
    acmeair_stacks: dict[str, LocalStack],
) -> None:
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
        "no such path": 404,
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


def _jar() -> aiohttp.ClientSession:
    """A user's own session and cookie jar (``unsafe``: the gateway is an IP address)."""
    return aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))


async def _login(session: aiohttp.ClientSession, base: str, who: str) -> None:
    async with session.post(
        f"{base}{AUTH}/login", data=f"login={who}&password=password", headers={"Content-Type": FORM}
    ) as r:
        assert r.status == 200 and await r.text() == "logged in"


@pytest.mark.slow
@pytest.mark.parametrize("name", STACKS)
def test_two_users_sessions_never_cross(name: str, acmeair_stacks: dict[str, LocalStack]) -> None:
    """Two customers logged in at once, each with their own cookie jar, their requests
    interleaved many in flight through the adapters: each sees only their own bookings
    and profile; a session used for the other customer is refused (403), and after
    logout it is no session at all (401). (The thesis's Californium proxy kept a cookie
    jar: one login logged everyone in.)"""
    base = acmeair_stacks[name].gateway_url
    a, b = "uid1@email.com", "uid2@email.com"

    async def main() -> None:
        async with _jar() as sa, _jar() as sb:
            await asyncio.gather(_login(sa, base, a), _login(sb, base, b))

            async def book(s: aiohttp.ClientSession, who: str, i: int) -> None:
                form = f"userid={who}&toFlightId={who}-{i}&oneWayFlight=true"
                async with s.post(
                    f"{base}{BOOKING}/bookings/bookflights",
                    data=form,
                    headers={"Content-Type": FORM},
                ) as r:
                    assert r.status == 200, await r.text()

            await asyncio.gather(*(book(s, w, i) for i in range(16) for s, w in ((sa, a), (sb, b))))

            async def view(s: aiohttp.ClientSession, who: str, path: str) -> tuple[str, Any]:
                async with s.get(f"{base}{path.format(who)}") as r:
                    assert r.status == 200
                    return who, await r.json()

            paths = (f"{BOOKING}/bookings/byuser/{{}}", f"{CUSTOMER}/customer/byid/{{}}")
            views = await asyncio.gather(
                *(view(s, w, p) for _ in range(8) for s, w in ((sa, a), (sb, b)) for p in paths)
            )
            for who, doc in views:
                if "bookings" in doc:
                    assert len(doc["bookings"]) == 16
                    assert {x["customerId"] for x in doc["bookings"]} == {who}
                    assert all(x["flightId"].startswith(who) for x in doc["bookings"])
                else:
                    assert doc["_id"] == who
            async with sa.get(f"{base}{BOOKING}/bookings/byuser/{b}") as r:
                assert r.status == 403
            async with sb.get(f"{base}{CUSTOMER}/customer/byid/{a}") as r:
                assert r.status == 403
            async with sa.get(f"{base}{AUTH}/login/logout?login={a}") as r:
                assert r.status == 200
            async with sa.get(f"{base}{BOOKING}/bookings/byuser/{a}") as r:
                assert r.status == 401
            async with sb.get(f"{base}{CUSTOMER}/customer/byid/{b}") as r:
                assert r.status == 200

    asyncio.run(main())


@pytest.mark.slow
@pytest.mark.parametrize("name", STACKS)
def test_64_in_flight_of_mixed_sizes_each_get_their_own_answer(
    name: str, acmeair_stacks: dict[str, LocalStack]
) -> None:
    """64 requests at once through the adapters: Query Flight for 32 different routes
    (3.75 KB answers: four CoAP blocks each) and the profiles of 32 customers (small), each
    answer checked against its own request."""
    base = acmeair_stacks[name].gateway_url
    airports = acmeair.data.AIRPORTS

    async def main() -> None:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as s:
            users = [f"uid{i}@email.com" for i in range(100, 132)]
            jars = [_jar() for _ in users]
            try:
                await asyncio.gather(
                    *(_login(j, base, u) for j, u in zip(jars, users, strict=True))
                )

                async def query(i: int) -> None:
                    o, d = airports[i % 12], airports[(i + 1 + i // 12) % 12]
                    async with s.post(
                        f"{base}{FLIGHT}/flights/queryflights",
                        data=QUERY.format(o, d),
                        headers={"Content-Type": FORM},
                    ) as r:
                        legs = (await r.json())["tripFlights"]
                    ports = [(x["flightsOptions"][0]["flightSegment"]["originPort"]) for x in legs]
                    assert ports == [o, d]

                async def profile(jar: aiohttp.ClientSession, who: str) -> None:
                    async with jar.get(f"{base}{CUSTOMER}/customer/byid/{who}") as r:
                        assert (await r.json())["_id"] == who

                await asyncio.gather(
                    *(query(i) for i in range(32)),
                    *(profile(j, u) for j, u in zip(jars, users, strict=True)),
                )
            finally:
                for j in jars:
                    await j.close()

    asyncio.run(main())
