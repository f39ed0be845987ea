"""The study's stacks: the AcmeAir stand-in over HTTP/1.1, h2c and CoAP, and the shop
over h2c and CoAP.

AcmeAir (``services/domains/acmeair``), as the thesis ran it: a gateway (an HTTP/1.1
reverse proxy) and the auth, flight, booking and customer services (HTTP/1.1 apps); the
protocol under test carries the hop between the gateway's host and each service's host,
through a pair of protocol adapters (``services/adapters``): ``egress`` beside the gateway
and ``<service>-ingress`` beside each service. HTTP/1.1 goes through the same two adapters.
booking and customer validate every session with auth directly over HTTP/1.1 whatever the
protocol. Same domain, users and adapters' code in all three; only the protocol differs.
The adapter set is a factor: ``python`` (the transport modules' relay level) for all three
protocols, ``native`` (nginx for HTTP/1.1, nghttpx for h2c, Eclipse Californium for CoAP: the
thesis's own; Californium's adapters are ipclab's, on ``californium-core``) for all three.

The shop stacks use the same domain, front, services and Locust users as the Shafabakhsh
stacks (``_SHOP``), so their answers are byte-identical to ``shop-rest``'s and the shop's
contract tests cover them. They use the same h2c and CoAP transport modules as the
adapters, at their operation level.
"""

from __future__ import annotations

from typing import Any

from ipclab.stackspec import StackSpec
from ipclab.studies.shafabakhsh.stacks import _SHOP

H2C = StackSpec(
    "shop-h2c",
    transport="h2c",
    description="product page; gateway -> 5 services over h2c (HTTP/2 prior knowledge) + JSON,"
    " one multiplexed connection per service",
    **_SHOP,
)
COAP = StackSpec(
    "shop-coap",
    transport="coap",
    description="product page; gateway -> 5 services over CoAP (UDP, aiocoap) + JSON,"
    " block-wise above 1 KiB",
    **_SHOP,
)

ACMEAIR_SERVICES = ("auth", "flight", "booking", "customer")
_ACMEAIR: dict[str, Any] = {
    "domain": "acmeair",
    "front": "http_json",
    "services": ACMEAIR_SERVICES,
    "users": "ipclab.studies.nyflott.users",
    "probe_paths": ("/healthz",),
    "probe_required": ("ready", "services"),
    "settings": {"IPCLAB_GC_EVENTS": "1"},  # major GCs timestamped in every role's log
    "load_host": True,  # docker: Locust in a delayed namespace of its own, as the thesis's VM
}
_VIA = "gateway -> egress adapter -> {} -> <service>-ingress adapter -> service"


def _acmeair(name: str, transport: str, style: str, adapters: str, what: str) -> StackSpec:
    return StackSpec(
        name,
        transport=transport,
        style=style,
        adapters=adapters,
        description=f"AcmeAir; {_VIA.format(what)}; sessions validated by auth over HTTP/1.1",
        **_ACMEAIR,
    )


ACMEAIR_HTTP1 = _acmeair("acmeair-http1", "rest", "http1", "python", "HTTP/1.1 keep-alive")
ACMEAIR_H2C = _acmeair("acmeair-h2c", "h2c", "h2c", "python", "h2c (one connection each)")
ACMEAIR_COAP = _acmeair("acmeair-coap", "coap", "coap", "python", "CoAP (aiocoap, block-wise)")
ACMEAIR_HTTP1_NGINX = _acmeair(
    "acmeair-http1-nginx", "rest", "http1", "native", "HTTP/1.1 (nginx adapters)"
)
ACMEAIR_H2C_NGHTTPX = _acmeair(
    "acmeair-h2c-nghttpx", "h2c", "h2c", "native", "h2c (nghttpx adapters)"
)
ACMEAIR_COAP_CALIFORNIUM = _acmeair(
    "acmeair-coap-californium", "coap", "coap", "native", "CoAP (Californium adapters, block-wise)"
)
ACMEAIR = (
    ACMEAIR_HTTP1, ACMEAIR_H2C, ACMEAIR_COAP,
    ACMEAIR_HTTP1_NGINX, ACMEAIR_H2C_NGHTTPX, ACMEAIR_COAP_CALIFORNIUM,
)  # fmt: skip

STACKS = (*ACMEAIR, H2C, COAP)
