"""Availability core: cycles on synthetic timelines with known answers, censoring, criteria
edge cases, the fault schedule, outage classes, the published table, and the probe against a
real aiohttp server (real sockets) that is made to fail for a while."""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from aiohttp import web
from scipy import stats

from ipclab.availability.estimators import summaries_frame
from ipclab.availability.faults import fault_schedule
from ipclab.availability.outage import CLASSES, classify_requests, outage_table
from ipclab.availability.probe import Probe, read_probe, spawn_probe
from ipclab.availability.tracker import (
    Criteria,
    Cycle,
    CycleLog,
    CycleStatus,
    CycleTracker,
    Mark,
    Recovery,
    availability_summary,
    detect_cycles,
    mttf_chi2_interval,
    read_cycles,
)
from ipclab.procs import free_port
from ipclab.runs import RunWriter, read_run
from ipclab.stacks import resolve
from ipclab.studies.shafabakhsh.availability_published import (
    compare_published_availability,
    load_published_availability,
)

SHOP = resolve("shop-rest")

# ---------------------------------------------------------------------------------------
# synthetic timelines


def timeline(
    spans: Sequence[tuple[float, float, bool]],
    period: float = 0.1,
    latency_ms: float = 0.0,
    complete: bool = True,
) -> pd.DataFrame:
    """Probe rows every ``period`` s; in [start, end) the outcome is ``ok``."""
    rows = []
    for start, end, ok in spans:
        n = int(round((end - start) / period))
        for i in range(n):
            rows.append(
                {
                    "t": round(start + i * period, 6),
                    "ok": ok,
                    "status": 200 if ok else 503,
                    "latency_ms": latency_ms,
                    "complete": complete and ok,
                }
            )
    return pd.DataFrame(rows)


FAST = Criteria(window_s=1.0, min_samples=5, max_error_rate=0.5, silence_s=2.0)


def test_one_fault_cycle_known_answer() -> None:
    probe = timeline([(0, 100, True), (100, 120, False), (120, 200, True)])
    events = [
        Mark(0, "start"),
        Mark(100, "fault", "reviews"),
        Mark(110, "restart", "reviews"),
        Mark(200, "end"),
    ]
    cycles = detect_cycles(probe, events, FAST)
    assert [c.status for c in cycles] == [CycleStatus.RECOVERED, CycleStatus.CENSORED]
    c = cycles[0]
    assert c.ttf_s == pytest.approx(100.0)
    assert c.ttr_s == pytest.approx(20.0)
    assert c.restart_to_recovery_s == pytest.approx(10.0)
    assert c.component == "reviews" and c.faults == 1 and c.rule == "error_rate"
    assert c.t_fail_detected is not None and 100.0 <= c.t_fail_detected <= 101.0
    assert cycles[1].ttf_s == pytest.approx(80.0)  # censored tail: time on test, no failure

    s = availability_summary(cycles)
    assert s.failures == 1 and s.recoveries == 1 and s.censored == 1
    assert s.mttf.value == pytest.approx(180.0)  # (100 + 80) s on test / 1 failure
    assert s.mttr.value == pytest.approx(20.0)
    assert s.availability.value == pytest.approx(180.0 / 200.0)
    assert s.time_availability == pytest.approx(0.9)
    assert s.restart_to_recovery_s == pytest.approx(10.0)


def test_an_answer_asked_before_the_restart_is_not_a_recovery() -> None:
    """A slow answer issued while the stack was down but arriving after the restart (a
    request still in flight) proves nothing about the restarted stack."""
    probe = timeline([(0, 100, True), (100, 120, False), (120, 200, True)])
    stale = pd.DataFrame(
        [{"t": 109.0, "ok": True, "status": 200, "latency_ms": 2000.0, "complete": True}]
    )  # asked at 109 s, answered at 111 s
    probe = pd.concat([probe, stale]).sort_values("t", kind="stable").reset_index(drop=True)
    events = [
        Mark(0, "start"),
        Mark(100, "fault", "reviews"),
        Mark(110, "restart", "reviews"),
        Mark(200, "end"),
    ]
    c = detect_cycles(probe, events, FAST)[0]
    assert c.t_recovered == pytest.approx(120.0)
    assert c.restart_to_recovery_s == pytest.approx(10.0)


def test_many_cycles_known_means() -> None:
    rng = np.random.default_rng(7)
    ups = rng.uniform(20, 60, size=12).round(1)
    downs = rng.uniform(3, 9, size=12).round(1)
    spans, events, t = [], [Mark(0.0, "start")], 0.0
    for up, down in zip(ups, downs, strict=True):
        spans += [(t, t + up, True), (t + up, t + up + down, False)]
        events += [Mark(t + up, "fault", "cart"), Mark(t + up + 0.5, "restart", "cart")]
        t = round(t + up + down, 6)
    spans.append((t, t + 5, True))
    events.append(Mark(t, "end"))  # end at the last recovery: the tail adds no time on test
    cycles = detect_cycles(timeline(spans), events, FAST)
    done = [c for c in cycles if c.recovered]
    assert len(done) == 12
    np.testing.assert_allclose([c.ttf_s for c in done], ups, atol=1e-6)
    np.testing.assert_allclose([c.ttr_s for c in done], downs, atol=1e-6)
    s = availability_summary(cycles, confidence=0.9)
    assert s.mttf.value == pytest.approx(ups.mean())
    assert s.mttr.value == pytest.approx(downs.mean())
    a = ups.mean() / (ups.mean() + downs.mean())
    assert s.availability.value == pytest.approx(a)
    for est in (s.mttf, s.mttf_boot, s.mttr, s.availability):
        assert est.lower is not None and est.upper is not None
        assert est.lower <= est.value <= est.upper
    assert s.notes == []  # 12 cycles, nothing censored, nothing masked
    again = availability_summary(cycles, confidence=0.9)
    assert again.availability == s.availability  # bootstrap is seeded
    table = summaries_frame({"shop-rest": cycles, "shop-grpc": cycles[:3]}, confidence=0.9)
    assert list(table["group"]) == ["shop-rest", "shop-grpc"]
    assert table.loc[0, "availability"] == pytest.approx(a)
    assert "only 3 cycles" in table.loc[1, "notes"]


