"""bench/transports.py runs and prints its table (no timing assertions: figures are noisy)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "transports.py"


def _bench(
    tmp_path: Path, extra: list[str], timeout: float
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """A short bench of the floor and REST plus ``extra`` rows: its output and its JSON,
    checked to have run without a failed row."""
    out = tmp_path / "bench.json"
    argv = ["--requests", "50", "--inflight", "4", "--seconds", "0.5", "--only", "rest"]
    proc = subprocess.run(
        [sys.executable, str(BENCH), *argv, *extra, "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "FAILED" not in proc.stdout
    return proc, json.loads(out.read_text())


def test_transports_bench_prints_table(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    argv = ["--requests", "50", "--inflight", "4", "--seconds", "0.5", "--only", "rest"]
    proc = subprocess.run(
        [sys.executable, str(BENCH), *argv, "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert any(line.startswith("candidate") and "p50 x floor" in line for line in lines)
    rows = {line.split()[0]: line for line in lines if line.split()[:1] in (["floor"], ["rest"])}
    assert set(rows) == {"floor", "rest"}, proc.stdout
    assert "FAILED" not in proc.stdout
    doc = json.loads(out.read_text())
    assert [r["name"] for r in doc["rows"]] == ["floor", "rest"]
    assert all(r["rps"] > 0 and r["seq_p50_us"] > 0 for r in doc["rows"])


def test_transports_bench_puts_go_rows_in_the_same_run(tmp_path: Path) -> None:
    from ipclab import gobuild

    if missing := gobuild.toolchain_missing():
        pytest.skip(f"Go rows not tested: {missing}")
    proc, doc = _bench(tmp_path, ["--go"], timeout=240)
    rows = {r["name"]: r for r in doc["rows"]}
    assert set(rows) == {"floor", "rest", "go-floor", "go-rest"}
    for r in rows.values():  # the same fields, measured the same way
        assert r["rps"] > 0 and r["seq_p50_us"] > 0 and r["cpu_us_per_call"] > 0, r
        assert r["errors"] == 0, r
    assert doc["go"].startswith("go1.")


def test_transports_bench_puts_the_coap_adapter_pairs_beside_the_floor(tmp_path: Path) -> None:
    from ipclab import javabuild

    if missing := javabuild.toolchain_missing():
        pytest.skip(f"the Californium pair not tested: {missing}")
    proc, doc = _bench(tmp_path, ["--pairs", "--pair-warmup", "200"], timeout=400)
    rows = {r["name"]: r for r in doc["rows"]}
    assert set(rows) == {"floor", "rest", "pair-none", "pair-aiocoap", "pair-californium"}
    for r in rows.values():
        assert r["rps"] > 0 and r["cpu_us_per_call"] > 0 and r["errors"] == 0, r
    costs = {c["name"]: c for c in doc["pair_costs"]}
    assert set(costs) == {"pair-aiocoap", "pair-californium"}
    # the JVM's CPU is counted: a pair costs more CPU per call than no pair
    assert all(c["extra_cpu_us_per_call"] > 0 for c in costs.values()), costs
    assert "adapter pairs: what a pair adds per call" in proc.stdout


def test_transports_bench_puts_tls_beside_each_style_and_prices_a_handshake(
    tmp_path: Path,
) -> None:
    _, doc = _bench(tmp_path, ["--tls"], timeout=300)
    names = [r["name"] for r in doc["rows"]]
    assert {"rest-tls", "grpc-tls", "h2c-tls", "amqp-tls", "rest-conn", "rest-tls-conn"} <= set(
        names
    )
    costs = {c["cost"]: c for c in doc["tls_costs"]}
    assert any("handshake" in name for name in costs), costs
