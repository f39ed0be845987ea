"""The payload stack and the thesis's procedure on it (issue 16): the stack starts from its
declaration on real processes; through its edge service the JSON and protobuf answers hold
the same data and bad input gets a 4xx while it keeps serving; one run walks every cell of
the grid (one warm-up, then N sequential requests, in a seeded order) and records sizes,
header bytes and Server-Timing; the memory probe reads a component's memory and outcome."""

from __future__ import annotations

import dataclasses
import json
import urllib.error
import urllib.request
from pathlib import Path

import orjson
import pytest
from ipclab_services.domains.payload import codec, data
from ipclab_services.domains.payload.http import zlib_gzip

from ipclab.backends import StackOptions, get_backend
from ipclab.backends import memory as memprobe
from ipclab.experiments import load_runs
from ipclab.runs import read_run
from ipclab.studies.buono import memory, procedure
from ipclab.studies.buono.procedure import WARMUP, Cell, Grid, parse_cell, schedule
from ipclab.studies.buono.stacks import PAYLOAD, data_service, knobs

CELLS = Grid(flat=(5, 1000), nested=(5, 325)).cells()


def test_cell_names_round_trip_and_bad_cells_are_clear_errors() -> None:
    for c in CELLS:
        assert parse_cell(c.name) == c == parse_cell(WARMUP + c.name)
    with pytest.raises(ValueError, match="not a cell name"):
        parse_cell("GET json flat")
    with pytest.raises(ValueError, match="format 'xml'"):
        Cell("flat", "GET", 5, "xml")
    with pytest.raises(ValueError, match="method 'PUT'"):
        Cell("flat", "PUT", 5, "json")


def test_a_schedule_runs_each_cell_back_to_back_in_a_seeded_order() -> None:
    s = schedule(CELLS, requests=3, warmup=1, seed=1)
    assert len(s) == len(CELLS) * 4
    blocks = [s[i : i + 4] for i in range(0, len(s), 4)]
    for block in blocks:  # one warm-up, then the cell's requests, nothing between
        cell = block[0][1]
        assert [n for n, _ in block] == [WARMUP + cell.name] + [cell.name] * 3
        assert {c for _, c in block} == {cell}
    order = [b[0][1] for b in blocks]
    assert sorted(order) == sorted(CELLS)
    assert order == [
        b[0][1] for b in [schedule(CELLS, 3, 1, 1)[i : i + 4] for i in range(0, len(s), 4)]
    ]
    assert order != [schedule(CELLS, 3, 1, 2)[i][1] for i in range(0, len(s), 4)]


def test_profiles_name_their_variants_and_the_experiment_its_load() -> None:
    full = procedure.PROFILES["full"]
    assert full.requests == 100 and full.warmup == 1 and full.repetitions >= 7
    assert {v.json_library for v in full.variants} == {"json", "orjson"}
    assert {(v.gzip, v.cache) for v in full.variants} == {(g, c) for g in (0, 1) for c in (0, 1)}
    e = procedure.experiment("quick", root=Path("/nonexistent"))
    quick = procedure.PROFILES["quick"]
    assert e.group is not None and e.group.requests == quick.requests_per_run
    assert len(e.cells()) == len(quick.variants) * quick.repetitions
    with pytest.raises(ValueError, match="named twice"):
        dataclasses.replace(quick, variants=quick.variants[:1] * 2)