def test_load_induced_failure_then_restart() -> None:
    # method 1: the stack fails on its own, the runner restarts it after the detection
    probe = timeline([(0, 150, True), (150, 175, False), (175, 190, True)])
    events = [Mark(0, "start"), Mark(160, "restart"), Mark(190, "end")]
    criteria = Criteria(window_s=5, min_samples=5, silence_s=10, cap_s=600)
    c = detect_cycles(probe, events, criteria)[0]
    assert c.status == CycleStatus.RECOVERED and c.t_fault is None
    assert (c.ttf_s, c.ttr_s, c.restart_to_recovery_s) == pytest.approx((150, 25, 15))


def test_no_failure_within_cap_is_censored_not_a_number() -> None:
    probe = timeline([(0, 300, True)], period=0.5)
    cycles = detect_cycles(probe, [Mark(0, "start")], Criteria(cap_s=200.0))
    assert len(cycles) == 1
    c = cycles[0]
    assert c.status == CycleStatus.CENSORED and c.ttf_s == pytest.approx(200.0)
    assert c.ttr_s is None and not c.failed
    s = availability_summary(cycles)
    assert s.mttf.value is None and s.mttf.censored
    assert s.mttf.lower == pytest.approx(2 * 200.0 / stats.chi2.ppf(0.95, 2))
    assert s.mttf.upper is None
    assert s.mttr.value is None
    assert s.availability.value == 1.0  # up over the whole observation (issue 47.1)
    assert any("censored" in n for n in s.notes)


def test_cap_stops_tracking_even_if_failure_follows() -> None:
    probe = timeline([(0, 250, True), (250, 300, False)])
    cycles = detect_cycles(probe, [Mark(0, "start")], Criteria(cap_s=200.0))
    assert [c.status for c in cycles] == [CycleStatus.CENSORED]
    assert cycles[0].ttf_s == pytest.approx(200.0)


def test_unrecovered_failure_is_censored_repair() -> None:
    probe = timeline([(0, 50, True), (50, 80, False)])
    cycles = detect_cycles(probe, [Mark(0, "start"), Mark(51, "restart"), Mark(80, "end")], FAST)
    assert [c.status for c in cycles] == [CycleStatus.UNRECOVERED]
    assert cycles[0].ttf_s == pytest.approx(50) and cycles[0].ttr_s == pytest.approx(30)
    s = availability_summary(cycles)
    assert s.mttf.value == pytest.approx(50.0)
    assert s.mttr.value is None and s.mttr.censored
    assert s.availability.value is None
    assert s.time_availability == pytest.approx(50 / 80)


def test_mttf_with_censored_observations_is_time_on_test_over_failures() -> None:
    def cyc(i: int, up: float, status: CycleStatus, down: float | None = None) -> Cycle:
        return Cycle(index=i, status=status, t_up=0.0, ttf_s=up, ttr_s=down)

    cycles = [
        cyc(0, 100, CycleStatus.RECOVERED, 10),
        cyc(1, 300, CycleStatus.CENSORED),
        cyc(2, 50, CycleStatus.RECOVERED, 20),
        cyc(3, 250, CycleStatus.CENSORED),
        cyc(4, 200, CycleStatus.RECOVERED, 30),
    ]
    s = availability_summary(cycles)
    assert s.up_s == 900 and s.failures == 3 and s.censored == 2
    assert s.mttf.value == pytest.approx(900 / 3)  # not the naive mean 350/3 of the failures
    assert s.mttr.value == pytest.approx(20.0)
    assert s.availability.value == pytest.approx(300 / 320)


def test_chi2_interval_formula_and_coverage() -> None:
    e = mttf_chi2_interval(1000.0, 4, 0.9)
    assert e.value == 250.0
    assert e.lower == pytest.approx(2000 / stats.chi2.ppf(0.95, 10))
    assert e.upper == pytest.approx(2000 / stats.chi2.ppf(0.05, 8))
    # coverage: exponential lifetimes, failure-terminated at r = 10 (conservative formula)
    rng = np.random.default_rng(1)
    hits = 0
    for _ in range(2000):
        t = rng.exponential(100.0, size=10).sum()
        est = mttf_chi2_interval(t, 10, 0.95)
        assert est.lower is not None and est.upper is not None
        hits += est.lower <= 100.0 <= est.upper
    assert hits / 2000 >= 0.94
    with pytest.raises(ValueError):
        mttf_chi2_interval(10.0, 1, 1.5)


