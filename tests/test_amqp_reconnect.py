"""A broker crash and a broker restart under load, on every AMQP stack (Python's aio-pika
connect_robust, Go's reconnection in services/go/amqp.go, Node's): while the broker is
gone the stack answers 503/504 and never hangs, it serves product pages again once the
broker is back, with no process started by hand, and no reply reaches another request.

Each stack is started once for both tests (a private broker's start is most of a stack's):
the crash first, then the restart under load, which finds the stack recovered from it."""

from __future__ import annotations

import random
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson
import pytest

from ipclab import fuzz
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


@pytest.fixture(scope="module", params=AMQP_STACKS)
def stack(request: pytest.FixtureRequest) -> Iterator[LocalStack]:
    """One AMQP stack for this module's tests; once stopped, nothing of it (the restarted
    broker, or the first one) is left running."""
    started: Any = get_backend("local").start(
        resolve(request.param), StackOptions(call_timeout_s=1.0)
    )
    try:
        yield started
    finally:
        started.stop()
    deadline = time.monotonic() + 10
    while ipclab_processes() and time.monotonic() < deadline:
        time.sleep(0.3)
    assert not ipclab_processes(), "the restarted broker (or the first one) was left running"


def test_broker_killed_and_restarted_pages_are_served_again(stack: LocalStack) -> None:
    name = stack.spec.name
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


def test_broker_restart_mid_amqp_run_answers_every_request_once_and_correctly(
    stack: LocalStack,
) -> None:
    """No hang, no mismatched or duplicated reply: every in-flight request gets one answer
    (503/504 allowed) within its deadline and is counted; correct pages come back after.
    (The fuzzing campaign's broker case, docs/fuzzing.md.)"""
    outcomes: list[tuple[int, int, int, Any]] = []
    lock = threading.Lock()
    stop = threading.Event()

    def client(seed: int) -> None:
        r = random.Random(seed)
        while not stop.is_set():
            product, customer = r.randint(1, 1000), r.randint(1, 500)
            url = f"{stack.gateway_url}/product/{product}?customer_id={customer}"
            try:
                with urllib.request.urlopen(url, timeout=15) as resp:
                    status, doc = resp.status, orjson.loads(resp.read())
            except urllib.error.HTTPError as e:
                status, doc = e.code, None
            with lock:  # an exception here (a hang past 15 s) fails the test
                outcomes.append((status, product, customer, doc))

    try:
        with ThreadPoolExecutor(4) as pool:
            futures = [pool.submit(client, i) for i in range(4)]
            time.sleep(2)
            before = len(outcomes)
            stack.restart("broker")
            time.sleep(3)
            stop.set()
            for f in futures:
                f.result(timeout=60)  # every client finished: no hang
    finally:
        stop.set()
    assert before > 0 and len(outcomes) > before
    statuses = {s for s, *_ in outcomes}
    assert statuses <= {200, 503, 504}, statuses
    for status, product, customer, doc in outcomes:
        if status == 200:  # the answer to this request, not another's
            assert doc["product"]["product_id"] == product
            assert doc["cart"]["customer_id"] == customer
    deadline = time.monotonic() + 60
    while not fuzz.page_ok(stack) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert fuzz.page_ok(stack), "no correct page after the broker came back"
