"""Per-container resource samples from the Docker stats API, cheaply.

One ``one_shot`` stats call per container per sample (no 1-second wait for a second reading
inside dockerd); CPU % is computed here from consecutive readings of the same container.
Calls for the containers of a stack run in parallel on a small thread pool.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

SAMPLE_COLUMNS = (
    "component", "kind", "container", "status", "cpu_percent", "rss_bytes", "mem_usage_bytes",
    "mem_limit_bytes", "net_rx_bytes", "net_tx_bytes", "net_rx_packets", "net_tx_packets",
)


@dataclass
class _Prev:
    cpu_total_ns: int
    system_ns: int
    online_cpus: int
    wall: float


def _stats(api: Any, container_id: str) -> dict[str, Any]:
    try:
        return api.stats(container_id, stream=False, one_shot=True)
    except TypeError:  # docker-py < 5: no one_shot
        return api.stats(container_id, stream=False)


class StatsSampler:
    def __init__(self, api: Any, workers: int = 8):
        self.api = api
        self._prev: dict[str, _Prev] = {}
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ipclab-stats")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def sample(self, containers: dict[str, tuple[str, str]]) -> list[dict[str, Any]]:
        """``containers``: component -> (container id, container name)."""
        futures = {
            comp: self._pool.submit(self._one, comp, cid, name)
            for comp, (cid, name) in containers.items()
        }
        return [f.result() for f in futures.values()]

    def _one(self, component: str, cid: str, name: str) -> dict[str, Any]:
        row: dict[str, Any] = {"component": component, "kind": "container", "container": name}
        try:
            s = _stats(self.api, cid)
        except Exception as e:  # noqa: BLE001 - a gone container is a sample, not an error
            row["status"] = f"unavailable: {type(e).__name__}"
            return row
        now = time.monotonic()
        cpu = s.get("cpu_stats") or {}
        total = (cpu.get("cpu_usage") or {}).get("total_usage")
        system = cpu.get("system_cpu_usage")
        if total is None or not s.get("pids_stats"):
            row["status"] = "not running"
            self._prev.pop(cid, None)
            return row
        row["status"] = "running"
        ncpu = cpu.get("online_cpus") or len((cpu.get("cpu_usage") or {}).get("percpu_usage") or [])
        prev = self._prev.get(cid)
        if prev is not None and system is not None and system > prev.system_ns:
            # docker's own formula: share of all host CPU time x CPUs; 100 = one core.
            row["cpu_percent"] = round(
                (total - prev.cpu_total_ns) / (system - prev.system_ns) * (ncpu or 1) * 100, 2
            )
        elif prev is not None and now > prev.wall:
            busy_s = (total - prev.cpu_total_ns) / 1e9
            row["cpu_percent"] = round(busy_s / (now - prev.wall) * 100, 2)
        self._prev[cid] = _Prev(total, system or 0, ncpu or 1, now)
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
