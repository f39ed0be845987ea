"""The payload stack in containers (issue 16): it answers both formats through the edge
service, and a memory cell under a memory limit either completes, with its memory sampled
from the container's cgroup, or is OOM-killed, which is recorded as the cell's outcome
(exit 137, ``OOMKilled``) and not as a failure of the run. The same on the JVM (issue 31),
whose full heap ends it before the container's limit does under its own default heap; under
the thesis's heap policy (issue 46) the run records the policy, the JVM's own report of its
flags and the heap its GC log gives."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from ipclab.backends import StackOptions
from ipclab.backends.docker.backend import DockerBackend
from ipclab.runs import read_run
from ipclab.studies.buono import memory
from ipclab.studies.buono.stacks import PAYLOAD, data_service


def test_the_payload_stack_answers_both_formats_in_containers(
    docker_images: dict[str, str],
) -> None:
    stack = DockerBackend().start(PAYLOAD, StackOptions(memory_mb=400))
    try:
        sizes = {}
        for fmt in ("json", "protobuf"):
            with urllib.request.urlopen(f"{stack.gateway_url}/{fmt}/nested?count=650") as r:
                assert r.status == 200 and r.headers["x-elements"] == "650"
                sizes[fmt] = len(r.read())
        assert sizes["protobuf"] < sizes["json"]
        limit = stack.container("data").attrs["HostConfig"]["Memory"]
        assert limit == 400 * 2**20
    finally:
        stack.stop()


def test_a_memory_cell_completes_or_is_recorded_as_oom_killed(
    docker_images: dict[str, str], tmp_path: Path
) -> None:
    small = memory.run_cell(memory.MemoryCell("protobuf", 20_000), tmp_path / "small")
    s = read_run(small).summary
    assert read_run(small).complete and s["completed"] and s["limit_mb"] == memory.LIMIT_MB
    assert s["data_oom_killed"] is False and s["data_running"] is True
    assert s["samples"] >= 20 and s["peak_usage_bytes"] > 10 * 2**20
    assert s["cgroup_peak_bytes"] >= s["peak_usage_bytes"] * 0.9
    # the manifest names the image and the data service's own protobuf backend (its /healthz)
    manifest = read_run(small).manifest
    image = manifest["stack_info"]["images"]["services"]
    assert image["id"].startswith("sha256:")
    # and which Debian packages made it (docs/docker.md, supply chain)
    assert any(p.startswith("iptables=") for p in image["apt_packages"]), image
    described = data_service(manifest)
    assert described is not None and described["implementation"] in ("upb", "python", "cpp")
    # a limit far below what JSON at 300,000 users needs: the kernel kills the data service
    killed = memory.run_cell(memory.MemoryCell("json", 300_000), tmp_path / "killed", limit_mb=120)
    run = read_run(killed)
    k = run.summary
    assert run.complete, run.manifest  # the kill is the cell's outcome, not a failed run
    assert not k["completed"] and k["data_oom_killed"] is True and k["data_exit_code"] == 137
    assert k["http_status"] in (502, 503, 504, 0)
    assert k["peak_usage_bytes"] <= 120 * 2**20 and k["peak_usage_bytes"] > 60 * 2**20


def test_the_jvm_payload_stack_serves_the_python_bytes_in_containers_under_its_default_heap(
    docker_images: dict[str, str],
) -> None:
    """The Java services (issue 31) in containers: the same bytes as the Python services,
    and a heap the JVM sized itself from the container's 400 MB (the thesis's)."""
    from ipclab_services.domains.payload import codec, data

    from ipclab import javabuild
    from ipclab.studies.buono.stacks import PAYLOAD_JVM, knobs

    if why := javabuild.toolchain_missing():
        pytest.skip(f"the JVM payload services not tested: {why}")
    env = dict(knobs(gzip=False, cache=False, json_library="jackson", heap="default"))
    # the first answer builds its records on a cold JVM: seconds on a loaded machine
    options = StackOptions(memory_mb=400, extra_env=env, call_timeout_s=30.0)
    stack = DockerBackend().start(PAYLOAD_JVM, options)
    try:
        ds = data.dataset("nested", 650, 42)
        want = {
            "json": codec.encode_json(ds.document),
            "protobuf": codec.encode_protobuf(ds.message),
        }
        for fmt, expected in want.items():
            with urllib.request.urlopen(f"{stack.gateway_url}/{fmt}/nested?count=650") as r:
                assert r.status == 200 and r.read() == expected, fmt
        with urllib.request.urlopen(f"{stack.gateway_url}/healthz") as r:
            runtime = json.loads(r.read())["data"]["runtime"]
        # a quarter of 400 MiB is 100 MiB, below HotSpot's small-machine floor (96 MB scaled
        # for 64 bits): 126 MiB, about 122 MiB of it usable under the Serial collector
        assert 100 * 2**20 < runtime["max_heap_bytes"] <= 126 * 2**20, runtime
        assert "-XX:+ExitOnOutOfMemoryError" in runtime["flags"]
        assert runtime["heap_policy"] == "default" and runtime["memory_bytes"] == 400 * 2**20
        assert runtime["vm_options"]["MaxHeapSize"]["origin"] == "ERGONOMIC"
    finally:
        stack.stop()


def test_a_jvm_memory_cell_tells_a_full_heap_from_the_kernels_kill(
    docker_images: dict[str, str], tmp_path: Path
) -> None:
    from ipclab import javabuild

    if why := javabuild.toolchain_missing():
        pytest.skip(f"the JVM payload services not tested: {why}")
    # (a JVM cell that completes is told from these two by the thesis-heap test below)
    # the thesis's 400 MB: the default heap (126 MiB) is too small for 300,000 users as JSON,
    # and the JVM ends itself (exit code 3) before the kernel has to
    cell = memory.MemoryCell("json", 300_000, json_library="jackson", runtime="jvm")
    full = read_run(memory.run_cell(cell, tmp_path / "full", limit_mb=400))
    k = full.summary
    assert full.complete and not k["completed"], k
    assert k["heap_exhausted"] and k["out_of_memory"] and not k["data_oom_killed"], k
    assert k["data_exit_code"] == 3, k
    # a 120 MB container: the default heap's floor (about 125 MB) is above the limit, so the
    # kernel kills the container before the heap is full
    killed = read_run(memory.run_cell(cell, tmp_path / "killed", limit_mb=120)).summary
    assert not killed["completed"] and killed["out_of_memory"], killed
    assert killed["data_oom_killed"] and not killed["heap_exhausted"], killed
    assert killed["data_exit_code"] == 137, killed


def test_a_jvm_memory_cell_records_the_thesis_heap_and_reads_it(
    docker_images: dict[str, str], tmp_path: Path
) -> None:
    """Under the thesis's heap policy (issue 46) the run's manifest holds the policy and the
    flags it asked for and the JVM's own report of them; the JVM sees the container's limit
    and sizes its heap's maximum at it; its GC log is parsed into heap.csv and the summary."""
    from ipclab import javabuild
    from ipclab.studies.buono import heap
    from ipclab.studies.buono.stacks import THESIS_HEAP, heap_policy, jvm_flags

    if why := javabuild.toolchain_missing():
        pytest.skip(f"the JVM payload services not tested: {why}")
    cell = memory.MemoryCell("protobuf", 20_000, json_library="jackson", runtime="jvm",
                             heap=THESIS_HEAP)  # fmt: skip
    run = read_run(memory.run_cell(cell, tmp_path / "thesis"))
    s, policy = run.summary, heap_policy(run.manifest)
    # a JVM cell that completes is neither a full heap nor a kill (the test above: both)
    assert s["completed"] and s["limit_mb"] == memory.LIMIT_MB, s
    assert not s["out_of_memory"] and not s["heap_exhausted"] and not s["data_oom_killed"], s
    assert run.manifest["runtimes"]["data"]["runtime"] == "jvm"
    assert policy is not None and policy["heap"] == THESIS_HEAP
    assert policy["flags"] == policy["jvm_flags"] == list(jvm_flags(THESIS_HEAP))
    assert policy["vm_options"]["MaxHeapSize"]["value"] == str(400 * 2**20)
    assert run.manifest["runtimes"]["data"]["memory_bytes"] == 400 * 2**20  # the limit, seen
    data = s["heap"]["data"]
    assert data["collector"] == "Serial" and data["memory_bytes"] == 400 * 2**20
    assert data["heap_max_bytes"] == 400 * 2**20 and data["collections"] >= 1
    assert 0 < data["used_peak_bytes"] <= data["committed_peak_bytes"] <= 400 * 2**20
    rows = heap.read(run.path)
    assert set(rows["role"]) == {"data", "gateway"} and len(rows) >= data["collections"]
