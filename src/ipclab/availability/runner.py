"""Availability experiments on a running stack: each writes an ordinary run directory.

* :func:`run_until_failure` (method 1, the thesis's): a closed-loop load with no time limit
  until the probe's failure criteria fire or a cap is reached (censored), then every
  component is restarted through the backend and the recovery is timed.
* :func:`run_fault_injection` (method 2): a steady load; components are killed on a seeded
  exponential schedule (:func:`ipclab.availability.faults.fault_schedule`) and restarted through the
  backend after the failure is detected (or after a fixed downtime).
* :func:`run_outage`: one service stopped for a fixed window under load; every request the
  load generator issued is classed (:mod:`ipclab.availability.outage`).

Each writes ``manifest.json`` (kind ``availability`` or ``outage``), ``events.jsonl`` (marks
``start``, ``kill`` with ``role``, ``restart`` with ``role``, ``end``), ``probe.csv``,
``cycles.csv`` (one flushed line per finished cycle), the Locust records and
``summary.json``. :func:`with_stack` starts a stack for one run and always stops it.
See docs/availability.md.
"""

from __future__ import annotations

import contextlib
import json
import math
import queue
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from ipclab import infrastructure
from ipclab.availability import little, survival
from ipclab.availability.classify import classify_run, ramp_end_of, run_cycles
from ipclab.availability.estimators import availability_summary
from ipclab.availability.faults import Fault, fault_schedule
from ipclab.availability.model import STARTUP
from ipclab.availability.outage import classify_requests, outage_table
from ipclab.availability.probe import Probe, read_probe
from ipclab.availability.recovery import RESTARTED, decompose, ready_events, summarise
from ipclab.availability.tracker import LOAD, Criteria, CycleLog, CycleTracker, Mark
from ipclab.backends import RunningStack, StackOptions, get_backend
from ipclab.load import forkserver
from ipclab.load.runner import LoadProfile, LoadSession
from ipclab.runs import RunWriter, read_run
from ipclab.stacks import StackSpec, resolve

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


# --------------------------------------------------------------------------- the load
class LoadTail:
    """The load generator's per-request records as its users' requests end (Locust writes
    ``requests/part-NNNNN.parquet`` once a second, each part whole): every call of
    :meth:`new_rows` returns the rows (``t``, ``latency_ms``, ``ok``) of the parts not read
    before, in completion order."""

    COLUMNS = ("t", "latency_ms", "ok")

    def __init__(self, run_dir: Path):
        self.folder = Path(run_dir) / "requests"
        self._read: set[str] = set()

    def new_rows(self) -> pd.DataFrame:
        frames = []
        for part in sorted(self.folder.glob("part-*.parquet")):
            if part.name in self._read:
                continue
            try:
                frames.append(pd.read_parquet(part, columns=list(self.COLUMNS)))
            except (OSError, ValueError):  # gone or replaced under us: read it next time
                continue
            self._read.add(part.name)
        if not frames:
            return pd.DataFrame(columns=list(self.COLUMNS))
        df = pd.concat(frames, ignore_index=True)
        at = df["t"] + pd.to_numeric(df["latency_ms"], errors="coerce").fillna(0.0) / 1000
        return df.assign(_at=at).sort_values("_at", kind="stable").drop(columns="_at")


