"""The shop: a product page merged from five services (product info, reviews,
recommendations, shipping, cart) over seeded data. See ``data.py`` for sizes."""

from __future__ import annotations

from ipclab_services.domains.shop import data, services
from ipclab_services.domains.shop.gateway import handler as gateway_handler
from ipclab_services.transports.base import ServiceDef

SERVICES = ("product-info", "reviews", "recommendations", "shipping", "cart")
__all__ = ["SERVICES", "build_services", "gateway_handler"]


def build_services() -> dict[str, ServiceDef]:
    """The five services, on the data the environment's seed and sizes give."""
    return services.build(data.ShopConfig.from_env())
