"""The AcmeAir gateway: AcmeAir's REST routes, each one call to one service.

| test case (driver name)   | route                                              | service.op   |
|---------------------------|----------------------------------------------------|--------------|
| Login                     | POST /rest/api/login (form login, password)        | auth.login   |
| Logout                    | GET  /rest/api/login/logout?login=                 | auth.logout  |
| Query Flight              | POST /rest/api/flights/queryflights (form)         | flight.query |
| Book Flight               | POST /rest/api/bookings/bookflights (form)         | booking.book |
| List Bookings             | GET  /rest/api/bookings/byuser/{user}              | booking.list |
| Cancel Booking            | POST /rest/api/bookings/cancelbooking (form)       | booking.cancel |
| View Profile Information  | GET  /rest/api/customer/byid/{user}                | customer.view |
| Update Customer           | POST /rest/api/customer/byid/{user} (JSON body)    | customer.update |

Login answers ``text/plain`` "logged in" and sets the ``sessionid`` and ``loggedinuser``
cookies; every other route but Query Flight needs the ``sessionid`` cookie, which the
gateway passes on as the call's ``session`` (401 without it). ``/healthz`` pings every
service.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import parse_qsl

import orjson
from ipclab_services.domains import GatewaySettings, health
from ipclab_services.errors import BadRequest, ServiceError, Unauthorized
from ipclab_services.fronts import Handler, Reply, Request
from ipclab_services.transports.base import Clients

_log = logging.getLogger(__name__)
API = ["rest", "api"]
MAX_FIELDS = 16


def cookies(request: Request) -> dict[str, str]:
    """The request's cookies (``Cookie: a=1; b=2``)."""
    out: dict[str, str] = {}
    for part in request.headers.get("cookie", "").split(";"):
        name, sep, value = part.strip().partition("=")
        if sep:
            out[name] = value
    return out


def form(request: Request) -> dict[str, str]:
    """A form-urlencoded body's fields."""
    try:
        fields = parse_qsl(request.body.decode("utf-8"), keep_blank_values=True)
    except UnicodeDecodeError:
        raise BadRequest("the form is not UTF-8") from None
    if len(fields) > MAX_FIELDS:
        raise BadRequest(f"at most {MAX_FIELDS} form fields")
    return dict(fields)


def _session(request: Request) -> str:
    session = cookies(request).get("sessionid", "")
    if not session:
        raise Unauthorized("no sessionid cookie: log in first")
    return session


def _text(body: str, headers: tuple[tuple[str, str], ...] = ()) -> Reply:
    return Reply(body.encode(), "text/plain", headers)


def handler(clients: Clients, services: tuple[str, ...], settings: GatewaySettings) -> Handler:
    timeout = settings.timeout_s

    async def call(service: str, op: str, request: dict[str, Any]) -> Any:
        return await clients.call(service, op, request, timeout)

    async def route(request: Request) -> tuple[int, Any]:
        method, parts = request.method, request.path
        try:
            if parts == ["healthz"]:
                return await health(clients, services, timeout)
            if parts[:2] != API:
                return 404, {"error": "not_found", "message": "no such path"}
            rest = parts[2:]
            if method == "POST" and rest == ["login"]:
                fields = form(request)
                who = fields.get("login", "")
                reply = await call(
                    "auth", "login", {"login": who, "password": fields.get("password", "")}
                )
                return 200, _text(
                    "logged in",
                    (
                        ("set-cookie", f"sessionid={reply['session']}; Path=/"),
                        ("set-cookie", f"loggedinuser={reply['customer']}; Path=/"),
                    ),
                )
            if method == "GET" and rest == ["login", "logout"]:
                session = cookies(request).get("sessionid", "")
                if session:
                    await call("auth", "logout", {"session": session})
                return 200, _text(
                    "logged out",
                    (("set-cookie", "sessionid=; Path=/; Max-Age=0"),),
                )
            if method == "POST" and rest == ["flights", "queryflights"]:
                return 200, await call("flight", "query", form(request))
            if method == "POST" and rest == ["bookings", "bookflights"]:
                fields = form(request)
                fields["user"] = fields.pop("userid", "")
                return 200, await call("booking", "book", {**fields, "session": _session(request)})
            if method == "GET" and len(rest) == 3 and rest[:2] == ["bookings", "byuser"]:
                request_ = {"user": rest[2], "session": _session(request)}
                return 200, await call("booking", "list", request_)
            if method == "POST" and rest == ["bookings", "cancelbooking"]:
                fields = form(request)
                request_ = {
                    "user": fields.get("userid", ""),
                    "number": fields.get("number", ""),
                    "session": _session(request),
                }
                return 200, await call("booking", "cancel", request_)
            if len(rest) == 3 and rest[:2] == ["customer", "byid"]:
                if method == "GET":
                    request_ = {"user": rest[2], "session": _session(request)}
                    return 200, await call("customer", "view", request_)
                if method == "POST":
                    try:
                        doc = orjson.loads(request.body or b"{}")
                    except orjson.JSONDecodeError:
                        raise BadRequest("the profile is not JSON") from None
                    if not isinstance(doc, dict):
                        raise BadRequest("the profile must be a JSON object")
                    flat = {k: str(v) for k, v in doc.items() if not isinstance(v, dict | list)}
                    flat.update({k: str(v) for k, v in (doc.get("address") or {}).items()})
                    request_ = {**flat, "user": rest[2], "session": _session(request)}
                    return 200, await call("customer", "update", request_)
            return 404, {"error": "not_found", "message": "no such path"}
        except ServiceError as e:
            return e.http_status, {"error": e.code, "message": str(e)}
        except Exception:  # noqa: BLE001 - a bug answers 500, it must not hang the client
            _log.exception("gateway: internal error on %s", request.path)
            return 500, {"error": "internal", "message": "internal error"}

    return route
