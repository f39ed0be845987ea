"""GraphQL over HTTP/1.1 (ariadne on graphql-core), on the same server and JSON encoder as
``http_json``, so a GraphQL gateway and a REST gateway differ only in their API layer.

``POST /api/graphql`` with ``{"query", "variables", "operationName"}`` (or ``GET
/api/graphql?query=...``); every other path is the domain's REST handler (``/healthz``,
``/stats``). The domain provides ``graphql_schema(clients, services, settings)``.

Bad input gets a GraphQL error, never a crash: a body that is not a JSON object or a
query that does not parse or validate answers 400; a query longer than ``MAX_QUERY``
characters 413; more than ``MAX_FIELDS`` field selections in all (aliases multiply the
service calls; a fragment counts each time it is spread) 400. A failed service call
answers the status the REST API would (503, 504, ...) with the GraphQL errors.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from graphql import BREAK, GraphQLError, ValidationRule
from graphql.language import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
)
from ipclab_services.domains import GatewaySettings
from ipclab_services.errors import ServiceError
from ipclab_services.fronts import Handler, Request, http_json

MAX_QUERY = 10_000  # characters
MAX_FIELDS = 64  # field selections in one document
PATH = ["api", "graphql"]


class FieldLimit(ValidationRule):
    """Refuse documents whose operations select more than ``MAX_FIELDS`` fields in all:
    aliases included, and every use of a fragment counted (a spread costs what its
    fragment selects, each time it is spread), so root aliases that reuse one fragment
    cost the calls they make. Fragments are counted once each (memo) and a cycle of
    spreads ends the count (NoFragmentCycles refuses it); no count passes the budget by
    more than one, however the spreads multiply."""

    def enter_document(self, node: DocumentNode, *_: Any) -> Any:
        fragments = {
            d.name.value: d for d in node.definitions if isinstance(d, FragmentDefinitionNode)
        }
        memo: dict[str, int] = {}
        total = 0
        try:
            for op in node.definitions:
                if isinstance(op, OperationDefinitionNode):
                    total += _cost(op.selection_set, fragments, memo, frozenset())
                    if total > MAX_FIELDS:
                        self.report_error(
                            GraphQLError(f"more than {MAX_FIELDS} fields selected", op)
                        )
                        return BREAK
        except RecursionError:
            self.report_error(GraphQLError("the document nests too deeply", node))
            return BREAK
        return None


def _cost(
    selection_set: SelectionSetNode | None,
    fragments: dict[str, FragmentDefinitionNode],
    memo: dict[str, int],
    spreading: frozenset[str],
) -> int:
    """The fields ``selection_set`` selects, each fragment spread expanded (at most
    ``MAX_FIELDS + 1``: beyond that the exact number does not matter)."""
    total = 0
    for selection in selection_set.selections if selection_set else ():
        if isinstance(selection, FieldNode):
            total += 1 + _cost(selection.selection_set, fragments, memo, spreading)
        elif isinstance(selection, InlineFragmentNode):
            total += _cost(selection.selection_set, fragments, memo, spreading)
        elif isinstance(selection, FragmentSpreadNode):
            name = selection.name.value
            if name in spreading or name not in fragments:
                continue  # a cycle or an unknown fragment: other rules refuse it
            if name not in memo:
                inner = fragments[name].selection_set
                memo[name] = _cost(inner, fragments, memo, spreading | {name})
            total += memo[name]
        if total > MAX_FIELDS:
            return MAX_FIELDS + 1
    return total


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
