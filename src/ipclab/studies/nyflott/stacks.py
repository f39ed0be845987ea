"""The product-page shop over the two protocols the study adds: h2c and CoAP.

The same domain, front, services and Locust users as the Shafabakhsh stacks (``_SHOP``),
so their answers are byte-identical to ``shop-rest``'s and the shop's contract tests cover
them. The study's own AcmeAir-shaped stacks come later (issue 14).
"""

from __future__ import annotations

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

STACKS = (H2C, COAP)
