"""Per-container resource samples from the Docker stats API, cheaply.

dockerd's stats collector publishes one reading per container per second, and any stats call
(even ``one_shot``) waits for the next publication, so a blocking call per sample would take
a second. Instead one thread per container follows dockerd's stats stream and keeps the latest
reading; ``sample()`` returns immediately. CPU % is computed from two consecutive readings of
the same container (docker's own formula; 100 = one core). A stream that ends (container
killed) is followed again when the container runs again.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from ipclab.runs import RESOURCE_COLUMNS

SAMPLE_COLUMNS = tuple(c for c in RESOURCE_COLUMNS if c not in ("t", "pid"))


STALE_S = 3.0


def _row(component: str, name: str, s: dict[str, Any], prev: dict[str, Any] | None) -> dict:
    row: dict[str, Any] = {"component": component, "kind": "container", "container": name}
    cpu = s.get("cpu_stats") or {}
    total = (cpu.get("cpu_usage") or {}).get("total_usage")
    if total is None or not s.get("pids_stats"):
        row["status"] = "not running"
        return row
    row["status"] = "running"
    ncpu = cpu.get("online_cpus") or len((cpu.get("cpu_usage") or {}).get("percpu_usage") or [])
    pcpu = (prev or {}).get("cpu_stats") or {}
    ptotal = (pcpu.get("cpu_usage") or {}).get("total_usage")
    system, psystem = cpu.get("system_cpu_usage"), pcpu.get("system_cpu_usage")
    if ptotal is not None and system and psystem and system > psystem:
        row["cpu_percent"] = round((total - ptotal) / (system - psystem) * (ncpu or 1) * 100, 2)
    mem = s.get("memory_stats") or {}
    stats = mem.get("stats") or {}
    row["mem_usage_bytes"] = mem.get("usage")
    row["mem_limit_bytes"] = mem.get("limit")
    # Resident anonymous memory, closest to a process's RSS (cgroup v1: rss, v2: anon).
    row["rss_bytes"] = stats.get("rss", stats.get("anon"))
    nets = s.get("networks") or {}
    for key in ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets"):
        row[f"net_{key}"] = sum(int(n.get(key, 0)) for n in nets.values()) if nets else None
    return row


class _Follower(threading.Thread):
    def __init__(self, api: Any, component: str, cid: str, name: str):
        super().__init__(daemon=True, name=f"ipclab-stats-{component}")
        self.api, self.component, self.cid, self.name = api, component, cid, name
        self.latest: dict[str, Any] | None = None
        self.at = 0.0
        self.halt = threading.Event()

    def run(self) -> None:
        prev: dict[str, Any] | None = None
        try:
            for s in self.api.stats(self.cid, stream=True, decode=True):
                if self.halt.is_set():
                    return
                self.latest = _row(self.component, self.name, s, prev)
                self.at = time.monotonic()
                prev = s
        except Exception:  # noqa: BLE001 - the container went away; sample() reports it
            return


class StatsSampler:
    def __init__(self, api: Any):
        self.api = api
        self._followers: dict[str, _Follower] = {}

    def close(self) -> None:
        for f in self._followers.values():
            f.halt.set()
        self._followers.clear()

    def sample(self, containers: dict[str, tuple[str, str]]) -> list[dict[str, Any]]:
        """``containers``: component -> (container id, container name). Never blocks."""
        rows = []
        now = time.monotonic()
        for comp, (cid, name) in containers.items():
            f = self._followers.get(comp)
            if f is None or f.cid != cid or (not f.is_alive() and now - f.at > 1.0):
                if f is not None:
                    f.halt.set()
                f = self._followers[comp] = _Follower(self.api, comp, cid, name)
                f.start()
            if f.latest is not None and now - f.at <= STALE_S:
                rows.append(dict(f.latest))
            else:
                status = "starting" if f.latest is None and f.is_alive() else "not running"
                rows.append(
                    {"component": comp, "kind": "container", "container": name, "status": status}
                )
        return rows
