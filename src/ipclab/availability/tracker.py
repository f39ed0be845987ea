"""Availability study: failure and recovery criteria, and failure/recovery cycles.

A probe timeline (one row per probe request: ``t`` issue time, ``ok``, ``latency_ms``,
``complete``) and event marks (``start``, ``fault``, ``restart``, ``end``) become a list of
:class:`Cycle` s: an up period that ends in a failure (or is censored), then a down period
that ends in a recovery (or is censored). See docs/availability.md.

Every time in a cycle is on one clock: the moment the probe *learned* an outcome, i.e. the
request's completion time ``t + latency_ms / 1000``. The same state machine
(:class:`CycleTracker`) runs online (fed by the probe, to drive restarts) and offline
(:func:`detect_cycles`), so both give the same cycles.

Estimators (MTTF, MTTR, A, intervals, censoring) live in :mod:`ipclab.availability.estimators`
and are re-exported here.
"""

from __future__ import annotations

import io
import math
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from pathlib import Path
from typing import Any

import pandas as pd

from ipclab.availability.estimators import (
    AvailabilitySummary,
    Estimate,
    availability_summary,
    mttf_chi2_interval,
)
from ipclab.availability.model import (
    CYCLE_COLUMNS,
    END,
    EVENT_ALIASES,
    FAULT,
    INJECTED,
    RAMP_END,
    RAMP_START,
    RESTART,
    SPONTANEOUS,
    START,
    STARTUP,
    Cycle,
    CycleStatus,
    Mark,
)
from ipclab.runs import CsvAppender

__all__ = [
    "AwaitRestart",
    "AvailabilitySummary",
    "Criteria",
    "Cycle",
    "CycleLog",
    "CycleStatus",
    "CycleTracker",
    "Estimate",
    "LOAD",
    "PROBE",
    "Mark",
    "Recovery",
    "availability_summary",
    "detect_cycles",
    "marks_from_events",
    "mttf_chi2_interval",
    "read_cycles",
]


#: where an answer came from: the availability probe, or the load generator's users
PROBE, LOAD = "probe", "load"
SOURCES = (PROBE, LOAD)


class Recovery(StrEnum):
    FIRST_COMPLETE = "first_complete"  # the first good response after the restart
    CONSECUTIVE = "consecutive"  # K good responses in a row; recovered at the first of them


class AwaitRestart(StrEnum):
    """Which failures recover only after a restart mark."""

    ALWAYS = "always"  # every failure (method 1: the runner restarts the stack on a failure)
    INJECTED = "injected"  # a failure with an injected fault waits for that fault's restart;
    # one with no fault (no component to restart) ends at the first good page
    NEVER = "never"  # every failure ends at the first good page


def _await_restart(value: Any) -> AwaitRestart:
    """``True`` and ``False`` (how runs before the kinds recorded it) are ``always`` and
    ``never``, the rules those runs were detected with."""
    if isinstance(value, bool):
        return AwaitRestart.ALWAYS if value else AwaitRestart.NEVER
    return AwaitRestart(value)


