"""Protocol adapters: sidecars that carry a service's HTTP/1.1 over the protocol under test.

The gateway and the services speak HTTP/1.1; an **egress** adapter beside the gateway takes
the gateway's HTTP/1.1 requests and sends them over the protocol under test to the
**ingress** adapter beside the target service, which hands them to the service over
HTTP/1.1 again (the sidecar pattern of a service mesh, as an inter-service study built it).
HTTP/1.1 itself goes through the same two adapters, so every protocol has the same number
of hops. Both route by the first path segment (the service's name); nothing rewrites
paths.

Two sets: ``python`` (``python.py``: built from the transport modules' relay level, the same
h2c and CoAP code the shop stacks use) and ``native`` (``native.py``: nginx for HTTP/1.1 and
nghttpx for h2c, the thesis's own). An adapter role is started like every role
(``python -m ipclab_services.serve``) from its environment:

- ``IPCLAB_ROLE``: ``egress`` or ``<service>-ingress``; ``IPCLAB_ADAPTER``: ``egress`` or
  ``ingress``; ``IPCLAB_ADAPTERS``: ``python`` or ``native``;
- ``IPCLAB_TRANSPORT``: the protocol on the network side (``rest``, ``h2c``, ``coap``);
- ``IPCLAB_HOST``/``IPCLAB_PORT``: where it listens; ``IPCLAB_SERVICES``: the services;
- ``IPCLAB_ADDR_<ROLE>``: every role's ``host:port`` (an egress sends to
  ``IPCLAB_ADDR_<SERVICE>_INGRESS``, an ingress to ``IPCLAB_ADDR_<SERVICE>``).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

SETS = ("python", "native")
INGRESS_SUFFIX = "-ingress"
EGRESS = "egress"


def addr_env(role: str) -> str:
    return "IPCLAB_ADDR_" + role.upper().replace("-", "_")


def ingress(service: str) -> str:
    """The ingress adapter role of ``service``."""
    return service + INGRESS_SUFFIX


async def serve(env: Mapping[str, str]) -> None:
    """Run the adapter role ``env`` describes until cancelled."""
    kind = env.get("IPCLAB_ADAPTERS", "python")
    if kind not in SETS:
        raise SystemExit(f"IPCLAB_ADAPTERS={kind!r}: choose one of {', '.join(SETS)}")
    module = importlib.import_module(f"{__name__}.{kind}")
    await module.serve(env)
