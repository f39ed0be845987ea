"""A gateway's fan-out (``ipclab_services.domains.all_answers``): the first failure answers
the page, and no call in flight is ever cancelled, by another's failure or by the caller's
own cancellation (cancelled grpc.aio calls leak in grpcio's core: docs/soak.md)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from ipclab_services.domains import all_answers
from ipclab_services.errors import NotFound, Timeout

SLOW = ("reviews", "recommendations", "shipping", "cart")


def _calls(outcomes: dict[str, str], fail: bool = True) -> list[Any]:
    async def call(service: str) -> dict[str, str]:
        if fail and service == "product-info":
            raise NotFound("no product")
        try:
            await asyncio.sleep(0.2)
        except asyncio.CancelledError:
            outcomes[service] = "cancelled"
            raise
        outcomes[service] = "answered"
        return {"service": service}

    return [call(s) for s in ("product-info", *SLOW)]


def test_the_first_failure_answers_and_the_other_calls_run_to_their_end() -> None:
    async def scenario() -> dict[str, str]:
        outcomes: dict[str, str] = {}
        with pytest.raises(NotFound):
            await all_answers(_calls(outcomes), timeout=5.0)
        assert outcomes == {}  # answered before any slow call ended
        await asyncio.sleep(0.5)
        return outcomes

    assert asyncio.run(scenario()) == dict.fromkeys(SLOW, "answered")


def test_a_cancelled_caller_cancels_no_call() -> None:
    async def scenario() -> dict[str, str]:
        outcomes: dict[str, str] = {}
        page = asyncio.ensure_future(all_answers(_calls(outcomes, fail=False), timeout=5.0))
        await asyncio.sleep(0.05)
        page.cancel()
        with pytest.raises(asyncio.CancelledError):
            await page
        await asyncio.sleep(0.5)
        return outcomes

    assert asyncio.run(scenario()) == dict.fromkeys(("product-info", *SLOW), "answered")


def test_answers_in_order_and_a_deadline_without_cancelling() -> None:
    async def scenario() -> tuple[list[Any], dict[str, str]]:
        outcomes: dict[str, str] = {}
        answers = await all_answers(_calls(outcomes, fail=False))
        late: dict[str, str] = {}
        with pytest.raises(Timeout):
            await all_answers(_calls(late, fail=False), timeout=0.05)
        await asyncio.sleep(0.5)
        return answers, late

    answers, late = asyncio.run(scenario())
    assert [a["service"] for a in answers] == ["product-info", *SLOW]
    assert late == dict.fromkeys(("product-info", *SLOW), "answered")
