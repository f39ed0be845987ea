"""The payload stack: an edge service (the gateway) calling one data service over HTTP/1.1.

The format (JSON or Protocol Buffers) is chosen per request by the route, so one stack
serves both and a run compares them under the same processes; gzip, the cache and the JSON
encoder are the stack's knobs, set per run through its environment (``knobs``). The domain
serves its roles itself (``ipclab_services.domains.payload.serve_role``): ``front`` and
``transport`` name what the roles speak, not packages under ``services/``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
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
#: the thesis's limit on each service's container (its pods, §6.1): the docker backend's
#: ``mem_limit`` on both containers of a JVM run, and the memory every JVM run sizes itself from
LIMIT_MB = 400
#: run-java.sh 1.3.8's only flag for a JVM of version 10 or later (the thesis's image, Fig. 40:
#: OpenJDK 11, no JAVA_MAX_MEM_RATIO, so no -Xmx): a full heap ends the JVM (exit code 3)
RUN_JAVA_SH = ("-XX:+ExitOnOutOfMemoryError",)
#: the collector a JVM picks in a 400 MB container (below 1,792 MB it is no "server class
#: machine"), stated so that a JVM that sees the whole machine (the local backend) runs it too
COLLECTOR = "-XX:+UseSerialGC"
#: the JVM's own heap report: its unified GC log on stderr (kept as the role's log), parsed
#: into the run's heap.csv (:mod:`ipclab.studies.buono.heap`); no glob character, since the
#: launcher splits the flags unquoted
GC_LOG = "-Xlog:gc,gc+init,gc+heap,gc+metaspace:stderr:timemillis,uptimemillis,tags"


@dataclass(frozen=True)
class HeapPolicy:
    """How a JVM run's heap is sized: the flags beside the memory it sizes itself from."""

    name: str
    flags: tuple[str, ...]
    description: str


#: the heap policies a JVM run can run under (docs/buono.md, "The heap"). ``limit`` is the
#: thesis's (:data:`THESIS_HEAP`): its JSON was killed by the container's limit and its
#: Protobuf completed "requesting less heap", which only a heap that can grow to the limit
#: allows; ``default`` is the image's literal default where the JVM sees the 400 MB (a
#: quarter, raised to HotSpot's small-machine floor: 126 MiB), which ends both formats at
#: 300,000 users (the JVM's own exit on a full heap, not the kernel's kill)
HEAPS = {
    "limit": HeapPolicy(
        "limit",
        ("-XX:MaxRAMPercentage=100",),
        "the heap's maximum at the container's limit: the kernel's limit is what bounds the "
        "JVM (the thesis's: Jackson killed by the limit, Protobuf completing)",
    ),
    "default": HeapPolicy(
        "default",
        (),
        "the JVM's own default in the container: a quarter of its memory, raised to "
        "HotSpot's small-machine floor (126 MiB at 400 MB); a full heap ends the JVM",
    ),
}
THESIS_HEAP = "limit"


def jvm_flags(heap: str = THESIS_HEAP, limit_mb: int = LIMIT_MB) -> tuple[str, ...]:
    """The JVM's flags in a payload run under the ``heap`` policy: run-java.sh's, the
    collector, the memory the JVM sizes its heap from (the container's limit, stated so the
    local backend's JVM sizes itself as in the container), the policy's and the GC log."""
    if heap not in HEAPS:
        raise ValueError(f"heap {heap!r}: one of {', '.join(HEAPS)}")
    return (*RUN_JAVA_SH, COLLECTOR, f"-XX:MaxRAM={limit_mb}m", *HEAPS[heap].flags, GC_LOG)


def knobs(
    gzip: bool,
    cache: bool,
    json_library: str = "orjson",
    heap: str | None = None,
    limit_mb: int = LIMIT_MB,
) -> Mapping[str, str]:
    """The data service's environment for one setting of gzip, the cache and the encoder
    (``StackOptions.extra_env``); with Jackson (the JVM's), the JVM's flags too
    (:func:`jvm_flags`: the ``heap`` policy, :data:`THESIS_HEAP` unless named, sized from
    ``limit_mb``) and the policy's name (``IPCLAB_HEAP_POLICY``, which the JVM reports back).
    A Python service has no heap to size: ``heap`` None or ``default`` there."""
    env = {
        "IPCLAB_GZIP": "1" if gzip else "0",
        "IPCLAB_CACHE": "1" if cache else "0",
        "IPCLAB_JSON_LIBRARY": json_library,
    }
    if json_library in ENCODERS["jvm"]:
        policy = heap or THESIS_HEAP
        env["IPCLAB_JVM_OPTIONS"] = " ".join(jvm_flags(policy, limit_mb))
        env["IPCLAB_HEAP_POLICY"] = policy
    elif heap not in (None, "default"):
        raise ValueError(f"heap {heap!r}: a heap policy is the JVM's (json_library jackson)")
    return env


def heap_policy(manifest: Mapping[str, Any]) -> dict[str, Any] | None:
    """The heap a JVM run asked for and the one the JVM reports it got, from a run's
    manifest: the policy and flags of its options, the memory limit, and the data service's
    own report (``max_heap_bytes``, the final flag values); None for a Python run."""
    options = (manifest.get("parameters") or {}).get("options") or {}
    env = options.get("extra_env") or {}
    if "IPCLAB_HEAP_POLICY" not in env:
        return None
    described = data_service(manifest) or {}
    runtime = described.get("runtime") if isinstance(described.get("runtime"), Mapping) else {}
    return {
        "heap": env["IPCLAB_HEAP_POLICY"],
        "limit_mb": options.get("memory_mb"),
        "flags": env.get("IPCLAB_JVM_OPTIONS", "").split(),
        "jvm_flags": list(runtime.get("flags") or []),
        "max_heap_bytes": runtime.get("max_heap_bytes"),
        "vm_options": runtime.get("vm_options"),
    }


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
