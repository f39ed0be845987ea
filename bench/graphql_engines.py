"""GraphQL engines on the data bundle's four-field query, against a plain REST handler.

Every candidate does what a gateway does with one request once the four services have
answered: take the request body, produce the response body. The data are in memory (the
bundle domain's seeded rows, ``n`` per table); the top-level resolvers are ``async`` (a
gateway awaits its services), nested fields use each engine's default resolver.

- ``rest``: the baseline. ``orjson.dumps({table: await rows(table) ...})``, as a REST
  handler for ``GET /api/Databundle/`` would.
- ``graphql-core``: the reference implementation every engine below runs on
  (``graphql.graphql``: parse, validate, execute), the body parsed and the result encoded
  with orjson, as the others.
- ``graphql-core-cached``: the same with the query parsed and validated once (a document
  cache), i.e. execution only: the floor of any engine on graphql-core.
- ``strawberry``, ``ariadne``, ``graphene``: each engine's own async entry point with its
  defaults (``Schema.execute``, ``ariadne.graphql``, ``Schema.execute_async``), no cache.

Query: ``{ person { id name } animal { type name } car { model color } building { address
department } }``; every candidate's response is checked to parse to the same bundle.

Per candidate and size, a batch of ``--queries`` requests runs one after another on one
uvloop event loop, measuring the process's CPU time (``time.process_time``) and wall time.
``--rounds`` rounds interleave the candidates in a shuffled order (seeded), so a busy
neighbour on a shared machine hits all of them alike; each candidate's ratio to ``rest`` is
taken within a round, and the table gives medians over rounds with the spread (min-max).

    python bench/graphql_engines.py [--sizes 5,25,50] [--queries 300] [--rounds 7] [--only a,b]
                            [--json bench/results/graphql.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import orjson
import uvloop
from ipclab_services.domains.bundle import data
from ipclab_services.domains.bundle.gateway import BUNDLE_QUERY, SDL

RESULTS = Path(__file__).resolve().parent / "results"
QUERY = BUNDLE_QUERY  # the gateway's own query and schema: the bench measures what runs
BODY = orjson.dumps({"query": QUERY})

Handler = Callable[[bytes], Awaitable[bytes]]
Bundle = dict[str, list[dict[str, str]]]


@dataclass(frozen=True)
class Candidate:
    name: str
    package: str  # whose version is reported
    make: Callable[[Bundle], Handler]


def _fetcher(bundle: Bundle) -> Callable[[str], Awaitable[list[dict[str, str]]]]:
    async def fetch(table: str) -> list[dict[str, str]]:
        return bundle[table]

    return fetch


def _graphql_response(result: Any) -> bytes:
    doc: dict[str, Any] = {"data": result.data}
    if result.errors:
        doc["errors"] = [e.formatted for e in result.errors]
    return orjson.dumps(doc)


# --- candidates -------------------------------------------------------------------------
def make_rest(bundle: Bundle) -> Handler:
    fetch = _fetcher(bundle)

    async def handle(body: bytes) -> bytes:
        return orjson.dumps({t: await fetch(t) for t in data.TABLES})

    return handle


def _core_schema(bundle: Bundle) -> Any:
    from graphql import build_schema

    schema = build_schema(SDL)
    fetch = _fetcher(bundle)
    for table in data.TABLES:

        async def resolve(_root: Any, _info: Any, table: str = table) -> Any:
            return await fetch(table)

        schema.query_type.fields[table].resolve = resolve  # type: ignore[union-attr]
    return schema


def make_graphql_core(bundle: Bundle) -> Handler:
    from graphql import graphql

    schema = _core_schema(bundle)

    async def handle(body: bytes) -> bytes:
        request = orjson.loads(body)
        return _graphql_response(await graphql(schema, request["query"]))

    return handle


def make_graphql_core_cached(bundle: Bundle) -> Handler:
    from graphql import execute, parse, validate

    schema = _core_schema(bundle)
    cache: dict[str, Any] = {}

    async def handle(body: bytes) -> bytes:
        request = orjson.loads(body)
        document = cache.get(request["query"])
        if document is None:
            document = parse(request["query"])
            assert not validate(schema, document)
            cache[request["query"]] = document
        result = execute(schema, document)
        if not isinstance(result, dict | tuple) and hasattr(result, "__await__"):
            result = await result
        return _graphql_response(result)

    return handle


def make_strawberry(bundle: Bundle) -> Handler:
    import strawberry

    @strawberry.type
    class Person:
        id: str
        name: str

    @strawberry.type
    class Animal:
        type: str
        name: str

    @strawberry.type
    class Car:
        model: str
        color: str

    @strawberry.type
    class Building:
        address: str
        department: str

    # strawberry's default resolver reads attributes: the rows as instances of its types
    typed = {
        "person": [Person(**r) for r in bundle["person"]],
        "animal": [Animal(**r) for r in bundle["animal"]],
        "car": [Car(**r) for r in bundle["car"]],
        "building": [Building(**r) for r in bundle["building"]],
    }

    async def fetch(table: str) -> Any:
        return typed[table]

    def field(table: str, of: type) -> Any:
        async def resolve() -> Any:
            return await fetch(table)

        # an explicit type: this module's postponed annotations would not resolve locally
        return strawberry.field(resolver=resolve, graphql_type=list[of])  # type: ignore[valid-type]

    @strawberry.type
    class Query:
        person = field("person", Person)
        animal = field("animal", Animal)
        car = field("car", Car)
        building = field("building", Building)

    schema = strawberry.Schema(query=Query)

    async def handle(body: bytes) -> bytes:
        request = orjson.loads(body)
        return _graphql_response(await schema.execute(request["query"]))

    return handle


def make_ariadne(bundle: Bundle) -> Handler:
    from ariadne import QueryType, graphql, make_executable_schema

    query = QueryType()
    fetch = _fetcher(bundle)
    for table in data.TABLES:

        async def resolve(_obj: Any, _info: Any, table: str = table) -> Any:
            return await fetch(table)

        query.set_field(table, resolve)
    schema = make_executable_schema(SDL, query)

    async def handle(body: bytes) -> bytes:
        ok, result = await graphql(schema, orjson.loads(body))
        return orjson.dumps(result)

    return handle


def make_graphene(bundle: Bundle) -> Handler:
    import graphene

    class Person(graphene.ObjectType):
        id = graphene.String(required=True)
        name = graphene.String(required=True)

    class Animal(graphene.ObjectType):
        type = graphene.String(required=True)
        name = graphene.String(required=True)

    class Car(graphene.ObjectType):
        model = graphene.String(required=True)
        color = graphene.String(required=True)

    class Building(graphene.ObjectType):
        address = graphene.String(required=True)
        department = graphene.String(required=True)

    fetch = _fetcher(bundle)

    class Query(graphene.ObjectType):
        person = graphene.List(graphene.NonNull(Person), required=True)
        animal = graphene.List(graphene.NonNull(Animal), required=True)
        car = graphene.List(graphene.NonNull(Car), required=True)
        building = graphene.List(graphene.NonNull(Building), required=True)

        async def resolve_person(root: Any, info: Any) -> Any:
            return await fetch("person")

        async def resolve_animal(root: Any, info: Any) -> Any:
            return await fetch("animal")

        async def resolve_car(root: Any, info: Any) -> Any:
            return await fetch("car")

        async def resolve_building(root: Any, info: Any) -> Any:
            return await fetch("building")

    schema = graphene.Schema(query=Query)

    async def handle(body: bytes) -> bytes:
        request = orjson.loads(body)
        return _graphql_response(await schema.execute_async(request["query"]))

    return handle


CANDIDATES = (
    Candidate("rest", "orjson", make_rest),
    Candidate("graphql-core", "graphql-core", make_graphql_core),
    Candidate("graphql-core-cached", "graphql-core", make_graphql_core_cached),
    Candidate("strawberry", "strawberry-graphql", make_strawberry),
    Candidate("ariadne", "ariadne", make_ariadne),
    Candidate("graphene", "graphene", make_graphene),
)
ENGINES = ("strawberry", "ariadne", "graphene")


# --- measuring --------------------------------------------------------------------------
def check(name: str, handler: Handler, bundle: Bundle) -> int:
    """The response parses to the bundle (GraphQL: under ``data``, no errors); its size."""
    body = uvloop.run(handler(BODY))
    doc = orjson.loads(body)
    got = doc if name == "rest" else doc.get("data")
    if name != "rest" and doc.get("errors"):
        raise AssertionError(f"{name}: {doc['errors']}")
    if got != bundle:
        raise AssertionError(f"{name}: response differs from the bundle")
    return len(body)


async def batch(handler: Handler, queries: int) -> tuple[float, float]:
    for _ in range(max(5, queries // 20)):  # warm-up
        await handler(BODY)
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(queries):
        await handler(BODY)
    return time.process_time() - c0, time.perf_counter() - t0


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def run(sizes: list[int], queries: int, rounds: int, only: set[str] | None) -> dict[str, Any]:
    chosen, missing = [], {}
    for c in CANDIDATES:
        if only and c.name not in only and c.name != "rest":
            continue
        try:
            c.make(data.bundle(1))
            chosen.append(c)
        except ImportError as e:
            missing[c.name] = f"{e} (pip install -e '.[bench]')"
    rng = random.Random(15)
    results: list[dict[str, Any]] = []
    for n in sizes:
        bundle = data.bundle(n)
        handlers = {c.name: c.make(bundle) for c in chosen}
        size = {name: check(name, h, bundle) for name, h in handlers.items()}
        cpu: dict[str, list[float]] = {name: [] for name in handlers}
        wall: dict[str, list[float]] = {name: [] for name in handlers}
        for _ in range(rounds):
            order = list(handlers)
            rng.shuffle(order)
            for name in order:
                c, w = uvloop.run(batch(handlers[name], queries))
                cpu[name].append(c / queries * 1e6)
                wall[name].append(w / queries * 1e6)
        for c in chosen:
            name = c.name
            results.append(
                {
                    "rows": n,
                    "candidate": name,
                    "version": metadata.version(c.package),
                    "response_bytes": size[name],
                    "cpu_us": spread(cpu[name]),
                    "wall_us": spread(wall[name]),
                    "qps": spread([1e6 / w for w in wall[name]]),
                    "samples_cpu_us": cpu[name],
                    "samples_wall_us": wall[name],
                }
            )
    return {"results": results, "missing": missing}


def derive(doc: dict[str, Any]) -> dict[str, Any]:
    """Ratios within each round, from the samples: CPU per query over ``rest``'s and over
    ``graphql-core``'s (the engines' common base); per size, the slowest engine over the
    fastest, by median CPU per query."""
    by = {(r["rows"], r["candidate"]): r for r in doc["results"]}
    for (n, _name), r in by.items():
        for base, key in (("rest", "cpu_ratio_to_rest"), ("graphql-core", "cpu_ratio_to_core")):
            if (n, base) in by and not (base == "graphql-core" and _name == "rest"):
                b = by[(n, base)]["samples_cpu_us"]
                r[key] = spread([x / y for x, y in zip(r["samples_cpu_us"], b, strict=True)])
    doc["engine_spread"] = {}
    for n in sorted({r["rows"] for r in doc["results"]}):
        cpu = [by[(n, e)]["cpu_us"]["median"] for e in ENGINES if (n, e) in by]
        if len(cpu) >= 2:
            doc["engine_spread"][str(n)] = max(cpu) / min(cpu)
    return doc


def print_table(doc: dict[str, Any]) -> None:
    head = (
        f"{'rows':>4} {'candidate':20} {'version':9} {'bytes':>6} {'cpu us/q':>9} "
        f"{'(min-max)':>13} {'q/s':>7} {'x rest':>7} {'x core':>6} {'(min-max)':>11}"
    )
    print(head)
    print("-" * len(head))
    for r in doc["results"]:
        c, q, x = r["cpu_us"], r["qps"], r.get("cpu_ratio_to_rest")
        k = r.get("cpu_ratio_to_core")
        rest = f"{x['median']:7.0f}" if x else f"{'':7}"
        core = f"{k['median']:6.2f} {k['min']:5.2f}-{k['max']:<5.2f}" if k else ""
        print(
            f"{r['rows']:>4} {r['candidate']:20} {r['version']:9} {r['response_bytes']:>6} "
            f"{c['median']:9.1f} {c['min']:6.0f}-{c['max']:<6.0f} {q['median']:7.0f} "
            f"{rest} {core}"
        )
    for n, ratio in doc["engine_spread"].items():
        verdict = "MORE than 2x: the library is a factor" if ratio > 2 else "within 2x"
        print(f"rows {n}: slowest/fastest engine (CPU per query) {ratio:.2f}x, {verdict}")
    for name, why in doc["missing"].items():
        print(f"{name}: not measured, {why}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="5,25,50")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--only", default="", help="candidates besides rest, comma-separated")
    ap.add_argument("--json", type=Path, default=RESULTS / "graphql.json")
    ap.add_argument("--report", type=Path, help="reprint a saved result; measure nothing")
    args = ap.parse_args()
    if args.report:
        saved = derive(json.loads(args.report.read_text()))
        a = saved["args"]
        print(f"{args.report}: {a['queries']} requests per batch, {a['rounds']} rounds")
        print_table(saved)
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    only = set(args.only.split(",")) if args.only else None
    doc = derive(run(sizes, args.queries, args.rounds, only))
    doc["args"] = vars(args) | {"json": str(args.json)}
    doc["environment"] = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": __import__("os").cpu_count(),
        "uvloop": metadata.version("uvloop"),
        "query": QUERY,
    }
    print(
        f"{args.queries} requests per batch, {args.rounds} interleaved rounds; "
        "medians over rounds, (min-max) the spread"
    )
    print_table(doc)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(doc, indent=2))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
