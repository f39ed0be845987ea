"""The fuzzing campaign's short version (issue 13): the full one is `make fuzz`
(docs/fuzzing.md). Real stacks on 127.0.0.1, a few hundred malformed inputs per style."""

from __future__ import annotations

from typing import Any

import pytest

from ipclab import fuzz
from tests.conftest import ipclab_processes
from tests.test_amqp_reconnect import AMQP_STACKS

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("stack", ["shop-rest", "shop-grpc", "shop-amqp"])
def test_malformed_inputs_crash_nothing_answer_in_time_and_the_stack_still_serves(
    stack: str,
) -> None:
    results = fuzz.campaign([stack], count=300, seed=7)
    assert {r.target for r in results} >= {"gateway front"}
    assert len({r.target for r in results}) == 2, "the services' transport was not fuzzed"
    assert sum(r.inputs for r in results) >= 500
    for r in results:
        assert r.crashes == 0, fuzz._row(r)
        assert r.late == 0, fuzz._row(r)
        assert r.page_ok_after, fuzz._row(r)
        if r.target == "gateway front" and r.name in ("unicode digits", "random bytes"):
            assert set(r.outcomes) == {"4xx"}, fuzz._row(r)
    assert not ipclab_processes()


def test_the_fuzzer_sees_a_crash_and_a_broken_page() -> None:
    """The checks above can fail: a stack whose service died is reported as such."""
    from ipclab.backends import StackOptions, get_backend
    from ipclab.stacks import resolve

    stack = get_backend("local").start(resolve("shop-rest"), StackOptions(call_timeout_s=1.0))
    try:
        stack.procs["reviews"].kill()  # type: ignore[attr-defined]
        stack.procs["reviews"].wait(timeout=10)  # type: ignore[attr-defined]
        assert fuzz.exited(stack) == 1  # type: ignore[arg-type]
        assert not fuzz.page_ok(stack)  # type: ignore[arg-type]
    finally:
        stack.stop()


@pytest.mark.parametrize("name", AMQP_STACKS)  # Python's and Go's
def test_broker_restart_mid_amqp_run_answers_every_request_once_and_correctly(name: str) -> None:
    """No hang, no mismatched or duplicated reply: every in-flight request gets one answer
    (503/504 allowed) within its deadline and is counted; correct pages come back after."""
    import random
    import threading
    import time
    import urllib.error
    import urllib.request
    from concurrent.futures import ThreadPoolExecutor

    import orjson

    from ipclab.backends import StackOptions, get_backend
    from ipclab.stacks import resolve

    stack: Any = get_backend("local").start(resolve(name), StackOptions(call_timeout_s=2.0))
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
    finally:
        stop.set()
        stack.stop()
    deadline = time.monotonic() + 10
    while ipclab_processes() and time.monotonic() < deadline:
        time.sleep(0.3)
    assert not ipclab_processes(), "the restarted broker (or the first one) was left running"