# --------------------------------------------------------------------------- the monitor
class Monitor:
    """The probe feeding a :class:`CycleTracker` (online), marks written to events.jsonl.

    Probe rows arrive on a queue from the probe's thread and are fed to the tracker from
    the caller's thread (:meth:`pump`), so tracker and marks are never touched concurrently.
    """

    def __init__(
        self,
        stack: RunningStack,
        writer: RunWriter,
        criteria: Criteria,
        period_ms: float = 100.0,
        timeout_s: float = 1.0,
    ):
        self.writer = writer
        # the users' own requests, where they show a failure (method 1)
        self.load = LoadTail(writer.path) if criteria.failure_source == LOAD else None
        self._load_read = -math.inf
        self.rows: queue.Queue[dict[str, Any]] = queue.Queue()
        self.log = CycleLog(writer.path)
        self.tracker = CycleTracker(criteria, on_cycle=self.log.append)
        self.probe = Probe(
            stack.gateway_url,
            writer.path,
            paths=stack.spec.probe_paths,
            required=stack.spec.probe_required,
            period_ms=period_ms,
            timeout_s=timeout_s,
            on_row=self.rows.put,
        )
        self.t_start: float | None = None
        self.last_good_at = -math.inf  # when the probe last learned a complete answer
        self._due: list[tuple[float, str, dict[str, Any]]] = []  # marks to make at a time
        self._closed = False

    def start(self) -> Monitor:
        self.probe.start()
        self.mark("start")
        return self

    def mark(self, kind: str, role: str | None = None, **data: Any) -> float:
        """Write an event and feed it to the tracker; returns its time."""
        self.pump()
        t = time.time()
        extra = {"role": role} if role is not None else {}
        self.writer.event(kind, t=t, **extra, **data)
        self.tracker.mark(Mark(t, kind, role))
        if kind == "start":
            self.t_start = t
        return t

    def mark_at(self, t: float, kind: str, **data: Any) -> None:
        """Make the mark ``kind`` at time ``t`` (later): written and fed to the tracker in
        time order with the probe's rows once the clock passes ``t`` (e.g. a ramp's end)."""
        self._due.append((t, kind, data))
        self._due.sort(key=lambda d: d[0])

    def _make_due(self, until: float) -> None:
        while self._due and self._due[0][0] <= until:
            t, kind, data = self._due.pop(0)
            self.writer.event(kind, t=t, **data)
            self.tracker.mark(Mark(t, kind))

    def pump(self, timeout: float = 0.0) -> None:
        """Feed every queued probe row to the tracker (waiting up to ``timeout`` for one),
        and the marks that fell due before each."""
        with contextlib.suppress(queue.Empty):
            row = self.rows.get(timeout=timeout) if timeout > 0 else self.rows.get_nowait()
            while True:
                lat = float("nan") if row.get("latency_ms") is None else float(row["latency_ms"])
                ok, complete = bool(row["ok"]), bool(row.get("complete", True))
                at = float(row["t"]) + (0.0 if math.isnan(lat) else lat / 1000.0)
                self._make_due(at)
                self.tracker.observe(float(row["t"]), ok, lat, complete, row.get("seq"))
                if ok and complete:
                    self.last_good_at = max(self.last_good_at, at)
                row = self.rows.get_nowait()
        self._feed_load()
        self._make_due(time.time())

    def _feed_load(self, every_s: float = 0.5) -> None:
        """The users' requests ended since the last call (Locust's parts, read at most
        every ``every_s``), fed to the tracker in completion order."""
        now = time.monotonic()
        if self.load is None or now - self._load_read < every_s:
            return
        self._load_read = now
        rows = self.load.new_rows()
        for t, lat, ok in zip(rows["t"], rows["latency_ms"], rows["ok"], strict=True):
            lat = float(lat) if pd.notna(lat) else float("nan")
            self._make_due(float(t) + (0.0 if math.isnan(lat) else lat / 1000.0))
            self.tracker.observe(float(t), bool(ok), lat, True, None, LOAD)

    def wait_until(self, done: Callable[[], bool], timeout: float) -> bool:
        """Pump until ``done()`` or ``timeout`` seconds; True if ``done()``."""
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() >= deadline:
                return False
            self.pump(timeout=0.05)
        return True

    def sleep(self, seconds: float) -> None:
        self.wait_until(lambda: False, seconds)

    @property
    def state(self) -> str:
        return self.tracker.state

    @property
    def n_cycles(self) -> int:
        return len(self.tracker.cycles)

    def close(self) -> None:
        """Mark the end (if started), stop the probe, finish the tracker. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._due = [d for d in self._due if d[0] <= time.time()]  # none after the end
        try:
            if self.t_start is not None:
                t_end = time.time()
                self.writer.event("end", t=t_end)
                self.probe.stop()
                self._load_read = -math.inf  # the users' last records too
                self.pump()
                self.tracker.finish(t_end)
            else:
                self.probe.stop()
        finally:
            self.log.close()


# --------------------------------------------------------------------------- helpers
@dataclass
class Common:
    """What every availability run shares."""

    criteria: Criteria = field(default_factory=Criteria)
    probe_period_ms: float = 100.0
    probe_timeout_s: float = 1.0
    warmup_s: float = 2.0  # load before the probe's start mark
    recover_timeout_s: float = 60.0  # give up waiting for a recovery after this long
    confidence: float = 0.95

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["criteria"] = self.criteria.as_dict()
        return d


def _parameters(stack: RunningStack, options: StackOptions, **kw: Any) -> dict[str, Any]:
    return {
        "stack": stack.spec.name,
        "backend": stack.backend,
        "options": options.as_dict(),
        "reconnect": reconnect_settings(stack.spec, options),
        **kw,
    }


def reconnect_settings(spec: StackSpec, options: StackOptions) -> dict[str, Any]:
    """The clients' reconnect mode and every setting it puts in force for the stack's
    transport (``ipclab_services.reconnect``; the library defaults named too)."""
    from ipclab_services import reconnect

    python = spec.runtime.name == "python"  # the settings are those of the Python clients
    return {
        "mode": options.reconnect or "default",
        "transport": spec.transport,
        "runtime": spec.runtime.name,
        "settings": reconnect.settings(spec.transport, options.env()) if python else None,
    }


def _decompose_recovery(
    stack: RunningStack, writer: RunWriter, t_start: float | None
) -> dict[str, Any]:
    """Copy the restarted components' ``ready`` lines from their logs into the run's
    events, write ``recovery.csv`` (``ipclab.availability.recovery``) and return its summary."""
    if t_start is not None:
        try:
            logs = stack.logs()
        except Exception:  # noqa: BLE001 - no logs: start and reconnect stay unknown
            logs = {}
        known = {(e.get("t"), e.get("role")) for e in read_run(writer.path).events()}
        for e in ready_events(logs, t_start, time.time()):
            if (e["t"], e["role"]) not in known:  # a backend may have copied it already
                writer.event(e["event"], t=e["t"], role=e["role"])
    run = read_run(writer.path)
    parts = decompose(classify_run(run).counted, run.events())
    parts.to_csv(writer.path / "recovery.csv", index=False)
    return summarise(parts)


def _writer(
    out: Path, kind: str, stack: RunningStack, parameters: dict[str, Any], **fields: Any
) -> RunWriter:
    out = Path(out)
    if (out / "manifest.json").exists():
        raise FileExistsError(f"{out} already holds a run")
    info = stack.info()  # e.g. the pods' resources, nodes and QoS (kubernetes)
    if info is not None:
        fields = {"stack_info": info, **fields}
    return RunWriter(
        out,
        kind,
        parameters,
        stack=stack.spec.name,
        style=stack.spec.style,
        stack_spec=stack.spec.declaration(),
        backend=stack.backend,
        **fields,
    )


def _summarise_cycles(run_dir: Path, confidence: float) -> dict[str, Any]:
    """The run's cycles as they count (``ipclab.availability.classify``), summarised; each
    failure's kind and evidence written to ``evidence.csv``."""
    c = classify_run(run_dir)
    c.evidence.to_csv(Path(run_dir) / "evidence.csv", index=False)
    s = availability_summary(c.counted, confidence=confidence)
    out = {
        k: (None if isinstance(v, float) and not math.isfinite(v) else v)
        for k, v in s.as_row().items()
    }
    ev = c.evidence
    kinds = ev["kind"].value_counts().to_dict() if len(ev) else {}
    out["failures_by_kind"] = {str(k): int(v) for k, v in kinds.items()}
    out["uncounted_failures"] = int((~ev["counted"].astype(bool)).sum()) if len(ev) else 0
    return out


