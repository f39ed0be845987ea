"""The study's stacks: the AcmeAir stand-in over HTTP/1.1, h2c and CoAP, and the shop
over h2c and CoAP.

AcmeAir (``services/domains/acmeair``): a gateway and the auth, flight, booking and
customer services; the protocol under test carries the gateway-to-service calls, and
booking and customer validate every session with auth over plain HTTP/1.1 whatever the
protocol (auth is the stacks' ``http_peers``). Same domain, front and users in all three,
only the transport differs.

The shop stacks use the same domain, front, services and Locust users as the Shafabakhsh
stacks (``_SHOP``), so their answers are byte-identical to ``shop-rest``'s and the shop's
contract tests cover them.
"""

from __future__ import annotations

from typing import Any

from ipclab.stacks import StackSpec
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
    "http_peers": ("auth",),
    "settings": {"IPCLAB_GC_EVENTS": "1"},  # major GCs timestamped in every role's log
}
ACMEAIR_HTTP1 = StackSpec(
    "acmeair-http1",
    transport="rest",
    style="http1",
    description="AcmeAir; gateway -> auth, flight, booking, customer over HTTP/1.1 keep-alive;"
    " sessions validated by auth over HTTP/1.1",
    **_ACMEAIR,
)
ACMEAIR_H2C = StackSpec(
    "acmeair-h2c",
    transport="h2c",
    style="h2c",
    description="AcmeAir; gateway -> 4 services over h2c (one multiplexed connection each);"
    " sessions validated by auth over HTTP/1.1",
    **_ACMEAIR,
)
ACMEAIR_COAP = StackSpec(
    "acmeair-coap",
    transport="coap",
    style="coap",
    description="AcmeAir; gateway -> 4 services over CoAP (UDP, aiocoap, block-wise);"
    " sessions validated by auth over HTTP/1.1",
    **_ACMEAIR,
)

STACKS = (ACMEAIR_HTTP1, ACMEAIR_H2C, ACMEAIR_COAP, H2C, COAP)
