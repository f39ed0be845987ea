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
import contextlib
import csv
import datetime
import time
from pathlib import Path

import psutil

from ipclab.kubecluster import state
from ipclab.kubecluster.layout import ROOT, Layout

CONTROL_PLANE = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")


def groups(root: Path) -> dict[str, list[psutil.Process]]:
    """Node (or "control plane") -> its processes, each component with its descendants."""
    st = state.read(Layout(root))
    if st is None or st.phase != "up":
        raise SystemExit(f"no cluster up in {root} (ipclab cluster up --nodes N)")
    out: dict[str, list[psutil.Process]] = {}
    for name, started in st.processes.items():
        proc = started.process()
        if proc is None:
            continue
        node, _, component = name.rpartition("/")
        group = "control plane" if component in CONTROL_PLANE else (node or "ipclab-node")
        out.setdefault(group, []).extend([proc, *proc.children(recursive=True)])
    return out


def cpu_seconds(procs: list[psutil.Process]) -> float:
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def rss_mib(procs: list[psutil.Process]) -> float:
    total = 0
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            total += p.memory_info().rss
    return total / 2**20


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--root", type=Path, default=ROOT)
    ap.add_argument("--csv", type=Path)
    args = ap.parse_args()
    by = groups(args.root)
    before = {g: cpu_seconds(ps) for g, ps in by.items()}
    load_before = psutil.getloadavg()[0]
    time.sleep(args.seconds)
    rows = [
        {
            "group": g,
            "processes": len(ps),
            "cpu_percent_of_one_core": round(100 * (cpu_seconds(ps) - before[g]) / args.seconds, 2),
            "rss_mib": round(rss_mib(ps), 1),
            "window_s": args.seconds,
            "load_average_1m": f"{load_before:.2f}-{psutil.getloadavg()[0]:.2f}",
            "measured_on": datetime.date.today().isoformat(),
        }
        for g, ps in sorted(by.items())
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