@contextlib.contextmanager
def _observed(
    stack: RunningStack,
    writer: RunWriter,
    profile: LoadProfile,
    options: StackOptions,
    criteria: Criteria,
    common: Common,
    ramp: Ramp | None = None,
) -> Iterator[tuple[Monitor, LoadSession, dict[str, Any]]]:
    """The load, then after the warm-up the probe, for the body's experiment; both stopped
    at the end whatever happens (the run marked failed on an error). The dict yielded gets
    the load's summary under ``load`` once stopped. With a ``ramp`` the load's ramp is
    marked (``ramp_start`` at the load's start, ``ramp_end`` when its users are all up)."""
    load = LoadSession(stack, profile, writer, options)
    mon = Monitor(stack, writer, criteria, common.probe_period_ms, common.probe_timeout_s)
    out: dict[str, Any] = {}
    with writer.guard():
        try:
            t0 = time.time()
            load.start()
            if ramp is not None:
                t_end = t0 + ramp.seconds
                mon.mark("ramp_start", users=ramp.users, spawn_rate=ramp.spawn_rate)
                mon.mark_at(t_end, "ramp_end", users=ramp.users, ramp_end_s=ramp.seconds)
                out["ramp"] = {**ramp.as_dict(), "t_start": t0, "t_end": t_end}
            time.sleep(common.warmup_s)
            mon.start()
            yield mon, load, out
        finally:
            mon.close()
            out["load"] = load.stop()


def _finish(writer: RunWriter, status: str, summary: dict[str, Any]) -> None:
    summary["status"] = status
    writer.write_json("summary.json", summary)
    writer.finish(status)


