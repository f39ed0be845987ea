"""The product-page contract, identical in every style (issue 2, must-show 3)."""

from __future__ import annotations

import time
import urllib.error
import urllib.request

import orjson
import pytest

from ipclab.backends.local import LocalStack

pytestmark = pytest.mark.slow

SAMPLE = [(1, 1), (2, 0), (7, 3), (500, 499), (999, 500), (1000, 77), (123, 9999), (42, 0)]


def get(url: str, timeout: float = 10) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def page(stack: LocalStack, product: int | str, customer: int | str | None) -> tuple[int, bytes]:
    query = f"?customer_id={customer}" if customer else ""
    return get(f"{stack.gateway_url}/product/{product}{query}")


def test_same_json_in_every_style(shop_stacks: dict[str, LocalStack]) -> None:
    for product, customer in SAMPLE:
        bodies = {}
        for name, stack in shop_stacks.items():
            status, body = page(stack, product, customer)
            assert status == 200, (name, product, body)
            bodies[name] = body
        docs = {name: orjson.loads(b) for name, b in bodies.items()}
        first = docs["shop-rest"]
        assert set(first) == {"product", "reviews", "recommendations", "shipping", "cart"}
        assert first["product"]["product_id"] == product
        assert (first["cart"] is None) == (customer == 0)
        for name, doc in docs.items():
            assert doc == first, f"{name} differs from shop-rest for product {product}"
            assert bodies[name] == bodies["shop-rest"], f"{name}: same document, other bytes"


@pytest.mark.parametrize("product", [0, 1001, 10**12])
def test_unknown_product_is_404(shop_stacks: dict[str, LocalStack], product: int) -> None:
    for name, stack in shop_stacks.items():
        status, body = page(stack, product, 1)
        assert status == 404, (name, body)
        assert orjson.loads(body)["error"] == "not_found"


@pytest.mark.parametrize(
    ("product", "customer"), [("abc", 1), ("-1", 1), ("7", "x"), ("1e3", None), ("9" * 30, None)]
)
def test_malformed_id_is_400(
    shop_stacks: dict[str, LocalStack], product: str, customer: str | None
) -> None:
    for name, stack in shop_stacks.items():
        status, body = page(stack, product, customer)
        assert status == 400, (name, product, customer, body)


def test_healthz(shop_stacks: dict[str, LocalStack]) -> None:
    for stack in shop_stacks.values():
        status, body = get(f"{stack.gateway_url}/healthz")
        assert status == 200
        assert orjson.loads(body)["ready"] is True


def test_service_down_is_503_or_504_within_the_deadline(
    shop_stacks: dict[str, LocalStack],
) -> None:
    """Runs last in this module: it kills a service and starts it again."""
    for name, stack in shop_stacks.items():
        stack.kill("reviews")
        try:
            started = time.monotonic()
            status, body = page(stack, 7, 3)
            elapsed = time.monotonic() - started
            assert status in (503, 504), (name, status, body)
            assert elapsed < stack.options.call_timeout_s + 1.5, (name, elapsed)
            hz, _ = get(f"{stack.gateway_url}/healthz")
            assert hz == 503, name
        finally:
            stack.restart("reviews")
        deadline = time.monotonic() + 30
        while get(f"{stack.gateway_url}/healthz")[0] != 200:
            assert time.monotonic() < deadline, f"{name} did not recover"
            time.sleep(0.2)
        assert page(stack, 7, 3)[0] == 200
