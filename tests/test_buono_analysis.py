"""Buono's analysis without stacks: the per-run measures its claims read that are derived
from other columns (the encoder's time alone, Protobuf over JSON in the same run, the memory
a request takes above the idle footprint), the families, and the heap-cap deviation."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ipclab.paths import from_repo
from ipclab.runs import read_run
from ipclab.studies.buono import analysis, experiment, published

REFERENCE = from_repo(Path("data/runs/reference/buono-full-docker"))


def _requests() -> pd.DataFrame:
    """Two runs' requests for nested 650, GET and POST, both formats (gzip on, no cache):
    JSON serialises in 1.5 ms and parses in 4 ms; Protobuf in 0.75 and 0.5 ms (run 2 at
    twice run 1's times)."""
    rows = []
    times = {("json", "GET"): 1.5, ("json", "POST"): 4.0,
             ("protobuf", "GET"): 0.75, ("protobuf", "POST"): 0.5}  # fmt: skip
    for run, (fmt, method), k in itertools.product((1, 2), times, range(3)):
        t = times[(fmt, method)] * run
        ser, deser = (t, np.nan) if method == "GET" else (np.nan, t)
        rows.append(
            {
                "run": f"r{run}", "repetition": run, "variant": "gzip", "gzip": True,
                "cache": False, "json_library": "orjson", "structure": "nested",
                "method": method, "count": 650, "fmt": fmt, "latency_ms": 10.0 + k,
                "ok": True, "server_ms": t + 9.0, "ser_ms": ser, "deser_ms": deser,
                "gzip_ms": 9.0 if method == "GET" else np.nan,
                "gunzip_ms": 9.0 if method == "POST" else np.nan,
                "wire_bytes": 100, "bytes": 200, "header_bytes": 50,
            }
        )  # fmt: skip
    return pd.DataFrame(rows)


def test_the_encoders_time_alone_and_protobuf_over_json_in_the_same_run() -> None:
    cells = analysis.cell_table(_requests()).set_index(["run", "fmt", "method"])
    # codec_ms: ser of a GET, deser of a POST; gzip and gunzip left out (server_ms has them)
    assert cells.loc[("r1", "json", "GET"), "codec_ms"] == pytest.approx(1.5)
    assert cells.loc[("r1", "json", "POST"), "codec_ms"] == pytest.approx(4.0)
    assert cells.loc[("r2", "protobuf", "POST"), "codec_ms"] == pytest.approx(1.0)
    assert cells.loc[("r1", "json", "GET"), "server_ms"] == pytest.approx(10.5)
    # codec_pb_json: on the Protobuf row, over the JSON row of the same run and cell
    assert cells.loc[("r1", "protobuf", "GET"), "codec_pb_json"] == pytest.approx(0.5)
    assert cells.loc[("r2", "protobuf", "POST"), "codec_pb_json"] == pytest.approx(0.125)
    assert cells.xs("json", level="fmt")["codec_pb_json"].isna().all()


def test_the_phase_claims_read_the_encoders_time() -> None:
    cells = analysis.cell_table(_requests())
    by = {c.claim_id: c for c in published.claims()}
    table = analysis.evaluate(cells, [by["B06a"], by["B06b"]]).set_index("claim_id")
    # JSON parses (4 ms) more slowly than it encodes (1.5 ms): 8/3 in every run
    assert table.loc["B06a", "measured_ratio"] == pytest.approx(4.0 / 1.5)
    # Protobuf's share of JSON's time: 0.125 parsing against 0.5 encoding
    assert table.loc["B06b", "measured_ratio"] == pytest.approx(0.25)
    assert set(table["family"]) == {"procedure"}
    t = experiment.codec_table(cells).set_index(["count", "method"])
    assert t.loc[(650, "POST"), "pb_over_json"] == pytest.approx(0.125)
    assert t.loc[(650, "GET"), "phase"] == "serialisation"


@pytest.mark.skipif(not REFERENCE.is_dir(), reason="the committed reference is not here")
def test_the_memory_a_request_takes_is_above_the_idle_footprint() -> None:
    run = read_run(REFERENCE / "memory" / "json-flat-300000-orjson-r1")
    samples = pd.read_csv(run.path / "memory.csv")
    sent = next(e["t"] for e in run.events() if e["event"] == "request")
    idle = analysis.idle_rss_bytes(run)
    assert idle == samples.loc[samples["t"] < sent, "rss_bytes"].median()
    assert idle < samples["rss_bytes"].max()
    row = analysis.memory_table([run]).iloc[0]
    peak = json.loads((run.path / "summary.json").read_text())["peak_rss_bytes"]
    assert row["transient_rss_mb"] == pytest.approx((peak - idle) / 2**20)


def test_every_claim_has_one_family_and_the_bytes_are_facts() -> None:
    for family, claims in analysis.families().items():
        assert claims, family
        assert all(analysis.family_of(c) == family for c in claims)
    assert published.FACTS == ("body_bytes",)
    assert set(published.FACTS) <= set(analysis.FAMILIES["sizes (facts)"])


def test_the_heap_policy_is_a_stated_deviation() -> None:
    text = " ".join(experiment.DEVIATIONS)
    for words in ("run-java.sh 1.3.8", "ExitOnOutOfMemoryError", "-XX:MaxRAMPercentage=100",
                  "-XX:+UseSerialGC", "-XX:MaxRAM=400m", "procedure alike",
                  "No heap cap on Python", "B02e, B12a, B16a", "GC log"):  # fmt: skip
        assert words in text, words
    by = {c.claim_id: c for c in published.claims()}
    for cid in ("B02e", "B12a", "B16a"):
        assert "heap policy" in by[cid].note and "MaxRAMPercentage=100" in by[cid].note, cid
    assert "GC log" in by["B16c"].note and "inconclusive on Python" in by["B16c"].note


def _both_runtimes() -> pd.DataFrame:
    """The requests of :func:`_requests` numbered within each cell, on Python (orjson) and
    again on the JVM (Jackson), the JVM's POSTs without gzip."""
    py = _requests().assign(runtime="python")
    py["seq"] = py.groupby(["run", "fmt", "method"]).cumcount() + 1
    jvm = py.assign(runtime="jvm", json_library="jackson")
    jvm.loc[jvm["method"] == "POST", "gzip"] = False
    return pd.concat([py, jvm], ignore_index=True)


def test_table3_and_figs_27_28_on_each_runtime() -> None:
    import matplotlib.pyplot as plt

    from ipclab.studies.buono import figures

    req = _both_runtimes()
    t3 = experiment.table3_by_runtime(req)
    assert set(t3["runtime"]) == {"jvm"}  # only the JVM has cells with gzip off
    assert sorted(set(t3["requests"])) == [1]  # 3 requests a cell: only N = 1 of 1, 5, ...
    cells = analysis.cell_table(req)
    mem = pd.DataFrame({"json_library": ["jackson"], "structure": ["flat"], "count": [300_000],
                        "traced": [False]})  # fmt: skip
    c = experiment.conditions_table(t3, cells, mem)
    assert list(c["data structure"][:2]) == ["Flat (simple)", "Nested (complex)"]
    ran = c[c["runtime"] != ""].set_index("runtime")
    assert ran.loc["jvm", "request count"] == "1" and ran.loc["python", "request count"] == ""
    assert ran.loc["jvm", "request types"] == "GET, POST"
    assert ran.loc["jvm", "data generation count"] == "650"  # the memory's are flat only
    assert ran.loc["jvm", "runs per cell"] == "2"
    drawn = figures.fig28(req, "jackson")
    assert drawn is None  # the JVM's POSTs here are uncompressed: Fig. 28 has no cell
    drawn = figures.fig28(req)
    assert drawn is not None and drawn[1].startswith("Fig. 28 rebuilt (Python services")
    plt.close(drawn[0])
    gets = cells.assign(count=5, gzip=False)
    drawn = figures.fig27(gets, "jackson")
    assert drawn is not None and "on the JVM" in drawn[1] and "JSON (jackson)" in drawn[1]
    plt.close(drawn[0])
