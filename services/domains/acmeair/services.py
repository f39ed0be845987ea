"""The four AcmeAir services, transport-free: auth, flight, booking and customer.

- ``auth``: ``login`` (login, password) opens a session; ``validate`` (session) names its
  customer; ``logout`` (session) closes it.
- ``flight``: ``query`` (fromAirport, toAirport, fromDate, returnDate, oneWay) answers the
  legs' flight options (several KB of JSON); no session needed, as in AcmeAir.
- ``booking``: ``book``, ``list``, ``cancel``; ``customer``: ``view``, ``update``.

Every request of booking and customer carries the session (the gateway copies it from
the ``sessionid`` cookie) and is validated by ``validate(session)``, which the service
is given: in a stack a call to auth over plain HTTP/1.1 whatever the protocol under test
(``validator.py``). A session that names another customer than the request's ``user``
is refused (403), so one user's session never reaches another's data.
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from ipclab_services.domains.acmeair import data
from ipclab_services.errors import BadRequest, Forbidden, NotFound, Unauthorized
from ipclab_services.proto import shop_pb2 as pb
from ipclab_services.transports.base import Operation, ServiceDef

Validate = Callable[[str], Awaitable[str]]  # session -> the customer's login, or Unauthorized


def _field(request: dict[str, Any], key: str) -> str:
    value = request.get(key)
    if not isinstance(value, str) or not value:
        raise BadRequest(f"{key} is required")
    return value


def _ping(_: dict[str, Any]) -> dict[str, Any]:
    return {}


def _svc(name: str, ops: dict[str, Any]) -> ServiceDef:
    # JSON-only transports (rest, h2c, coap): the protobuf types are placeholders
    table = {op: Operation(fn, pb.Empty, pb.Empty) for op, fn in ops.items()}
    table["ping"] = Operation(_ping, pb.Empty, pb.Empty)
    return ServiceDef(name, f"ipclab.acmeair.{name.capitalize()}", table)


def auth(cfg: data.AcmeAirConfig) -> ServiceDef:
    sessions: dict[str, str] = {}

    def login(req: dict[str, Any]) -> dict[str, Any]:
        who, password = _field(req, "login"), _field(req, "password")
        if data.customer_index(cfg, who) is None or password != data.PASSWORD:
            raise Unauthorized("wrong login or password")
        session = secrets.token_hex(16)
        sessions[session] = who
        return {"session": session, "customer": who}

    def validate(req: dict[str, Any]) -> dict[str, Any]:
        who = sessions.get(_field(req, "session"))
        if who is None:
            raise Unauthorized("no such session")
        return {"customer": who}

    def logout(req: dict[str, Any]) -> dict[str, Any]:
        sessions.pop(_field(req, "session"), None)
        return {"status": "logged out"}

    return _svc("auth", {"login": login, "validate": validate, "logout": logout})


def flight(cfg: data.AcmeAirConfig) -> ServiceDef:
    def query(req: dict[str, Any]) -> dict[str, Any]:
        origin, dest = _field(req, "fromAirport"), _field(req, "toAirport")
        for port in (origin, dest):
            if port not in data.AIRPORTS:
                raise NotFound(f"no airport {port!r}")
        one_way = req.get("oneWay", "false") == "true"
        legs = [(origin, dest, _field(req, "fromDate"))]
        if not one_way:
            legs.append((dest, origin, _field(req, "returnDate")))
        trips = [
            {
                "numPages": 1,
                "flightsOptions": data.flights(cfg, o, d, day),
                "currentPage": 0,
                "hasMoreOptions": False,
                "pageSize": cfg.flights_per_route,
            }
            for o, d, day in legs
        ]
        return {"tripFlights": trips, "tripLegs": len(legs)}

    return _svc("flight", {"query": query})


async def _owner(validate: Validate, req: dict[str, Any]) -> str:
    """The request's customer, once its session is valid and names that customer."""
    who = await validate(_field(req, "session"))
    if who != _field(req, "user"):
        raise Forbidden("the session belongs to another customer")
    return who


def booking(cfg: data.AcmeAirConfig, validate: Validate) -> ServiceDef:
    bookings: dict[str, dict[str, dict[str, Any]]] = {}  # customer -> booking id -> booking
    numbers = itertools.count(1)

    def _book(who: str, flight_id: str) -> str:
        number = f"{next(numbers)}"
        bookings.setdefault(who, {})[number] = {
            "_id": number,
            "customerId": who,
            "flightId": flight_id,
        }
        return number

    async def book(req: dict[str, Any]) -> dict[str, Any]:
        who = await _owner(validate, req)
        out: dict[str, Any] = {"departBookingId": _book(who, _field(req, "toFlightId"))}
        one_way = req.get("oneWayFlight", "false") == "true"
        if not one_way:
            out["returnBookingId"] = _book(who, _field(req, "retFlightId"))
        out["oneWay"] = one_way
        return out

    async def list_(req: dict[str, Any]) -> dict[str, Any]:
        who = await _owner(validate, req)
        return {"bookings": list(bookings.get(who, {}).values())}

    async def cancel(req: dict[str, Any]) -> dict[str, Any]:
        who = await _owner(validate, req)
        # idempotent, as AcmeAir's: two users of the driver may share a customer and
        # cancel the same booking; the second cancel is no error
        bookings.get(who, {}).pop(_field(req, "number"), None)
        return {"status": "success"}

    return _svc("booking", {"book": book, "list": list_, "cancel": cancel})


UPDATABLE = ("phoneNumber", "phoneNumberType", "streetAddress1", "city", "postalCode")


def customer(cfg: data.AcmeAirConfig, validate: Validate) -> ServiceDef:
    changed: dict[str, dict[str, Any]] = {}

    def _profile(who: str) -> dict[str, Any]:
        i = data.customer_index(cfg, who)
        if i is None:
            raise NotFound(f"no customer {who!r}")
        return changed.get(who) or data.customer(cfg, i)

    async def view(req: dict[str, Any]) -> dict[str, Any]:
        return _profile(await _owner(validate, req))

    async def update(req: dict[str, Any]) -> dict[str, Any]:
        who = await _owner(validate, req)
        profile = {**_profile(who), "address": dict(_profile(who)["address"])}
        for key in UPDATABLE:
            if key in req:
                target = profile["address"] if key in profile["address"] else profile
                target[key] = str(req[key])
        changed[who] = profile
        return profile

    return _svc("customer", {"view": view, "update": update})


def build(cfg: data.AcmeAirConfig, validate: Validate) -> dict[str, ServiceDef]:
    defs = (auth(cfg), flight(cfg), booking(cfg, validate), customer(cfg, validate))
    return {d.name: d for d in defs}