@dataclass(frozen=True)
class Criteria:
    """When the system counts as failed, and when as recovered.

    A probe response is *good* when it is ``ok`` and (if ``require_complete``) holds all
    five parts of the product page.

    Failure (either rule, whichever fires first):
      * error rate: among the responses learned in the last ``window_s`` seconds (at least
        ``min_samples`` of them) the share of bad ones exceeds ``max_error_rate``;
      * silence: a bad response is learned ``silence_s`` or more after the last good one
        (or after the start of the up period). ``None`` disables a rule.
    The answers judged are the probe's, or (``failure_source="load"``) the load
    generator's users' own requests, each learned at its completion: a slow answer is a
    good one, a failed request (an error answer, a refused or reset connection, the user's
    own timeout) a bad one.
    The failure time is the *onset*: the first bad response of the triggering window
    (error rate) or of the bad run since the last good response (silence). The time the rule
    fired is kept as ``t_fail_detected``.

    Recovery is looked for from the failure's detection, and, for the failures
    ``await_restart`` names (:class:`AwaitRestart`; default: those with an injected fault),
    from the restart mark too (a restart issued before the failure was detected counts).
    Then either the first good response (``first_complete``) or ``consecutive`` good
    responses in a row, recovered at the first of them (``consecutive`` mode). After a
    recovery the next up period starts afresh: no answer to a request asked before the
    recovery counts in it.

    ``cap_s`` bounds an up period: a stack still up ``cap_s`` after the start of the up
    period is right-censored there and tracking ends (the thesis method's time limit).
    """

    window_s: float = 5.0
    max_error_rate: float | None = 0.5
    min_samples: int = 5
    silence_s: float | None = 10.0
    require_complete: bool = True
    recovery: Recovery = Recovery.FIRST_COMPLETE
    consecutive: int = 5
    await_restart: AwaitRestart | str | bool = AwaitRestart.INJECTED
    cap_s: float | None = None
    # whose answers show a failure: the probe's (``probe``), or the load generator's own
    # users' (``load``: method 1, docs/availability.md); a recovery is always the probe's
    failure_source: str = PROBE

    def __post_init__(self) -> None:
        if self.failure_source not in SOURCES:
            raise ValueError(f"failure_source must be one of {SOURCES}")
        object.__setattr__(self, "recovery", Recovery(self.recovery))
        object.__setattr__(self, "await_restart", _await_restart(self.await_restart))
        if self.max_error_rate is None and self.silence_s is None:
            raise ValueError("at least one failure rule (max_error_rate, silence_s) is needed")
        if self.max_error_rate is not None and not 0.0 <= self.max_error_rate < 1.0:
            raise ValueError("max_error_rate must be in [0, 1)")
        if self.window_s <= 0 or self.min_samples < 1:
            raise ValueError("window_s must be > 0 and min_samples >= 1")
        if self.silence_s is not None and self.silence_s <= 0:
            raise ValueError("silence_s must be > 0")
        if self.consecutive < 1:
            raise ValueError("consecutive must be >= 1")
        if self.cap_s is not None and self.cap_s <= 0:
            raise ValueError("cap_s must be > 0")

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["recovery"] = str(self.recovery)
        d["await_restart"] = str(self.await_restart)
        return d

    def awaits_restart(self, kind: str) -> bool:
        """Whether a failure of ``kind`` recovers only after a restart mark."""
        if self.await_restart == AwaitRestart.ALWAYS:
            return True
        return self.await_restart == AwaitRestart.INJECTED and kind == INJECTED


@dataclass
class _Obs:
    at: float  # completion time: when the probe learned the outcome
    t: float  # issue time
    good: bool
    seq: int | None = None  # the probe's request number, when known


@dataclass
class _Up:
    t_up: float  # where its time on test starts (the ramp's end, if that came later)
    last_good: float
    since: float = -math.inf  # answers to requests asked before this are not its own
    t_began: float | None = None  # where it began (before a ramp's end moved ``t_up``)
    window: deque[_Obs] = field(default_factory=deque)
    n_bad: int = 0  # bad answers in ``window`` (kept as it moves: the users' are hundreds)
    bad_run: list[_Obs] = field(default_factory=list)  # bad answers since the last good one
    t_fault: float | None = None  # the latest fault mark
    component: str | None = None
    faults: int = 0
    t_restart: float | None = None  # restart mark after the latest fault

    @property
    def first_bad(self) -> float | None:
        return self.bad_run[0].at if self.bad_run else None


@dataclass
class _Down:
    up: _Up
    t_fail: float
    t_detected: float
    rule: str
    t_restart: float | None
    kind: str
    evidence: tuple[int, int, str]  # bad answers, answers, their sequence numbers
    streak_start: float | None = None
    streak: int = 0