# ---------------------------------------------------------------------------------------
# criteria edge cases


def test_error_rate_at_threshold_does_not_fail() -> None:
    # alternate good and bad: 50 % errors, threshold 0.5 means "more than half"
    t = np.round(np.arange(0, 60, 0.1), 6)
    probe = pd.DataFrame({"t": t, "ok": np.arange(len(t)) % 2 == 0, "latency_ms": 0.0})
    # a window of 1.95 s always holds 20 responses (19.5 periods), 10 of them bad
    crit = Criteria(window_s=1.95, min_samples=5, max_error_rate=0.5, silence_s=None)
    assert [c.status for c in detect_cycles(probe, (), crit)] == [CycleStatus.CENSORED]
    # 2 bad in 3: over the threshold
    probe["ok"] = np.arange(len(t)) % 3 == 0
    cycles = detect_cycles(probe, (), crit)
    assert cycles[0].failed and cycles[0].rule == "error_rate"


def test_min_samples_and_silence_rule() -> None:
    # a sparse probe (one request per 2 s) never fills the error-rate window ...
    probe = timeline([(0, 20, True), (20, 40, False)], period=2.0)
    crit = Criteria(window_s=3.0, min_samples=5, max_error_rate=0.5, silence_s=None)
    assert not detect_cycles(probe, (), crit)[0].failed
    # ... the silence rule catches it: onset at the first bad response, detected Y s later
    crit = Criteria(window_s=3.0, min_samples=5, max_error_rate=0.5, silence_s=6.0)
    c = detect_cycles(probe, (), crit)[0]
    assert c.status == CycleStatus.UNRECOVERED and c.rule == "silence"
    assert c.t_fail == pytest.approx(20.0)
    assert c.t_fail_detected == pytest.approx(24.0)  # last good at 18: 24 - 18 >= 6


def test_silence_shorter_than_y_is_no_failure() -> None:
    probe = timeline([(0, 10, True), (10, 11.5, False), (11.5, 30, True)])
    crit = Criteria(max_error_rate=None, silence_s=2.0)
    assert [c.status for c in detect_cycles(probe, (), crit)] == [CycleStatus.CENSORED]


def test_masked_fault_is_counted_not_a_failure() -> None:
    probe = timeline([(0, 30, True), (30, 30.3, False), (30.3, 60, True)])
    events = [Mark(0, "start"), Mark(30, "fault", "broker"), Mark(30.1, "restart", "broker")]
    crit = Criteria(window_s=5.0, min_samples=5, silence_s=2.0)
    cycles = detect_cycles(probe, events, crit)
    assert [c.status for c in cycles] == [CycleStatus.CENSORED]
    s = availability_summary(cycles)
    assert s.faults_injected == 1 and s.failures == 0
    assert any("caused no failure" in n for n in s.notes)


def test_incomplete_page_counts_as_bad_when_required() -> None:
    probe = timeline([(0, 10, True), (10, 20, True), (20, 30, True)])
    probe.loc[(probe.t >= 10) & (probe.t < 20), "complete"] = False  # 200 but a part missing
    events = [Mark(0, "start"), Mark(15, "restart")]
    c = detect_cycles(probe, events, Criteria(window_s=1, silence_s=None, await_restart=False))[0]
    assert c.status == CycleStatus.RECOVERED
    assert (c.ttf_s, c.ttr_s) == pytest.approx((10.0, 10.0))
    relaxed = Criteria(window_s=1, silence_s=None, require_complete=False)
    assert detect_cycles(probe, events, relaxed)[0].status == CycleStatus.CENSORED


def test_recovery_waits_for_restart_unless_told_not_to() -> None:
    # the stack flaps back by itself at 40 (before the restart at 50), fails again, then is
    # restarted at 50 and is good from 55
    probe = timeline(
        [(0, 30, True), (30, 40, False), (40, 41, True), (41, 55, False), (55, 70, True)]
    )
    events = [Mark(0, "start"), Mark(50, "restart")]
    # method 1: every failure waits for the runner's restart
    crit = Criteria(window_s=1, min_samples=5, silence_s=None, await_restart="always")
    c = detect_cycles(probe, events, crit)[0]
    assert c.t_recovered == pytest.approx(55.0) and c.restart_to_recovery_s == pytest.approx(5.0)
    assert c.kind == "spontaneous"
    free = Criteria(window_s=1, min_samples=5, silence_s=None, await_restart=False)
    c = detect_cycles(probe, events, free)[0]
    assert c.t_recovered == pytest.approx(40.0)
    # the default: a failure with no injected fault has no component to restart, and ends
    # at the first complete page; one with a fault waits for that fault's restart
    c = detect_cycles(probe, events, Criteria(window_s=1, min_samples=5, silence_s=None))[0]
    assert c.t_recovered == pytest.approx(40.0)
    faulted = [Mark(0, "start"), Mark(30, "fault", "cart"), Mark(50, "restart", "cart")]
    c = detect_cycles(probe, faulted, Criteria(window_s=1, min_samples=5, silence_s=None))[0]
    assert c.kind == "injected" and c.t_recovered == pytest.approx(55.0)
    assert Criteria(await_restart=True).await_restart == "always"  # as older runs record it


