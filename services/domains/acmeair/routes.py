"""AcmeAir's REST API, each service answering its own routes over HTTP/1.1.

As in the AcmeAir microservices, every service is an HTTP/1.1 app under its own context
root, and the gateway only forwards by the first path segment (``gateway.py``):

Paths below are under each service's API root ``/<service>/<context>/rest/api``
(:func:`api`: ``/auth/acmeair-as``, ``/flight/acmeair-fs``, ``/booking/acmeair-bs``,
``/customer/acmeair-cs``):

| test case (driver name)  | service  | route                                     | op     |
|--------------------------|----------|-------------------------------------------|--------|
| Login                    | auth     | POST login (form login, password)         | login  |
| Logout                   | auth     | GET  login/logout?login=                  | logout |
| Query Flight             | flight   | POST flights/queryflights (form)          | query  |
| Book Flight              | booking  | POST bookings/bookflights (form)          | book   |
| List Bookings            | booking  | GET  bookings/byuser/{user}               | list   |
| Cancel Booking           | booking  | POST bookings/cancelbooking (form)        | cancel |
| View Profile Information | customer | GET  customer/byid/{user}                 | view   |
| Update Customer          | customer | POST customer/byid/{user} (JSON)          | update |

Login answers ``text/plain`` "logged in" and sets the ``sessionid`` and ``loggedinuser``
cookies; every route of booking and customer needs the ``sessionid`` cookie, which the
service validates with auth's ``GET /auth/acmeair-as/rest/api/login/validate?session=``
(``validator.py``: 401 without it). ``GET /<service>/healthz`` answers each service's
health. Errors are ``{"error": code, "message": ...}`` with the error's status.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import parse_qsl

import orjson
from ipclab_services.errors import BadRequest, ServiceError, Unauthorized
from ipclab_services.fronts import Handler, Reply, Request
from ipclab_services.transports.base import ServiceDef

_log = logging.getLogger(__name__)
#: Each service's context root, AcmeAir's (``/<service>/<context>/rest/api/...``).
CONTEXT = {
    "auth": "acmeair-as",
    "flight": "acmeair-fs",
    "booking": "acmeair-bs",
    "customer": "acmeair-cs",
}
MAX_FIELDS = 16
TEXT = "text/plain; charset=utf-8"


def api(service: str) -> str:
    """The path prefix of ``service``'s REST API, e.g. ``/auth/acmeair-as/rest/api``."""
    return f"/{service}/{CONTEXT[service]}/rest/api"


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
    return Reply(body.encode(), TEXT, headers)


async def _auth(svc: ServiceDef, method: str, rest: list[str], request: Request) -> Any:
    if method == "POST" and rest == ["login"]:
        fields = form(request)
        who = fields.get("login", "")
        reply = await svc.invoke("login", {"login": who, "password": fields.get("password", "")})
        return _text(
            "logged in",
            (
                ("set-cookie", f"sessionid={reply['session']}; Path=/"),
                ("set-cookie", f"loggedinuser={reply['customer']}; Path=/"),
            ),
        )
    if method == "GET" and rest == ["login", "logout"]:
        session = cookies(request).get("sessionid", "")
        if session:
            await svc.invoke("logout", {"session": session})
        return _text("logged out", (("set-cookie", "sessionid=; Path=/; Max-Age=0"),))
    if method == "GET" and rest == ["login", "validate"]:
        return await svc.invoke("validate", {"session": request.query.get("session", "")})
    return None


async def _flight(svc: ServiceDef, method: str, rest: list[str], request: Request) -> Any:
    if method == "POST" and rest == ["flights", "queryflights"]:
        return await svc.invoke("query", form(request))
    return None


async def _booking(svc: ServiceDef, method: str, rest: list[str], request: Request) -> Any:
    if method == "POST" and rest == ["bookings", "bookflights"]:
        fields = form(request)
        fields["user"] = fields.pop("userid", "")
        return await svc.invoke("book", {**fields, "session": _session(request)})
    if method == "GET" and len(rest) == 3 and rest[:2] == ["bookings", "byuser"]:
        return await svc.invoke("list", {"user": rest[2], "session": _session(request)})
    if method == "POST" and rest == ["bookings", "cancelbooking"]:
        fields = form(request)
        req = {
            "user": fields.get("userid", ""),
            "number": fields.get("number", ""),
            "session": _session(request),
        }
        return await svc.invoke("cancel", req)
    return None


async def _customer(svc: ServiceDef, method: str, rest: list[str], request: Request) -> Any:
    if len(rest) != 3 or rest[:2] != ["customer", "byid"]:
        return None
    if method == "GET":
        return await svc.invoke("view", {"user": rest[2], "session": _session(request)})
    if method == "POST":
        try:
            doc = orjson.loads(request.body or b"{}")
        except orjson.JSONDecodeError:
            raise BadRequest("the profile is not JSON") from None
        if not isinstance(doc, dict):
            raise BadRequest("the profile must be a JSON object")
        flat = {k: str(v) for k, v in doc.items() if not isinstance(v, dict | list)}
        flat.update({k: str(v) for k, v in (doc.get("address") or {}).items()})
        return await svc.invoke("update", {**flat, "user": rest[2], "session": _session(request)})
    return None


_ROUTES = {"auth": _auth, "flight": _flight, "booking": _booking, "customer": _customer}


def handler(svc: ServiceDef) -> Handler:
    """The HTTP/1.1 routes of one service (``svc.name``), calling its operations."""
    routes = _ROUTES[svc.name]
    root = [svc.name, CONTEXT[svc.name], "rest", "api"]

    async def route(request: Request) -> tuple[int, Any]:
        parts = request.path
        try:
            if parts == [svc.name, "healthz"]:
                return 200, await svc.invoke("ping", {}) or {"service": svc.name}
            if parts[:4] == root:
                answer = await routes(svc, request.method, parts[4:], request)
                if answer is not None:
                    return 200, answer
            return 404, {"error": "not_found", "message": "no such path"}
        except ServiceError as e:
            return e.http_status, {"error": e.code, "message": str(e)}
        except Exception:  # noqa: BLE001 - a bug answers 500, it must not hang the client
            _log.exception("%s: internal error on %s", svc.name, request.path)
            return 500, {"error": "internal", "message": "internal error"}

    return route
