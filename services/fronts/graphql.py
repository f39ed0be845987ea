"""GraphQL over HTTP/1.1 (ariadne on graphql-core), on the same server and JSON encoder as
``http_json``, so a GraphQL gateway and a REST gateway differ only in their API layer.

``POST /api/graphql`` with ``{"query", "variables", "operationName"}`` (or ``GET
/api/graphql?query=...``); every other path is the domain's REST handler (``/healthz``,
``/stats``). The domain provides ``graphql_schema(clients, services, settings)``.

Bad input gets a GraphQL error, never a crash: a body that is not a JSON object or a
query that does not parse or validate answers 400; a query longer than ``MAX_QUERY``
characters 413; more than ``MAX_FIELDS`` field selections in all (aliases multiply the
service calls) 400. A failed service call answers the status the REST API would (503,
504, ...) with the GraphQL errors.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from graphql import GraphQLError, ValidationRule
from graphql.language import FieldNode
from ipclab_services.domains import GatewaySettings
from ipclab_services.errors import ServiceError
from ipclab_services.fronts import Handler, Request, http_json

MAX_QUERY = 10_000  # characters
MAX_FIELDS = 64  # field selections in one document
PATH = ["api", "graphql"]


class FieldLimit(ValidationRule):
    """Refuse documents that select more than ``MAX_FIELDS`` fields (aliases included)."""

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self.count = 0

    def enter_field(self, node: FieldNode, *_: Any) -> None:
        self.count += 1
        if self.count == MAX_FIELDS + 1:
            self.report_error(GraphQLError(f"more than {MAX_FIELDS} fields selected", node))


def _request_document(request: Request) -> dict[str, Any] | str:
    """The GraphQL request (query, variables, operationName), or why it is malformed."""
    if request.method == "GET":
        return {"query": request.query.get("query", "")}
    if request.method != "POST":
        return "use POST (or GET with ?query=)"
    try:
        doc = orjson.loads(request.body)
    except orjson.JSONDecodeError:
        return "the body is not JSON"
    if not isinstance(doc, dict) or not isinstance(doc.get("query"), str):
        return 'the body must be a JSON object with a "query" string'
    return doc


def make_handler(
    domain: Any, clients: Any, services: tuple[str, ...], settings: GatewaySettings
) -> Handler:
    from ariadne import graphql

    schema = domain.graphql_schema(clients, services, settings)
    rest = domain.gateway_handler(clients, services, settings)
    worst = getattr(domain, "worst_error", None)

    async def handle(request: Request) -> tuple[int, Any]:
        if [p.lower() for p in request.path] != PATH:
            return await rest(request)
        doc = _request_document(request)
        if isinstance(doc, str):
            return (405 if "POST" in doc else 400), {"errors": [{"message": doc}]}
        if len(doc["query"]) > MAX_QUERY:
            return 413, {"errors": [{"message": f"query longer than {MAX_QUERY} characters"}]}
        failures: list[BaseException] = []

        def formatter(error: GraphQLError, debug: bool = False) -> dict[str, Any]:
            if isinstance(error.original_error, ServiceError):
                failures.append(error.original_error)
            return {"message": error.message, "path": error.path}

        ok, result = await graphql(
            schema,
            {k: doc.get(k) for k in ("query", "variables", "operationName") if k in doc},
            validation_rules=[FieldLimit],
            error_formatter=formatter,
            debug=False,
        )
        if failures:
            e = worst(failures) if worst else failures[0]
            return getattr(e, "http_status", 502), result
        return (200 if ok and result.get("data") is not None else 400), result

    return handle


async def serve(handler: Handler, host: str, port: int, ready: asyncio.Event | None = None) -> None:
    await http_json.serve(handler, host, port, ready)
