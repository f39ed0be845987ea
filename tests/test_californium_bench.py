"""bench/californium_hops.py and bench/californium_evidence.py run and print their figures (no
timing assertions: figures are noisy), and the packet reading tells a held body from one that
left at once."""

from __future__ import annotations

import csv
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ipclab import javabuild

BENCH = Path(__file__).resolve().parents[1] / "bench"
needs_java = pytest.mark.skipif(
    javabuild.toolchain_missing() is not None, reason=str(javabuild.toolchain_missing())
)

# tcpdump -tt -nn text: the client (port 40000) asks the egress (port 8002); the egress sends
# the head at once and the body 41 ms later, right after the client's delayed ACK
HELD = """\
1.000000 IP 127.0.0.1.40000 > 127.0.0.1.8002: Flags [P.], seq 1:102, ack 1, win 64, length 101
1.002000 IP 127.0.0.1.8002 > 127.0.0.1.40000: Flags [P.], seq 1:161, ack 102, win 64, length 160
1.043000 IP 127.0.0.1.40000 > 127.0.0.1.8002: Flags [.], ack 161, win 64, length 0
1.043020 IP 127.0.0.1.8002 > 127.0.0.1.40000: Flags [P.], seq 161:171, ack 102, win 64, length 10
1.043040 IP 127.0.0.1.40000 > 127.0.0.1.8002: Flags [.], ack 171, win 64, length 0
1.043300 IP 127.0.0.1.40000 > 127.0.0.1.8002: Flags [P.], seq 102:203, ack 171, win 64, length 101
""".splitlines()
AT_ONCE = """\
1.000000 IP 127.0.0.1.40000 > 127.0.0.1.8002: Flags [P.], seq 1:102, ack 1, win 64, length 101
1.002000 IP 127.0.0.1.8002 > 127.0.0.1.40000: Flags [P.], seq 1:161, ack 102, win 64, length 160
1.002040 IP 127.0.0.1.8002 > 127.0.0.1.40000: Flags [P.], seq 161:171, ack 102, win 64, length 10
1.002100 IP 127.0.0.1.40000 > 127.0.0.1.8002: Flags [.], ack 171, win 64, length 0
1.002300 IP 127.0.0.1.40000 > 127.0.0.1.8002: Flags [P.], seq 102:203, ack 171, win 64, length 101
""".splitlines()


def _evidence() -> object:
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module("californium_evidence")
    finally:
        sys.path.remove(str(BENCH))


def test_the_packet_reading_tells_a_held_body_from_one_sent_at_once() -> None:
    answers = _evidence().answers  # type: ignore[attr-defined]
    [held] = answers(HELD, 8002)
    assert held["acked_between"] and round(held["gap_ms"]) == 41
    assert round((held["last"] - held["ack"]) * 1000, 2) == 0.02  # released by the ACK
    [sent] = answers(AT_ONCE, 8002)
    assert not sent["acked_between"] and sent["gap_ms"] < 0.1


@needs_java
def test_the_hops_bench_prints_every_hop_and_appends_its_table(tmp_path: Path) -> None:
    out, table = tmp_path / "hops.json", tmp_path / "hops.csv"
    argv = ["--clients", "1", "--seconds", "0.3", "--warmup", "0.3", "--label", "after",
            "--json", str(out), "--csv", str(table)]  # fmt: skip
    proc = subprocess.run([sys.executable, str(BENCH / "californium_hops.py"), *argv],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads(out.read_text())["rows"]
    assert {(r["hop"], r["method"]) for r in rows} == {
        (h, m) for h in ("service", "ingress", "egress", "gateway") for m in ("GET", "POST")
    }
    assert all(r["n"] > 0 and r["bad"] == 0 and r["setting"] == "after" for r in rows)
    with table.open() as f:
        assert len(list(csv.DictReader(f))) == len(rows)


@needs_java
def test_the_evidence_prints_each_reading(tmp_path: Path) -> None:
    table = tmp_path / "evidence.csv"
    proc = subprocess.run(
        [sys.executable, str(BENCH / "californium_evidence.py"), "--label", "x",
         "--csv", str(table)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for reading in ("sockets", "packets", "writes", "threads"):
        assert f"{reading}:" in proc.stdout  # its figures, or why it was skipped
    with table.open() as f:
        assert all(r["what"].startswith("x: ") for r in csv.DictReader(f))