def first_good_after(run_dir: Path, t: float) -> float | None:
    """Seconds from ``t`` to the first complete probe answer learned after it."""
    df = read_probe(run_dir)
    if df.empty:
        return None
    at = df["t"] + pd.to_numeric(df["latency_ms"], errors="coerce").fillna(0) / 1000
    good = df["ok"] & df["complete"] & (at > t)
    return float(at[good].min() - t) if good.any() else None


# --------------------------------------------------------------------------- method 1
#: users started per second in method 1 (docs/availability.md, "Method 1": why this rate)
DEFAULT_SPAWN_RATE = 10.0
#: Locust's own start, from the load's start to its first user (forked: well under 1 s)
LOCUST_START_S = 1.0


@dataclass(frozen=True)
class Ramp:
    """The load's ramp: ``users`` started at ``spawn_rate`` per second after Locust's own
    start (``start_s``); the load counts as fully up (the ramp's end) ``settle_s`` later,
    one window of the detector's error-rate rule, so that the first window it judges the
    stack on holds answers under the full load only: ``users / spawn_rate + start_s +
    settle_s`` after the load started."""

    users: int
    spawn_rate: float
    start_s: float = LOCUST_START_S
    settle_s: float = 5.0

    def __post_init__(self) -> None:
        if self.users < 1 or self.spawn_rate <= 0 or min(self.start_s, self.settle_s) < 0:
            raise ValueError("a ramp needs users >= 1, spawn_rate > 0, start_s and settle_s >= 0")

    @property
    def seconds(self) -> float:
        return self.users / self.spawn_rate + self.start_s + self.settle_s

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ramp_s": self.seconds}


@dataclass
class UntilFailure:
    """Method 1: ``users`` (started at ``spawn_rate`` per second) until failure or ``cap_s``
    after the ramp's end, then a restart of every component. A failure before the ramp's end
    is a start-up failure: the stack is restarted and, ``startup_restarts`` times at most,
    observed again under the full load (None ``spawn_rate``: every user in the first
    second, no ramp marked, as runs before the ramp were made)."""

    users: int = 200
    cap_s: float = 1800.0
    spawn_rate: float | None = DEFAULT_SPAWN_RATE
    seed: int = 1
    restart_when_censored: bool = True  # still time a full restart (not used in A)
    startup_restarts: int = 1

    def ramp(self, settle_s: float = 5.0) -> Ramp | None:
        """The ramp, fully up ``settle_s`` (the detector's window) after the last user."""
        if self.spawn_rate is None:
            return None
        return Ramp(self.users, self.spawn_rate, settle_s=settle_s)


#: the probe's timeout beyond the gateway's call timeout in method 1: a page the gateway
#: still answers (it answers every call by its call timeout) is not cut off by the probe
PROBE_MARGIN_S = 5.0


def method_1_common(common: Common, call_timeout_s: float) -> Common:
    """Method 1's probe: only the recovery's witness (the users' requests show a failure),
    its timeout the gateway's call timeout and ``PROBE_MARGIN_S`` more, so that under the
    full load it learns the first complete page after the restart however slow."""
    timeout = max(common.probe_timeout_s, call_timeout_s + PROBE_MARGIN_S)
    return replace(common, probe_timeout_s=timeout)


