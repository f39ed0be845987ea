"""The payload stack: an edge service (the gateway) calling one data service over HTTP/1.1.

The format (JSON or Protocol Buffers) is chosen per request by the route, so one stack
serves both and a run compares them under the same processes; gzip, the cache and the JSON
encoder are the stack's knobs, set per run through its environment (``knobs``). The domain
serves its roles itself (``ipclab_services.domains.payload.serve_role``): ``front`` and
``transport`` name what the roles speak, not packages under ``services/``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ipclab_services.domains.payload import SERVICES

from ipclab.stackspec import StackSpec

PAYLOAD = StackSpec(
    "payload-http",
    domain="payload",
    front="http",
    transport="http1",
    style="http",
    services=SERVICES,
    users="ipclab.studies.buono.users",
    probe_paths=("/json/flat?count=5",),
    probe_required=("users",),
    description="JSON vs Protocol Buffers: edge service -> data service (HTTP/1.1), "
    "GET/POST /{json|protobuf}/{flat|nested}",
)
STACKS = (PAYLOAD,)


def knobs(gzip: bool, cache: bool, json_library: str = "orjson") -> Mapping[str, str]:
    """The data service's environment for one setting of gzip, the cache and the encoder
    (``StackOptions.extra_env``)."""
    return {
        "IPCLAB_GZIP": "1" if gzip else "0",
        "IPCLAB_CACHE": "1" if cache else "0",
        "IPCLAB_JSON_LIBRARY": json_library,
    }


def data_service(manifest: Mapping[str, Any]) -> dict[str, Any] | None:
    """The data service's own description of how it ran (settings, ``protobuf`` version and
    ``implementation``: upb, python or cpp) as a run's manifest records it: the edge's
    ``/healthz`` read at stack-up (``healthz``, keyed by stack in a group run). None for a
    run whose manifest does not record it (runs made before it did)."""
    health = manifest.get("healthz")
    if isinstance(health, Mapping) and isinstance(health.get(PAYLOAD.name), Mapping):
        health = health[PAYLOAD.name]  # a group run: one document per stack
    described = health.get("data") if isinstance(health, Mapping) else None
    return dict(described) if isinstance(described, Mapping) else None
