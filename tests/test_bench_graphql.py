"""bench/graphql_engines.py runs, checks every engine returns the bundle, prints its table
(no timing assertions: figures are noisy)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "graphql_engines.py"
ENGINES = ("strawberry", "ariadne", "graphene")


def test_graphql_bench_prints_table(tmp_path: Path) -> None:
    for module in ENGINES:
        pytest.importorskip(module, reason=f"{module} missing: pip install -e '.[bench]'")
    out = tmp_path / "graphql.json"
    argv = ["--sizes", "1,3", "--queries", "10", "--rounds", "2"]
    proc = subprocess.run(
        [sys.executable, str(BENCH), *argv, "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "not measured" not in proc.stdout, proc.stdout
    doc = json.loads(out.read_text())
    names = ["rest", "graphql-core", "graphql-core-cached", *ENGINES]
    assert [r["candidate"] for r in doc["results"]] == names * 2
    assert all(r["cpu_us"]["median"] > 0 and r["qps"]["median"] > 0 for r in doc["results"])
    # the same rows in every response; GraphQL adds only the {"data": ...} envelope
    sizes = {r["candidate"]: r["response_bytes"] for r in doc["results"] if r["rows"] == 3}
    assert {sizes[n] - sizes["rest"] for n in names[1:]} == {len('{"data":}')}
    assert set(doc["engine_spread"]) == {"1", "3"}
    assert "slowest/fastest engine" in proc.stdout