def run_until_failure(
    stack: RunningStack,
    out: Path,
    plan: UntilFailure,
    common: Common | None = None,
    options: StackOptions | None = None,
    progress: Progress = _quiet,
    extra: dict[str, Any] | None = None,
) -> Path:
    options = options or StackOptions()
    common = method_1_common(common or Common(), options.call_timeout_s)
    # every failure of method 1 waits for the runner's restart of the whole stack, and is
    # shown by the users' own requests (docs/availability.md, "Method 1": what fails)
    criteria = Criteria(
        **{
            **common.criteria.as_dict(),
            "cap_s": plan.cap_s,
            "await_restart": "always",
            "failure_source": LOAD,
        }
    )
    limits = stack.backend in ("docker", "swarm", "kubernetes") and (
        options.cpus is not None or options.memory_mb is not None
    )
    ramp = plan.ramp(criteria.window_s)
    params = _parameters(
        stack,
        options,
        method="until_failure",
        users=plan.users,
        plan=asdict(plan),
        ramp=None if ramp is None else ramp.as_dict(),
        common={**common.as_dict(), "criteria": criteria.as_dict()},
        resource_limits_applied=limits,
        **(extra or {}),
    )
    writer = _writer(out, "availability", stack, params, users=plan.users, method="until_failure")
    ramp_s = 0.0 if ramp is None else ramp.seconds
    profile = LoadProfile(
        users=plan.users,
        spawn_rate=plan.spawn_rate or float(plan.users),
        duration_s=ramp_s
        + plan.cap_s
        + common.warmup_s
        + (1 + plan.startup_restarts) * (common.recover_timeout_s + 60)
        + 60,
        seed=plan.seed,
    )
    t_restart: float | None = None
    observed = _observed(stack, writer, profile, options, criteria, common, ramp)
    with observed as (mon, _, stopped):
        progress(f"{stack.spec.name}: {plan.users} users until failure (cap {plan.cap_s:g} s)")
        failed, t_restart = _until_failure(stack, mon, plan, common, ramp_s, progress)
        if not failed and plan.restart_when_censored:
            progress(f"{stack.spec.name}: censored; restarting")
            t_restart = restart_all(stack, mon)
            t_r = t_restart
            mon.wait_until(lambda: mon.last_good_at > t_r, common.recover_timeout_s)
    summary = _summarise_cycles(writer.path, common.confidence)
    summary["load"] = stopped["load"]
    summary["recovery"] = _decompose_recovery(stack, writer, mon.t_start)
    summary["restart_to_first_good_s"] = (
        first_good_after(writer.path, t_restart) if t_restart is not None else None
    )
    if "ramp" in stopped:
        summary["ramp"] = ramp_check(writer.path, stopped["ramp"])
        writer.update_manifest(ramp_end_s=summary["ramp"]["ramp_end_s"])
    summary["time_to_failure"] = time_to_failure(writer.path, plan.cap_s)
    summary["little"] = little_summary(writer.path, mon, plan.users, stopped, extra, t_restart)
    _finish(writer, "complete", summary)
    return writer.path


def time_to_failure(run_dir: Path, cap_s: float) -> dict[str, Any]:
    """The run's time as method 1's claims read it (``survival.run_outcome`` of its cycles
    as they count): from the ramp's end (``t_ramp_end``: its ``ramp_end`` mark, else the
    detector's rule) to its first failure that is not a start-up one, or to its cap
    (``failed`` False); start-up failures counted apart (``ttf_s`` None when every
    failure was one)."""
    run = read_run(run_dir)
    end = ramp_end_of(run)
    o = survival.run_outcome(run_cycles(run), cap_s, end)
    return {
        "ttf_s": o.time_s,
        "failed": o.failed,
        "cap_s": o.cap_s,
        "startup_failures": o.startup,
        "t_ramp_end": end,
    }


def little_summary(
    run_dir: Path,
    mon: Monitor,
    users: int,
    stopped: dict[str, Any],
    extra: dict[str, Any] | None,
    t_restart: float | None,
) -> dict[str, Any]:
    """Little's law's prediction (the run's ``little`` parameter, where the study gave one)
    beside what the load generator saw under the full load: from the ramp's end (else the
    probe's start) to the first failure that is not a start-up one (else the last restart,
    else now), and that failure's time to failure."""
    t_from = (stopped.get("ramp") or {}).get("t_end", mon.t_start or time.time())
    timed = [c for c in mon.tracker.cycles if c.failed and c.kind != STARTUP]
    t_to = timed[0].t_fail if timed and timed[0].t_fail else t_restart or time.time()
    return {
        "predicted": (extra or {}).get("little"),
        "observed": little.observed(run_dir, users, float(t_from), float(t_to)),
        "ttf_s": timed[0].ttf_s if timed else None,
    }


def _until_failure(
    stack: RunningStack,
    mon: Monitor,
    plan: UntilFailure,
    common: Common,
    ramp_s: float,
    progress: Progress,
) -> tuple[bool, float | None]:
    """Wait for a failure (or the cap) and restart every component on one; after a
    start-up failure, restart and observe again under the full load, ``startup_restarts``
    times at most. Whether the last failure was one, and the last restart's time."""
    restarts_left, t_restart = plan.startup_restarts, None
    budget = ramp_s + plan.cap_s + 5
    while True:
        mon.wait_until(lambda: mon.state != "up", budget)
        if mon.state != "down":
            return False, t_restart
        before = mon.n_cycles
        kind = mon.tracker.current_kind
        progress(f"{stack.spec.name}: failed ({kind}); restarting")
        t_restart = restart_all(stack, mon)
        mon.wait_until(lambda n=before: mon.n_cycles > n, common.recover_timeout_s)
        if kind != STARTUP or restarts_left <= 0 or mon.state != "up":
            return True, t_restart
        restarts_left -= 1
        budget = plan.cap_s + 5


