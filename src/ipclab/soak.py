"""A soak under faults: one stack at a fraction of its peak for a long time, a fault every
few minutes, and the growth of every process's memory, descriptors and sockets.

The run is an ordinary load run (``ipclab.load.runner.run_on``: Locust, ``resources.csv``
with each component's RSS at 1 Hz, the faults as ``kill``/``restart`` events) plus one file
of its own, ``handles.csv``: every ``sample_s`` seconds, per component, the descriptors,
socket descriptors and threads of its process tree. Those are not in ``resources.csv``
because reading every descriptor of every process each second would add work to every
run of the suite; a leak is a trend over minutes, so the soak alone samples them, slower.

The analysis is two pure functions, tested without a stack (tests/test_soak.py):
:func:`growth` (a component's trend after warm-up, ignoring the re-warm-up of a restarted
process) and :func:`fault_outcomes` (the pages lost to each fault and its time to
recovery, from the load generator's own records). Method and bound: docs/soak.md.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import psutil

from ipclab import infrastructure
from ipclab.backends import RunningStack, StackOptions, get_backend
from ipclab.backends.described import describe_stack
from ipclab.load.runner import Fault, LoadProfile, run_on, run_parameters
from ipclab.runs import CsvAppender, RunWriter, read_run
from ipclab.stacks import StackSpec, resolve

#: resources.csv rows that are no component of the stack (the machine, Locust, a delayer)
NOT_COMPONENTS = ("host", "loadgen", "delayer")
HANDLE_COLUMNS = ("t", "component", "pid", "fds", "sockets", "threads")
#: the metrics of the table: name -> (file, column, scale to the unit shown)
METRICS: dict[str, tuple[str, str, float]] = {
    "rss_mib": ("resources.csv", "rss_bytes", 1 / 2**20),
    "fds": ("handles.csv", "fds", 1.0),
    "sockets": ("handles.csv", "sockets", 1.0),
}


@dataclass(frozen=True)
class SoakPlan:
    """Every knob of a soak; recorded in the run's parameters (a finished run is reused only
    when its plan is the same).

    The bound (docs/soak.md): the growth the fitted trend projects over the measured span
    (warm-up to end) must stay within ``max(rel_bound x value after warm-up, slack)``."""

    duration_s: float = 1800.0
    fault_period_s: float = 300.0  # a fault at every multiple of this before the end
    downtime_s: float = 5.0  # a killed service is started again this long after its kill
    components: tuple[str, ...] = ()  # () = every service, then the broker if any
    warmup_s: float = 180.0  # from the load's start: left out of every trend
    restart_warmup_s: float = 60.0  # from a component's restart: left out of its trend
    window_s: float = 60.0  # "after warm-up" and "at end" are medians over this long
    sample_s: float = 5.0  # handles.csv period
    rel_bound: float = 0.10
    slack: Mapping[str, float] = field(
        default_factory=lambda: {"rss_mib": 16.0, "fds": 8.0, "sockets": 8.0}
    )
    onset_s: float = 30.0  # a fault's failures must begin within this long of it
    settle_s: float = 5.0  # a failure burst ends after this long without a failure

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["components"] = list(self.components)
        d["slack"] = dict(self.slack)
        return d


# --------------------------------------------------------------------------- the faults
def fault_targets(spec: StackSpec, components: Sequence[str] = ()) -> list[str]:
    """What the faults hit, in turn: the given components, or every service and then the
    broker. The gateway is left alone by default: it is the process whose descriptors and
    connections show whether the stack cleans up after a fault, so it must live throughout."""
    extra = infrastructure.fault_components(spec.infrastructure)  # the broker
    if components:
        known = (*spec.roles, *extra)
        bad = [c for c in components if c not in known]
        if bad:
            raise ValueError(f"not components of {spec.name}: {', '.join(bad)}")
        return list(components)
    return [*spec.services, *extra]


def fault_plan(
    targets: Sequence[str], plan: SoakPlan, restarted: Collection[str] | None = None
) -> list[Fault]:
    """A fault at every ``fault_period_s`` (not in the last ``settle_s + onset_s``, whose
    outcome could not be seen), the targets in turn: a service is killed and started again
    ``downtime_s`` later; a component in ``restarted`` (by default, the infrastructure
    whose plugin says its restart is a fault: the broker) is restarted instead (stopped and
    started, its queues lost)."""
    faults: list[Fault] = []
    if plan.fault_period_s <= 0:
        return faults
    if restarted is None:  # the components whose fault is a restart (the broker's plugin)
        restarted = infrastructure.restarted_as_fault()
    n = 1
    while n * plan.fault_period_s < plan.duration_s - plan.onset_s - plan.settle_s:
        at, role = n * plan.fault_period_s, targets[(n - 1) % len(targets)]
        if role in restarted:
            faults.append(Fault(at, role, "restart"))
        else:
            faults += [Fault(at, role, "kill"), Fault(at + plan.downtime_s, role, "restart")]
        n += 1
    return faults


# --------------------------------------------------------------------------- handles
def tree_handles(pid: int) -> dict[str, int] | None:
    """Descriptors, socket descriptors and threads of a process and its children (None when
    it is gone). Sockets are counted from ``/proc/PID/fd``, which works in any network
    namespace (a container's too), where psutil's connection list reads only ours."""
    fds = sockets = threads = 0
    try:
        root = psutil.Process(pid)
        members = [root, *root.children(recursive=True)]
    except psutil.Error:
        return None
    for p in members:
        try:
            threads += p.num_threads()
            names = os.listdir(f"/proc/{p.pid}/fd")
        except (psutil.Error, OSError):
            continue
        fds += len(names)
        for name in names:
            with contextlib.suppress(OSError):
                sockets += os.readlink(f"/proc/{p.pid}/fd/{name}").startswith("socket:")
    return {"fds": fds, "sockets": sockets, "threads": threads}


def component_pids(stack: RunningStack) -> dict[str, int]:
    """Component -> the host pid of its main process: the local backend's own table, or a
    docker container's ``State.Pid`` (0 while it is down: left out)."""
    local = getattr(stack, "components", None)
    if callable(local):
        return {name: pid for name, (_, pid) in local().items()}
    out: dict[str, int] = {}
    for comp in getattr(stack, "components", ()):
        with contextlib.suppress(Exception):
            ctr = stack.container(comp)  # type: ignore[attr-defined]
            ctr.reload()
            pid = int(ctr.attrs.get("State", {}).get("Pid") or 0)
            if pid:
                out[comp] = pid
    return out


class HandleSampler(threading.Thread):
    """Every ``period_s``, one ``handles.csv`` row per live component (flushed)."""

    def __init__(self, stack: RunningStack, path: Path, period_s: float):
        super().__init__(daemon=True, name="soak-handles")
        self.stack, self.period_s = stack, period_s
        self.out = CsvAppender(path, HANDLE_COLUMNS)
        self.halt = threading.Event()

    def sample(self) -> None:
        now, rows = time.time(), []
        for comp, pid in component_pids(self.stack).items():
            h = tree_handles(pid)
            if h is not None:
                rows.append({"t": now, "component": comp, "pid": pid, **h})
        self.out.write(rows)

    def run(self) -> None:
        while True:
            with contextlib.suppress(Exception):  # a failed sample must not end the soak
                self.sample()
            if self.halt.wait(self.period_s):
                return

    def stop(self) -> None:
        self.halt.set()
        self.join(timeout=10)
        self.out.close()


# --------------------------------------------------------------------------- growth
@dataclass(frozen=True)
class Growth:
    """One component's metric: the median after warm-up and at the end, the trend (per 10
    minutes, fitted within each process lifetime), its projection over the measured span,
    the bound it is held to and the verdict (None: too few samples to judge)."""

    after_warmup: float
    at_end: float
    per_10min: float
    projected: float
    bound: float
    passed: bool | None
    samples: int


def growth(
    t: Sequence[float] | np.ndarray,
    v: Sequence[float] | np.ndarray,
    *,
    t_start: float,
    t_end: float,
    restarts: Sequence[float] = (),
    warmup_s: float,
    restart_warmup_s: float,
    window_s: float,
    rel_bound: float,
    slack: float,
) -> Growth:
    """The trend of ``v`` over time ``t`` from ``t_start + warmup_s`` to ``t_end``.

    ``restarts`` are the times the component was started again: each starts a new process
    lifetime, whose first ``restart_warmup_s`` are left out as the first warm-up is, and the
    slope is fitted within lifetimes only (least squares on each lifetime's deviations from
    its own mean), so a fresh process's lower memory is no "shrinkage" and a leak is seen
    whatever the restarts. The bound is on ``slope x (t_end - t_start - warmup_s)``, the
    growth the trend projects over the measured span: a trend uses every sample, where two
    end-point windows would judge by two moments (one perhaps a fault's transient)."""
    t, v = np.asarray(t, dtype=float), np.asarray(v, dtype=float)
    t0 = t_start + warmup_s
    keep = np.isfinite(v) & (t >= t0) & (t <= t_end)
    starts = np.sort(np.asarray(restarts, dtype=float))
    life = np.searchsorted(starts, t, side="right")  # 0: the first lifetime
    began = np.where(life > 0, starts[np.maximum(life - 1, 0)] if len(starts) else 0.0, -np.inf)
    keep &= (life == 0) | (t >= began + restart_warmup_s)
    first = keep & (life == 0) & (t <= t0 + window_s)
    last = keep & (t >= t_end - window_s)
    after = float(np.median(v[first])) if first.any() else math.nan
    end = float(np.median(v[last])) if last.any() else math.nan
    num = den = 0.0
    for k in np.unique(life[keep]):
        m = keep & (life == k)
        if m.sum() < 3:
            continue
        dt, dv = t[m] - t[m].mean(), v[m] - v[m].mean()
        num, den = num + float((dt * dv).sum()), den + float((dt * dt).sum())
    slope = num / den if den > 0 else math.nan
    projected = slope * (t_end - t0)
    base = after if math.isfinite(after) else end
    bound = max(rel_bound * base, slack) if math.isfinite(base) else slack
    passed = None if not math.isfinite(projected) else bool(projected <= bound)
    return Growth(after, end, slope * 600.0, projected, bound, passed, int(keep.sum()))


# --------------------------------------------------------------------------- faults
@dataclass(frozen=True)
class FaultOutcome:
    """One fault: when (s after the load's start), what, the pages lost to it (failed
    requests of the burst that began within ``onset_s`` of it), the other failures of its
    period, and the time from the fault to the first good page after the burst (None when
    none came before the next fault: ``unrecovered``; 0 when no page failed: ``masked``)."""

    at_s: float
    component: str
    action: str
    lost: int
    other_failures: int
    recovery_s: float | None
    status: str


def fault_outcomes(
    done: Sequence[float] | np.ndarray,
    ok: Sequence[bool] | np.ndarray,
    faults: Sequence[tuple[float, str, str]],
    *,
    t_end: float,
    onset_s: float,
    settle_s: float,
    t_load: float = 0.0,
) -> list[FaultOutcome]:
    """Attribute the load's failed pages to the faults ``(t, component, action)``.

    A page belongs to the period of the latest fault before its completion time ``done``
    (a request in flight at a kill fails after it). A fault's burst is its first failure,
    if that comes within ``onset_s``, and every failure that follows the previous one by
    less than ``settle_s``; the burst's failures are the pages lost to the fault, and the
    first good page after it is the recovery. Failures of the period outside the burst are
    counted apart (``other_failures``), not blamed on the fault."""
    done, ok = np.asarray(done, dtype=float), np.asarray(ok, dtype=bool)
    order = np.argsort(done, kind="stable")
    done, ok = done[order], ok[order]
    faults = sorted(faults)
    out = []
    for i, (tf, comp, action) in enumerate(faults):
        tn = faults[i + 1][0] if i + 1 < len(faults) else t_end
        in_period = (done >= tf) & (done < tn)
        fails = done[in_period & ~ok]
        at = round(tf - t_load, 3)
        if not len(fails) or fails[0] - tf > onset_s:
            out.append(FaultOutcome(at, comp, action, 0, len(fails), 0.0, "masked"))
            continue
        gaps = np.diff(fails)
        n = int(np.argmax(gaps >= settle_s)) + 1 if (gaps >= settle_s).any() else len(fails)
        burst_end = fails[n - 1]
        good = done[in_period & ok & (done > burst_end)]
        if len(good):
            rec, status = float(good[0] - tf), "recovered"
        else:
            rec, status = None, "unrecovered"
        out.append(FaultOutcome(at, comp, action, n, len(fails) - n, rec, status))
    return out


def fault_times(
    planned: Sequence[Mapping[str, Any]],
    events: Sequence[Mapping[str, Any]],
    t_load: float,
    restarted: Collection[str] | None = None,
) -> list[tuple[float, str, str]]:
    """The faults that were injected, ``(t, component, action)``, timed when each began:
    the load's start plus its planned ``at_s`` (the load runner acts within 50 ms of it).
    The runner's event is written once the action is done, and restarting a broker takes
    seconds (its pages fail from the start); a planned fault with no event was never
    injected (the run ended first). A service's restart after its kill is no fault; the
    restart of a component in ``restarted`` is (by default, the infrastructure whose plugin
    says so: ``Infrastructure.restart_is_fault``)."""
    if restarted is None:
        restarted = infrastructure.restarted_as_fault()
    out = []
    for f in planned:
        action, role, at = str(f["action"]), str(f["role"]), t_load + float(f["at_s"])
        if action != "kill" and role not in restarted:
            continue
        if any(e["event"] == action and e.get("role") == role and e["t"] >= at for e in events):
            out.append((at, role, action))
    return out


# --------------------------------------------------------------------------- the run
def run_soak(
    stack_name: str,
    out: Path,
    plan: SoakPlan,
    users: int,
    think_time_s: float,
    *,
    backend: str = "local",
    options: StackOptions | None = None,
    extra: Mapping[str, Any] | None = None,
    progress: Callable[[str], None] = print,
) -> Path:
    """Start the stack, soak it under ``plan`` with ``users`` closed-loop users thinking
    ``think_time_s`` each, stop it whatever happens; ``out`` is the new run directory.

    The steps of ``ipclab.load.runner.run`` (the backend's start, ``run_on`` for the load
    and the faults, the stop), taken here because the descriptor sampler needs the running
    stack; the run directory is the same, with ``handles.csv`` and kind ``soak``."""
    spec = resolve(stack_name)
    options = options or StackOptions()
    faults = fault_plan(fault_targets(spec, plan.components), plan)
    profile = LoadProfile(
        users=users,
        spawn_rate=float(users),
        duration_s=plan.duration_s,
        think_time_s=think_time_s,
        warmup_s=min(plan.warmup_s, plan.duration_s / 2),
    )
    parameters = {
        **run_parameters(spec.name, profile, options),
        "faults": [asdict(f) for f in faults],
        "soak": plan.as_dict(),
        **dict(extra or {}),
    }
    if (Path(out) / "manifest.json").exists():
        raise FileExistsError(f"{out} already holds a run")
    writer = RunWriter(
        out,
        "soak",
        parameters,
        stack=spec.name,
        style=spec.style,
        stack_spec=spec.declaration(),
        backend=backend,
        users=users,
    )
    stack: RunningStack | None = None
    sampler: HandleSampler | None = None
    with writer.guard():
        try:
            writer.event("stack_starting")
            stack = get_backend(backend).start(spec, options, logs_dir=writer.path / "logs")
            writer.event("stack_up", gateway_url=stack.gateway_url)
            writer.update_manifest(**describe_stack(stack))
            sampler = HandleSampler(stack, writer.path / "handles.csv", plan.sample_s)
            sampler.start()
            progress(
                f"{spec.name}: {users} users, think {think_time_s:.3f} s, {plan.duration_s:g} s,"
                f" {sum(f.action == 'kill' or f.role == 'broker' for f in faults)} faults"
            )
            summary = run_on(stack, profile, writer, options, faults)
        finally:
            if sampler is not None:
                sampler.stop()
            if stack is not None:
                stack.stop()
                writer.event("stack_down")
    writer.finish(summary.get("status", "complete"))
    return writer.path


# --------------------------------------------------------------------------- the tables
def _times(events: list[dict[str, Any]]) -> tuple[float, float]:
    start = next((e["t"] for e in events if e["event"] == "load_start"), math.nan)
    stop = next((e["t"] for e in events if e["event"] == "load_stop"), math.nan)
    return float(start), float(stop)


@dataclass
class SoakTables:
    """A soak's results: ``processes`` (per component and metric: after warm-up, at end,
    growth per 10 min, projected over the span, bound, pass), ``faults`` (one
    :class:`FaultOutcome` per row) and ``info`` (status, rps, requests, failures, the
    failures before the first fault, the measured span)."""

    processes: pd.DataFrame
    faults: pd.DataFrame
    info: dict[str, Any]


def soak_tables(run_dir: Path) -> SoakTables:
    """The tables of a soak run, recomputed from its run directory's raw files (so they
    can be read from a finished or an interrupted run alike)."""
    run = read_run(run_dir)
    plan = SoakPlan(
        **{
            k: (tuple(v) if k == "components" else v)
            for k, v in run.parameters["soak"].items()
            if k in SoakPlan.__dataclass_fields__
        }
    )
    events = run.events()
    t_start, t_stop = _times(events)
    frames = {"resources.csv": run.resources()}
    hp = Path(run_dir) / "handles.csv"
    frames["handles.csv"] = pd.read_csv(hp) if hp.exists() else pd.DataFrame()
    if not math.isfinite(t_stop):  # an interrupted run: up to its last sample
        t_stop = max((float(f["t"].max()) for f in frames.values() if len(f)), default=t_start)
    restarts: dict[str, list[float]] = {}
    for e in events:
        if e["event"] == "restart":
            restarts.setdefault(e["role"], []).append(float(e["t"]))
    rows = []
    res = frames["resources.csv"]
    comps = (
        list(res.loc[~res["kind"].isin(NOT_COMPONENTS), "component"].unique()) if len(res) else []
    )
    for comp in comps:
        for metric, (file, col, scale) in METRICS.items():
            f = frames[file]
            if not len(f) or col not in f:
                continue
            sub = f[f["component"] == comp]
            g = growth(
                sub["t"].to_numpy(),
                pd.to_numeric(sub[col], errors="coerce").to_numpy() * scale,
                t_start=t_start,
                t_end=t_stop,
                restarts=restarts.get(comp, []),
                warmup_s=plan.warmup_s,
                restart_warmup_s=plan.restart_warmup_s,
                window_s=plan.window_s,
                rel_bound=plan.rel_bound,
                slack=float(plan.slack.get(metric, 0.0)),
            )
            rows.append(
                {
                    "component": comp,
                    "metric": metric,
                    "restarts": len(restarts.get(comp, [])),
                    **asdict(g),
                }  # fmt: skip
            )
    table = pd.DataFrame(rows)
    req = run.requests()
    done = req["t"].to_numpy(float) + pd.to_numeric(req["latency_ms"]).fillna(0).to_numpy() / 1e3
    fault_marks = fault_times(run.parameters.get("faults", []), events, t_start)
    outcomes = fault_outcomes(
        done,
        req["ok"].to_numpy(bool),
        fault_marks,
        t_end=t_stop,
        onset_s=plan.onset_s,
        settle_s=plan.settle_s,
        t_load=t_start,
    )
    first = min((m[0] for m in fault_marks), default=t_stop)
    info = {
        "status": run.status,
        "users": run.manifest.get("users"),
        "rps": run.summary.get("rps"),
        "requests": len(req),
        "failures": int((~req["ok"].to_numpy(bool)).sum()),
        "failures_before_first_fault": int(((done < first) & ~req["ok"].to_numpy(bool)).sum()),
        "span_s": round(t_stop - t_start, 1),
        "warmup_s": plan.warmup_s,
    }
    return SoakTables(table, pd.DataFrame([asdict(o) for o in outcomes]), info)
