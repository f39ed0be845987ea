"""The bundle's gateway: the same calls to the four services behind a REST API and a
GraphQL API, so that only the API layer differs (the two gateways on equal terms).

REST: ``GET /api/Databundle/`` (every table), ``GET /api/<table>/`` (one), ``/healthz``,
``/stats``. GraphQL: one query type with one list field per table (:data:`SDL`), served by
the ``graphql`` front at ``/api/graphql``; its resolvers make the same service calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from ipclab_services.domains import GatewaySettings, health, worst_error
from ipclab_services.domains.bundle import data
from ipclab_services.errors import ServiceError
from ipclab_services.fronts import Handler, Request
from ipclab_services.transports.base import Clients

SDL = """
type Person { id: String! name: String! }
type Animal { type: String! name: String! }
type Car { model: String! color: String! }
type Building { address: String! department: String! }
type Query {
  person: [Person!]!
  animal: [Animal!]!
  car: [Car!]!
  building: [Building!]!
}
"""
#: The thesis's query: every field of every table.
BUNDLE_QUERY = (
    "{ person { id name } animal { type name } car { model color } "
    "building { address department } }"
)


def _fetcher(
    clients: Clients, settings: GatewaySettings
) -> Callable[[str], Awaitable[list[dict[str, Any]]]]:
    """One table's rows from its service; one call at a time when ``settings.sequential``."""
    lock = asyncio.Lock() if settings.sequential else None

    async def fetch(table: str) -> list[dict[str, Any]]:
        if lock is None:
            answer = await clients.call(table, "get", {}, settings.timeout_s)
        else:
            async with lock:
                answer = await clients.call(table, "get", {}, settings.timeout_s)
        return list(answer["rows"])

    return fetch


def handler(clients: Clients, services: tuple[str, ...], settings: GatewaySettings) -> Handler:
    """The REST API (GET only), /healthz and /stats."""
    fetch = _fetcher(clients, settings)
    routes = {t.lower(): t for t in services}

    async def bundle() -> dict[str, Any]:
        results = await asyncio.gather(*(fetch(t) for t in services), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            raise worst_error(errors)
        return dict(zip(services, results, strict=True))

    async def route(request: Request) -> tuple[int, Any]:
        if request.method != "GET":
            return 405, {"error": "method_not_allowed"}
        parts = [p.lower() for p in request.path]
        try:
            if parts == ["api", "databundle"]:
                return 200, await bundle()
            if len(parts) == 2 and parts[0] == "api" and parts[1] in routes:
                return 200, await fetch(routes[parts[1]])
            if parts == ["healthz"]:
                return await health(clients, services, settings.timeout_s)
            if parts == ["stats"]:
                return 200, clients.stats()
            return 404, {"error": "not_found", "message": "no such path"}
        except ServiceError as e:
            return e.http_status, {"error": e.code, "message": str(e)}

    return route


def graphql_schema(clients: Clients, services: tuple[str, ...], settings: GatewaySettings) -> Any:
    """The executable schema (ariadne): one resolver per table, each one service call."""
    from ariadne import QueryType, make_executable_schema

    fetch = _fetcher(clients, settings)
    query = QueryType()
    for table in services:

        async def resolve(_: Any, __: Any, table: str = table) -> list[dict[str, Any]]:
            return await fetch(table)

        query.set_field(table, resolve)
    return make_executable_schema(SDL, query)


__all__ = ["BUNDLE_QUERY", "SDL", "data", "graphql_schema", "handler"]
