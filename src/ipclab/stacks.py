"""The stack registry: a stack is a gateway plus services bound to one IPC style.

Adding a style means one transport module in ``services/transports/``, one compose file
and one entry here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SHOP_SERVICES = ("product-info", "reviews", "recommendations", "shipping", "cart")


@dataclass(frozen=True)
class StackSpec:
    """What a backend needs to start a stack."""

    name: str
    style: str  # transport module name in ipclab_services.transports
    domain: str  # business-logic package in ipclab_services (e.g. "shop")
    services: tuple[str, ...]
    needs_broker: bool = False
    gateway: str = "gateway"
    locustfile: str = "shop"  # module in ipclab.load
    description: str = ""
    roles: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "roles", (*self.services, self.gateway))


STACKS: dict[str, StackSpec] = {
    s.name: s
    for s in (
        StackSpec(
            "shop-rest",
            "rest",
            "shop",
            SHOP_SERVICES,
            description="product page; gateway -> 5 services over HTTP/1.1 + JSON (keep-alive)",
        ),
        StackSpec(
            "shop-grpc",
            "grpc",
            "shop",
            SHOP_SERVICES,
            description="product page; gateway -> 5 services over unary gRPC + Protocol Buffers",
        ),
        StackSpec(
            "shop-amqp",
            "amqp",
            "shop",
            SHOP_SERVICES,
            needs_broker=True,
            description="product page; gateway -> RabbitMQ -> 5 services, RPC with correlation ids",
        ),
    )
}


class UnknownStack(ValueError):
    pass


def resolve(name: str) -> StackSpec:
    try:
        return STACKS[name]
    except KeyError:
        raise UnknownStack(
            f"unknown stack {name!r}; known stacks: {', '.join(sorted(STACKS))}"
        ) from None