class CycleTracker:
    """The failure/recovery state machine. Feed it observations and marks in time order.

    ``observe`` and ``mark`` return the cycle they finished, if any (also passed to
    ``on_cycle``, e.g. :meth:`CycleLog.append`, so each cycle reaches disk as it ends).
    ``state`` is ``"up"``, ``"down"``, ``"waiting"`` (before the start) or ``"done"``
    (after the cap or the end).
    """

    def __init__(
        self,
        criteria: Criteria | None = None,
        t_start: float | None = None,
        on_cycle: Callable[[Cycle], None] | None = None,
    ):
        self.criteria = criteria or Criteria()
        self.cycles: list[Cycle] = []
        self.on_cycle = on_cycle
        self._cur: _Up | _Down | None = None
        self._done = False
        self._last_time = -math.inf
        self._ramping = False  # between a ramp_start and its ramp_end mark
        self._ramp_end: float | None = None
        if t_start is not None:
            self._start(t_start)

    # -- state ---------------------------------------------------------------------------
    @property
    def state(self) -> str:
        if self._done:
            return "done"
        if self._cur is None:
            return "waiting"
        return "up" if isinstance(self._cur, _Up) else "down"

    @property
    def t_fail(self) -> float | None:
        """Failure onset of the current down period, if down."""
        return self._cur.t_fail if isinstance(self._cur, _Down) else None

    @property
    def current_kind(self) -> str | None:
        """The current down period's kind (``injected``, ``spontaneous``, ``startup``)."""
        return self._cur.kind if isinstance(self._cur, _Down) else None

    def _start(self, t: float) -> None:
        if self._cur is None and not self._done:
            self._cur = _Up(t_up=t, last_good=t, since=t, t_began=t)

    def _ramp(self, kind: str, t: float) -> None:
        """A ramp mark: between ``ramp_start`` and ``ramp_end`` the load is not fully up;
        at the end, the up period's time on test restarts there (its window is kept, so a
        failure already under way keeps its onset, and is a start-up one)."""
        if kind == RAMP_START:
            self._ramping, self._ramp_end = True, None
            return
        self._ramping, self._ramp_end = False, t
        cur = self._cur
        if isinstance(cur, _Up) and cur.t_up < t:
            cur.t_up = t

    def _emit(self, cycle: Cycle) -> Cycle:
        self.cycles.append(cycle)
        if self.on_cycle is not None:
            self.on_cycle(cycle)
        return cycle

    # -- inputs --------------------------------------------------------------------------
    def mark(self, m: Mark) -> Cycle | None:
        kind = EVENT_ALIASES.get(m.kind, m.kind)
        m = Mark(float(m.t), kind, m.component)
        if self._done:
            return None
        if kind in (RAMP_START, RAMP_END):
            self._ramp(kind, m.t)
            return None
        if kind == START:
            self._start(m.t)
            return None
        if kind == END:
            return self.finish(m.t)
        cap = self._check_cap(m.t)
        if cap is not None:
            return cap
        cur = self._cur
        if kind == FAULT and isinstance(cur, _Up):
            # the latest fault before the failure is the one the cycle is attributed to
            cur.faults += 1
            cur.t_fault, cur.component, cur.t_restart = m.t, m.component, None
        elif kind == RESTART and (
            (isinstance(cur, _Up) and cur.t_fault is not None)
            or (isinstance(cur, _Down) and cur.t_restart is None)
        ):
            cur.t_restart = m.t
        return None

    def observe(
        self,
        t: float,
        ok: bool,
        latency_ms: float,
        complete: bool = True,
        seq: int | None = None,
        source: str = PROBE,
    ) -> Cycle | None:
        """One result: issued at ``t`` (Unix s), answered after ``latency_ms`` (``seq``: the
        probe's request number, kept as evidence). ``source``: the probe's or a user's
        (``load``); an up period judges the criteria's ``failure_source`` only, a down
        period the probe's only."""
        c = self.criteria
        lat = 0.0 if latency_ms is None or math.isnan(latency_ms) else float(latency_ms)
        wanted = c.failure_source if isinstance(self._cur, _Up) else PROBE
        if source != wanted:
            self._last_time = max(self._last_time, float(t) + lat / 1000.0)
            return None
        good = bool(ok) and (bool(complete) or not c.require_complete)
        t = float(t)
        obs = _Obs(at=t + lat / 1000.0, t=t, good=good, seq=seq)
        self._last_time = max(self._last_time, obs.at)
        if self._done or self._cur is None:
            return None
        cap = self._check_cap(obs.at)
        if cap is not None:
            return cap
        if isinstance(self._cur, _Up):
            up = self._cur
            # learned before the period began, or asked before it (a request in flight
            # through the outage that ended it): the previous period's, not this one's
            if obs.at < (up.t_began if up.t_began is not None else up.t_up) or obs.t < up.since:
                return None
            return self._observe_up(up, obs)
        return self._observe_down(self._cur, obs)

    def _observe_up(self, up: _Up, obs: _Obs) -> Cycle | None:
        c = self.criteria
        up.window.append(obs)
        up.n_bad += not obs.good
        while up.window and up.window[0].at <= obs.at - c.window_s:
            up.n_bad -= not up.window.popleft().good
        if obs.good:
            up.last_good = obs.at
            up.bad_run = []
        else:
            up.bad_run.append(obs)
        n = len(up.window)
        if c.max_error_rate is not None and n >= c.min_samples and up.n_bad / n > c.max_error_rate:
            bad = [o for o in up.window if not o.good]
            self._fail(up, bad, n, t_detected=obs.at, rule="error_rate")
            return None
        if c.silence_s is not None and up.bad_run and obs.at - up.last_good >= c.silence_s:
            self._fail(up, up.bad_run, len(up.bad_run), t_detected=obs.at, rule="silence")
        return None

    def _kind(self, up: _Up, t_fail: float) -> str:
        """A failure's kind: before the load was fully up, with a fault, or neither."""
        if self._ramping or (self._ramp_end is not None and t_fail < self._ramp_end):
            return STARTUP
        return INJECTED if up.t_fault is not None else SPONTANEOUS

    def _fail(self, up: _Up, bad: list[_Obs], n: int, t_detected: float, rule: str) -> None:
        t_fail = bad[0].at
        seqs = " ".join(str(o.seq) for o in bad if o.seq is not None)
        self._cur = _Down(
            up=up,
            t_fail=t_fail,
            t_detected=t_detected,
            rule=rule,
            t_restart=up.t_restart,
            kind=self._kind(up, t_fail),
            evidence=(len(bad), n, seqs),
        )

    def _observe_down(self, down: _Down, obs: _Obs) -> Cycle | None:
        c = self.criteria
        wait = c.awaits_restart(down.kind)
        if wait and down.t_restart is None:
            return None
        since = max(down.t_detected, down.t_restart if wait else -math.inf)
        if obs.t < since:
            return None  # asked before the restart (or the detection): proves nothing
        if not obs.good:
            down.streak, down.streak_start = 0, None
            return None
        if down.streak == 0:
            down.streak_start = obs.at
        down.streak += 1
        need = 1 if c.recovery == Recovery.FIRST_COMPLETE else c.consecutive
        if down.streak < need:
            return None
        assert down.streak_start is not None
        return self._recover(down, t_recovered=down.streak_start, t_detected=obs.at)

    def _down_cycle(self, down: _Down, status: CycleStatus, **end: Any) -> Cycle:
        """The cycle of ``down`` and the up period before it; ``end``: how it ended. A
        start-up failure's up period is counted from where it began (not a ramp's end)."""
        up = down.up
        t_up = up.t_up
        if down.kind == STARTUP and up.t_began is not None:
            t_up = min(t_up, up.t_began)
        bad, n, seqs = down.evidence
        return Cycle(
            index=len(self.cycles),
            status=status,
            t_up=t_up,
            ttf_s=down.t_fail - t_up,
            t_fail=down.t_fail,
            t_fail_detected=down.t_detected,
            rule=down.rule,
            t_fault=up.t_fault,
            component=up.component,
            faults=up.faults,
            t_restart=down.t_restart,
            kind=down.kind,
            bad=bad,
            window=n,
            bad_seqs=seqs or None,
            **end,
        )

    def _recover(self, down: _Down, t_recovered: float, t_detected: float) -> Cycle:
        cycle = self._down_cycle(
            down,
            CycleStatus.RECOVERED,
            ttr_s=t_recovered - down.t_fail,
            t_recovered=t_recovered,
            t_recovery_detected=t_detected,
            restart_to_recovery_s=(
                t_recovered - down.t_restart if down.t_restart is not None else None
            ),
            t_end=t_recovered,
        )
        # afresh: no answer to a request asked before the recovery counts in the new period
        self._cur = _Up(t_up=t_recovered, last_good=t_detected, since=t_recovered)
        return self._emit(cycle)

    def _check_cap(self, now: float) -> Cycle | None:
        """The cap runs from the up period's time on test: never during a ramp."""
        cap = self.criteria.cap_s
        up = self._cur
        if cap is None or self._ramping or not isinstance(up, _Up) or now - up.t_up <= cap:
            return None
        return self._censor(up, up.t_up + cap)

    def _censor(self, up: _Up, t_end: float) -> Cycle:
        self._done = True
        self._cur = None
        # observation that ended before the load was fully up says nothing of a lifetime
        early = self._ramping or (self._ramp_end is not None and t_end <= self._ramp_end)
        return self._emit(
            Cycle(
                index=len(self.cycles),
                status=CycleStatus.CENSORED,
                t_up=up.t_up,
                ttf_s=max(0.0, t_end - up.t_up),
                t_fault=up.t_fault,
                component=up.component,
                faults=up.faults,
                t_end=t_end,
                kind=STARTUP if early else None,
            )
        )

    def finish(self, t_end: float | None = None) -> Cycle | None:
        """End of observation (default: the last outcome seen); censors the open period."""
        if self._done:
            return None
        t_end = self._last_time if t_end is None else t_end
        cur = self._cur
        if cur is None:
            self._done = True
            return None
        capped = self._check_cap(t_end)
        if capped is not None:
            return capped
        if isinstance(cur, _Up):
            return self._censor(cur, t_end)
        if cur.t_detected > t_end:  # known only from rows after the end: up till the end
            return self._censor(cur.up, t_end)
        self._done = True
        self._cur = None
        return self._emit(
            self._down_cycle(cur, CycleStatus.UNRECOVERED, ttr_s=t_end - cur.t_fail, t_end=t_end)
        )