def test_recovery_after_k_consecutive_successes() -> None:
    # after the restart: good, bad, good, good, bad, then goods from 22.0
    spans = [
        (0, 10, True),
        (10, 20, False),
        (20, 20.1, True),
        (20.1, 20.2, False),
        (20.2, 20.4, True),
        (20.4, 22.0, False),
        (22.0, 30, True),
    ]
    events = [Mark(0, "start"), Mark(10, "fault", "gateway"), Mark(15, "restart", "gateway")]
    first = Criteria(window_s=1, silence_s=None, recovery=Recovery.FIRST_COMPLETE)
    assert detect_cycles(timeline(spans), events, first)[0].t_recovered == pytest.approx(20.0)
    k3 = Criteria(window_s=1, silence_s=None, recovery="consecutive", consecutive=3)
    c = detect_cycles(timeline(spans), events, k3)[0]
    assert c.t_recovered == pytest.approx(22.0)  # the first of the three
    assert c.t_recovery_detected == pytest.approx(22.2)  # the third


def test_restart_before_detection_counts() -> None:
    # fault injection with an immediate restart: the restart mark precedes the detection
    probe = timeline([(0, 10, True), (10, 14, False), (14, 20, True)])
    events = [Mark(0, "start"), Mark(10, "fault", "reviews"), Mark(10.05, "restart", "reviews")]
    c = detect_cycles(probe, events, FAST)[0]
    assert c.t_restart == pytest.approx(10.05) and c.ttr_s == pytest.approx(4.0)


def test_times_are_completion_times() -> None:
    # every answer takes 300 ms: onsets and recoveries shift alike, durations stay
    probe = timeline([(0, 10, True), (10, 14, False), (14, 20, True)], latency_ms=300)
    events = [Mark(0, "start"), Mark(10, "fault", "x"), Mark(10, "restart", "x")]
    c = detect_cycles(probe, events, FAST)[0]
    assert c.t_fail == pytest.approx(10.3) and c.t_recovered == pytest.approx(14.3)
    assert c.ttr_s == pytest.approx(4.0)


def test_criteria_validation() -> None:
    with pytest.raises(ValueError):
        Criteria(max_error_rate=None, silence_s=None)
    with pytest.raises(ValueError):
        Criteria(max_error_rate=1.0)
    with pytest.raises(ValueError):
        Criteria(recovery="sometime")
    with pytest.raises(ValueError):
        Criteria(consecutive=0)
    assert Criteria(recovery="consecutive").as_dict()["recovery"] == "consecutive"


def test_online_tracker_writes_each_cycle_and_events_jsonl_round_trip(tmp_path: Path) -> None:
    run = RunWriter(tmp_path / "run", kind="availability", parameters={"method": "fault"})
    log = CycleLog(run.path)
    tracker = CycleTracker(FAST, on_cycle=log.append)
    probe = timeline(
        [(0, 10, True), (10, 13, False), (13, 25, True), (25, 27, False), (27, 30, True)]
    )
    t0 = 1_700_000_000.0
    probe["t"] += t0
    plan = {10.0: "kill", 10.2: "restart", 25.0: "kill", 25.2: "restart"}
    tracker.mark(Mark(t0, "start"))
    run.event("load_start")
    # events.jsonl with the harness's own names; rewrite their times onto the timeline
    seen: list[Cycle] = []
    for row in probe.itertuples():
        rel = round(row.t - t0, 6)
        if rel in plan:
            tracker.mark(Mark(row.t, plan[rel], "cart"))
            run.event(plan[rel], role="cart")
        done = tracker.observe(row.t, row.ok, row.latency_ms, row.complete)
        if done is not None:
            seen.append(done)
            # each finished cycle is on disk at once: a crash now would keep it
            assert len(read_cycles(run.path)) == len(seen)
    assert tracker.state == "up" and len(seen) == 2
    log.close()
    back = read_cycles(run.path)
    assert [c.as_row() for c in back] == [c.as_row() for c in seen]

    events = read_run(run.path).events()
    assert [e["event"] for e in events] == ["load_start", "kill", "restart", "kill", "restart"]
    # the harness's wall-clock times differ; use the plan's times to check the mapping
    fixed = [{**events[0], "t": t0}] + [
        {**e, "t": t0 + rel} for e, rel in zip(events[1:], plan, strict=True)
    ]
    offline = detect_cycles(probe, fixed, FAST)
    assert [c.as_row() for c in offline[:2]] == [c.as_row() for c in seen]
    # A harness killed mid-write leaves a partial row (or an empty file): the complete
    # cycles are still read, the partial one is not.
    path = run.path / "cycles.csv"
    with path.open("a") as f:
        f.write("3,recov")
    assert [c.as_row() for c in read_cycles(run.path)] == [c.as_row() for c in seen]
    path.write_text("")
    assert read_cycles(run.path) == []


# ---------------------------------------------------------------------------------------
# fault schedule


COMPONENTS = ["product-info", "reviews", "recommendations", "shipping", "cart", "broker"]


