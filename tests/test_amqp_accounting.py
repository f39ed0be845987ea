"""AMQP: every request published is answered exactly once over a run (issue 2, must-show 5)."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from ipclab.backends import StackOptions, get_backend
from ipclab.load.runner import LoadProfile, run_on
from ipclab.runs import RunWriter, read_run
from ipclab.stacks import resolve

pytestmark = pytest.mark.slow


def test_published_equals_replies_consumed(tmp_path: Path) -> None:
    options = StackOptions()
    stack = get_backend("local").start(resolve("shop-amqp"), options, logs_dir=tmp_path / "logs")
    try:
        writer = RunWriter(tmp_path / "run", "load", {})
        run_on(stack, LoadProfile(users=20, spawn_rate=20, duration_s=5), writer, options)
        with urllib.request.urlopen(f"{stack.gateway_url}/stats", timeout=5) as r:
            stats = json.loads(r.read())
    finally:
        stack.stop()
    served = read_run(tmp_path / "run").requests()
    assert served["ok"].all() and len(served) > 100
    assert stats["pending"] == 0
    assert stats["returned"] == 0
    assert stats["unmatched"] == 0, "late or duplicated replies"
    assert stats["published"] == stats["replies"], stats
    # five service calls per product page; the rest are health pings
    assert stats["published_by_op"]["get"] == 5 * len(served), (stats, len(served))