def marks_from_events(
    events: Iterable[Mapping[str, Any]] | pd.DataFrame,
    aliases: Mapping[str, str] | None = None,
) -> list[Mark]:
    """Marks from event dicts (a run's ``events.jsonl``: ``t``, ``event`` or ``kind``,
    optional ``component`` or ``role``). Events whose name is not in ``aliases``
    (default :data:`EVENT_ALIASES`) are dropped."""
    aliases = EVENT_ALIASES if aliases is None else aliases
    rows: Iterable[Mapping[str, Any]] = (
        events.to_dict("records") if isinstance(events, pd.DataFrame) else events
    )
    marks = []
    for e in rows:
        name = e.get("event", e.get("kind"))
        kind = aliases.get(str(name))
        if kind is None:
            continue
        comp = e.get("component", e.get("role"))
        marks.append(Mark(float(e["t"]), kind, None if comp is None else str(comp), str(name)))
    return sorted(_tracking_start(marks), key=lambda m: m.t)


def _tracking_start(marks: list[Mark]) -> list[Mark]:
    """The probe's ``start`` mark starts tracking, as it does online; the load's start
    (``load_start``, also a start mark) only where a run has no other."""
    probe = [m for m in marks if m.kind == START and m.event not in ("load_start",)]
    if not probe:
        return marks
    return [m for m in marks if not (m.kind == START and m.event == "load_start")]


