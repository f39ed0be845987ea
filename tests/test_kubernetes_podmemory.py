"""Buono's memory runs on the kubernetes backend (issue 51, must-show 4), without a cluster:
the data service's memory read from its pod's cgroup by the backend's own sampler (cgroup
v1 and v2 trees made on disk), its end read from the kubelet's record (an OOM kill, exit
code 137, in the container's state or, once the Deployment restarted it, its last state),
the 400 MB limit and the JVM's heap policy as on docker, and the run key kept to its own
backend (tests/kubernetes/test_buono_kubernetes.py runs a cell on a cluster)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ipclab import runcode
from ipclab.backends import memory as backend_memory
from ipclab.backends.kubernetes import manifests, podmemory
from ipclab.backends.kubernetes.sampling import CgroupSampler
from ipclab.studies.buono import heap, memory
from ipclab.studies.buono.stacks import BY_RUNTIME, LIMIT_MB

CID = "c0ffee" * 10 + "abcd"
NEW_CID = "beef" * 16
MiB = 2**20


def _v1(root: Path, cid: str, usage: int, rss: int, peak: int, procs: str = "7\n") -> Path:
    """A container's memory cgroup as the kubelet's cgroupfs driver makes it on cgroup v1."""
    folder = root / "memory" / "kubepods" / "burstable" / "pod1234" / cid
    folder.mkdir(parents=True)
    (folder / "memory.usage_in_bytes").write_text(f"{usage}\n")
    (folder / "memory.max_usage_in_bytes").write_text(f"{peak}\n")
    (folder / "memory.limit_in_bytes").write_text(f"{LIMIT_MB * MiB}\n")
    (folder / "memory.stat").write_text(f"cache 4096\nrss {rss}\nrss_huge 0\n")
    (folder / "cgroup.procs").write_text(procs)
    return folder


def _v2(root: Path, cid: str, usage: int, anon: int, peak: int) -> Path:
    """The same on cgroup v2 with the systemd driver (one folder for every controller)."""
    folder = root / "kubepods.slice" / "kubepods-burstable.slice" / f"cri-containerd-{cid}.scope"
    folder.mkdir(parents=True)
    (folder / "memory.current").write_text(f"{usage}\n")
    (folder / "memory.peak").write_text(f"{peak}\n")
    (folder / "memory.max").write_text(f"{LIMIT_MB * MiB}\n")
    (folder / "memory.stat").write_text(f"anon {anon}\nfile 4096\n")
    (folder / "cgroup.procs").write_text("7\n")
    return folder


def _status(
    cid: str = CID,
    *,
    running: bool = True,
    restarts: int = 0,
    ended: tuple[str, int] | None = None,
    last: tuple[str, int] | None = None,
) -> Any:
    """A ``V1ContainerStatus`` as the API client gives it (the fields read)."""

    def terminated(end: tuple[str, int] | None) -> Any:
        return None if end is None else SimpleNamespace(reason=end[0], exit_code=end[1])

    state = SimpleNamespace(
        running=SimpleNamespace(started_at=None) if running else None,
        terminated=terminated(ended),
        waiting=None,
    )
    return SimpleNamespace(
        name="data", container_id=f"containerd://{cid}", state=state,
        last_state=SimpleNamespace(terminated=terminated(last)), restart_count=restarts,
    )  # fmt: skip


class FakePodStack:
    """A Kubernetes stack's two memory hooks over a cgroup tree on disk; the kubelet's
    records of the role's container given in turn (the last one kept)."""

    backend = "kubernetes"

    def __init__(self, root: Path, *statuses: Any) -> None:
        self.sampler = CgroupSampler(root)
        self.statuses = list(statuses)
        self.asked = 0

    def container_status(self, role: str) -> Any:
        self.asked += 1
        return self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]

    def memory_cgroup(self, container_id: str) -> Path | None:
        return self.sampler.folders(container_id).get("memory")


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_the_data_services_memory_is_read_from_its_pods_cgroup(
    tmp_path: Path, version: str
) -> None:
    make = _v1 if version == "v1" else _v2
    folder = make(tmp_path, CID, 180 * MiB, 150 * MiB, 390 * MiB)
    stack = FakePodStack(tmp_path, _status())
    read = backend_memory.reader(stack, "data")
    assert read() == {"rss_bytes": 150 * MiB, "usage_bytes": 180 * MiB}
    # the reader stays on its container: a later one (restarted) is not what it reads
    stack.statuses = [_status(NEW_CID)]
    (folder / "memory.stat").write_text("rss 160\nanon 160\n")
    assert read()["rss_bytes"] == 160
    assert backend_memory.peak(FakePodStack(tmp_path, _status()), "data") == 390 * MiB


def test_a_killed_containers_samples_are_empty_and_its_peak_unknown(tmp_path: Path) -> None:
    folder = _v1(tmp_path, CID, 400 * MiB, 380 * MiB, 400 * MiB)
    stack = FakePodStack(tmp_path, _status())
    read = backend_memory.reader(stack, "data")
    for f in folder.iterdir():
        f.unlink()
    folder.rmdir()  # the kernel killed it and its cgroup went
    assert read() == {"rss_bytes": None, "usage_bytes": None}
    restarted = _status(NEW_CID, restarts=1, last=("OOMKilled", 137))
    assert backend_memory.peak(FakePodStack(tmp_path, restarted), "data") is None


def test_no_cgroup_to_read_is_said(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="ipclab's own cluster"):
        podmemory.reader(FakePodStack(tmp_path, _status()), "data")
    with pytest.raises(FileNotFoundError, match="not running"):
        podmemory.reader(FakePodStack(tmp_path, _status(running=False)), "data")


