"""The product-page gateway: the same HTTP front and merge in every style.

``GET /product/{product_id}?customer_id={id}`` fans out to the five services (concurrently
by default, one after another with ``sequential``) and merges their answers into one JSON
document. ``GET /healthz`` pings every service; ``GET /stats`` shows transport counters.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ipclab_services.domains import GatewaySettings
from ipclab_services.errors import (
    BadRequest,
    NotFound,
    ServiceError,
    Timeout,
    Unavailable,
)
from ipclab_services.fronts import Handler, Request
from ipclab_services.transports.base import Clients

# When several calls fail, the answer reports the most telling error first.
_PRECEDENCE = (BadRequest, NotFound, Timeout, Unavailable, ServiceError)


def _worst(errors: list[BaseException]) -> BaseException:
    for cls in _PRECEDENCE:
        for e in errors:
            if isinstance(e, cls):
                return e
    return errors[0]


async def product_page(
    clients: Clients, product_id: int, customer_id: int, timeout: float, sequential: bool = False
) -> dict[str, Any]:
    calls = (
        ("product-info", {"product_id": product_id}),
        ("reviews", {"product_id": product_id}),
        ("recommendations", {"product_id": product_id}),
        ("shipping", {"product_id": product_id}),
        ("cart", {"customer_id": customer_id}),
    )
    results: list[Any]
    if sequential:
        results = []
        for service, request in calls:
            try:
                results.append(await clients.call(service, "get", request, timeout))
            except ServiceError as e:
                results.append(e)
                break
    else:
        results = await asyncio.gather(
            *(clients.call(service, "get", request, timeout) for service, request in calls),
            return_exceptions=True,
        )
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:
        raise _worst(errors)
    info, reviews, recommendations, shipping, cart = results
    return {
        "product": info,
        "reviews": reviews["reviews"],
        "recommendations": recommendations["recommendations"],
        "shipping": shipping["options"],
        "cart": cart["cart"],
    }


def _parse_id(text: str | None, what: str) -> int:
    if text is None or not text.isdigit() or len(text) > 18:
        raise BadRequest(f"{what} must be a non-negative integer, got {text!r}")
    return int(text)


def handler(clients: Clients, services: tuple[str, ...], settings: GatewaySettings) -> Handler:
    """The gateway's answers: the product page, /healthz and /stats (GET only)."""
    timeout = settings.timeout_s

    async def health() -> tuple[int, Any]:
        results = await asyncio.gather(
            *(clients.call(s, "ping", {}, min(timeout, 1.0)) for s in services),
            return_exceptions=True,
        )
        status = {
            s: "ok" if not isinstance(r, BaseException) else type(r).__name__
            for s, r in zip(services, results, strict=True)
        }
        ready = all(v == "ok" for v in status.values())
        return (200 if ready else 503), {"ready": ready, "services": status}

    async def route(request: Request) -> tuple[int, Any]:
        if request.method != "GET":
            return 405, {"error": "method_not_allowed"}
        parts, query = request.path, request.query
        try:
            if len(parts) == 2 and parts[0] == "product":
                product_id = _parse_id(parts[1], "product_id")
                customer = query.get("customer_id")
                customer_id = _parse_id(customer, "customer_id") if customer else 0
                return 200, await product_page(
                    clients, product_id, customer_id, timeout, settings.sequential
                )
            if parts == ["healthz"]:
                return await health()
            if parts == ["stats"]:
                return 200, clients.stats()
            return 404, {"error": "not_found", "message": "no such path"}
        except ServiceError as e:
            return e.http_status, {"error": e.code, "message": str(e)}
        except Exception as e:  # noqa: BLE001 - a bug answers 500, it must not hang the client
            return 500, {"error": "internal", "message": repr(e)}

    return route
