"""The five product-page services: transport-free handlers over ``data``.

Each request carries one id; validation lives here, so every transport rejects the same
input the same way.
"""

from __future__ import annotations

from typing import Any

from ipclab_services.domains.shop import data
from ipclab_services.errors import BadRequest, NotFound
from ipclab_services.proto import shop_pb2 as pb
from ipclab_services.transports.base import Operation, ServiceDef


def _id(request: dict[str, Any], key: str) -> int:
    value = request.get(key)
    try:
        out = int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise BadRequest(f"{key} must be an integer, got {value!r}") from None
    if out < 0:
        raise BadRequest(f"{key} must not be negative")
    return out


def _product_id(cfg: data.ShopConfig, request: dict[str, Any]) -> int:
    pid = _id(request, "product_id")
    if not data.exists(cfg, pid):
        raise NotFound(f"no product {pid}")
    return pid


def _ping(_: dict[str, Any]) -> dict[str, Any]:
    return {}


def build(cfg: data.ShopConfig) -> dict[str, ServiceDef]:
    """Role name -> service definition for the five services."""

    def product_info(req: dict[str, Any]) -> dict[str, Any]:
        return data.product(cfg, _product_id(cfg, req))

    def reviews(req: dict[str, Any]) -> dict[str, Any]:
        return {"reviews": data.reviews(cfg, _product_id(cfg, req))}

    def recommendations(req: dict[str, Any]) -> dict[str, Any]:
        return {"recommendations": data.recommendations(cfg, _product_id(cfg, req))}

    def shipping(req: dict[str, Any]) -> dict[str, Any]:
        return {"options": data.shipping(cfg, _product_id(cfg, req))}

    def cart(req: dict[str, Any]) -> dict[str, Any]:
        customer_id = _id(req, "customer_id")
        return {"cart": data.cart(cfg, customer_id) if customer_id else None}

    ping = Operation(_ping, pb.Empty, pb.Empty)

    def svc(name: str, proto: str, fn: Any, req: Any, resp: Any) -> ServiceDef:
        return ServiceDef(
            name, f"ipclab.shop.{proto}", {"get": Operation(fn, req, resp), "ping": ping}
        )

    defs = (
        svc("product-info", "ProductInfo", product_info, pb.ProductRequest, pb.Product),
        svc("reviews", "ProductReviews", reviews, pb.ProductRequest, pb.Reviews),
        svc(
            "recommendations",
            "ProductRecommendations",
            recommendations,
            pb.ProductRequest,
            pb.Recommendations,
        ),
        svc("shipping", "ProductShipping", shipping, pb.ProductRequest, pb.Shipping),
        svc("cart", "ShoppingCart", cart, pb.CustomerRequest, pb.CartReply),
    )
    return {d.name: d for d in defs}
