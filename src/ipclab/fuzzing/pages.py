"""Each stack's own known-good page, the check after every input class: what its contract
tests ask for and check (shop: ``tests/test_contract.py``; bundle:
``tests/test_bundle_contract.py``; payload: ``tests/test_payload_service.py``; AcmeAir's
Query Flight: ``tests/test_acmeair.py``). A stack of another domain is checked on its
declared probe page: HTTP 200, a JSON object holding every ``probe_required`` key."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import orjson

from ipclab.stacks import StackSpec

Fetch = Callable[[str, bytes | None, str], tuple[int, Any]]
QUERY_FLIGHT = (
    "fromAirport=OSL&toAirport=TRD&fromDate=2017-06-01&returnDate=2017-06-08&oneWay=false"
)


def fetch(url: str, body: bytes | None = None, ctype: str = "") -> tuple[int, Any]:
    request = urllib.request.Request(url, body, {"Content-Type": ctype} if ctype else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return resp.status, orjson.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, None


def _shop(base: str) -> bool:
    status, doc = fetch(f"{base}/product/7?customer_id=3")
    return status == 200 and doc["product"]["product_id"] == 7 and doc["cart"] is not None


def _bundle_rest(base: str) -> bool:
    status, doc = fetch(f"{base}/api/Databundle/")
    return status == 200 and all(doc.get(t) for t in ("person", "animal", "car", "building"))


def _bundle_graphql(base: str) -> bool:
    from ipclab_services.domains.bundle.gateway import BUNDLE_QUERY  # the thesis's query

    query = orjson.dumps({"query": BUNDLE_QUERY})
    status, doc = fetch(f"{base}/api/graphql", query, "application/json")
    return status == 200 and all(
        doc["data"].get(t) for t in ("person", "animal", "car", "building")
    )


def _payload(base: str) -> bool:
    status, doc = fetch(f"{base}/json/flat?count=5")
    return status == 200 and len(doc["users"]) == 5


def _acmeair(base: str) -> bool:
    form = "application/x-www-form-urlencoded"
    url = f"{base}/flight/acmeair-fs/rest/api/flights/queryflights"
    status, doc = fetch(url, QUERY_FLIGHT.encode(), form)
    return status == 200 and doc["tripLegs"] == 2 and bool(doc["tripFlights"][0]["flightsOptions"])


OWN_PAGE: dict[tuple[str, str], Callable[[str], bool]] = {  # (domain, front): the check
    ("shop", "http_json"): _shop,
    ("bundle", "http_json"): _bundle_rest,
    ("bundle", "graphql"): _bundle_graphql,
    ("payload", "http"): _payload,
    ("acmeair", "http_json"): _acmeair,
}


def declared_page(spec: StackSpec, base: str) -> bool:
    status, doc = fetch(base + spec.probe_paths[0])
    return status == 200 and isinstance(doc, dict) and all(k in doc for k in spec.probe_required)


def page_ok(stack: Any) -> bool:
    """The stack serves its own correct page now."""
    spec: StackSpec = stack.spec
    check = OWN_PAGE.get((spec.domain, spec.front))
    try:
        if check is None:
            return declared_page(spec, stack.gateway_url)
        return check(stack.gateway_url)
    except Exception:  # noqa: BLE001 - any failure is "not serving"
        return False


def page_target(spec: StackSpec) -> bytes:
    """The page the HTTP inputs mutate: the stack's first probe page."""
    return spec.probe_paths[0].encode()
