"""The product-page stacks: one shop (services/domains/shop), one front, three transports.

A stack that reuses a domain, a front and a transport is one declaration here; the
backends, the compose file, ``ipclab stacks`` and the contract tests follow from it.
"""

from __future__ import annotations

from ipclab_services.domains.shop import SERVICES as SHOP_SERVICES

from ipclab.stacks import BROKER, StackSpec

_SHOP = {
    "domain": "shop",
    "front": "http_json",
    "services": SHOP_SERVICES,
    "users": "ipclab.studies.shafabakhsh.users",
    "probe_paths": ("/product/1?customer_id=1",),
    "probe_required": ("product", "reviews", "recommendations", "shipping", "cart"),
}

REST = StackSpec(
    "shop-rest",
    transport="rest",
    description="product page; gateway -> 5 services over HTTP/1.1 + JSON (keep-alive)",
    **_SHOP,
)
GRPC = StackSpec(
    "shop-grpc",
    transport="grpc",
    description="product page; gateway -> 5 services over unary gRPC + Protocol Buffers",
    **_SHOP,
)
AMQP = StackSpec(
    "shop-amqp",
    transport="amqp",
    infrastructure=(BROKER,),
    description="product page; gateway -> RabbitMQ -> 5 services, RPC with correlation ids",
    **_SHOP,
)
# The styles the study compares, in the thesis's order.
COMPARED = (REST, GRPC, AMQP)

# The gateway strategy as a stack of its own: the five calls one after another.
REST_SEQUENTIAL = StackSpec(
    "shop-rest-seq",
    transport="rest",
    settings={"IPCLAB_SEQUENTIAL": "1"},
    description="product page; as shop-rest, the gateway calling the 5 services one by one",
    **_SHOP,
)

STACKS = (*COMPARED, REST_SEQUENTIAL)