_ORDER = {RAMP_START: 0, START: 0, RAMP_END: 1, FAULT: 1, RESTART: 2, END: 4}


def _as_marks(events: Iterable[Mark | Mapping[str, Any]] | pd.DataFrame) -> list[Mark]:
    if isinstance(events, pd.DataFrame):
        return marks_from_events(events)
    items = list(events)
    marks = [m for m in items if isinstance(m, Mark)]
    marks += marks_from_events([e for e in items if not isinstance(e, Mark)])
    marks = [
        Mark(float(m.t), EVENT_ALIASES.get(m.kind, m.kind), m.component, m.event) for m in marks
    ]
    return sorted(_tracking_start(marks), key=lambda m: (m.t, _ORDER.get(m.kind, 3)))


def _bools(col: pd.Series) -> pd.Series:
    """Booleans from a CSV column (True/False, 1/0, strings); missing counts as False."""
    if col.dtype == bool:
        return col
    text = col.astype(str).str.strip().str.lower()
    return text.isin(("true", "1", "1.0", "yes"))


def detect_cycles(
    probe: pd.DataFrame,
    events: Iterable[Mark | Mapping[str, Any]] | pd.DataFrame = (),
    criteria: Criteria | None = None,
    t_end: float | None = None,
    load: pd.DataFrame | None = None,
) -> list[Cycle]:
    """Failure/recovery cycles of a probe timeline (and, where the criteria judge failures
    on the users' requests, of the load generator's per-request records ``load``: ``t``,
    ``latency_ms``, ``ok``).

    ``probe`` has columns ``t`` (issue time, Unix s), ``ok``, ``latency_ms`` and optionally
    ``complete``. ``events`` are :class:`Mark` s or event dicts (see
    :func:`marks_from_events`). Without a start mark the first outcome starts the first up
    period; without an end mark the last outcome (or ``t_end``) ends the observation.
    """
    criteria = criteria or Criteria()
    marks = _as_marks(events)
    df = probe.copy()
    if "complete" not in df.columns:
        df["complete"] = True
    df["_lat"] = pd.to_numeric(df["latency_ms"], errors="coerce").fillna(0.0)
    df["_at"] = pd.to_numeric(df["t"]) + df["_lat"] / 1000.0

    # One time-ordered stream: (time, order, payload); at a tie, marks come before outcomes
    # except the end mark, which comes after them.
    stream: list[tuple[float, int, Any]] = [(m.t, _ORDER.get(m.kind, 3), m) for m in marks]
    seqs = df["seq"] if "seq" in df.columns else pd.Series([None] * len(df), index=df.index)
    stream += [
        (float(at), 3, (float(t), bool(ok), float(la), bool(cp), _opt(sq, int), PROBE))
        for at, t, ok, la, cp, sq in zip(
            df["_at"],
            df["t"],
            _bools(df["ok"]),
            df["_lat"],
            _bools(df["complete"]),
            seqs,
            strict=True,
        )
    ]
    if load is not None and len(load):
        lat = pd.to_numeric(load["latency_ms"], errors="coerce").fillna(0.0)
        t0 = pd.to_numeric(load["t"])
        stream += [
            (float(t + la / 1000.0), 3, (float(t), bool(ok), float(la), True, None, LOAD))
            for t, la, ok in zip(t0, lat, _bools(load["ok"]), strict=True)
        ]
    stream.sort(key=lambda x: (x[0], x[1]))

    tracker = CycleTracker(criteria)
    if not any(m.kind == START for m in marks) and stream:
        tracker.mark(Mark(stream[0][0], START))
    for _, _, item in stream:
        if isinstance(item, Mark):
            tracker.mark(item)
        else:
            t, ok, la, cp, sq, source = item
            tracker.observe(t, ok, la, cp, sq, source)
    tracker.finish(t_end)
    return tracker.cycles


