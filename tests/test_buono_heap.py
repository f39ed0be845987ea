"""Buono's JVM heap (issue 46, item 4): the heap policy chosen to match the thesis reaches
every JVM run's command line (memory and procedure runs alike, both under the 400 MB
limit) and its manifest; the JVM's own GC log parses into the run's heap.csv and the
committed heap B16c reads; the memory claims rest on enough runs per cell to come out
either way. Pure: no stack (tests/test_payload_jvm.py and tests/docker/test_buono_docker.py
read the JVM's own report of its flags and its GC log on running stacks)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ipclab.studies.buono import analysis, experiment, heap, memory, procedure
from ipclab.studies.buono.stacks import (
    GC_LOG,
    HEAPS,
    LIMIT_MB,
    THESIS_HEAP,
    heap_policy,
    jvm_flags,
    knobs,
)

# a data service's log in a container (docker's timestamp before each line): the JVM's
# start, a young collection, one that turned into a full one (its summary line only), a full
# one that grew the heap, a line of the service's own and a line cut by the kernel's kill
LOG = """\
2026-11-28T20:12:29.224735257Z [1795896749223ms][16ms][gc] Using Serial
2026-11-28T20:12:29.227427602Z [1795896749227ms][19ms][gc,init] Memory: 400M
2026-11-28T20:12:29.228956591Z [1795896749227ms][20ms][gc,init] Heap Min Capacity: 8M
2026-11-28T20:12:29.228958945Z [1795896749227ms][20ms][gc,init] Heap Initial Capacity: 8M
2026-11-28T20:12:29.228961238Z [1795896749227ms][20ms][gc,init] Heap Max Capacity: 400M
2026-11-28T20:12:29.675738889Z [1795896749669ms][462ms][gc,heap     ] GC(0) DefNew: 2176K(2432K)->255K(2432K) Eden: 2176K(2176K)->0K(2176K) From: 0K(256K)->255K(256K)
2026-11-28T20:12:29.675762865Z [1795896749669ms][462ms][gc,heap     ] GC(0) Tenured: 0K(5504K)->779K(5504K)
2026-11-28T20:12:29.675766831Z [1795896749669ms][462ms][gc,metaspace] GC(0) Metaspace: 885K(1024K)->885K(1024K) NonClass: 817K(896K)->817K(896K) Class: 68K(128K)->68K(128K)
2026-11-28T20:12:29.675771468Z [1795896749669ms][462ms][gc          ] GC(0) Pause Young (Allocation Failure) 2M->1M(7M) 6.581ms
2026-11-28T20:12:30.100000000Z ipclab-runtime {"role": "data", "runtime": "jvm"}
2026-11-28T20:12:44.708589587Z [1795896764708ms][15501ms][gc          ] GC(134) Pause Young (Allocation Failure) 165M->165M(214M) 114.421ms
2026-11-28T20:12:44.873178974Z [1795896764873ms][15665ms][gc,heap     ] GC(135) DefNew: 56232K(56320K)->6153K(122752K) Eden: 50025K(50112K)->6153K(109120K) From: 6206K(6208K)->0K(13632K)
2026-11-28T20:12:44.873201858Z [1795896764873ms][15665ms][gc,heap     ] GC(135) Tenured: 113585K(124988K)->163573K(272624K)
2026-11-28T20:12:44.879344253Z [1795896764873ms][15666ms][gc          ] GC(135) Pause Full (Allocation Failure) 165M->165M(386M) 164.862ms
2026-11-28T20:12:45.021725144Z [1795896765021ms][15814ms][gc,heap     ] GC(136) DefNew: 69917K(122
"""  # noqa: E501 - the JVM's own lines, verbatim
K, M = 2**10, 2**20


def test_the_gc_log_parses_into_one_row_per_collection() -> None:
    jvm, rows = heap.parse(LOG.splitlines(), "data")
    assert jvm == {"collector": "Serial", "memory_bytes": 400 * M, "heap_min_bytes": 8 * M,
                   "heap_initial_bytes": 8 * M, "heap_max_bytes": 400 * M}  # fmt: skip
    assert list(rows.columns) == list(heap.COLUMNS)
    assert list(rows["gc"]) == [0, 134, 135]  # GC(136), cut by the kill, has no sizes
    young = rows.iloc[0]
    assert young["t"] == pytest.approx(1795896749.669) and young["uptime_s"] == 0.462
    assert (young["pause"], young["cause"]) == ("Pause Young", "Allocation Failure")
    assert young["pause_ms"] == pytest.approx(6.581)
    # the generations' K: DefNew's and Tenured's, their subspaces (Eden, From) left out
    assert young["used_before_bytes"] == (2176 + 0) * K
    assert young["used_after_bytes"] == (255 + 779) * K
    assert young["committed_before_bytes"] == young["committed_after_bytes"] == (2432 + 5504) * K
    assert young["metaspace_used_bytes"] == 885 * K and young["source"] == "generations"
    promoted = rows.iloc[1]  # no generation lines: the summary's M
    assert promoted["source"] == "summary" and promoted["used_before_bytes"] == 165 * M
    assert promoted["committed_after_bytes"] == 214 * M
    assert np.isnan(promoted["committed_before_bytes"])
    full = rows.iloc[2]
    assert full["pause"] == "Pause Full"
    assert full["committed_after_bytes"] == (122752 + 272624) * K  # the heap grew here


def test_a_g1_summary_line_and_other_logs_parse_too() -> None:
    g1 = ["[1000ms][5ms][gc] Using G1",
          "[2000ms][900ms][gc,heap] GC(3) Eden regions: 24->0(30)",
          "[2000ms][903ms][gc] GC(3) Pause Young (Normal) (G1 Evacuation Pause) 24M->3M(256M) "
          "3.2ms"]  # fmt: skip
    jvm, rows = heap.parse(g1)
    assert jvm == {"collector": "G1"} and len(rows) == 1
    r = rows.iloc[0]
    assert r["cause"] == "Normal; G1 Evacuation Pause" and r["source"] == "summary"
    assert (r["used_before_bytes"], r["used_after_bytes"]) == (24 * M, 3 * M)
    jvm, rows = heap.parse(["INFO a Python role's log", "", "[x][y][gc] nonsense"])
    assert jvm == {} and rows.empty and list(rows.columns) == list(heap.COLUMNS)


def test_record_writes_heap_csv_and_each_jvm_roles_summary(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "data.log").write_text(LOG)
    (logs / "locust.log").write_text("[2026-11-28 20:12:29,000] no JVM here\n")
    out = heap.record(tmp_path)
    assert set(out) == {"data"}  # a log without the GC log is no JVM's
    s = out["data"]
    assert s["collector"] == "Serial" and s["heap_max_bytes"] == 400 * M
    assert s["collections"] == 3 and s["full_collections"] == 1
    assert s["used_peak_bytes"] == (56232 + 113585) * K  # the largest used before a collection
    assert s["committed_peak_bytes"] == (122752 + 272624) * K
    assert s["committed_last_bytes"] == (122752 + 272624) * K
    written = heap.read(tmp_path)
    assert len(written) == 3 and set(written["role"]) == {"data"}
    # a Python run: nothing to record, nothing written
    python = tmp_path / "python"
    (python / "logs").mkdir(parents=True)
    (python / "logs" / "data.log").write_text("INFO: Uvicorn running\n")
    assert heap.record(python) == {} and not (python / heap.HEAP_CSV).exists()
    assert heap.read(python).empty


def test_the_memory_table_reads_the_data_services_committed_heap() -> None:
    s = {"heap": {"data": {"committed_peak_bytes": 380 * M, "used_peak_bytes": 220 * M,
                           "heap_max_bytes": 400 * M, "collections": 140}}}  # fmt: skip
    cols = analysis.heap_columns(s)
    assert cols == {"heap_committed_mb": 380.0, "heap_used_mb": 220.0,
                    "heap_max_mb": 400.0, "heap_collections": 140.0}  # fmt: skip
    none = analysis.heap_columns({"heap": None})  # Python's: no heap
    assert all(math.isnan(v) for v in none.values())


def test_the_thesis_heap_policy_reaches_every_jvm_runs_flags() -> None:
    assert THESIS_HEAP == "limit" and set(HEAPS) == {"limit", "default"}
    flags = jvm_flags(THESIS_HEAP)
    assert flags == ("-XX:+ExitOnOutOfMemoryError", "-XX:+UseSerialGC", "-XX:MaxRAM=400m",
                     "-XX:MaxRAMPercentage=100", GC_LOG)  # fmt: skip
    assert "*" not in " ".join(flags)  # the launcher splits them unquoted: no glob
    assert jvm_flags("default") == tuple(f for f in flags if "Percentage" not in f)
    assert jvm_flags("limit", 120)[2] == "-XX:MaxRAM=120m"
    with pytest.raises(ValueError, match="heap"):
        jvm_flags("huge")
    env = knobs(False, False, "jackson")  # the thesis's unless named
    assert env["IPCLAB_JVM_OPTIONS"] == " ".join(flags) and env["IPCLAB_HEAP_POLICY"] == "limit"
    assert "IPCLAB_JVM_OPTIONS" not in knobs(False, False, "orjson")
    with pytest.raises(ValueError, match="heap policy is the JVM's"):
        knobs(False, False, "orjson", heap="limit")
    # the procedure's JVM runs: the 400 MB limit and the thesis's heap, Python's unchanged
    jvm = procedure.Variant(True, False, "jackson").options()
    assert jvm.memory_mb == LIMIT_MB and jvm.extra_env["IPCLAB_JVM_OPTIONS"] == " ".join(flags)
    python = procedure.Variant(True, False, "orjson").options()
    assert python.memory_mb is None and "IPCLAB_HEAP_POLICY" not in python.extra_env
    full = procedure.experiment("full", "docker", runtime="jvm")
    assert full.variants and all(
        o.memory_mb == LIMIT_MB and o.extra_env["IPCLAB_HEAP_POLICY"] == THESIS_HEAP
        for o in full.variants.values()
    )
    # the memory runs: each cell's own policy, sized from the limit it runs under
    cell = memory.MemoryCell("json", 300_000, json_library="jackson", runtime="jvm", heap="limit")
    o = memory.cell_options(cell, "docker")
    assert o.memory_mb == LIMIT_MB and o.extra_env["IPCLAB_JVM_OPTIONS"] == " ".join(flags)
    small = memory.cell_options(cell, "docker", limit_mb=120)
    assert "-XX:MaxRAM=120m" in small.extra_env["IPCLAB_JVM_OPTIONS"].split()
    local = memory.cell_options(cell, "local")  # no limit there; sized as in the container
    assert local.memory_mb is None and "-XX:MaxRAM=400m" in local.extra_env["IPCLAB_JVM_OPTIONS"]


def test_a_run_records_its_policy_and_what_the_jvm_made_of_it() -> None:
    options = memory.cell_options(
        memory.MemoryCell("protobuf", 300_000, json_library="jackson", runtime="jvm",
                          heap="limit"), "docker",
    ).as_dict()  # fmt: skip
    made = {"MaxHeapSize": {"value": "419430400", "origin": "ERGONOMIC"}}
    report = {"runtime": "jvm", "flags": list(jvm_flags()), "max_heap_bytes": 405471232,
              "vm_options": made}  # fmt: skip
    manifest = {"parameters": {"options": options},
                "healthz": {"data": {"runtime": report}}}  # fmt: skip
    got = heap_policy(manifest)
    assert got is not None and got["heap"] == "limit" and got["limit_mb"] == LIMIT_MB
    assert got["flags"] == got["jvm_flags"] == list(jvm_flags())
    assert got["max_heap_bytes"] == 405471232
    python = {"parameters": {"options": {"extra_env": dict(knobs(False, False))}}}
    assert heap_policy(python) is None


def test_a_jvm_run_with_other_flags_is_measured_again(tmp_path: Path) -> None:
    """A JVM memory run recorded with other flags (before the heap policy was chosen and the
    GC log read) does not stand in for one: the plan measures it again."""
    from ipclab import runstore
    from ipclab.studies.buono.stacks import BY_RUNTIME

    cell = memory.MemoryCell("json", 100_000, json_library="jackson", runtime="jvm")
    path = tmp_path / f"{cell.key}-r1"
    path.mkdir()
    old = memory.cell_options(cell, "docker")
    old.extra_env["IPCLAB_JVM_OPTIONS"] = "-XX:+ExitOnOutOfMemoryError"  # the old runs'
    spec = BY_RUNTIME["jvm"]

    def made(options: dict[str, object]) -> None:  # as memory.run_cell records a run
        parameters = {"cell": cell.parameters(), "repetition": 1, "limit_mb": LIMIT_MB,
                      "options": options}  # fmt: skip
        manifest = {
            "status": "complete", "kind": "memory", "backend": "docker", "stack": spec.name,
            "stack_spec": spec.declaration(), "parameters": parameters,
            **runstore.keyed("memory", parameters, writer=memory.__name__, stack=spec.name,
                             stack_spec=spec.declaration(), backend="docker"),
        }  # fmt: skip
        (path / "manifest.json").write_text(json.dumps(manifest))

    made(old.as_dict())
    (path / "summary.json").write_text("{}")
    assert memory.pending(memory.Plan(counts=(100_000,), formats=("json",), runtimes=("jvm",),
                                      jvm_heaps=("default",)), tmp_path) == [(1, cell)]  # fmt: skip
    made(memory.cell_options(cell, "docker").as_dict())
    plan = memory.Plan(counts=(100_000,), formats=("json",), runtimes=("jvm",),
                       jvm_heaps=("default",))  # fmt: skip
    assert memory.pending(plan, tmp_path) == []


def test_the_memory_claims_have_runs_enough_to_come_out_either_way() -> None:
    """Each judged memory cell has at least 5 runs, and as many as a perfectly separated
    pair of samples needs to pass Holm's strictest level over the memory family with the
    exact permutation test (docs/statistics.md section 3), on both runtimes."""
    plan = memory.PLANS["full"]
    family = len(analysis.families()["memory"])
    judged = [c for _, c in plan.cells() if not c.traced
              and c.heap == analysis.JUDGED_HEAP[c.runtime]]  # fmt: skip
    per_cell = pd.Series([c.key for c in judged]).value_counts()
    runtimes = {c.runtime for c in judged}
    assert runtimes == {"python", "jvm"} and {c.heap for c in judged} == {"default", "limit"}
    n = int(per_cell.min())
    assert n >= 5 and per_cell.max() == n
    assert 2 / math.comb(2 * n, n) < 0.05 / family  # n = 7 here: 0.00058 < 0.05 / 7
    assert 2 / math.comb(10, 5) > 0.05 / family  # 5 would not do over this family
    # the JVM's cells run under both policies, as many times each; the claims read the thesis's
    jvm = pd.Series([c.heap for _, c in plan.cells() if c.runtime == "jvm"]).value_counts()
    assert jvm.to_dict() == {"limit": 4 * n, "default": 4 * n}
    table = pd.DataFrame([{"runtime": "jvm", "heap": h, "json_library": "jackson", "fmt": "json",
                           "traced": False, "style": "s", "users": 1} for h in HEAPS])  # fmt: skip
    picked = analysis.runs_table(pd.DataFrame(), table, "jackson")
    assert list(picked["heap"]) == [THESIS_HEAP]


def test_the_procedure_runs_of_the_jvm_get_their_heap_csv(tmp_path: Path) -> None:
    """A JVM procedure run (a group run: logs/<stack>/<role>.log) gets its heap.csv once."""
    from ipclab.runs import read_run

    run = tmp_path / "payload-http-jvm-u1-gzip-off-cache-off-jackson-r1"
    logs = run / "logs" / "payload-http-jvm"
    logs.mkdir(parents=True)
    (logs / "data.log").write_text(LOG)
    (run / "manifest.json").write_text(json.dumps({"status": "complete",
                                                   "stack": "payload-http-jvm"}))  # fmt: skip
    python = tmp_path / "payload-http-u1-gzip-off-cache-off-orjson-r1"
    (python / "logs" / "payload-http").mkdir(parents=True)
    (python / "manifest.json").write_text(json.dumps({"status": "complete",
                                                      "stack": "payload-http"}))  # fmt: skip
    runs = [read_run(run), read_run(python)]
    assert experiment.record_heaps(runs) == 1
    assert len(heap.read(run)) == 3 and not (python / heap.HEAP_CSV).exists()
    assert experiment.record_heaps(runs) == 0  # made once


def test_remeasuring_names_the_jvms_runs_and_their_machine_time(tmp_path: Path) -> None:
    from ipclab.studies.buono import remeasure

    e = experiment.experiments("full", "docker", tmp_path)
    runs = remeasure.todo(e)  # nothing on disk: every JVM run of the full profile
    assert len(runs["procedure"]) == 4 * procedure.REPETITIONS_FULL == 28
    assert len(runs["memory"]) == 2 * 2 * len(HEAPS) * memory.PLANS["full"].repetitions == 56
    assert all("jackson" in n for n in runs["memory"])
    assert sum("-heap-limit-" in n for n in runs["memory"]) == 28
    assert remeasure.minutes(runs) == pytest.approx((28 * 25 + 56 * 12) / 60)
    # in pods: each run's stack starts and stops on the cluster (issue 51)
    assert remeasure.minutes(runs, "kubernetes") == pytest.approx((28 * 35 + 56 * 22) / 60)
    assert remeasure.main(["--root", str(tmp_path), "--dry-run"]) == 0
    with pytest.raises(ValueError, match="no JVM cells"):
        remeasure.todo(experiment.experiments("quick", "docker", tmp_path))


def test_the_jvms_heap_is_drawn_beside_the_containers_memory(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    from ipclab.studies.buono import figures

    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "data.log").write_text(LOG)
    heap.record(tmp_path)
    t = np.arange(1795896749.0, 1795896766.0, 0.05)
    pd.DataFrame({"t": t, "rss_bytes": 300 * M, "usage_bytes": 310 * M}).to_csv(
        tmp_path / "memory.csv", index=False
    )
    row = {"path": str(tmp_path), "runtime": "jvm", "heap": THESIS_HEAP, "fmt": "json",
           "count": 300_000, "repetition": 1, "limit_mb": 400.0, "oom_killed": 1.0,
           "heap_committed_mb": 386.0}  # fmt: skip
    made = figures.jvm_heap(pd.DataFrame([row]))
    assert made is not None and "GC log" in made[1]
    plt.close(made[0])
    python = pd.DataFrame([{**row, "runtime": "python", "heap": "default"}])
    assert figures.jvm_heap(python) is None  # no heap to draw