def test_fault_schedule_is_deterministic_per_seed() -> None:
    a = fault_schedule(42, 30.0, 20, COMPONENTS)
    assert a == fault_schedule(42, 30.0, 20, COMPONENTS)
    assert a != fault_schedule(43, 30.0, 20, COMPONENTS)
    assert [f.index for f in a] == list(range(20))
    np.testing.assert_allclose([f.at_s for f in a], np.cumsum([f.gap_s for f in a]))
    # the gaps do not depend on the component list
    b = fault_schedule(42, 30.0, 20, ["broker"])
    assert [f.gap_s for f in b] == [f.gap_s for f in a]
    assert {f.component for f in b} == {"broker"}


def test_fault_schedule_mean_and_distribution() -> None:
    sched = fault_schedule(3, 30.0, 20000, COMPONENTS)
    gaps = np.array([f.gap_s for f in sched])
    assert gaps.mean() == pytest.approx(30.0, rel=0.03)
    assert stats.kstest(gaps, "expon", args=(0, 30.0)).pvalue > 0.001
    counts = pd.Series([f.component for f in sched]).value_counts()
    assert set(counts.index) == set(COMPONENTS)
    assert (abs(counts / len(sched) - 1 / 6) < 0.02).all()
    shifted = np.array([f.gap_s for f in fault_schedule(3, 30.0, 20000, COMPONENTS, min_gap_s=5)])
    assert shifted.min() >= 5.0 and shifted.mean() == pytest.approx(35.0, rel=0.03)


def test_fault_schedule_weights_and_errors() -> None:
    sched = fault_schedule(1, 10.0, 5000, ["reviews", "broker"], weights=[3, 1])
    share = sum(f.component == "broker" for f in sched) / 5000
    assert share == pytest.approx(0.25, abs=0.03)
    for kwargs in ({"mean_s": 0}, {"n": -1}, {"components": []}, {"weights": [1]}):
        args: dict[str, Any] = {"seed": 1, "mean_s": 10.0, "n": 3, "components": ["a", "b"]}
        with pytest.raises(ValueError):
            fault_schedule(**{**args, **kwargs})


# ---------------------------------------------------------------------------------------
# outage classification


def test_outage_classes_account_for_every_request() -> None:
    t0, t1 = 100.0, 110.0
    reqs = pd.DataFrame(
        [
            # t, t_done, status, ok, error, duplicates
            (99.0, 99.05, 200, True, None, 0),  # before: served
            (100.5, 100.52, 503, False, "HTTP 503", 0),  # failed
            (101.0, 101.0, 0, False, "ConnectionRefusedError", 0),  # failed (told at once)
            (102.0, 104.0, 0, False, "timeout", 0),  # lost: the client gave up
            (103.0, np.nan, 0, False, None, 0),  # lost: never answered
            (104.0, 111.0, 200, True, None, 0),  # served late (queued, answered after restart)
            (105.0, 111.2, 200, True, None, 1),  # duplicated
            (109.9, 109.95, 200, True, None, 0),  # served
            (112.0, 112.05, 200, True, None, 0),  # after: served
        ],
        columns=["t", "t_done", "status", "ok", "error", "duplicates"],
    )
    out = classify_requests(reqs, t0, t1, late_ms=1000)
    assert list(out["outcome"]) == [
        "served",
        "failed",
        "failed",
        "lost",
        "lost",
        "served_late",
        "duplicated",
        "served",
        "served",
    ]
    assert list(out["phase"]) == ["before"] + ["during"] * 7 + ["after"]
    table = outage_table(out)
    assert list(table.columns) == [*CLASSES, "issued"]
    assert table.loc["during", "issued"] == 7
    assert table.loc["during", "lost"] == 2 and table.loc["during", "failed"] == 2
    assert table.loc["all", "issued"] == len(reqs) == table.loc["all", list(CLASSES)].sum()
    # the outage window alone
    window = classify_requests(reqs, t0, t1, late_ms=1000, after_s=0)
    assert len(window) == 7 and outage_table(window).loc["all", "issued"] == 7


def test_outage_table_random_records_grouped_by_stack() -> None:
    rng = np.random.default_rng(5)
    n = 3000
    t = rng.uniform(0, 30, n)
    lat = rng.exponential(200, n)
    status = rng.choice([0, 200, 503], n, p=[0.1, 0.8, 0.1])
    reqs = pd.DataFrame(
        {
            "stack": rng.choice(["shop-rest", "shop-grpc", "shop-amqp"], n),
            "t": t,
            "latency_ms": lat,
            "status": status,
            "ok": status == 200,
            "error": np.where(status == 0, np.where(rng.random(n) < 0.5, "timeout", "reset"), None),
            "duplicates": rng.choice([0, 0, 0, 1], n),
        }
    )
    reqs.loc[rng.random(n) < 0.05, "latency_ms"] = np.nan  # never answered
    out = classify_requests(reqs, 10.0, 20.0, late_ms=500)
    table = outage_table(out, by=["stack", "phase"])
    assert int(table["issued"].sum()) == n
    assert (table[list(CLASSES)].sum(axis=1) == table["issued"]).all()
    assert set(out["outcome"]) == set(CLASSES)


# ---------------------------------------------------------------------------------------
# the published table