class CycleLog:
    """``cycles.csv`` in a run directory: one flushed line per finished cycle."""

    def __init__(self, path: Path):
        path = Path(path)
        self.path = path / "cycles.csv" if path.is_dir() else path
        self._out = CsvAppender(self.path, CYCLE_COLUMNS)

    def append(self, cycle: Cycle) -> None:
        self._out.write([cycle.as_row()])

    def close(self) -> None:
        self._out.close()


def _opt(v: Any, conv: Callable[[Any], Any]) -> Any:
    if v is None or (isinstance(v, float) and math.isnan(v)) or v == "":
        return None
    return conv(v)


def read_cycles(path: str | Path) -> list[Cycle]:
    """Cycles back from a ``cycles.csv`` (or the run directory holding it)."""
    path = Path(path)
    if path.is_dir():
        path = path / "cycles.csv"
    if not path.exists():
        return []
    # Complete lines only: a harness killed mid-write leaves an empty file or a partial row.
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    complete = "".join(line for line in lines if line.endswith("\n"))
    if complete.count("\n") < 2:  # no header, or a header and no row yet
        return []
    df = pd.read_csv(io.StringIO(complete))
    out = []
    for r in df.to_dict("records"):
        kw: dict[str, Any] = {}
        for f in fields(Cycle):
            v = r.get(f.name)
            if f.name == "status":
                kw[f.name] = CycleStatus(v)
            elif f.name in ("index", "faults"):
                kw[f.name] = int(v)
            elif f.name in ("bad", "window"):
                kw[f.name] = _opt(v, int)
            elif f.name in ("rule", "component", "kind", "bad_seqs"):
                kw[f.name] = _opt(v, str)
            elif f.name in ("t_up", "ttf_s"):
                kw[f.name] = float(v)
            else:
                kw[f.name] = _opt(v, float)
        out.append(censored_at_end(Cycle(**kw)))
    return out


def censored_at_end(cycle: Cycle) -> Cycle:
    """A cycle written before the tracker censored at the end of observation (its failure
    known only from rows after the end: detected after ``t_end``) becomes what the tracker
    now records: an up period censored at ``t_end``."""
    late = (
        cycle.failed
        and cycle.t_end is not None
        and cycle.t_fail_detected is not None
        and cycle.t_fail_detected > cycle.t_end
        and not cycle.recovered
    )
    if not late:
        return cycle
    assert cycle.t_end is not None
    return Cycle(
        index=cycle.index,
        status=CycleStatus.CENSORED,
        t_up=cycle.t_up,
        ttf_s=max(cycle.t_end - cycle.t_up, 0.0),
        t_fault=cycle.t_fault,
        component=cycle.component,
        faults=cycle.faults,
        t_end=cycle.t_end,
        kind=STARTUP if cycle.kind == STARTUP else None,
    )
