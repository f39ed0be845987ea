"""summary.json: the headline numbers of one run, computed from its raw files only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ipclab.runs import read_run

SATURATION_CPU_PERCENT = 90.0  # Locust runs on one core: above this it is the bottleneck
# resources.csv kinds that are not the system under test: the load generator, the docker
# backend's network-delay emulation, and the whole machine; the first two run for the run
OURS_TOO = ("loadgen", "delayer")
NOT_THE_STACK = (*OURS_TOO, "host")


def latency_stats(ms: pd.Series) -> dict[str, float | None]:
    if ms.empty:
        return dict.fromkeys(("mean", "p50", "p95", "p99", "max"))
    v = ms.to_numpy(dtype=float)
    p50, p95, p99 = np.percentile(v, [50, 95, 99])
    return {
        "mean": round(float(v.mean()), 3),
        "p50": round(float(p50), 3),
        "p95": round(float(p95), 3),
        "p99": round(float(p99), 3),
        "max": round(float(v.max()), 3),
    }


def machine_load(window: pd.DataFrame, rps: float) -> dict[str, Any]:
    """Per-component mean CPU, the stack's CPU per request, and what else the machine did.

    ``stack_cpu_ms_per_request`` (gateway, services and broker) measures how expensive one
    request is on this machine: runs of the same cell on different machines, or on one VM
    whose host got busier, differ here even when nothing else ran. The docker backend's
    NFQUEUE delayers (kind ``delayer``: the emulated network delay, which netem would do in
    the kernel) are not the stack's, but are ours. ``other_cpu_percent`` is the host's busy
    CPU not used by the stack, the delayers or the load generator; ``steal_percent`` is CPU
    the hypervisor gave to someone else. Runs before the host rows existed give None, and so
    does a window that holds no 1 Hz sample of the stack (a very short run): no value, not 0.
    """
    cpu = window.dropna(subset=["cpu_percent"]).groupby("component")["cpu_percent"].mean()
    kinds = window.drop_duplicates("component").set_index("component")["kind"]
    parts = [float(v) for k, v in cpu.items() if kinds.get(k) not in NOT_THE_STACK]
    stack = sum(parts) if parts else None
    per_request = round(10 * stack / rps, 3) if rps and stack is not None else None
    out: dict[str, Any] = {
        "cpu_percent_mean": {k: round(float(v), 1) for k, v in cpu.items() if k != "host"},
        "stack_cpu_ms_per_request": per_request,
        "host_cpu_percent": None,
        "other_cpu_percent": None,
        "steal_percent": None,
    }
    if "host" in cpu:
        host = window[window["component"] == "host"]
        out["host_cpu_percent"] = round(float(cpu["host"]), 1)
        if stack is not None:
            ours = stack + float(sum(v for k, v in cpu.items() if kinds.get(k) in OURS_TOO))
            out["other_cpu_percent"] = round(max(float(cpu["host"]) - ours, 0.0), 1)
        if "steal_percent" in host:
            out["steal_percent"] = round(float(host["steal_percent"].mean()), 1)
    return out


def summarize(run_dir: Path, warmup_s: float = 0.0) -> dict[str, Any]:
    """Requests, failures, rps and latency over the run minus its first ``warmup_s``."""
    run = read_run(run_dir)
    req = run.requests()
    out: dict[str, Any] = {"warmup_s": warmup_s}
    if req.empty:
        return {
            **out,
            "requests": 0,
            "failures": 0,
            "rps": 0.0,
            "duration_s": 0.0,
            "latency_ms": latency_stats(pd.Series(dtype=float)),
            "loadgen_cpu_percent": None,
            "loadgen_saturated": None,
        }
    t0 = float(req["t"].min())
    kept = req[req["t"] >= t0 + warmup_s]
    end = float((kept["t"] + kept["latency_ms"] / 1000).max())
    start = t0 + warmup_s
    duration = max(end - start, 1e-9)
    failures = int((~kept["ok"]).sum())
    out.update(
        requests=len(kept),
        failures=failures,
        error_rate=round(failures / max(len(kept), 1), 6),
        rps=round(len(kept) / duration, 3),
        duration_s=round(duration, 3),
        latency_ms=latency_stats(kept["latency_ms"]),
        latency_ms_ok=latency_stats(kept.loc[kept["ok"], "latency_ms"]),
        bytes_mean=round(float(kept["bytes"].mean()), 1),
    )
    res = run.resources()
    if not res.empty and "kind" in res:
        window = res[(res["t"] >= start) & (res["t"] <= end)]
        rows = window[window["kind"] == "loadgen"].dropna(subset=["cpu_percent"])
        gen = rows["cpu_percent"]
        if not gen.empty:
            out["loadgen_cpu_percent"] = {
                "mean": round(float(gen.mean()), 1),
                "p95": round(float(gen.quantile(0.95)), 1),
            }
            # per process (one, or the master and each worker): any one saturated counts
            by_process = rows.groupby("component")["cpu_percent"].mean()
            out["loadgen_saturated"] = bool(by_process.max() >= SATURATION_CPU_PERCENT)
            if len(by_process) > 1:
                out["loadgen_cpu_percent_by_process"] = {
                    str(k): round(float(v), 1) for k, v in by_process.items()
                }
        out.update(machine_load(window, out["rps"]))
    out.setdefault("loadgen_cpu_percent", None)
    out.setdefault("loadgen_saturated", None)
    return out
