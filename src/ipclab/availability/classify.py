"""Which failures count, and the raw requests that show each (docs/availability.md, "Which
failures count").

Every failed cycle of a run gets a kind (``Cycle.kind``): ``injected`` (a fault mark in its
up period), ``spontaneous`` (none: method 1's load-induced failures, or a failure of no
injected fault in method 2) or ``startup`` (its onset before the load was fully up: the
run's ``ramp_end`` mark, else the load's start plus users / spawn rate; apart, never a time
to failure). The detector records the kind in ``cycles.csv``; for cycles written before it
did, :func:`kind_of` infers it by the same rules.

Each failed cycle's evidence (:data:`EVIDENCE_COLUMNS`, ``evidence.csv``):

* the probe's: the bad answers behind the rule that fired, and whether every one of them
  answers a request asked within the cycle's up period (``probe_own``). The detector counts
  no answer to a request asked before a recovery (``ipclab.availability.tracker``), so a
  cycle it classed has its own evidence; a cycle written before (no ``kind``) has it when
  its up period was the run's first, or its onset came at least the probe's timeout after
  its up period began (no request asked before could still be answered then); else, with
  the run's ``probe.csv``, from the rows;
* the load generator's: its failed requests and its missing ones in the failure's span
  (from the up period's start to ``window_s`` after the detection, before the next fault
  mark): from its per-request records (failed: not ok; missing: not answered within the
  probe's timeout) or, where only Locust's per-second history is kept, its failures and its
  stalled seconds (no request completed), in the seconds wholly inside the span.

A spontaneous failure counts only if either shows it (``shown``). One that does not is not
a failure: in a run that injects faults its up period runs on into the next cycle's
(:func:`counted_cycles`: merged, the fault marks in it counted); in method 1, where the
harness restarted the stack on it, the run is censored at that restart. Injected and
start-up failures always count (start-up ones apart). :func:`run_cycles` gives a run's
cycles as they count: what the study's tables read.

``python -m ipclab.availability.classify RUN_DIR ...`` prints each failure's evidence and
MTTF, MTTR and A before and after, per method, style and load; ``--write DIR`` writes
``evidence.csv`` and ``cycles_counted.csv`` there (never into a committed run directory).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from ipclab.availability.estimators import availability_summary
from ipclab.availability.model import (
    FAULT,
    INJECTED,
    SPONTANEOUS,
    STARTUP,
    Cycle,
    CycleStatus,
    Mark,
)
from ipclab.availability.probe import read_probe
from ipclab.availability.tracker import LOAD, marks_from_events, read_cycles
from ipclab.findings import fill_blocks
from ipclab.runs import Run, read_run

#: the harness's own acts on the stack (events.jsonl): a failure's evidence ends at the first
INTERVENTIONS = ("kill", "fault", "stop_component", "restart", "end", "load_stop")

EVIDENCE_COLUMNS = (
    "cycle", "kind", "rule", "t_up", "t_fail", "t_fail_detected", "probe_bad", "probe_window",
    "probe_seqs", "probe_own", "probe_source", "load_source", "span_from", "span_to",
    "load_requests", "load_failed", "load_missing", "load_seconds", "shown", "counted", "why",
)  # fmt: skip


# --------------------------------------------------------------------------- the run


@dataclass(frozen=True)
class RunFacts:
    """What classification reads of a run: its method, criteria, marks and records."""

    method: str
    window_s: float
    timeout_s: float
    period_s: float
    ramp_end: float | None
    marks: list[Mark]
    interventions: list[float]  # the harness's kills, stops, restarts and end, in time order
    probe: pd.DataFrame
    load: LoadRecord


def superseded(parameters: Mapping[str, Any]) -> bool:
    """Whether a run is a method-1 run made before the current method: its failures judged
    by the probe (not ``failure_source`` = ``load``) or its users spawned on no recorded
    ramp (issue 46). Such a run is listed, never judged, nor pooled with current runs
    (docs/statistics.md section 6); False for every other run."""
    if parameters.get("method") != "until_failure":
        return False
    criteria = (parameters.get("common") or {}).get("criteria") or {}
    return criteria.get("failure_source") != LOAD or not parameters.get("ramp")


def ramp_end_of(run: Run) -> float | None:
    """When the load was fully up: the run's ``ramp_end`` mark where it records one (the
    runner's: its last user spawned, and one detector window more); else its ``load_start``
    plus users / spawn rate (a run with none stated spawned every user in the first second)
    plus one window of its error-rate rule (``window_s``), the first window the detector
    judged on the full load alone; None without a ``load_start``."""
    events = run.events()
    for e in events:
        if e.get("event") == "ramp_end":
            return float(e["t"])
    start = next((e for e in events if e.get("event") == "load_start"), None)
    if start is None:
        return None
    users = float(start.get("users") or run.parameters.get("users") or 0)
    rate = (run.parameters.get("plan") or {}).get("spawn_rate") or users or 1.0
    return float(start["t"]) + users / float(rate) + _window_s(run)


def _window_s(run: Run) -> float:
    criteria = (run.parameters.get("common") or {}).get("criteria") or {}
    return float(criteria.get("window_s") or 5.0)


def facts(run: Run) -> RunFacts:
    p = run.parameters
    common = p.get("common") or {}
    criteria = common.get("criteria") or {}
    return RunFacts(
        method=str(p.get("method") or run.manifest.get("kind") or ""),
        window_s=float(criteria.get("window_s") or 5.0),
        timeout_s=float(common.get("probe_timeout_s") or 1.0),
        period_s=float(common.get("probe_period_ms") or 100.0) / 1000.0,
        ramp_end=ramp_end_of(run),
        marks=marks_from_events(run.events()),
        interventions=sorted(
            float(e["t"]) for e in run.events() if e.get("event") in INTERVENTIONS
        ),
        probe=read_probe(run.path),
        load=load_record(run),
    )


@dataclass(frozen=True)
class LoadRecord:
    """The load generator's records: per request (``requests``: ``t`` issue time,
    ``latency_ms``, ``ok``), or per second (``seconds``: ``t`` the history row's second,
    ``prev`` the previous row's, ``completed``, ``failed``, ``users``), or none."""

    source: str
    requests: pd.DataFrame | None = None
    seconds: pd.DataFrame | None = None


def load_record(run: Run) -> LoadRecord:
    req = run.requests()
    if len(req) and {"t", "latency_ms", "ok"} <= set(req.columns):
        return LoadRecord("requests", requests=req[["t", "latency_ms", "ok"]].copy())
    path = run.path / "locust_stats_history.csv"
    if not path.exists():
        return LoadRecord("none")
    h = pd.read_csv(path)
    h = h[h["Name"] == "Aggregated"] if "Name" in h.columns else h
    h = h.drop_duplicates("Timestamp", keep="last").sort_values("Timestamp")
    total = pd.to_numeric(h["Total Request Count"], errors="coerce")
    failed = pd.to_numeric(h["Total Failure Count"], errors="coerce")
    seconds = pd.DataFrame(
        {
            "t": h["Timestamp"].astype(float).to_numpy(),
            "prev": h["Timestamp"].astype(float).shift(1).to_numpy(),
            "completed": total.diff().to_numpy(),
            "failed": failed.diff().to_numpy(),
            "users": pd.to_numeric(h["User Count"], errors="coerce").to_numpy(),
        }
    ).dropna()
    return LoadRecord("history", seconds=seconds)


# --------------------------------------------------------------------------- evidence


def kind_of(cycle: Cycle, ramp_end: float | None) -> str | None:
    """A cycle's kind: the detector's where it recorded one, else by the same rules."""
    if cycle.kind:
        return cycle.kind
    early = ramp_end is not None and (
        (cycle.failed and cycle.t_fail is not None and cycle.t_fail < ramp_end)
        or (not cycle.failed and cycle.t_end is not None and cycle.t_end <= ramp_end)
    )
    if early:
        return STARTUP
    if not cycle.failed:
        return None
    return INJECTED if cycle.t_fault is not None else SPONTANEOUS


def load_evidence(load: LoadRecord, a: float, b: float, timeout_s: float) -> dict[str, Any]:
    """The load generator's failed and missing requests in the span [a, b], and the seconds
    they fell in (whole seconds of the history, or the requests' issue seconds)."""
    out: dict[str, Any] = {"load_source": load.source, "load_requests": None}
    out.update(load_failed=None, load_missing=None, load_seconds="")
    if load.requests is not None:
        r = load.requests
        r = r[(r["t"] >= a) & (r["t"] <= b)]
        failed = ~r["ok"].astype(bool)
        missing = r["ok"].astype(bool) & (pd.to_numeric(r["latency_ms"]) > timeout_s * 1000)
        bad = r[failed | missing]
        secs = sorted({int(math.floor(t)) for t in bad["t"]})
        out.update(load_requests=len(r), load_failed=int(failed.sum()))
        out.update(load_missing=int(missing.sum()), load_seconds=_seconds(secs))
    elif load.seconds is not None:
        s = load.seconds
        s = s[(s["prev"] >= a) & (s["t"] + 1 <= b)]  # a row's counts lie in (prev, t + 1)
        stalled = (s["completed"] <= 0) & (s["users"] > 0)
        bad = s[(s["failed"] > 0) | stalled]
        out.update(load_requests=int(s["completed"].sum()), load_failed=int(s["failed"].sum()))
        out.update(load_missing=int(stalled.sum()), load_seconds=_seconds(bad["t"].astype(int)))
    return out


def _seconds(secs: Any) -> str:
    return " ".join(str(int(s)) for s in secs)


def probe_evidence(cycle: Cycle, first: bool, f: RunFacts) -> dict[str, Any]:
    """The probe's bad answers behind ``cycle``'s failure and whether each answers a request
    asked within its up period (see the module's docstring for each source)."""
    out: dict[str, Any] = {"probe_bad": cycle.bad, "probe_window": cycle.window}
    out["probe_seqs"] = cycle.bad_seqs or ""
    assert cycle.t_fail is not None and cycle.t_fail_detected is not None
    if cycle.kind:  # the detector's own count: answers to earlier requests never counted
        return {**out, "probe_own": True, "probe_source": "detector"}
    if first or cycle.t_fail - cycle.t_up >= f.timeout_s:
        why = "first up period" if first else "onset a timeout after the up period began"
        return {**out, "probe_own": True, "probe_source": why}
    p = f.probe
    if not len(p):
        return {**out, "probe_own": False, "probe_source": "not kept (no probe.csv)"}
    at = p["t"] + pd.to_numeric(p["latency_ms"], errors="coerce").fillna(0.0) / 1000.0
    good = p["ok"].astype(bool) & p["complete"].astype(bool)
    rows = p[(at >= cycle.t_fail) & (at <= cycle.t_fail_detected) & ~good]
    own = rows[rows["t"] >= cycle.t_up]
    seqs = " ".join(str(int(s)) for s in own["seq"]) if "seq" in own else ""
    return {
        "probe_bad": len(own), "probe_window": None, "probe_seqs": seqs,
        "probe_own": bool(len(rows)) and len(own) == len(rows), "probe_source": "probe.csv",
    }  # fmt: skip


def _next(times: Sequence[float], after: float) -> float:
    return min((t for t in times if t > after), default=math.inf)


def evidence_row(cycle: Cycle, first: bool, f: RunFacts, t_end: float) -> dict[str, Any]:
    """One failed cycle's kind, evidence and whether it counts (EVIDENCE_COLUMNS)."""
    assert cycle.t_fail is not None and cycle.t_fail_detected is not None
    kind = kind_of(cycle, f.ramp_end)
    a = cycle.t_up
    # to a window after the detection, before the harness next acted on the stack
    b = min(cycle.t_fail_detected + f.window_s, _next(f.interventions, cycle.t_fail), t_end)
    probe = probe_evidence(cycle, first, f)
    load = load_evidence(f.load, a, b, f.timeout_s)
    load_shows = bool((load["load_failed"] or 0) + (load["load_missing"] or 0))
    shown = bool(probe["probe_own"]) or load_shows
    counted = kind != SPONTANEOUS or shown
    why = (
        "an injected fault" if kind == INJECTED
        else "before the load was fully up: apart, not a time to failure" if kind == STARTUP
        else "the probe's own requests show it" if probe["probe_own"]
        else "the load generator's requests show it" if load_shows
        else "no failed or missing request of its own: not a failure"
    )  # fmt: skip
    return {
        "cycle": cycle.index, "kind": kind, "rule": cycle.rule, "t_up": cycle.t_up,
        "t_fail": cycle.t_fail, "t_fail_detected": cycle.t_fail_detected, **probe,
        "span_from": a, "span_to": b, **load, "shown": shown, "counted": counted, "why": why,
    }  # fmt: skip


# --------------------------------------------------------------------------- counting


@dataclass(frozen=True)
class Classified:
    """A run's cycles as recorded (with their kinds), their evidence, and as they count."""

    recorded: list[Cycle]
    evidence: pd.DataFrame
    counted: list[Cycle]


def classify(cycles: Sequence[Cycle], f: RunFacts) -> Classified:
    """Kinds, evidence and the cycles that count, for one run's cycles."""
    t_end = max((c.t_end for c in cycles if c.t_end is not None), default=math.inf)
    typed = [replace(c, kind=kind_of(c, f.ramp_end)) for c in cycles]
    # judged on the cycles as recorded: whether the detector classed them says where the
    # probe's evidence comes from
    rows = [evidence_row(c, i == 0, f, t_end) for i, c in enumerate(cycles) if c.failed]
    evidence = pd.DataFrame(rows, columns=list(EVIDENCE_COLUMNS))
    dropped = set(evidence.loc[~evidence["counted"].astype(bool), "cycle"]) if len(rows) else set()
    if f.method == "until_failure":
        counted = censor_uncounted(typed, dropped)
    else:
        counted = merge_uncounted(typed, dropped, f.marks)
    # an up period censored within one probe period of its start (the run's end right
    # after its last recovery) holds no answer of its own: no observation
    counted = [c for c in counted if c.failed or c.ttf_s >= f.period_s]
    return Classified(typed, evidence, [replace(c, index=i) for i, c in enumerate(counted)])


def merge_uncounted(
    cycles: Sequence[Cycle], dropped: set[int], marks: Sequence[Mark]
) -> list[Cycle]:
    """Cycles whose failure does not count folded into the next cycle's up period (the
    stack was up through them); the fault marks in a merged up period counted again."""
    out: list[Cycle] = []
    start: float | None = None
    for c in cycles:
        if c.index in dropped:
            start = c.t_up if start is None else start
            continue
        if start is not None:
            end = c.t_fail if c.failed else c.t_end
            assert end is not None
            faults = sum(1 for m in marks if m.kind == FAULT and start <= m.t < end)
            c = replace(c, t_up=start, ttf_s=end - start, faults=max(faults, c.faults))
            start = None
        out.append(replace(c, index=len(out)))
    if start is not None:  # observation ended in a failure that does not count: up to the end
        last = cycles[-1]
        t_end = last.t_end if last.t_end is not None else start
        faults = sum(1 for m in marks if m.kind == FAULT and start <= m.t < t_end)
        out.append(
            Cycle(index=len(out), status=CycleStatus.CENSORED, t_up=start, ttf_s=t_end - start,
                  faults=faults, t_end=t_end)
        )  # fmt: skip
    return out


def censor_uncounted(cycles: Sequence[Cycle], dropped: set[int]) -> list[Cycle]:
    """Method 1: a failure that does not count ends its run's observation where the harness
    restarted the stack on it (or at its onset): the up period censored there."""
    out: list[Cycle] = []
    for c in cycles:
        if c.index in dropped:
            end = c.t_restart if c.t_restart is not None else c.t_fail
            assert end is not None
            out.append(
                Cycle(index=len(out), status=CycleStatus.CENSORED, t_up=c.t_up,
                      ttf_s=max(end - c.t_up, 0.0), t_fault=c.t_fault, component=c.component,
                      faults=c.faults, t_end=end)
            )  # fmt: skip
            break  # what followed was the restarted stack's, not this observation's
        out.append(replace(c, index=len(out)))
    return out


def classify_run(run: Run | str | Path) -> Classified:
    run = run if isinstance(run, Run) else read_run(run)
    return classify(read_cycles(run.path), facts(run))


def run_cycles(run: Run | str | Path) -> list[Cycle]:
    """A run's cycles as they count (what the study's tables read)."""
    return classify_run(run).counted


# --------------------------------------------------------------------------- before, after


def _info(run: Run) -> dict[str, Any]:
    p = run.parameters
    return {
        "method": p.get("method"),
        "style": run.manifest.get("style"),
        "users": int(p.get("users") or 0),
        "reconnect": (p.get("options") or {}).get("reconnect") or "default",
        "run": run.path.name,
    }


def before_after(runs: Sequence[Run]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every failure's evidence (one row per failed cycle, with its run), and MTTF, MTTR and
    A per method, style and load with the cycles as recorded and as they count (pooled over
    the runs, as the study's summaries are; start-up failures counted apart, not in the
    estimators)."""
    evidence, pooled = [], {}
    for run in runs:
        c = classify_run(run)
        info = _info(run)
        if len(c.evidence):
            evidence.append(c.evidence.assign(**info))
        key = (info["method"], info["style"], info["users"], info["reconnect"])
        before, after = pooled.setdefault(key, ([], []))
        before.extend(c.recorded)
        after.extend(c.counted)
    rows = []
    for (method, style, users, mode), (before, after) in sorted(pooled.items(), key=str):
        for when, cycles in (("recorded", before), ("counted", after)):
            # as they count: start-up failures apart, never in the estimators
            timed = cycles if when == "recorded" else [c for c in cycles if c.kind != STARTUP]
            s = availability_summary(timed)
            rows.append({
                "method": method, "style": style, "users": users, "reconnect": mode,
                "cycles": when,
                "failures": s.failures, "spontaneous": _count(cycles, SPONTANEOUS),
                "startup": _count(cycles, STARTUP), "faults": s.faults_injected,
                "mttf_s": s.mttf.value, "mttr_s": s.mttr.value, "availability":
                s.availability.value, "time_availability": s.time_availability,
                "restart_to_recovery_s": s.restart_to_recovery_s,
            })  # fmt: skip
    info_cols = ["method", "style", "users", "reconnect", "run"]
    ev = pd.concat(evidence, ignore_index=True) if evidence else pd.DataFrame()
    if len(ev):
        ev = ev[info_cols + [c for c in ev.columns if c not in info_cols]]
    return ev, pd.DataFrame(rows)


def before_after_markdown(table: pd.DataFrame, label: str, **cell: Any) -> str:
    """One cell of :func:`before_after`'s table (``cell``: method, style, users, reconnect)
    as the markdown rows docs/availability.md's block ``detector-rest-docker`` holds."""
    sel = table
    for k, v in cell.items():
        sel = sel[sel[k] == v]
    lines = [f"| {label} | failures | faults | MTTF s | MTTR s | A |", "|---|---|---|---|---|---|"]
    for _, r in sel.iterrows():
        lines.append(
            f"| {r['cycles']} | {int(r['failures'])} | {int(r['faults'])} | "
            f"{r['mttf_s']:.2f} | {r['mttr_s']:.2f} | {r['availability']:.3f} |"
        )
    return "\n".join(lines)


def _count(cycles: Sequence[Cycle], kind: str) -> int:
    return sum(1 for c in cycles if c.failed and c.kind == kind)


def counted_frame(runs: Sequence[Run]) -> pd.DataFrame:
    """Every run's cycles as they count, with the run's method, style, load and name."""
    rows = [{**_info(r), **c.as_row()} for r in runs for c in run_cycles(r)]
    return pd.DataFrame(rows)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m ipclab.availability.classify",
        description="Each failure's kind and evidence; MTTF, MTTR and A before and after.",
    )
    p.add_argument("runs", nargs="+", type=Path, help="run directories (or folders of runs)")
    p.add_argument("--write", type=Path, help="write evidence.csv and cycles_counted.csv here")
    p.add_argument("--all", action="store_true", help="every failure, not only spontaneous")
    p.add_argument(
        "--doc",
        type=Path,
        help="fill this doc's block detector-rest-docker (run on the docker reference)",
    )
    return p


def _runs(paths: Sequence[Path]) -> list[Run]:
    out = []
    for path in paths:
        dirs = [path] if (path / "manifest.json").exists() else sorted(path.iterdir())
        for d in dirs:
            if (d / "cycles.csv").exists() and (d / "manifest.json").exists():
                out.append(read_run(d))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    runs = _runs(a.runs)
    if not runs:
        print("no availability run (a directory with manifest.json and cycles.csv)")
        return 2
    evidence, table = before_after(runs)
    if len(evidence):
        shown = evidence if a.all else evidence[evidence["kind"] != INJECTED]
        cols = ["run", "cycle", "kind", "probe_source", "load_source", "load_requests",
                "load_failed", "load_missing", "load_seconds", "counted", "why"]  # fmt: skip
        with pd.option_context("display.width", 250, "display.max_rows", 500):
            print(shown[cols].to_string(index=False))
    with pd.option_context("display.width", 250, "display.max_rows", 500):
        print(table.round(4).to_string(index=False))
    if a.doc is not None:
        block = before_after_markdown(
            table, "docker REST fault injection", method="fault_injection", style="rest",
            reconnect="default",
        )  # fmt: skip
        fill_blocks(a.doc, {"detector-rest-docker": block})
    if a.write is not None:
        a.write.mkdir(parents=True, exist_ok=True)
        evidence.to_csv(a.write / "evidence.csv", index=False)
        counted_frame(runs).to_csv(a.write / "cycles_counted.csv", index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
