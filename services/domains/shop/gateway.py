"""The product-page gateway: the same HTTP front and merge in every style.

``GET /product/{product_id}?customer_id={id}`` fans out to the five services (concurrently
by default, one after another with ``sequential``) and merges their answers into one JSON
document. ``GET /healthz`` pings every service; ``GET /stats`` shows transport counters.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

from ipclab_services.domains import GatewaySettings, all_answers, health
from ipclab_services.errors import (
    BadRequest,
    ServiceError,
    Timeout,
)
from ipclab_services.fronts import Handler, Request
from ipclab_services.transports.base import Clients

_log = logging.getLogger(__name__)


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
    if sequential:  # one after another, within one deadline for the whole page
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        results = []
        for service, request in calls:
            left = deadline - loop.time()
            if left <= 0:
                raise Timeout(f"page deadline of {timeout:g} s passed before {service}")
            results.append(await clients.call(service, "get", request, left))
    else:  # at once; the first failure answers the page, and cancels no call
        results = await all_answers(
            (clients.call(service, "get", request, timeout) for service, request in calls),
            timeout,
        )
    info, reviews, recommendations, shipping, cart = results
    return {
        "product": info,
        "reviews": reviews["reviews"],
        "recommendations": recommendations["recommendations"],
        "shipping": shipping["options"],
        "cart": cart["cart"],
    }


INT64_MAX = (1 << 63) - 1
MAX_QUERY_FIELDS = 16
_ASCII_DIGITS = re.compile(r"[0-9]{1,19}")


def parse_id(text: str | None, what: str) -> int:
    """A non-negative int64 written in ASCII digits; anything else is a BadRequest.

    ``str.isdigit`` is not enough: it accepts superscripts ('²', which ``int`` refuses)
    and other scripts' digits ('٣', which ``int`` reads)."""
    if text is None or _ASCII_DIGITS.fullmatch(text) is None or int(text) > INT64_MAX:
        shown = text if text is None or len(text) <= 40 else text[:40] + "..."
        raise BadRequest(f"{what} must be an integer from 0 to {INT64_MAX}, got {shown!r}")
    return int(text)


def handler(clients: Clients, services: tuple[str, ...], settings: GatewaySettings) -> Handler:
    """The gateway's answers: the product page, /healthz and /stats (GET only)."""
    timeout = settings.timeout_s

    async def route(request: Request) -> tuple[int, Any]:
        if request.method != "GET":
            return 405, {"error": "method_not_allowed"}
        parts, query = request.path, request.query
        try:
            if len(parts) == 2 and parts[0] == "product":
                if len(query) > MAX_QUERY_FIELDS:
                    raise BadRequest(f"at most {MAX_QUERY_FIELDS} query fields")
                product_id = parse_id(parts[1], "product_id")
                customer = query.get("customer_id")
                customer_id = 0 if customer is None else parse_id(customer, "customer_id")
                return 200, await product_page(
                    clients, product_id, customer_id, timeout, settings.sequential
                )
            if parts == ["healthz"]:
                return await health(clients, services, timeout)
            if parts == ["stats"]:
                return 200, clients.stats()
            return 404, {"error": "not_found", "message": "no such path"}
        except ServiceError as e:
            return e.http_status, {"error": e.code, "message": str(e)}
        except Exception:  # noqa: BLE001 - a bug answers 500, it must not hang the client
            _log.exception("gateway: internal error on %s", request.path)
            return 500, {"error": "internal", "message": "internal error"}

    return route