def ramp_check(run_dir: Path, ramp: dict[str, Any]) -> dict[str, Any]:
    """The ramp as planned beside Locust's own count: ``ramp_end_s`` (from the load's start
    to the ramp's end mark), ``users_up_s`` (to the first second Locust's history shows every
    user; None if it never did) and ``late`` (every user up later than planned, the ramp's
    end less its settling window: the load was not fully up at the mark)."""
    out = {
        "users": ramp["users"],
        "spawn_rate": ramp["spawn_rate"],
        "settle_s": ramp.get("settle_s", 0.0),
        "ramp_end_s": ramp["t_end"] - ramp["t_start"],
        "users_up_s": None,
        "late": None,
    }
    path = Path(run_dir) / "locust_stats_history.csv"
    if not path.exists():
        return out
    h = pd.read_csv(path)
    h = h[h["Name"] == "Aggregated"] if "Name" in h.columns else h
    full = h.loc[pd.to_numeric(h["User Count"], errors="coerce") >= ramp["users"], "Timestamp"]
    if len(full):
        # a history row is written within the second its timestamp names
        up = float(full.min()) - ramp["t_start"]
        out["users_up_s"] = up
        out["late"] = up > out["ramp_end_s"] - out["settle_s"]
    return out


def wait_dead(stack: RunningStack, role: str, timeout: float = 15.0) -> None:
    """Wait until a killed component's process has exited (local backend: ``process_of``,
    a role's or its infrastructure's), so that its restart does not race the dying process
    for its port or node name."""
    process_of = getattr(stack, "process_of", None)
    proc = process_of(role) if process_of is not None else None
    if proc is None or not hasattr(proc, "poll"):
        return
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)


def restarts_itself(stack: RunningStack) -> bool:
    """Whether the stack's orchestrator restarts a killed component by itself (Kubernetes:
    the kubelet, under the pod's restart policy): its restart is issued at the kill, and
    ``stack.restart`` only waits for it."""
    return bool(getattr(stack, "restarts_itself", False))


def backend_restarts(stack: RunningStack, writer: RunWriter) -> None:
    """Write what the orchestrator recorded of the restarts just waited for (Kubernetes:
    ``ipclab.backends.kubernetes.restarts``) as events of the run."""
    for e in getattr(stack, "restart_events", list)():
        e = dict(e)
        writer.event(e.pop("event"), **e)


def _restarted(stack: RunningStack, mon: Monitor, role: str) -> None:
    """Restart ``role`` through the backend (or wait for the orchestrator's restart) and
    record that it returned and what the orchestrator recorded."""
    stack.restart(role)
    mon.writer.event(RESTARTED, role=role)
    backend_restarts(stack, mon.writer)


def restart_all(stack: RunningStack, mon: Monitor) -> float:
    """Stop every component (the gateway first), then start them again (the broker first,
    the gateway last), as the thesis restarted the whole cluster. Nothing old can answer
    after the first ``restart`` mark; returns its time. The infrastructure that takes
    faults (``Infrastructure.faults``: the broker) is stopped and started with them. Where
    the orchestrator restarts them (:func:`restarts_itself`), each restart is marked at
    its kill (the kubelet starts a killed container at once; the gateway, killed first,
    answers nothing before its own restart), then each waited for."""
    spec = stack.spec
    roles = infrastructure.fault_components(spec.infrastructure) + list(spec.services)
    roles.append(stack.spec.gateway)
    itself, marks = restarts_itself(stack), []
    for role in reversed(roles):
        mon.writer.event("stop_component", role=role)
        if itself:  # before the kill: the kubelet may restart it before the kill returns
            marks.append(mon.mark("restart", role, by="orchestrator"))
        with contextlib.suppress(Exception):
            stack.kill(role)
        wait_dead(stack, role)
    for role in roles:
        if not itself:
            marks.append(mon.mark("restart", role))
        _restarted(stack, mon, role)
    return marks[0]


# --------------------------------------------------------------------------- method 2
@dataclass
class FaultInjection:
    """Method 2: ``cycles`` faults with exponential gaps of up time (``min_gap_s`` +
    Exp(``mean_gap_s``)) on ``components`` (None: every service and the gateway, plus the
    infrastructure that takes faults, the broker, when ``include_broker``); restart after
    detection or after ``downtime_s``."""

    users: int = 50
    cycles: int = 10
    mean_gap_s: float = 30.0
    min_gap_s: float = 5.0
    seed: int = 2020
    components: tuple[str, ...] | None = None
    include_broker: bool = True
    restart_after: str = "detection"  # or "downtime"
    downtime_s: float = 5.0  # fixed downtime, and the longest wait for a detection
    think_time_s: float = 0.0

    def roles(self, spec: StackSpec) -> list[str]:
        if self.components is not None:
            return list(self.components)
        out = list(spec.roles)
        if self.include_broker:
            out += infrastructure.fault_components(spec.infrastructure)
        return out


