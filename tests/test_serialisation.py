"""The serialisation micro-benchmark (Johansson's Tables 5.1/5.2): every format carries the
bundle unchanged, sizes are exact, the bench script runs (no timing assertions)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from ipclab_services.domains.bundle import data

from ipclab.studies.johansson import serialisation as ser

BENCH = Path(__file__).resolve().parents[1] / "bench" / "serialisation.py"


@pytest.mark.parametrize("rows", [0, 5, 25, 50])
def test_every_format_round_trips_the_bundle(rows: int) -> None:
    styles = {f.style for f in ser.formats()}
    assert {"xml", "json", "json-std", "protobuf"} <= styles
    for fmt in ser.formats():
        assert ser.check_round_trip(fmt, rows) > 0 or rows == 0


def test_sizes_are_exact_and_ordered_as_table_5_1() -> None:
    pytest.importorskip("thriftpy2", reason="thriftpy2 missing: pip install -e '.[bench]'")
    size = {f.style: ser.check_round_trip(f, 25) for f in ser.formats()}
    # JSON is the REST gateway's body byte for byte (orjson, the same rows)
    assert size["json"] == len(orjson.dumps(data.bundle(25))) == size["json-std"]
    # 100 rows of two 6-character fields: protobuf 1 + 1 + 6 per field and 2 per row
    assert size["protobuf"] == 100 * (2 * 8 + 2)
    assert size["xml"] > size["json"] > size["thrift"] > size["protobuf"]


def test_measure_gives_one_row_per_process_round_format_and_size() -> None:
    t = ser.measure(processes=1, rounds=2, seconds=0.002, sizes=(5,), only=("json", "protobuf"))
    assert len(t) == 4 and set(t["style"]) == {"json", "protobuf"}
    assert set(t["process"]) == {1} and set(t["round"]) == {1, 2}
    assert (t[["encode_us", "decode_us", "bytes"]] > 0).all().all()
    assert (t["roundtrip_us"] == t["encode_us"] + t["decode_us"]).all()
    assert (t["users"] == t["rows"]).all()
    s = ser.summary(t)
    assert set(s["style"]) == {"json", "protobuf"}
    assert (s.loc[s["style"] == "json", "bytes_vs_json"] == 1).all()
    with pytest.raises(ValueError, match="no format"):
        ser.measure(rounds=1, seconds=0.001, only=("yaml",))
    with pytest.raises(ValueError, match="rounds"):
        ser.measure(rounds=0)
    with pytest.raises(ValueError, match="processes"):
        ser.measure(processes=0)


def test_the_replicate_is_a_process_not_a_round() -> None:
    """docs/statistics.md section 1 (issue 47.6): each process a fresh interpreter, its
    rounds averaged into one value; the claims and intervals are over processes."""
    t = ser.measure(processes=3, rounds=2, seconds=0.002, sizes=(5,), only=("json",))
    assert sorted(t["process"]) == [1, 1, 2, 2, 3, 3]
    reps = ser.per_process(t)
    assert len(reps) == 3 and (reps["rounds"] == 2).all()
    first = t[t["process"] == 1]["encode_us"].mean()
    assert reps.loc[reps["process"] == 1, "encode_us"].iloc[0] == pytest.approx(first)
    assert ser.cells(t).set_index("metric").loc["encode_us", "n"] == 3
    # a table of rounds made before processes (no process column) is one replicate
    legacy = t.drop(columns="process").assign(round=range(1, 7))
    assert len(ser.per_process(legacy)) == 1


def test_each_process_is_a_fresh_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    calls: list[list[str]] = []
    real = subprocess.run

    def spy(argv: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
        calls.append(argv)
        return real(argv, **kw)  # type: ignore[call-overload, no-any-return]

    monkeypatch.setattr(subprocess, "run", spy)
    ser.measure(processes=2, rounds=1, seconds=0.001, sizes=(5,), only=("json",))
    assert len(calls) == 2 and all(c[1:3] == ["-m", ser.__name__] for c in calls)


def test_the_committed_rounds_are_one_process_and_decide_no_timing_claim() -> None:
    """The committed reference's micro-benchmark was 10 rounds in one process: one
    replicate, so its timing claims are inconclusive (too few repetitions) until it is
    measured again with processes; its byte facts stand."""
    import pandas as pd

    from ipclab.paths import from_repo
    from ipclab.studies.johansson import verdicts

    path = from_repo("data/runs/reference/johansson-full-local/results/serialisation_rounds.csv")
    rounds = pd.read_csv(path)
    if "process" in rounds.columns:
        pytest.skip("the committed micro-benchmark has processes")
    table = verdicts.claims_table(pd.DataFrame(), rounds)
    timing = table[table["evidence"] == "test"]
    assert len(timing) and (timing["verdict"] == "inconclusive").all()
    assert timing["reason"].str.startswith("too few repetitions (n=1").all()
    assert (table.loc[table["evidence"] == "fact", "verdict"] != "inconclusive").all()


def test_a_missing_library_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> ser.Format:
        raise ImportError("No module named 'thriftpy2'")

    monkeypatch.setattr(ser, "_thrift_format", missing)
    monkeypatch.setattr(ser, "_MISSING", {})
    assert "thrift" not in {f.style for f in ser.formats()}
    assert any("pip install thriftpy2" in line for line in ser.unavailable())


def test_bench_script_runs(tmp_path: Path) -> None:
    out = tmp_path / "serialisation.json"
    argv = ["--processes", "2", "--rounds", "2", "--seconds", "0.002", "--sizes", "5",
            "--json", str(out)]  # fmt: skip
    proc = subprocess.run(
        [sys.executable, str(BENCH), *argv], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text())
    assert doc["rounds"] == 2 and doc["processes"] == 2 and doc["sizes"] == [5]
    assert {r["style"] for r in doc["results"]} >= {"xml", "json", "protobuf"}
    assert "encode_us" in proc.stdout
