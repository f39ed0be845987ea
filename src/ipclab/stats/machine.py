"""The machine check: whether the repetitions of a cell ran on a comparable machine (CPU cost
per request, other processes' CPU, steal time), from the per-run table's machine state."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class MachineLimits:
    """When the repetitions of a cell did not run on a comparable machine."""

    max_cost_ratio: float = 1.25  # slowest / fastest stack CPU ms per request within a cell
    max_other_cpu_percent: float = 25.0  # mean busy CPU of other processes (100 = one core)
    max_steal_percent: float = 10.0  # mean CPU taken by the hypervisor


def machine_check(
    runs: pd.DataFrame,
    limits: MachineLimits = MachineLimits(),
    by: Sequence[str] = ("style", "users"),
) -> pd.DataFrame:
    """Per cell, how comparable the machine was across its repetitions.

    A run's stack CPU per request is what one request costs on the machine at that moment;
    repetitions of one cell on a slower or shared host cost more (a 2x difference was seen
    between two sessions' VMs), which moves throughput and latency without any change in
    the system under test. ``comparable`` is False when the cost spread (``cost_ratio``,
    slowest over fastest) or another process's CPU or the VM's steal time passes
    ``limits``; ``None`` when the runs carry no machine state (written before it was
    recorded)."""
    rows = []
    for key, sub in runs.groupby(list(by), dropna=False, sort=True):
        cost = pd.to_numeric(sub["stack_cpu_ms_per_request"], errors="coerce").dropna()
        other = pd.to_numeric(sub["other_cpu_percent"], errors="coerce").dropna()
        steal = pd.to_numeric(sub["steal_percent"], errors="coerce").dropna()
        ratio = float(cost.max() / cost.min()) if len(cost) and cost.min() > 0 else np.nan
        known = len(cost) == len(sub)
        reasons = []
        if known and ratio > limits.max_cost_ratio:
            reasons.append(f"CPU per request varies {ratio:.2f}x")
        if len(other) and other.max() > limits.max_other_cpu_percent:
            reasons.append(f"other processes used up to {other.max():.0f}% CPU")
        if len(steal) and steal.max() > limits.max_steal_percent:
            reasons.append(f"steal time up to {steal.max():.0f}%")
        rows.append(
            {
                **dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True)),
                "runs": len(sub),
                "cpu_ms_per_request_min": float(cost.min()) if len(cost) else np.nan,
                "cpu_ms_per_request_max": float(cost.max()) if len(cost) else np.nan,
                "cost_ratio": ratio,
                "other_cpu_percent_max": float(other.max()) if len(other) else np.nan,
                "steal_percent_max": float(steal.max()) if len(steal) else np.nan,
                "comparable": (not reasons) if known else None,
                "why": "; ".join(reasons),
            }
        )
    return pd.DataFrame(rows)


def quiet_run(machine: Mapping[str, Any] | None, limits: MachineLimits | None = None) -> bool:
    """The machine check of one run on its own, from the machine state its summary records
    (``other_cpu_percent``, ``steal_percent``: ``ipclab.summary.machine_load``): other
    processes' CPU and the VM's steal time within ``limits`` while it ran (unknown counts as
    within). A finished run that fails it is made again rather than reused."""
    limits = limits or MachineLimits()
    state = machine or {}
    other, steal = state.get("other_cpu_percent"), state.get("steal_percent")
    return (other is None or float(other) <= limits.max_other_cpu_percent) and (
        steal is None or float(steal) <= limits.max_steal_percent
    )


@dataclass(frozen=True)
class Sample:
    """The machine over a few seconds with nothing of ours running: busy CPU (100 = one
    core) and the hypervisor's steal, both as ``ipclab.summary.machine_load`` counts them."""

    busy_percent: float
    steal_percent: float


def sample_now(seconds: float = 2.0) -> Sample:
    """The host's busy CPU and steal over the next ``seconds`` (``psutil.cpu_times``)."""
    import time

    import psutil

    t0 = psutil.cpu_times()
    time.sleep(seconds)
    t1 = psutil.cpu_times()
    d = {k: getattr(t1, k) - getattr(t0, k) for k in t1._fields}
    total = sum(d.values()) or 1.0
    idle = d.get("idle", 0.0) + d.get("iowait", 0.0)
    cores = psutil.cpu_count() or 1
    busy = 100 * cores * (total - idle - d.get("steal", 0.0)) / total
    return Sample(round(busy, 1), round(100 * cores * d.get("steal", 0.0) / total, 1))


def quiet(sample: Sample, limits: MachineLimits | None = None) -> bool:
    """The machine check before a run: other processes' CPU and steal within ``limits``."""
    limits = limits or MachineLimits()
    return (
        sample.busy_percent <= limits.max_other_cpu_percent
        and sample.steal_percent <= limits.max_steal_percent
    )


def wait_until_quiet(
    say: Any = print,
    limits: MachineLimits | None = None,
    sampler: Any = sample_now,
    sleep: Any = None,
    poll_s: float = 15.0,
    max_wait_s: float = 900.0,
) -> bool:
    """Before a run: wait while the machine is busy (another process's CPU or the VM's steal
    above ``limits``), saying so; True once it is quiet, False after ``max_wait_s`` (the run
    is made then all the same, and its own machine check marks it: a run of a busy machine
    is not reused)."""
    import time

    sleep = sleep or time.sleep
    waited = 0.0
    while True:
        s = sampler()
        if quiet(s, limits):
            return True
        if waited >= max_wait_s:
            say(f"machine still busy after {waited:.0f} s ({s.busy_percent:.0f}% CPU, "
                f"{s.steal_percent:.0f}% steal): the run goes ahead, its check marks "
                "it")  # fmt: skip
            return False
        say(f"machine busy ({s.busy_percent:.0f}% CPU of other processes, "
            f"{s.steal_percent:.0f}% steal): waiting {poll_s:.0f} s before the next "
            "run")  # fmt: skip
        sleep(poll_s)
        waited += poll_s
