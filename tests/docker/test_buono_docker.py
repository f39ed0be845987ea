"""The payload stack in containers (issue 16): it answers both formats through the edge
service, and a memory cell under a memory limit either completes, with its memory sampled
from the container's cgroup, or is OOM-killed, which is recorded as the cell's outcome
(exit 137, ``OOMKilled``) and not as a failure of the run."""

from __future__ import annotations

import urllib.request
from pathlib import Path

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