def test_published_table_54_mismatch() -> None:
    rows = [
        {"method": "RabbitMQ", "users": 200, "mttf_s": 430, "mttr_s": 29, "availability": 0.95},
        {"method": "gRPC", "users": 200, "mttf_s": 290, "mttr_s": 21, "availability": 0.93},
        {"method": "REST", "users": 200, "mttf_s": 275, "mttr_s": 19, "availability": 0.93},
    ]
    df = compare_published_availability(rows).set_index("method")
    np.testing.assert_allclose(df["computed_a"], [430 / 459, 290 / 311, 275 / 294])
    assert list(df["computed_a"].round(3)) == [0.937, 0.932, 0.935]
    assert df.loc["REST", "computed_a"] > df.loc["gRPC", "computed_a"]  # order flips
    assert bool(df.loc["RabbitMQ", "mismatch"]) and not bool(df.loc["RabbitMQ", "consistent"])
    assert not bool(df.loc["gRPC", "mismatch"])
    assert not bool(df.loc["REST", "matches_rounded"])  # 0.935 prints as 0.94, not 0.93 ...
    assert bool(df.loc["REST", "consistent"])  # ... but "~275"/"~19" could give 0.93
    assert not bool(df.loc["REST", "mismatch"])  # so no mismatch beside consistent=True
    assert df.loc["RabbitMQ", "implied_mttr_s"] == pytest.approx(430 * 0.05 / 0.95)


def test_published_table_from_the_repository() -> None:
    rows = load_published_availability()
    if rows is None:
        pytest.skip("data/published/shafabakhsh2020_availability.csv not there yet")
    df = compare_published_availability(rows).set_index("style")
    assert list(df.loc[["amqp", "grpc", "rest"], "computed_a"].round(3)) == [0.937, 0.932, 0.935]
    assert list(df.loc[["amqp", "grpc", "rest"], "printed_a"]) == [0.95, 0.93, 0.93]
    assert bool(df.loc["amqp", "mismatch"])


# ---------------------------------------------------------------------------------------
# the probe against a real server

PAGE = {
    "product": {"product_id": 1},
    "reviews": [],
    "recommendations": [],
    "shipping": [],
    "cart": None,
}


