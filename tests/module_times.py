"""Time per test module (setup, call and teardown summed), printed at the end of the session
and written to ``out/test-times.csv``: where the suite's minutes go, module by module, for
the suite's time budget (summed over the workers under pytest-xdist: more than the wall
time). Loaded by tests/conftest.py."""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import pytest

_SECONDS: dict[str, float] = defaultdict(float)
_TESTS: dict[str, int] = defaultdict(int)
OUT = Path(__file__).resolve().parents[1] / "out" / "test-times.csv"
SHOWN = 15


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    module = report.nodeid.split("::", 1)[0].split("@", 1)[0]  # xdist: "<id>@<group>"
    _SECONDS[module] += report.duration
    if report.when == "call":
        _TESTS[module] += 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    # under pytest-xdist the controller sums every worker's reports and writes the file; a
    # worker (its own share only) writes nothing
    if not _SECONDS or hasattr(terminalreporter.config, "workerinput"):
        return
    ranked = sorted(_SECONDS.items(), key=lambda kv: -kv[1])
    total = sum(_SECONDS.values())
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["module", "tests", "seconds"])
        w.writerows((m, _TESTS[m], round(s, 1)) for m, s in ranked)
    tr = terminalreporter
    tr.write_sep("=", f"time per module ({total:.0f} s in tests; all in {OUT.name})")
    for module, seconds in ranked[:SHOWN]:
        tr.write_line(f"{seconds:8.1f}s {_TESTS[module]:4d} tests  {module}")
