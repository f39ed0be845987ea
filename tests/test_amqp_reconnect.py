"""A broker crash: every AMQP stack (Python's aio-pika connect_robust, Go's reconnection in
services/go/amqp.go) answers 503/504 while the broker is gone, never hangs, and serves
product pages again once it is back, with no process started by hand."""

from __future__ import annotations

import time
import urllib.error
import urllib.request

import orjson
import pytest

from ipclab.backends import StackOptions, get_backend
from ipclab.backends.local import LocalStack
from ipclab.stacks import all_stacks, resolve
from tests.conftest import SHOP_STACKS, ipclab_processes

pytestmark = pytest.mark.slow

AMQP_STACKS = [n for n in SHOP_STACKS if all_stacks()[n].needs_broker]


def page(stack: LocalStack, product: int = 3, customer: int = 1) -> tuple[int, dict | None]:
    url = f"{stack.gateway_url}/product/{product}?customer_id={customer}"
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, orjson.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, None


@pytest.mark.parametrize("name", AMQP_STACKS)
def test_broker_killed_and_restarted_pages_are_served_again(name: str) -> None:
    stack = get_backend("local").start(resolve(name), StackOptions(call_timeout_s=1.0))
    try:
        assert page(stack)[0] == 200
        stack.kill("broker")  # SIGKILL: a crash, not a clean shutdown
        t0 = time.monotonic()
        status, _ = page(stack)
        assert status in (503, 504), (name, status)  # no broker, no page, and no hang
        assert time.monotonic() - t0 < 5, "a page without a broker took longer than 5 s"
        stack.restart("broker")
        restarted = time.monotonic()
        deadline = restarted + 60
        status = 0
        while time.monotonic() < deadline:
            status, doc = page(stack, 7, 3)
            if status == 200:
                break
            time.sleep(0.25)
        assert status == 200, f"{name}: no page within 60 s of the broker's restart"
        assert doc is not None and doc["product"]["product_id"] == 7
        assert doc["cart"]["customer_id"] == 3
        print(f"{name}: pages again {time.monotonic() - restarted:.1f} s after the restart")
        for product in range(1, 21):  # and they keep coming, each the right one
            status, doc = page(stack, product)
            assert status == 200 and doc is not None, (name, product, status)
            assert doc["product"]["product_id"] == product
    finally:
        stack.stop()
    deadline = time.monotonic() + 10
    while ipclab_processes() and time.monotonic() < deadline:
        time.sleep(0.3)
    assert not ipclab_processes()