def run_fault_injection(
    stack: RunningStack,
    out: Path,
    plan: FaultInjection,
    common: Common | None = None,
    options: StackOptions | None = None,
    progress: Progress = _quiet,
    extra: dict[str, Any] | None = None,
) -> Path:
    common = common or Common()
    options = options or StackOptions()
    if plan.restart_after not in ("detection", "downtime"):
        raise ValueError("restart_after must be 'detection' or 'downtime'")
    roles = plan.roles(stack.spec)
    schedule = fault_schedule(
        plan.seed, plan.mean_gap_s, plan.cycles, roles, min_gap_s=plan.min_gap_s
    )
    params = _parameters(
        stack,
        options,
        method="fault_injection",
        users=plan.users,
        plan=asdict(plan),
        common=common.as_dict(),
        schedule=[f.as_dict() for f in schedule],
        **(extra or {}),
    )
    writer = _writer(out, "availability", stack, params, users=plan.users, method="fault_injection")
    budget = sum(f.gap_s for f in schedule) + plan.cycles * (
        plan.downtime_s + common.recover_timeout_s
    )
    profile = LoadProfile(
        users=plan.users,
        spawn_rate=float(plan.users),
        duration_s=common.warmup_s + budget + 60,
        seed=plan.seed,
        think_time_s=plan.think_time_s,
    )
    observed = _observed(stack, writer, profile, options, common.criteria, common)
    with observed as (mon, _, stopped):
        for fault in schedule:
            if not up_for(mon, fault.gap_s, common.recover_timeout_s):
                progress(f"{stack.spec.name}: not recovered; stopping")
                break
            outcome = _inject(stack, mon, plan, fault, common.recover_timeout_s)
            progress(
                f"{stack.spec.name}: fault {fault.index + 1}/{len(schedule)} "
                f"{fault.component}: {outcome}"
            )
        mon.sleep(1.0)
    summary = _summarise_cycles(writer.path, common.confidence)
    summary["load"] = stopped["load"]
    summary["recovery"] = _decompose_recovery(stack, writer, mon.t_start)
    _finish(writer, "complete", summary)
    return writer.path


def up_for(mon: Monitor, gap_s: float, recover_timeout_s: float) -> bool:
    """Wait until the stack has been up ``gap_s`` on end (the schedule's gap is up time): a
    failure in the gap (none injected: spontaneous) is waited out, and the gap starts again
    from its recovery, so that no fault is injected into a stack already down. False if it
    does not recover within ``recover_timeout_s`` (or tracking ended)."""
    while True:
        if not mon.wait_until(lambda: mon.state == "up", recover_timeout_s):
            return False
        mon.wait_until(lambda: mon.state != "up", gap_s)
        if mon.state == "up":
            return True
        if mon.state != "down":
            return False


def _inject(
    stack: RunningStack, mon: Monitor, plan: FaultInjection, fault: Fault, recover_timeout_s: float
) -> str:
    """Kill ``fault.component``, restart it after detection (or the fixed downtime), wait
    for the recovery; what happened, in words."""
    before, itself = mon.n_cycles, restarts_itself(stack)
    mon.mark("kill", fault.component, fault=fault.index)
    if itself:  # the orchestrator's restart is issued at the kill, not after detection
        mon.mark("restart", fault.component, fault=fault.index, by="orchestrator")
    stack.kill(fault.component)
    if plan.restart_after == "detection":
        mon.wait_until(lambda: mon.state == "down", plan.downtime_s)
    else:
        mon.sleep(plan.downtime_s)
    masked = mon.state == "up"
    wait_dead(stack, fault.component)
    if not itself:
        mon.mark("restart", fault.component, fault=fault.index)
    _restarted(stack, mon, fault.component)
    if not masked:
        mon.wait_until(lambda: mon.n_cycles > before, recover_timeout_s)
    c = mon.tracker.cycles[-1] if mon.n_cycles > before else None
    if c and c.ttr_s:
        return f"up {c.ttf_s:.1f} s, down {c.ttr_s:.1f} s"
    return "masked" if masked else "no recovery yet"


# --------------------------------------------------------------------------- outage
OUTAGE_REFUSED = (
    "the outage keeps a component down for a fixed window, but on the {backend} backend "
    "the orchestrator restarts a killed container at once: use fault_injection or "
    "until_failure there"
)


