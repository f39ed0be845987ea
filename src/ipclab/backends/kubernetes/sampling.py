"""Per-container resource samples of a stack's pods, from the containers' cgroups.

On ipclab's own cluster the pods run on this machine, so each container's CPU time and
memory are read where the kernel keeps them: its cgroup under ``kubepods`` (cgroup v1, the
kubelet's cgroupfs driver: ``cpuacct.usage`` and ``memory.stat``; cgroup v2:
``cpu.stat`` and ``memory.current``/``memory.stat``), found by the container's id. CPU % is
the CPU time between two samples over the wall time between them (100 = one core), as the
docker backend's samples are. A container restarted by the kubelet has a new id, found
again at the next sample (that one sample has no CPU %).

On another cluster the pods are elsewhere: the rows carry the status only (the metrics API,
when the cluster has one, averages over tens of seconds, too coarse for a run's samples).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

CGROUP_ROOT = Path("/sys/fs/cgroup")


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _stat(path: Path) -> dict[str, int]:
    out = {}
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if value.strip().isdigit():
                out[key] = int(value)
    except OSError:
        pass
    return out


def find_cgroups(container_id: str, root: Path = CGROUP_ROOT) -> dict[str, Path]:
    """The container's cgroup folders: ``cpu`` (the CPU accounting one) and ``memory``
    (cgroup v1: two hierarchies; v2: one folder for both); {} when none is found."""
    found: dict[str, Path] = {}
    for kind, hierarchies in (("cpu", ("cpuacct", "cpu,cpuacct", "")), ("memory", ("memory", ""))):
        for h in hierarchies:
            base = root / h if h else root
            tops = [*base.glob("kubepods*"), *base.glob("ipclab-node-*/kubepods*")]
            for top in sorted(tops):  # node 1's, then the extra nodes' (cgroupRoot)
                hits = [p for p in top.rglob(f"*{container_id}*") if p.is_dir()]
                if hits:
                    found[kind] = hits[0]
                    break
            if kind in found:
                break
    return found


def cpu_ns(folder: Path) -> int | None:
    """The CPU time the cgroup's processes used, in ns (v1 ``cpuacct.usage``, v2 usage_usec)."""
    v1 = _read_int(folder / "cpuacct.usage")
    if v1 is not None:
        return v1
    usec = _stat(folder / "cpu.stat").get("usage_usec")
    return usec * 1000 if usec is not None else None


def memory(folder: Path) -> dict[str, int | None]:
    """Usage, limit and resident anonymous memory (v1 ``rss``, v2 ``anon``), in bytes."""
    stat = _stat(folder / "memory.stat")
    usage = _read_int(folder / "memory.usage_in_bytes") or _read_int(folder / "memory.current")
    limit = _read_int(folder / "memory.limit_in_bytes") or _read_int(folder / "memory.max")
    return {"mem_usage_bytes": usage, "mem_limit_bytes": limit,
            "rss_bytes": stat.get("rss", stat.get("anon"))}  # fmt: skip


def pids(folder: Path) -> list[int]:
    """The processes in the cgroup (its ``cgroup.procs``)."""
    try:
        return [int(x) for x in (folder / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


class CgroupSampler:
    """Samples containers by id; remembers each one's previous CPU reading."""

    def __init__(self, root: Path = CGROUP_ROOT) -> None:
        self.root = root
        self._folders: dict[str, dict[str, Path]] = {}
        self._previous: dict[str, tuple[int, float]] = {}

    def folders(self, container_id: str) -> dict[str, Path]:
        if container_id not in self._folders or not self._folders[container_id]:
            self._folders[container_id] = find_cgroups(container_id, self.root)
        return self._folders[container_id]

    def sample(self, container_id: str) -> dict[str, Any]:
        """CPU % since the previous sample of this container, and its memory."""
        folders = self.folders(container_id)
        row: dict[str, Any] = {}
        if "cpu" in folders and (ns := cpu_ns(folders["cpu"])) is not None:
            now = time.monotonic()
            prev = self._previous.get(container_id)
            if prev is not None and now > prev[1] and ns >= prev[0]:
                row["cpu_percent"] = round((ns - prev[0]) / ((now - prev[1]) * 1e9) * 100, 2)
            self._previous[container_id] = (ns, now)
        if "memory" in folders:
            row.update(memory(folders["memory"]))
        return row
