"""The fuzzing campaign's short version (issue 13): the full one is `make fuzz`
(docs/fuzzing.md). Real stacks on 127.0.0.1, a few hundred malformed inputs per style."""

from __future__ import annotations

import pytest

from ipclab import fuzz
from tests.conftest import ipclab_processes

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