class TinyGateway:
    """A real aiohttp server on a real port, in its own thread. ``mode``: ok, 503, hang,
    partial; ``down()`` closes the listener and every connection, ``up()`` reopens it."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.mode = "ok"
        self.hits = 0
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.runner: web.AppRunner | None = None
        self.up()

    async def handle(self, request: web.Request) -> web.Response:
        self.hits += 1
        assert request.query.get("customer_id")
        if self.mode == "503":
            return web.json_response({"error": "service unavailable"}, status=503)
        if self.mode == "hang":
            await asyncio.sleep(1.0)
        if self.mode == "partial":
            return web.json_response({k: v for k, v in PAGE.items() if k != "cart"})
        return web.json_response(PAGE)

    async def _up(self) -> None:
        app = web.Application()
        app.router.add_get("/product/{product_id}", self.handle)
        self.runner = web.AppRunner(app, shutdown_timeout=0.2)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.port, reuse_address=True).start()

    async def _down(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None

    def up(self) -> None:
        asyncio.run_coroutine_threadsafe(self._up(), self.loop).result(5)

    def down(self) -> None:
        asyncio.run_coroutine_threadsafe(self._down(), self.loop).result(5)

    def close(self) -> None:
        self.down()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


@pytest.fixture
def gateway() -> Iterator[TinyGateway]:
    g = TinyGateway()
    try:
        yield g
    finally:
        g.close()


def test_probe_sees_a_real_outage_and_the_cycle_is_measured(
    gateway: TinyGateway, tmp_path: Path
) -> None:
    probe = Probe(gateway.url, tmp_path, SHOP.probe_paths, SHOP.probe_required, 20, 0.3)
    probe.start()
    # Phases of 1-1.5 s and tolerances of a detection window plus 0.25 s: a busy 2-core
    # machine may hold the probe's thread back that long, and the test stays about detection.
    t_start = time.time()
    time.sleep(1.0)
    t_fault = time.time()
    gateway.down()  # connection refused from now on
    time.sleep(1.5)
    t_restart = time.time()
    gateway.up()
    time.sleep(1.5)
    probe.stop()
    assert probe.sent == probe.recorded  # every request issued has its row

    df = read_probe(tmp_path)
    assert (tmp_path / "probe.csv").exists() and len(df) == probe.sent
    assert 100 <= len(df) <= 205  # 4 s at 50 Hz, fewer if the machine is busy
    during = df[(df.t > t_fault + 0.05) & (df.t < t_restart - 0.05)]
    assert len(during) > 20 and not during.ok.any() and (during.status == 0).all()
    before = df[df.t < t_fault - 0.05]
    assert before.ok.all() and before.complete.all()

    events = [
        Mark(t_start, "start"),
        Mark(t_fault, "fault", "gateway"),
        Mark(t_restart, "restart", "gateway"),
    ]
    crit = Criteria(window_s=0.3, min_samples=5, max_error_rate=0.5, silence_s=0.5)
    cycles = detect_cycles(df, events, crit)
    assert [c.status for c in cycles] == [CycleStatus.RECOVERED, CycleStatus.CENSORED]
    c = cycles[0]
    slack = crit.window_s + 0.25
    assert c.ttf_s == pytest.approx(t_fault - t_start, abs=slack)
    assert c.ttr_s == pytest.approx(t_restart - t_fault, abs=slack)
    assert c.restart_to_recovery_s is not None and 0 <= c.restart_to_recovery_s < slack


def test_probe_records_errors_timeouts_and_partial_pages(
    gateway: TinyGateway, tmp_path: Path
) -> None:
    out = tmp_path / "probe.csv"
    paths = [f"/product/{i}?customer_id=1" for i in (1, 2, 3)]
    with Probe(gateway.url, out, paths, SHOP.probe_required, 25, 0.25) as probe:
        for mode in ("503", "hang", "partial", "ok"):
            gateway.mode = mode
            time.sleep(1.0)
    df = read_probe(out)
    assert len(df) == probe.sent == probe.recorded
    assert list(df.columns) == ["seq", "t", "ok", "status", "latency_ms", "complete", "error"]
    assert ((df.status == 503) & ~df.ok & (df.error == "HTTP 503")).any()
    timeouts = df[df.error == "timeout"]
    assert len(timeouts) >= 5 and (timeouts.status == 0).all()
    # bounded by the probe's timeout (0.25 s), plus what a busy machine adds to a wake-up
    assert timeouts.latency_ms.between(240, 1000).all()
    partial = df[df.ok & ~df.complete]
    assert len(partial) >= 5 and (partial.status == 200).all()
    assert (df.ok & df.complete).iloc[-5:].all()
    assert set(SHOP.probe_required) == set(PAGE)
    # a hung request does not delay the next ones: fixed rate
    hang = df[df.error == "timeout"].t
    assert hang.diff().dropna().median() == pytest.approx(0.025, abs=0.015)


def test_probe_as_a_subprocess_stops_cleanly(gateway: TinyGateway, tmp_path: Path) -> None:
    proc = spawn_probe(
        gateway.url,
        tmp_path / "probe.csv",
        "--path",
        "/product/1?customer_id=1",
        "--period-ms",
        "20",
    )
    try:
        deadline = time.time() + 10
        while time.time() < deadline and gateway.hits < 20:
            time.sleep(0.05)
        gateway.down()
        time.sleep(0.8)
        gateway.up()
        time.sleep(0.8)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lines = (tmp_path / "probe.csv").read_text().splitlines()
    assert lines[0] == "seq,t,ok,status,latency_ms,complete,error"
    df = read_probe(tmp_path / "probe.csv")
    assert len(df) == len(lines) - 1 >= 30
    assert df.ok.any() and (~df.ok).any() and df.ok.iloc[-3:].all()
    assert sorted(df.seq) == list(range(len(df)))  # nothing issued went unrecorded


def test_rows_after_the_end_of_observation_create_no_failure() -> None:
    """A failure the probe saw only after the end of observation is censored at the end:
    no negative or clamped repair time (docs/statistics.md section 6)."""
    tracker = CycleTracker(Criteria())
    tracker.mark(Mark(0.0, "start"))
    t = 0.0
    while t < 10.0:
        tracker.observe(t, True, 5.0)
        t += 0.1
    while t < 30.0:  # bad from 10 s on: detected as a failure after the 12 s end
        tracker.observe(t, False, 5.0)
        t += 0.1
    tracker.finish(12.0)
    assert [c.status for c in tracker.cycles] == [CycleStatus.CENSORED]
    assert tracker.cycles[0].ttf_s == pytest.approx(12.0)
    assert all(c.ttr_s is None or c.ttr_s >= 0 for c in tracker.cycles)


def test_no_bootstrap_interval_over_fewer_than_three_cycles() -> None:
    one = [Cycle(0, CycleStatus.RECOVERED, 0.0, 100.0, ttr_s=5.0)]
    two = one + [Cycle(1, CycleStatus.RECOVERED, 105.0, 50.0, ttr_s=7.0)]
    for cycles in (one, two):
        s = availability_summary(cycles)
        assert s.mttr.lower is None and s.mttr.upper is None
        assert s.availability.lower is None and s.availability.upper is None
        assert any("no bootstrap interval" in n for n in s.notes)


def test_mttf_interval_is_failure_terminated_when_observation_stops_at_a_failure() -> None:
    failure = mttf_chi2_interval(300.0, 2, failure_terminated=True)
    time = mttf_chi2_interval(300.0, 2)
    assert failure.lower == pytest.approx(600.0 / stats.chi2.ppf(0.975, 4))  # 2n df
    assert time.lower == pytest.approx(600.0 / stats.chi2.ppf(0.975, 6))  # 2n + 2 df
    two_failures = [
        Cycle(0, CycleStatus.RECOVERED, 0.0, 100.0, ttr_s=5.0),
        Cycle(1, CycleStatus.UNRECOVERED, 105.0, 200.0, ttr_s=3.0),
    ]
    assert availability_summary(two_failures).mttf.method.endswith("(failure)")


def test_fault_injection_claims_take_the_runs_own_load_and_one_value_per_run() -> None:
    from ipclab.studies.shafabakhsh.availability.analysis import (
        _fi_users_map,
        fault_injection_rows,
    )

    cycles = pd.DataFrame(
        [
            {"style": s, "users": 50, "run": f"{s}-r1", "method": "fault_injection",
             "restart_to_recovery_s": v}
            for s, vals in (("rest", (1.0, 3.0)), ("amqp", (2.0, 2.0, 5.0)))
            for v in vals
        ]
    )  # fmt: skip
    rows = fault_injection_rows(cycles).set_index("style")
    assert len(rows) == 2  # one row per run, not per cycle
    assert rows.loc["rest", "users"] == 50 and rows.loc["rest", "mttr_s"] == 2.0
    assert rows.loc["amqp", "mttr_s"] == 3.0
    assert _fi_users_map(cycles) == {200: 50}  # the thesis's 200 stands for the 50 run


def test_fault_injection_claims_table_says_the_runs_users_and_no_p_over_one_run() -> None:
    """The fault-injection claims are labelled with the load the runs ran at (not a fixed
    200), and a run's cycles give one MTTR value (the run is the unit of replication)."""
    from ipclab import claims as claims_mod
    from ipclab.studies.shafabakhsh import published
    from ipclab.studies.shafabakhsh.availability.analysis import (
        _fi_users_map,
        fault_injection_rows,
    )

    rows = [
        {
            "method": "fault_injection",
            "style": s,
            "users": 50,
            "run": f"{s}-r1",
            "cycle": i,
            "restart_to_recovery_s": v + 0.1 * i,
        }  # fmt: skip
        for s, v in (("rest", 0.7), ("grpc", 2.4), ("amqp", 0.5))
        for i in range(12)
    ]
    cycles = pd.DataFrame(rows)
    per_run = fault_injection_rows(cycles)
    assert len(per_run) == 3 and set(per_run["users"]) == {50}
    assert _fi_users_map(cycles) == {200: 50}
    table = claims_mod.evaluate_claims(
        per_run, published.claims(), scope="availability", users_map=_fi_users_map(cycles)
    )
    p15 = table[table["claim_id"].str.startswith("P15")]
    assert len(p15) and set(p15["measured_users"].astype(str)) == {"50"}
    assert set(p15["n_a"]) == {1} and set(p15["verdict"]) == {claims_mod.INCONCLUSIVE}
    assert p15["p_value"].isna().all()  # one run per style: no test, no interval


