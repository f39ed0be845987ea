"""Issue 28, item 7: the GraphQL front's cost (``fronts/graphql.py``, ``FieldLimit``)
counts every use of a fragment, so root aliases reusing one fragment are refused as the
same aliases written out are, and the stacks' own queries still pass. The GraphQL handler
runs in process on every GraphQL stack's domain, over clients that count the service calls
(no database needed)."""

from __future__ import annotations

import asyncio
import time
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import orjson
import pytest
from ipclab_services import domains
from ipclab_services.domains import GatewaySettings
from ipclab_services.fronts import Request
from ipclab_services.fronts import graphql as front

from ipclab.stacks import all_stacks

GRAPHQL_STACKS = {n: s for n, s in all_stacks().items() if s.front == "graphql"}
LIMIT_ERROR = f"more than {front.MAX_FIELDS} fields selected"


class CountingClients:
    """Every service answers a few rows of whatever fields a schema may ask; calls counted."""

    def __init__(self) -> None:
        self.calls = 0

    async def call(self, service: str, op: str, request: dict[str, Any], timeout: float) -> Any:
        self.calls += 1
        row = {k: f"{service}-{k}" for k in ("id", "name", "type", "model", "color")}
        row |= {"address": "a", "department": "d"}
        return {"rows": [row, row]}

    def stats(self) -> dict[str, Any]:
        return {}


def ask(stack: str, query: str, method: str = "POST") -> tuple[int, Any, int]:
    """``query`` to ``stack``'s GraphQL handler: (status, answer, service calls made)."""
    spec = GRAPHQL_STACKS[stack]
    clients = CountingClients()
    handler = front.make_handler(
        domains.load(spec.domain), clients, spec.services, GatewaySettings()
    )
    if method == "GET":
        request = Request("GET", list(front.PATH), {"query": query})
    else:
        request = Request("POST", list(front.PATH), {}, orjson.dumps({"query": query}))
    status, answer = asyncio.run(handler(request))
    return status, answer, clients.calls


def _first_table(stack: str) -> str:
    return GRAPHQL_STACKS[stack].services[0]


@pytest.mark.parametrize("stack", GRAPHQL_STACKS)
def test_root_aliases_reusing_one_fragment_are_refused_as_the_same_aliases_written_out(
    stack: str,
) -> None:
    """62 root aliases, each spreading one fragment of two fields: 186 fields, 62 table
    fetches. Counted once per fragment (the old count: 62 + 2 = 64) it passed; counted per
    use it gets the over-budget answer of the same query written without the fragment."""
    table = _first_table(stack)
    kind = table.capitalize()
    with_fragment = (
        "{ "
        + " ".join(f"a{i}: {table} {{ ...F }}" for i in range(62))
        + f" }} fragment F on {kind} {{ __typename __typename }}"
    )
    written_out = (
        "{ " + " ".join(f"a{i}: {table} {{ __typename __typename }}" for i in range(62)) + " }"
    )
    refused = [ask(stack, q) for q in (with_fragment, written_out)]
    for status, answer, calls in refused:
        assert status == 400 and calls == 0, (status, answer)
        assert [e["message"] for e in answer["errors"]] == [LIMIT_ERROR]
    assert refused[0][:2] == refused[1][:2]  # the same answer, status and error


@pytest.mark.parametrize("stack", GRAPHQL_STACKS)
def test_spreads_that_multiply_are_counted_without_blowing_up(stack: str) -> None:
    """Each fragment spreads the one below twice (2^30 fields in the end) or a cycle: the
    count stops at the budget, at once."""
    table = _first_table(stack)
    kind = table.capitalize()
    levels = " ".join(
        f"fragment F{i} on {kind} {{ a: __typename ...F{i - 1} b: __typename ...F{i - 1} }}"
        for i in range(1, 31)
    )
    query = f"{{ {table} {{ ...F30 }} }} fragment F0 on {kind} {{ __typename }} {levels}"
    t0 = time.monotonic()
    status, answer, calls = ask(stack, query)
    assert status == 400 and calls == 0 and time.monotonic() - t0 < 2
    assert LIMIT_ERROR in [e["message"] for e in answer["errors"]]
    cycle = (
        f"{{ {table} {{ ...A }} }} fragment A on {kind} {{ __typename ...B }} "
        f"fragment B on {kind} {{ __typename ...A }}"
    )
    status, answer, calls = ask(stack, cycle)
    assert status == 400 and calls == 0, answer  # graphql-core's NoFragmentCycles


@pytest.mark.parametrize("stack", GRAPHQL_STACKS)
def test_the_stacks_own_queries_and_a_fragment_within_the_budget_pass(stack: str) -> None:
    """What the stack's load generator and probes send (its declared probe paths, the
    domain's full query if it has one) is answered, as is a fragment used a few times."""
    spec = GRAPHQL_STACKS[stack]
    domain = domains.load(spec.domain)
    queries = [
        dict(parse_qsl(urlsplit(p).query))["query"] for p in spec.probe_paths if "query=" in p
    ]
    full = getattr(getattr(domain, "gateway", None), "BUNDLE_QUERY", None)
    queries += [full] if full else []
    assert queries, f"{stack}: no query to check"
    for query in queries:
        for method in ("POST", "GET"):
            status, answer, calls = ask(stack, query, method)
            assert status == 200 and "errors" not in answer and calls >= 1, (query, answer)
    table = _first_table(stack)
    kind = table.capitalize()
    reused = (
        "{ "
        + " ".join(f"a{i}: {table} {{ ...F }}" for i in range(10))
        + f" }} fragment F on {kind} {{ __typename }}"
    )  # 20 fields
    status, answer, calls = ask(stack, reused)
    assert status == 200 and calls == 10, answer
