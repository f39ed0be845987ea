"""The five product-page services: transport-free handlers over ``data``.

Each request carries one id; validation lives here, so every transport rejects the same
input the same way.
"""

from __future__ import annotations

from typing import Any

from ipclab_services.domains.shop import data
from ipclab_services.domains.shop.dbstore import Stores
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


def build(cfg: data.ShopConfig, db: Stores | None = None) -> dict[str, ServiceDef]:
    """Role name -> service definition for the five services: on the generator's data in
    memory, or with ``db`` on their stores (``--store db``)."""
    if db is not None:
        return _services(_on_stores(cfg, db))

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

    return _services((product_info, reviews, recommendations, shipping, cart))


def _on_stores(cfg: data.ShopConfig, db: Stores) -> tuple[Any, ...]:
    """The five handlers reading their stores: a record is looked up after the request is
    validated as in memory (an unknown product is a 404 before any store is asked)."""

    async def product_info(req: dict[str, Any]) -> dict[str, Any]:
        found = await db.document("products", _product_id(cfg, req))
        if found is None:
            raise NotFound(f"no product {req.get('product_id')}")
        return found

    async def listed(collection: str, req: dict[str, Any]) -> dict[str, Any]:
        found = await db.document(collection, _product_id(cfg, req))
        return {collection: found[collection] if found else []}

    async def reviews(req: dict[str, Any]) -> dict[str, Any]:
        return await listed("reviews", req)

    async def recommendations(req: dict[str, Any]) -> dict[str, Any]:
        return await listed("recommendations", req)

    async def shipping(req: dict[str, Any]) -> dict[str, Any]:
        return {"options": await db.shipping(_product_id(cfg, req))}

    async def cart(req: dict[str, Any]) -> dict[str, Any]:
        customer_id = _id(req, "customer_id")
        if not customer_id:
            return {"cart": None}
        found = await db.document("carts", customer_id)
        empty = {"customer_id": customer_id, "items": [], "total": 0.0}
        return {"cart": found if found is not None else empty}

    return product_info, reviews, recommendations, shipping, cart


def _services(handlers: tuple[Any, ...]) -> dict[str, ServiceDef]:
    product_info, reviews, recommendations, shipping, cart = handlers
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