def _get(url: str, headers: dict[str, str] | None = None, body: bytes | None = None):  # type: ignore[no-untyped-def]
    req = urllib.request.Request(url, data=body, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


@pytest.mark.slow
def test_the_payload_stack_serves_both_formats_and_refuses_bad_input() -> None:
    options = StackOptions(extra_env=dict(knobs(gzip=True, cache=False)))
    stack = get_backend("local").start(PAYLOAD, options)
    try:
        url = stack.gateway_url
        status, _, health = _get(f"{url}/healthz")
        described = orjson.loads(health)
        assert status == 200 and described["ready"]
        assert described["data"]["settings"]["gzip"] is True
        assert described["data"]["implementation"] in ("upb", "python", "cpp")
        for structure in data.STRUCTURES:
            for count in (0, 5, 650):
                docs = []
                for fmt in ("json", "protobuf"):
                    status, hdrs, body = _get(f"{url}/{fmt}/{structure}?count={count}")
                    assert status == 200 and hdrs["x-elements"] == str(count)
                    docs.append(
                        orjson.loads(body) if fmt == "json"
                        else codec.message_to_document(codec.decode_protobuf(structure, body))  # type: ignore[arg-type]
                    )  # fmt: skip
                key = data.WRAPPER[structure]  # type: ignore[index]
                assert docs[0][key] == docs[1].get(key, []), (structure, count)
        whole = codec.encode_protobuf(data.dataset("flat", 5, options.seed).message)
        bad = [
            ("GET", "/json/flat?count=1000000000", None, {}, 400),
            ("GET", "/json/flat?count=-1", None, {}, 400),
            ("POST", "/protobuf/flat", whole[:-1], {"Content-Type": "application/x-protobuf"}, 400),
            ("POST", "/json/flat", b'{"users": [', {"Content-Type": "application/json"}, 400),
            ("POST", "/json/flat", b"{}", {"Content-Type": "text/plain"}, 415),
            ("POST", "/json/flat", zlib_gzip(b"0" * (1 << 30)),
             {"Content-Type": "application/json", "Content-Encoding": "gzip"}, 413),
        ]  # fmt: skip
        for method, path, body, headers, want in bad:
            status, _, answer = _get(url + path, headers, body if method == "POST" else None)
            assert status == want, (path, status, answer)
            assert _get(f"{url}/protobuf/flat?count=5")[2] == whole  # and it keeps serving
    finally:
        stack.stop()


def test_a_manifest_gives_the_data_services_own_description() -> None:
    described = {"settings": {"gzip": False}, "protobuf": "7.36.2", "implementation": "upb"}
    health = {"ready": True, "services": {"data": "ok"}, "data": described}
    assert data_service({"healthz": health}) == described  # a run of one stack (memory)
    assert data_service({"healthz": {PAYLOAD.name: health}}) == described  # a group run
    # a manifest from before (environment.protobuf_backend is the harness process's own)
    assert data_service({"environment": {"protobuf_backend": "upb"}}) is None
    assert data_service({"healthz": {"unread": "ConnectionRefusedError(111)"}}) is None


@pytest.mark.slow
def test_a_run_walks_every_cell_and_records_sizes_headers_and_server_timing(tmp_path: Path) -> None:
    quick = procedure.PROFILES["quick"]
    profile = dataclasses.replace(
        quick, requests=3, repetitions=1, variants=(procedure.Variant(gzip=True, cache=False),)
    )
    e = procedure.experiment(profile, root=tmp_path)
    (run,) = e.run(progress=lambda _: None)
    assert run.complete, run.manifest
    server = json.loads((run.path / "server.json").read_text())
    assert server["settings"]["gzip"] is True and server["settings"]["cache"] is False
    assert data_service(run.manifest) == server  # the manifest says it too, from the start
    assert server["implementation"] == codec.protobuf_backend()["implementation"]
    req = run.requests()
    assert len(req) == profile.requests_per_run and req["ok"].all(), req[~req["ok"]]
    measured = req[~req["name"].str.startswith(WARMUP)]
    assert set(measured["name"]) == {c.name for c in profile.grid.cells()}
    assert (measured.groupby("name").size() == 3).all()
    assert measured["header_bytes"].between(100, 400).all()
    gets = measured[measured["name"].str.startswith("GET")]
    assert gets["timing"].str.contains("ser;dur=").all()
    assert gets["timing"].str.contains("gzip;dur=").all()  # the answers went out gzipped
    posts = measured[measured["name"].str.startswith("POST")]
    assert posts["timing"].str.contains("gunzip;dur=").all()  # and the bodies came in so
    # bytes as decoded, wire_bytes as sent: a gzipped JSON list of 325 payments
    raw = len(codec.encode_json(data.dataset("nested", 325, StackOptions().seed).document))
    nested = gets[gets["name"] == "GET json nested 325"]
    assert (nested["bytes"] == raw).all() and (nested["wire_bytes"] < raw / 2).all()
    # a rerun reuses the run
    assert e.pending() == [] and [r.path for r in load_runs(e.directory)] == [run.path]


@pytest.mark.slow
def test_a_memory_cell_samples_the_data_service_and_says_how_it_ended(tmp_path: Path) -> None:
    plan = memory.Plan(counts=(20_000,), formats=("protobuf",), traced_repetitions=0)
    (run,) = memory.run_plan(plan, tmp_path, backend="local", progress=lambda _: None)
    summary = run.summary
    assert summary["completed"] and summary["limit_mb"] is None
    assert summary["data_running"] and summary["data_oom_killed"] is None
    assert summary["samples"] >= 20 and summary["peak_rss_bytes"] > 20 * 2**20
    rows = (run.path / "memory.csv").read_text().splitlines()
    assert rows[0] == "t,rss_bytes,usage_bytes" and len(rows) == summary["samples"] + 1
    assert summary["alloc_peak_bytes"] is None  # not traced
    described = data_service(run.manifest)  # the data service's backend, in the manifest
    assert described is not None and described["settings"]["json_library"] == "orjson"
    assert described["implementation"] == codec.protobuf_backend()["implementation"]
    # a traced cell: the data service reports the peak of its traced allocations
    traced = memory.run_cell(memory.MemoryCell("protobuf", 20_000, traced=True), tmp_path / "t",
                             backend="local")  # fmt: skip
    t = read_run(traced).summary
    assert t["completed"] and 2**20 < t["alloc_peak_bytes"] < t["peak_rss_bytes"]


def test_a_cgroup_reader_reads_v1_and_v2_files(tmp_path: Path) -> None:
    v1 = tmp_path / "memory" / "docker" / "abc123"
    v1.mkdir(parents=True)
    (v1 / "memory.usage_in_bytes").write_text("5000\n")
    (v1 / "memory.max_usage_in_bytes").write_text("9000\n")
    (v1 / "memory.stat").write_text("cache 100\nrss 3000\nrss_huge 1000\n")
    assert memprobe.container_cgroup("abc123", tmp_path) == v1
    assert memprobe.cgroup_reader(v1)() == {"rss_bytes": 4000, "usage_bytes": 5000}
    assert memprobe.cgroup_peak(v1) == 9000
    v2 = tmp_path / "system.slice" / "docker-def456.scope"
    v2.mkdir(parents=True)
    (v2 / "memory.current").write_text("7000\n")
    (v2 / "memory.stat").write_text("anon 6000\nfile 1000\n")
    assert memprobe.container_cgroup("def456", tmp_path) == v2
    assert memprobe.cgroup_reader(v2)() == {"rss_bytes": 6000, "usage_bytes": 7000}
    with pytest.raises(FileNotFoundError, match="no memory cgroup"):
        memprobe.container_cgroup("nothere", tmp_path)
