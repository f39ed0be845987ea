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

from ipclab.stackspec import JVM, StackSpec

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
#: the same services on the JVM (services/java/payload: Quarkus, Jackson, protobuf-java), as
#: the thesis ran them; the runtime is a factor of the study (its own rows, claims per runtime)
PAYLOAD_JVM = StackSpec(
    "payload-http-jvm",
    domain="payload",
    front="http",
    transport="http1",
    style="http",
    services=SERVICES,
    users="ipclab.studies.buono.users",
    probe_paths=("/json/flat?count=5",),
    probe_required=("users",),
    runtime=JVM,
    description="JSON vs Protocol Buffers on the JVM (Quarkus, Jackson, protobuf-java): edge "
    "service -> data service (HTTP/1.1), GET/POST /{json|protobuf}/{flat|nested}",
)
STACKS = (PAYLOAD, PAYLOAD_JVM)
BY_RUNTIME = {s.runtime.name: s for s in STACKS}  # "python", "jvm"
#: each runtime's JSON encoders (the first is its primary; the JVM has Jackson alone)
ENCODERS = {"python": ("orjson", "json"), "jvm": ("jackson",)}
#: the JVM's flags in every payload run: run-java.sh's, which the thesis's image started the
#: JVM with (Fig. 40: run-java.sh 1.3.8, no heap flag), so a full heap ends the JVM as there
JVM_OPTIONS = "-XX:+ExitOnOutOfMemoryError"
#: the JVM heap policies a memory cell runs under: the JVM's default (a quarter of the
#: container's memory, at least about 125 MB: 126 MiB at 400 MB; the thesis's), or the
#: whole container limit
HEAPS = {"default": "", "limit": "-XX:MaxRAMPercentage=100"}


def knobs(
    gzip: bool, cache: bool, json_library: str = "orjson", heap: str = "default"
) -> Mapping[str, str]:
    """The data service's environment for one setting of gzip, the cache and the encoder
    (``StackOptions.extra_env``); with Jackson (the JVM's), the JVM's flags too: run-java.sh's
    and the ``heap`` policy's (:data:`HEAPS`)."""
    env = {
        "IPCLAB_GZIP": "1" if gzip else "0",
        "IPCLAB_CACHE": "1" if cache else "0",
        "IPCLAB_JSON_LIBRARY": json_library,
    }
    if heap not in HEAPS:
        raise ValueError(f"heap {heap!r}: one of {', '.join(HEAPS)}")
    if json_library in ENCODERS["jvm"]:
        env["IPCLAB_JVM_OPTIONS"] = " ".join(o for o in (JVM_OPTIONS, HEAPS[heap]) if o)
    elif heap != "default":
        raise ValueError(f"heap {heap!r}: a heap policy is the JVM's (json_library jackson)")
    return env


def data_service(manifest: Mapping[str, Any]) -> dict[str, Any] | None:
    """The data service's own description of how it ran (settings, ``protobuf`` version and
    ``implementation``: upb, python or cpp) as a run's manifest records it: the edge's
    ``/healthz`` read at stack-up (``healthz``, keyed by stack in a group run). None for a
    run whose manifest does not record it (runs made before it did)."""
    health = manifest.get("healthz")
    names = [s.name for s in STACKS if isinstance(health, Mapping) and s.name in health]
    if names and isinstance(health, Mapping) and isinstance(health[names[0]], Mapping):
        health = health[names[0]]  # a group run: one document per stack
    described = health.get("data") if isinstance(health, Mapping) else None
    return dict(described) if isinstance(described, Mapping) else None
