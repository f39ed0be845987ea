"""The product-page stacks: one shop (services/domains/shop), one front, three transports.

A stack that reuses a domain, a front and a transport is one declaration here; the
backends, the compose file, ``ipclab stacks`` and the contract tests follow from it.
"""

from __future__ import annotations

from ipclab_services.domains.shop import SERVICES as SHOP_SERVICES

from ipclab.stackspec import BROKER, GO, NODE, StackSpec

_SHOP = {
    "domain": "shop",
    "front": "http_json",
    "services": SHOP_SERVICES,
    "users": "ipclab.studies.shafabakhsh.users",
    "probe_paths": ("/product/1?customer_id=1",),
    "probe_required": ("product", "reviews", "recommendations", "shipping", "cart"),
    # --store db: each service reads its store (FerretDB, MariaDB for shipping) in every
    # runtime: services/domains/shop/dbstore.py, services/go/stores.go, services/node/lib/stores.js
    "stores": True,
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

# The same shop in Go (services/go, issue 18): same data (the Python generator's fixture),
# same contract; built by the harness with `go build`, on both backends (docs/go.md).
REST_GO = StackSpec(
    "shop-rest-go",
    transport="rest",
    runtime=GO,
    description="as shop-rest, in Go: net/http server and client, keep-alive pools",
    **_SHOP,
)
GRPC_GO = StackSpec(
    "shop-grpc-go",
    transport="grpc",
    runtime=GO,
    description="as shop-grpc, in Go: grpc-go from the same shop.proto",
    **_SHOP,
)
AMQP_GO = StackSpec(
    "shop-amqp-go",
    transport="amqp",
    infrastructure=(BROKER,),
    runtime=GO,
    description="as shop-amqp, in Go: amqp091-go, the same queues, acks, prefetch, reply queue",
    **_SHOP,
)
IN_GO = (REST_GO, GRPC_GO, AMQP_GO)

# The same shop in Node.js, the thesis's own runtime (services/node, issue 50): same data (the
# fixture), same contract; `npm ci` from the committed lock, on both backends (docs/node.md).
REST_NODE = StackSpec(
    "shop-rest-node",
    transport="rest",
    runtime=NODE,
    description="as shop-rest, in Node.js: node:http server and keep-alive Agent",
    **_SHOP,
)
GRPC_NODE = StackSpec(
    "shop-grpc-node",
    transport="grpc",
    runtime=NODE,
    description="as shop-grpc, in Node.js: @grpc/grpc-js reading the same shop.proto",
    **_SHOP,
)
AMQP_NODE = StackSpec(
    "shop-amqp-node",
    transport="amqp",
    infrastructure=(BROKER,),
    runtime=NODE,
    description="as shop-amqp, in Node.js: amqplib, the same queues, acks, prefetch, reply queue",
    **_SHOP,
)
IN_NODE = (REST_NODE, GRPC_NODE, AMQP_NODE)

STACKS = (*COMPARED, REST_SEQUENTIAL, *IN_GO, *IN_NODE)