def test_an_oom_kill_is_read_from_the_kubelets_record() -> None:
    killed = {"running": False, "exit_code": 137, "oom_killed": True}
    # ended, not yet restarted; restarted by the Deployment (its last state)
    assert podmemory.classify(_status(running=False, ended=("OOMKilled", 137))) == {
        **killed, "restarts": 0}  # fmt: skip
    assert podmemory.classify(_status(NEW_CID, restarts=1, last=("OOMKilled", 137))) == {
        **killed, "restarts": 1}  # fmt: skip
    # a JVM that ended itself on a full heap: exit 3, no OOM kill (the heap's doing)
    full = podmemory.classify(_status(NEW_CID, restarts=1, last=("Error", 3)))
    assert full == {"running": False, "exit_code": 3, "oom_killed": False, "restarts": 1}
    jvm = memory.MemoryCell("json", 300_000, json_library="jackson", runtime="jvm")
    assert memory.out_of_memory(jvm, full, {}) == {"heap_exhausted": True, "out_of_memory": True}
    assert memory.out_of_memory(jvm, killed, {}) == {
        "heap_exhausted": False, "out_of_memory": True}  # fmt: skip
    # a SIGKILL that was not the OOM killer's is not an OOM kill
    assert not podmemory.classify(_status(running=False, ended=("Error", 137)))["oom_killed"]
    # a last state from before the run is not this run's end while nothing restarted
    ok = podmemory.classify(_status(last=("OOMKilled", 137)))
    assert ok == {"running": True, "exit_code": None, "oom_killed": False, "restarts": 0}
    assert podmemory.classify(None)["running"] is False


def test_the_outcome_waits_for_the_kubelet_to_record_an_end_its_cgroup_shows(
    tmp_path: Path,
) -> None:
    _v1(tmp_path, CID, 400 * MiB, 390 * MiB, 400 * MiB, procs="")  # no process left
    stale, ended = _status(), _status(NEW_CID, restarts=1, last=("OOMKilled", 137))
    stack = FakePodStack(tmp_path, stale, stale, ended)
    got = podmemory.outcome(stack, "data", settle_s=5.0, poll_s=0.01)
    assert got == {"running": False, "exit_code": 137, "oom_killed": True, "restarts": 1}
    assert stack.asked == 3
    # a container whose cgroup holds its process is running: read once, no wait
    alive = tmp_path / "alive"
    _v1(alive, CID, 100 * MiB, 90 * MiB, 120 * MiB)
    running = FakePodStack(alive, _status())
    assert backend_memory.outcome(running, "data") == {
        "running": True, "exit_code": None, "oom_killed": False, "restarts": 0}  # fmt: skip
    assert running.asked == 1


def test_the_400_mb_limit_and_the_heap_policy_are_the_pods_as_dockers() -> None:
    cell = memory.MemoryCell("json", 300_000, json_library="jackson", runtime="jvm", heap="limit")
    k8s, docker = (memory.cell_options(cell, b) for b in ("kubernetes", "docker"))
    assert k8s == docker and k8s.memory_mb == LIMIT_MB
    assert "-XX:MaxRAMPercentage=100" in k8s.extra_env["IPCLAB_JVM_OPTIONS"]
    assert f"-XX:MaxRAM={LIMIT_MB}m" in k8s.extra_env["IPCLAB_JVM_OPTIONS"]
    # the compose document's mem_limit (IPCLAB_MEM_LIMIT) as the pod's limit and request
    assert manifests._resources({"mem_limit": f"{LIMIT_MB}m"}) == {
        "limits": {"memory": "400Mi"}, "requests": {"memory": "400Mi"}}  # fmt: skip


def test_a_restarted_jvms_log_is_read_up_to_the_next_jvm() -> None:
    first = [
        "x [1000ms][10ms][gc] Using Serial",
        "x [1000ms][11ms][gc,init] Heap Max Capacity: 400M",
        "x [1500ms][500ms][gc] GC(0) Pause Full (Allocation Failure) 300M->290M(390M) 80.0ms",
    ]
    second = [
        "x [9000ms][9ms][gc] Using Serial",
        "x [9000ms][10ms][gc,init] Heap Max Capacity: 100M",
        "x [9300ms][300ms][gc] GC(0) Pause Young (Allocation Failure) 5M->1M(9M) 1.0ms",
    ]
    jvm, rows = heap.parse([*first, *second], "data")
    assert jvm["heap_max_bytes"] == 400 * MiB
    assert len(rows) == 1 and rows["pause"].iloc[0] == "Pause Full"
    assert rows["used_before_bytes"].iloc[0] == 300 * MiB


def _memory_files(backend: str) -> set[str]:
    spec = BY_RUNTIME["jvm"]
    return set(
        runcode.measuring_files(
            writers=[memory.__name__], stacks=[spec.name], stack_spec=spec.declaration(),
            backend=backend,
        )
    )  # fmt: skip


def test_a_memory_runs_code_is_its_own_backends() -> None:
    k8s, docker = _memory_files("kubernetes"), _memory_files("docker")
    reading = {"src/ipclab/backends/kubernetes/podmemory.py",
               "src/ipclab/backends/kubernetes/sampling.py"}  # fmt: skip
    assert reading <= k8s
    assert not any(f.startswith("src/ipclab/backends/kubernetes/") for f in docker)
    assert "src/ipclab/backends/docker/backend.py" in docker
    assert "src/ipclab/backends/docker/backend.py" not in k8s
    assert "src/ipclab/backends/memory.py" in k8s & docker