def test_summary_counts_runs_per_cell_not_per_style() -> None:
    """The committed docker reference has three runs per style and load: each summary row
    says 3 runs (a count per style would say 9: every load of the style)."""
    from ipclab.studies.shafabakhsh.availability.analysis import summary_table
    from ipclab.studies.shafabakhsh.availability.profiles import superseded_dirs

    root = Path(__file__).resolve().parents[1] / "data/runs/reference/availability-full-docker"
    runs = [read_run(d) for d in superseded_dirs(root)]  # wherever a later sitting put them
    if not runs:
        pytest.skip("no committed docker reference runs")
    table = summary_table(runs)
    assert len(table) == 9 and set(table["runs"]) == {3}
    grpc400 = table[(table["style"] == "grpc") & (table["users"] == 400)].iloc[0]
    # run 2 failed 5.6 s after the load's start, before it was fully up (issue 46.3): apart
    assert grpc400["failures"] == 2 and grpc400["startup_failures"] == 1
    assert grpc400["mttf_s"] == pytest.approx(30.10, abs=0.01)  # (24.2 + 36.0) s / 2
    assert grpc400["availability"] == pytest.approx(0.7599, abs=5e-5)


def test_each_experiment_is_a_family_of_its_own_with_only_its_claims() -> None:
    """Until failure, outage and fault injection are three experiments: Holm families of
    their own (docs/statistics.md section 3), each with the claims its runs measure and no
    other, so the outage claims' adjustment does not depend on how many MTTF claims there
    are; the outage runs' restarts judge the MTTR claims in a family of their own too."""
    from ipclab import claims as claims_mod
    from ipclab.studies.shafabakhsh import published
    from ipclab.studies.shafabakhsh.availability.analysis import FAMILY_METRICS, family_claims

    every = {c.claim_id for c in published.claims(scope="availability")}
    until, outage = family_claims("until failure"), family_claims("outage")
    ids = [c.claim_id for c in until + outage]
    assert sorted(ids) == sorted(every) and len(set(ids)) == len(ids)  # a partition
    assert {c.metric for c in outage} == {"outage_failure_fraction"}
    assert {c.metric for c in family_claims("fault injection")} == {"mttr_s"}
    assert {c.metric for c in family_claims("outage recovery")} == {"mttr_s"}
    assert set(FAMILY_METRICS) == {"until failure", "outage", "fault injection", "outage recovery"}
    # the outage family alone: 3 runs each of 0 against 1, two distinct tests in its Holm
    rows = pd.DataFrame(
        [{"style": s, "users": 50, "outage_failure_fraction": v}
         for s, v in (("amqp", 0.0), ("rest", 1.0), ("grpc", 1.0)) for _ in range(3)]
    )  # fmt: skip
    t = claims_mod.evaluate_claims(rows, outage, scope="availability", family="outage")
    assert set(t["family"]) == {"outage"}
    assert t["p_raw"].to_numpy() == pytest.approx(0.1)
    assert t["p_value"].to_numpy() == pytest.approx(0.2)


def test_the_availability_deviations_say_the_client_speaks_plain_http() -> None:
    from ipclab.studies.shafabakhsh import availability

    text = " ".join(availability.DEVIATIONS)
    assert "HTTPS" in text and "plain HTTP" in text
    assert "15 s gateway call timeout" in text
