"""A component's memory, read fast enough to sample at 20 Hz or more, and how it ended.

``reader(stack, role)`` returns a function giving the component's memory now:
``rss_bytes`` (resident memory of its processes: psutil on the local backend; the cgroup's
resident anonymous memory in a container, ``rss`` on cgroup v1, ``anon`` on v2) and, in a
container, ``usage_bytes`` (what the memory limit counts: the cgroup's usage, page cache
included). A container's files are read directly from its cgroup, not through the Docker
stats API, which publishes once a second.

``outcome(stack, role)`` says how the component is: running, or exited with its code and,
in a container, whether the kernel's OOM killer ended it (``OOMKilled``).

On the kubernetes backend the three are its pods' (``backends.kubernetes.podmemory``: the
container's cgroup read by the backend's own sampler, the kubelet's record of its end),
imported only there, so a docker run's code holds none of the Kubernetes backend's and a
Kubernetes run's none of the docker backend's container reading.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

CGROUP = Path("/sys/fs/cgroup")
Reading = dict[str, int | None]


def _stat(path: Path, keys: tuple[str, ...]) -> int | None:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    values = dict(line.split() for line in lines if line.count(" ") == 1)
    found = [int(values[k]) for k in keys if k in values]
    return sum(found) if found else None


def _int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def container_cgroup(container_id: str, root: Path = CGROUP) -> Path:
    """The memory cgroup directory of a container (cgroup v1 or v2, cgroupfs or systemd
    driver); a clear error when none is found."""
    candidates = [
        root / "memory" / "docker" / container_id,
        root / "memory" / "system.slice" / f"docker-{container_id}.scope",
        root / "docker" / container_id,
        root / "system.slice" / f"docker-{container_id}.scope",
    ]
    for c in candidates:
        if c.is_dir():
            return c
    found = sorted(root.glob(f"**/*{container_id}*"))
    dirs = [p for p in found if p.is_dir() and ((p / "memory.stat").exists())]
    if dirs:
        return dirs[0]
    raise FileNotFoundError(f"no memory cgroup for container {container_id[:12]} under {root}")


def cgroup_reader(directory: Path) -> Callable[[], Reading]:
    v1 = (directory / "memory.usage_in_bytes").exists()
    usage = directory / ("memory.usage_in_bytes" if v1 else "memory.current")
    resident = ("rss", "rss_huge") if v1 else ("anon",)

    def read() -> Reading:
        return {"rss_bytes": _stat(directory / "memory.stat", resident), "usage_bytes": _int(usage)}

    return read


def cgroup_peak(directory: Path) -> int | None:
    """The cgroup's own high-water mark of usage (v1 ``max_usage_in_bytes``, v2
    ``memory.peak`` where the kernel has it)."""
    for name in ("memory.max_usage_in_bytes", "memory.peak"):
        value = _int(directory / name)
        if value is not None:
            return value
    return None


def process_reader(pid: int) -> Callable[[], Reading]:
    cache: dict[int, psutil.Process] = {}

    def read() -> Reading:
        try:
            root = cache.setdefault(pid, psutil.Process(pid))
            members = [root, *root.children(recursive=True)]
            return {"rss_bytes": sum(p.memory_info().rss for p in members), "usage_bytes": None}
        except psutil.Error:
            return {"rss_bytes": None, "usage_bytes": None}

    return read


def reader(stack: Any, role: str) -> Callable[[], Reading]:
    """How to read ``role``'s memory in ``stack`` (a local, docker or kubernetes stack)."""
    if stack.backend == "local":
        return process_reader(stack.procs[role].pid)
    if stack.backend == "kubernetes":
        from ipclab.backends.kubernetes import podmemory

        return podmemory.reader(stack, role)
    return cgroup_reader(container_cgroup(stack.container(role).id))


def peak(stack: Any, role: str) -> int | None:
    """The cgroup's high-water mark of ``role``'s container (None on the local backend)."""
    if stack.backend == "local":
        return None
    if stack.backend == "kubernetes":
        from ipclab.backends.kubernetes import podmemory

        folder = podmemory.running_cgroup(stack, role)
        return cgroup_peak(folder) if folder is not None else None
    try:
        return cgroup_peak(container_cgroup(stack.container(role).id))
    except FileNotFoundError:  # the container is gone
        return None


def outcome(stack: Any, role: str) -> dict[str, Any]:
    """``{"running": bool, "exit_code": int | None, "oom_killed": bool | None}`` (on
    Kubernetes also ``restarts``: the kubelet restarts an ended container)."""
    if stack.backend == "local":
        code = stack.procs[role].poll()
        return {"running": code is None, "exit_code": code, "oom_killed": None}
    if stack.backend == "kubernetes":
        from ipclab.backends.kubernetes import podmemory

        return podmemory.outcome(stack, role)
    ctr = stack.container(role)
    ctr.reload()
    state = ctr.attrs.get("State", {})
    return {
        "running": bool(state.get("Running")),
        "exit_code": None if state.get("Running") else state.get("ExitCode"),
        "oom_killed": bool(state.get("OOMKilled")),
    }
