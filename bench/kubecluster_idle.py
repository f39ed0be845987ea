"""The idle cost of each node of ipclab's local Kubernetes cluster (issue 51: "resource
cost per node measured (idle CPU and memory) and stated"), read from the processes the
cluster's state file names: per node its containerd (with its shims), kubelet and
kube-proxy; the control plane (etcd, API server, controller-manager, scheduler) apart. CPU
as % of one core over a window, memory as the resident set at its end; no stack running.

    ipclab cluster up --nodes 2
    python bench/kubecluster_idle.py [--seconds 60] [--csv data/measured/kubecluster_idle.csv]
"""

from __future__ import annotations

import argparse
import csv
import datetime
import time
from pathlib import Path

import psutil

from ipclab.backends.base import process_tree_usage
from ipclab.kubecluster import state
from ipclab.kubecluster.layout import ROOT, Layout

CONTROL_PLANE = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")


def groups(root: Path) -> dict[str, list[int]]:
    """Node (or "control plane") -> the pids of its components (each counted with its
    descendants by ``process_tree_usage``)."""
    st = state.read(Layout(root))
    if st is None or st.phase != "up":
        raise SystemExit(f"no cluster up in {root} (ipclab cluster up --nodes N)")
    out: dict[str, list[int]] = {}
    for name, started in st.processes.items():
        if started.process() is None:
            continue
        node, _, component = name.rpartition("/")
        group = "control plane" if component in CONTROL_PLANE else (node or "ipclab-node")
        out.setdefault(group, []).append(started.pid)
    return out


def usage(pids: list[int], cache: dict[int, psutil.Process]) -> tuple[float, float]:
    """(% of one core since the previous call, resident MiB) of the components' trees."""
    each = [process_tree_usage(pid, cache) for pid in pids]
    cpu = sum(u["cpu_percent"] or 0.0 for u in each)
    return cpu, sum(u["rss_bytes"] or 0 for u in each) / 2**20


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--root", type=Path, default=ROOT)
    ap.add_argument("--csv", type=Path)
    args = ap.parse_args()
    by = groups(args.root)
    cache: dict[int, psutil.Process] = {}
    for pids in by.values():  # the first call starts each process's CPU count
        usage(pids, cache)
    load_before = psutil.getloadavg()[0]
    time.sleep(args.seconds)
    measured = {g: usage(pids, cache) for g, pids in by.items()}
    rows = [
        {
            "group": g,
            "processes": len(pids),
            "cpu_percent_of_one_core": round(measured[g][0], 2),
            "rss_mib": round(measured[g][1], 1),
            "window_s": args.seconds,
            "load_average_1m": f"{load_before:.2f}-{psutil.getloadavg()[0]:.2f}",
            "measured_on": datetime.date.today().isoformat(),
        }
        for g, pids in sorted(by.items())
    ]
    for r in rows:
        cpu, rss = r["cpu_percent_of_one_core"], r["rss_mib"]
        group, n = r["group"], r["processes"]
        print(f"{group:<16} {n:>3} processes  {cpu:>6.2f}% of a core  {rss:>7.1f} MiB")
    if args.csv:
        args.csv.parent.mkdir(parents=True, exist_ok=True)
        with args.csv.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
