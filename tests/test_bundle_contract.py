"""The data-bundle stacks (Johansson's REST vs GraphQL): both gateways answer the same data
for every size, from a real private PostgreSQL, and malformed GraphQL gets an error in
time, never a crash."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from ipclab_services.domains.bundle import data
from ipclab_services.domains.bundle.gateway import BUNDLE_QUERY

from ipclab.backends import StackOptions, get_backend
from ipclab.backends.local import LocalStack
from ipclab.backends.postgres import PostgresUnavailable, find_bin_dir
from tests.conftest import started_together


def _no_postgres() -> str | None:
    try:
        find_bin_dir()
    except PostgresUnavailable as e:
        return str(e)
    return None


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(_no_postgres() is not None, reason=str(_no_postgres())),
]


def call(url: str, body: bytes | None = None, method: str | None = None) -> tuple[int, Any]:
    req = urllib.request.Request(url, data=body, method=method)
    if body is not None:
        req.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def graphql(stack: LocalStack, query: str) -> tuple[int, Any]:
    return call(f"{stack.gateway_url}/api/graphql", json.dumps({"query": query}).encode())


@pytest.fixture(scope="module", params=[5, 25, 50], ids=lambda n: f"rows{n}")
def stacks(request: pytest.FixtureRequest) -> Iterator[tuple[int, dict[str, LocalStack]]]:
    rows = int(request.param)
    options = StackOptions(extra_env={"IPCLAB_BUNDLE_ROWS": str(rows)})
    # both at once: a start (its private PostgreSQL's initdb and load) is mostly waiting
    both = started_together(get_backend("local"), ("bundle-rest", "bundle-graphql"), options)
    try:
        yield rows, next(both)
    finally:
        both.close()  # stops them


def test_both_gateways_answer_the_same_bundle(stacks: tuple[int, dict[str, LocalStack]]) -> None:
    rows, s = stacks
    expected = {t: data.sorted_rows(t, rows) for t in data.TABLES}
    status, rest = call(f"{s['bundle-rest'].gateway_url}/api/Databundle/")
    assert status == 200 and rest == expected
    status, gql = graphql(s["bundle-graphql"], BUNDLE_QUERY)
    assert status == 200 and "errors" not in gql and gql["data"] == expected
    for table in data.TABLES:  # the per-service routes, any case as ASP.NET routes
        assert call(f"{s['bundle-rest'].gateway_url}/api/{table}/") == (200, expected[table])
    assert call(f"{s['bundle-rest'].gateway_url}/api/DATABUNDLE/")[1] == expected


def test_malformed_graphql_gets_an_error_in_time_and_the_gateway_keeps_serving(
    stacks: tuple[int, dict[str, LocalStack]],
) -> None:
    rows, s = stacks
    if rows != 5:
        pytest.skip("once is enough")
    url = f"{s['bundle-graphql'].gateway_url}/api/graphql"
    aliases = " ".join(f"a{i}: person {{ id }}" for i in range(200))
    blow_up = json.dumps({"query": f"{{ {aliases} }}"}).encode()
    cases: dict[str, tuple[bytes, int | None, str | None]] = {
        "syntax error": (b'{"query": "{ person { id "}', 400, None),
        "unknown field": (b'{"query": "{ nosuch }"}', 400, None),
        "aliases that multiply the calls": (blow_up, 400, None),
        "query too long": (json.dumps({"query": "{" + " " * 20_000 + "}"}).encode(), 413, None),
        "body too large": (b'{"query": "' + b" " * (2 << 20) + b'"}', 413, None),
        "not JSON": (b"not json", 400, None),
        "no query": (b'{"variables": {}}', 400, None),
        "wrong method": (b"", 405, "PUT"),
    }
    for what, (body, want, method) in cases.items():
        t0 = time.monotonic()
        status, answer = call(url, body, method)
        assert status == want, (what, status, answer)
        assert time.monotonic() - t0 < 5, what
        assert isinstance(answer, dict) and ("errors" in answer or "error" in answer), what
    assert graphql(s["bundle-graphql"], "{ person { id } }")[0] == 200


def test_a_dead_service_answers_503_on_both_apis(
    stacks: tuple[int, dict[str, LocalStack]],
) -> None:
    rows, s = stacks
    if rows != 5:
        pytest.skip("once is enough")
    for name in s:
        s[name].kill("car")
    try:
        assert call(f"{s['bundle-rest'].gateway_url}/api/Databundle/")[0] == 503
        status, answer = graphql(s["bundle-graphql"], BUNDLE_QUERY)
        assert status == 503 and answer["errors"], answer
    finally:
        for name in s:
            s[name].restart("car")
    deadline = time.monotonic() + 20
    while call(f"{s['bundle-rest'].gateway_url}/healthz")[0] != 200:
        assert time.monotonic() < deadline
        time.sleep(0.2)
