"""The data-bundle stacks: the same four data services over gRPC and one PostgreSQL
database, behind a REST gateway or a GraphQL gateway (the only difference)."""

from __future__ import annotations

from ipclab_services.domains.bundle import SERVICES

from ipclab.stackspec import DATABASE, StackSpec

_BUNDLE = {
    "domain": "bundle",
    "transport": "grpc",
    "services": SERVICES,
    "infrastructure": (DATABASE,),
}

REST = StackSpec(
    "bundle-rest",
    front="http_json",
    style="rest",
    users="ipclab.studies.johansson.users_rest",
    probe_paths=("/api/Databundle/",),
    probe_required=SERVICES,
    description="data bundle; REST gateway (GET /api/Databundle/) -> 4 services (gRPC) -> SQL",
    **_BUNDLE,
)
GRAPHQL = StackSpec(
    "bundle-graphql",
    front="graphql",
    style="graphql",
    users="ipclab.studies.johansson.users_graphql",
    probe_paths=("/api/graphql?query=%7Bperson%7Bid%7D%7D",),
    probe_required=("data",),
    description="data bundle; GraphQL gateway (POST /api/graphql) -> 4 services (gRPC) -> SQL",
    **_BUNDLE,
)
COMPARED = (REST, GRAPHQL)
STACKS = COMPARED
