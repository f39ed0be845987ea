"""Per-container resource samples from the Docker stats API, cheaply.

dockerd's stats collector publishes one reading per container per second, and any stats call
(even ``one_shot``) waits for the next publication, so a blocking call per sample would take
a second. Instead one thread per container follows dockerd's stats stream and keeps the latest
reading; ``sample()`` returns immediately. CPU % is computed from two consecutive readings of
the same container (docker's own formula; 100 = one core). A stream that ends (container
killed) is followed again when the container runs again.

A container that runs the NFQUEUE delayer (``netem``: where the kernel has no netem, a
delay of 2 or 5 ms is a nice -20 Python process in each host container) is charged its CPU
by the kernel; netem would run in the kernel, charged to no container. The follower reads
the delayer's own CPU time at each of the container's readings, over the same interval,
and :func:`split_delayer` reports it as a row of its own and takes it off the container's.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from ipclab.backends.docker import netem
from ipclab.runs import RESOURCE_COLUMNS

SAMPLE_COLUMNS = tuple(c for c in RESOURCE_COLUMNS if c not in ("t", "pid"))


STALE_S = 3.0
DELAYER_KIND = "delayer"
DELAYER_SUFFIX = "-delayer"
# what a follower's reading carries about the container's delayer, for split_delayer
_DELAYER_KEYS = ("delayer_pid", "delayer_cpu_percent", "delayer_rss_bytes")


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
    # a counter that went backwards is a restarted container's (docker's stream goes on
    # across a restart): no reading for that second, the next one counts from the new one
    if ptotal is not None and total >= ptotal and system and psystem and system > psystem:
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


def delayer_cpu_percent(
    s: dict[str, Any], prev: dict[str, Any] | None, ns: int | None, prev_ns: int | None
) -> float | None:
    """The delayer's CPU % between two of the container's readings (``s`` and ``prev``),
    from its CPU time read at each (``ns``, ``prev_ns``), with docker's own denominator (the
    machine's CPU time between the readings), so it compares with the container's."""
    system = (s.get("cpu_stats") or {}).get("system_cpu_usage")
    psystem = ((prev or {}).get("cpu_stats") or {}).get("system_cpu_usage")
    if ns is None or prev_ns is None or not system or not psystem or system <= psystem:
        return None
    cpu = s.get("cpu_stats") or {}
    ncpu = cpu.get("online_cpus") or len((cpu.get("cpu_usage") or {}).get("percpu_usage") or [])
    return round(max(ns - prev_ns, 0) / (system - psystem) * (ncpu or 1) * 100, 2)


def split_delayer(row: dict[str, Any]) -> list[dict[str, Any]]:
    """A container's row, and its delayer's if it runs one: the delayer's row (component
    ``<component>-delayer``, kind ``delayer``, its host PID, CPU % and RSS) and the
    container's CPU without it (clamped at 0: the two are read a few ms apart), so the
    container's row is the system's own CPU. Not measured yet (a first reading): the
    container's CPU is unknown (None), not the two together. Memory is left as it is."""
    row = dict(row)
    pid, cpu, rss = (row.pop(k, None) for k in _DELAYER_KEYS)
    if pid is None:
        return [row]
    delayer = {
        "component": f"{row['component']}{DELAYER_SUFFIX}",
        "kind": DELAYER_KIND,
        "pid": pid,
        "container": row.get("container"),
        "status": row.get("status"),
        "cpu_percent": cpu,
        "rss_bytes": rss,
    }
    if "t" in row:
        delayer["t"] = row["t"]
    if cpu is None:
        row["cpu_percent"] = None
    elif row.get("cpu_percent") is not None:
        row["cpu_percent"] = round(max(float(row["cpu_percent"]) - cpu, 0.0), 2)
    return [row, delayer]


class _Follower(threading.Thread):
    def __init__(self, api: Any, component: str, cid: str, name: str):
        super().__init__(daemon=True, name=f"ipclab-stats-{component}")
        self.api, self.component, self.cid, self.name = api, component, cid, name
        self.latest: dict[str, Any] | None = None
        self.at = 0.0
        self.halt = threading.Event()
        self.delayer: int | None = None  # the host PID of the container's delayer, if any

    def run(self) -> None:
        prev: dict[str, Any] | None = None
        prev_delayer: tuple[int, int | None] | None = None  # (pid, CPU ns) at prev
        try:
            for s in self.api.stats(self.cid, stream=True, decode=True):
                if self.halt.is_set():
                    return
                row = _row(self.component, self.name, s, prev)
                pid = self.delayer
                if pid is not None and row["status"] == "running":
                    ns = netem.cpu_ns(pid)
                    last = prev_delayer[1] if prev_delayer and prev_delayer[0] == pid else None
                    row["delayer_pid"] = pid
                    row["delayer_cpu_percent"] = delayer_cpu_percent(s, prev, ns, last)
                    row["delayer_rss_bytes"] = netem.rss_bytes(pid)
                    prev_delayer = (pid, ns)
                else:
                    prev_delayer = None
                self.latest = row
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

    def sample(
        self, containers: dict[str, tuple[str, str]], delayers: dict[str, int] | None = None
    ) -> list[dict[str, Any]]:
        """``containers``: component -> (container id, container name); ``delayers``:
        component -> the host PID of its container's delayer (rows then carry its CPU for
        :func:`split_delayer`). Never blocks."""
        rows = []
        now = time.monotonic()
        for comp, (cid, name) in containers.items():
            f = self._followers.get(comp)
            if f is None or f.cid != cid or (not f.is_alive() and now - f.at > 1.0):
                if f is not None:
                    f.halt.set()
                f = self._followers[comp] = _Follower(self.api, comp, cid, name)
                f.start()
            f.delayer = (delayers or {}).get(comp)
            if f.latest is not None and now - f.at <= STALE_S:
                row = dict(f.latest)
                if f.delayer is None:  # a reading made before the delay was removed
                    for key in _DELAYER_KEYS:
                        row.pop(key, None)
                rows.append(row)
            else:
                status = "starting" if f.latest is None and f.is_alive() else "not running"
                rows.append(
                    {"component": comp, "kind": "container", "container": name, "status": status}
                )
        return rows