@dataclass
class Outage:
    """Stop ``role`` for ``outage_s`` under ``users``, ``before_s`` after the warm-up; the
    load ends by itself ``after_s`` after the restart, so every request issued in the window
    has completed (the gateway answers by its call timeout)."""

    users: int = 50
    role: str = "reviews"
    before_s: float = 20.0
    outage_s: float = 10.0
    after_s: float = 25.0
    late_ms: float = 1000.0
    seed: int = 1


def gateway_stats(stack: RunningStack) -> dict[str, Any] | None:
    """The gateway's transport counters (AMQP: published, replies, unmatched), if any."""
    try:
        with urllib.request.urlopen(f"{stack.gateway_url}/stats", timeout=3) as r:
            doc = json.loads(r.read())
        return dict(doc) if isinstance(doc, dict) else None
    except (OSError, ValueError):
        return None


def outage_failure_fraction(table: pd.DataFrame) -> float | None:
    """Share of the requests issued during the outage that were not served (failed or
    lost); served late counts as served."""
    if "during" not in table.index or table.loc["during", "issued"] == 0:
        return None
    row = table.loc["during"]
    return float((row["failed"] + row["lost"]) / row["issued"])


def run_outage(
    stack: RunningStack,
    out: Path,
    plan: Outage,
    common: Common | None = None,
    options: StackOptions | None = None,
    progress: Progress = _quiet,
    extra: dict[str, Any] | None = None,
) -> Path:
    common = common or Common()
    options = options or StackOptions()
    if restarts_itself(stack):
        raise ValueError(OUTAGE_REFUSED.format(backend=stack.backend))
    faulted = infrastructure.fault_components(stack.spec.infrastructure)
    if plan.role not in (*stack.spec.roles, *faulted):
        raise ValueError(f"{plan.role!r} is not a component of {stack.spec.name}")
    params = _parameters(
        stack,
        options,
        method="outage",
        users=plan.users,
        plan=asdict(plan),
        common=common.as_dict(),
        **(extra or {}),
    )
    writer = _writer(out, "outage", stack, params, users=plan.users, method="outage")
    profile = LoadProfile(
        users=plan.users,
        spawn_rate=float(plan.users),
        duration_s=common.warmup_s + plan.before_s + plan.outage_s + plan.after_s,
        seed=plan.seed,
    )
    stats_before = gateway_stats(stack)
    t0 = t1 = math.nan
    observed = _observed(stack, writer, profile, options, common.criteria, common)
    with observed as (mon, load, stopped):
        mon.sleep(plan.before_s)
        progress(f"{stack.spec.name}: {plan.role} down for {plan.outage_s:g} s")
        t0 = mon.mark("kill", plan.role)
        stack.kill(plan.role)
        mon.sleep(plan.outage_s)
        wait_dead(stack, plan.role)
        t1 = mon.mark("restart", plan.role)
        stack.restart(plan.role)
        mon.writer.event(RESTARTED, role=plan.role)
        mon.wait_until(lambda: not load.running, plan.after_s + 30)
    stats_after = gateway_stats(stack)
    requests = read_run(writer.path).requests()
    classified = classify_requests(requests, t0, t1, plan.late_ms)
    table = outage_table(classified)
    table.rename_axis("phase").reset_index().to_csv(writer.path / "outage.csv", index=False)
    unmatched = None
    if stats_before and stats_after and "unmatched" in stats_after:
        unmatched = int(stats_after["unmatched"]) - int(stats_before.get("unmatched", 0))
    summary = {
        "t_outage_start": t0,
        "t_outage_end": t1,
        "outage_s": t1 - t0,
        "requests": len(classified),
        "outage": table.rename_axis("phase").reset_index().to_dict("records"),
        "outage_failure_fraction": outage_failure_fraction(table),
        "gateway_unmatched_replies": unmatched,
        "load": stopped["load"],
        "recovery": _decompose_recovery(stack, writer, mon.t_start),
    }
    _finish(writer, "complete", summary)
    return writer.path


# --------------------------------------------------------------------------- stacks
@contextlib.contextmanager
def with_stack(
    stack_name: str, backend: str, options: StackOptions, logs_dir: Path | None = None
) -> Iterator[RunningStack]:
    """Start a stack and stop it whatever happens (success, failure, Ctrl-C)."""
    forkserver.warm()  # Locust's imports overlap the stack's start
    stack = get_backend(backend).start(resolve(stack_name), options, logs_dir=logs_dir)
    try:
        yield stack
    finally:
        stack.stop()
