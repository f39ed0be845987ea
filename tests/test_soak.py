"""The soak's arithmetic (ipclab.soak, docs/soak.md): the growth bound and the attribution of
failed pages to faults, on made-up samples; no stack, no timing."""

from __future__ import annotations

import numpy as np
import pytest

from ipclab.soak import (
    SoakPlan,
    fault_outcomes,
    fault_plan,
    fault_targets,
    fault_times,
    growth,
)
from ipclab.stacks import resolve

KW = dict(warmup_s=60.0, restart_warmup_s=30.0, window_s=30.0, rel_bound=0.10, slack=8.0)


def test_flat_series_passes_and_its_growth_is_zero() -> None:
    t = np.arange(0, 1800, 5.0)
    g = growth(t, np.full_like(t, 100.0), t_start=0, t_end=1800, **KW)
    assert g.after_warmup == g.at_end == 100.0
    assert g.per_10min == pytest.approx(0.0)
    assert g.passed is True


def test_steady_leak_beyond_the_bound_fails() -> None:
    # 1 fd per minute: 29 over the 29 minutes after warm-up, bound max(10% of ~100, 8) = 10
    t = np.arange(0, 1800, 5.0)
    g = growth(t, 100.0 + t / 60.0, t_start=0, t_end=1800, **KW)
    assert g.per_10min == pytest.approx(10.0)
    assert g.projected == pytest.approx(29.0)
    assert g.bound == pytest.approx(10.15, abs=0.3)
    assert g.passed is False


def test_growth_within_the_slack_passes() -> None:
    t = np.arange(0, 1800, 5.0)
    g = growth(t, 10.0 + t / 600.0, t_start=0, t_end=1800, **KW)  # ~3 over the span
    assert g.bound == 8.0  # the slack: 10% of a small count is no bound
    assert g.passed is True


def test_warmup_rise_is_not_growth() -> None:
    t = np.arange(0, 1800, 5.0)
    v = np.where(t < 60, 50.0 + t, 110.0)  # climbs during warm-up, flat after
    assert growth(t, v, t_start=0, t_end=1800, **KW).per_10min == pytest.approx(0.0)


def test_restarted_process_is_fitted_within_its_lifetimes() -> None:
    # a service killed at 600 s and restarted at 605 s: its memory starts again lower and
    # re-warms for 20 s; flat within each lifetime, so no growth and no shrinkage
    t = np.arange(0, 1800, 5.0)
    v = np.where(t < 600, 120.0, np.where(t < 605, np.nan, np.where(t < 625, 60.0, 80.0)))
    g = growth(t, v, t_start=0, t_end=1800, restarts=[605.0], **KW)
    assert g.per_10min == pytest.approx(0.0)
    assert g.after_warmup == 120.0 and g.at_end == 80.0
    assert g.passed is True


def test_leak_across_restarts_is_still_seen() -> None:
    # the same leak in both lifetimes (restart at 900 s resets it): the fit within
    # lifetimes keeps its slope, where one line through all points would flatten it
    t = np.arange(0, 1800, 5.0)
    v = np.where(t < 900, 50.0 + t / 60.0, 50.0 + (t - 900) / 60.0)
    g = growth(t, v, t_start=0, t_end=1800, restarts=[900.0], **KW)
    assert g.per_10min == pytest.approx(10.0)
    assert g.passed is False


def test_too_few_samples_give_no_verdict() -> None:
    g = growth([0.0, 100.0], [1.0, 2.0], t_start=0, t_end=120, **KW)
    assert g.passed is None


def test_burst_after_a_fault_is_its_lost_pages_and_recovery() -> None:
    done = np.array([99.0, 100.2, 100.5, 101.0, 101.4, 102.0, 150.0, 151.0, 199.0])
    ok = np.array([True, False, False, False, True, True, False, True, True])
    (o,) = fault_outcomes(
        done, ok, [(100.0, "reviews", "kill")], t_end=200, onset_s=30, settle_s=5, t_load=40
    )
    assert (o.at_s, o.lost, o.other_failures, o.status) == (60.0, 3, 1, "recovered")
    assert o.recovery_s == pytest.approx(1.4)  # to the first good page after the burst


def test_each_failure_belongs_to_the_latest_fault_before_it() -> None:
    done = np.array([10.5, 11.0, 12.0, 20.5, 21.0, 22.0])
    ok = np.array([False, False, True, False, False, True])
    a, b = fault_outcomes(
        done,
        ok,
        [(20.0, "broker", "restart"), (10.0, "cart", "kill")],  # any order
        t_end=30,
        onset_s=5,
        settle_s=2,
    )
    assert (a.component, a.lost, a.recovery_s) == ("cart", 2, pytest.approx(2.0))
    assert (b.component, b.lost, b.recovery_s) == ("broker", 2, pytest.approx(2.0))


def test_fault_without_failures_is_masked_and_late_failures_are_not_blamed() -> None:
    done = np.array([10.5, 50.0, 51.0])
    ok = np.array([True, False, True])
    (o,) = fault_outcomes(done, ok, [(10.0, "cart", "kill")], t_end=60, onset_s=30, settle_s=5)
    assert (o.lost, o.other_failures, o.recovery_s, o.status) == (0, 1, 0.0, "masked")


def test_fault_never_recovered_has_no_recovery_time() -> None:
    done, ok = np.array([10.5, 11.0]), np.array([False, False])
    (o,) = fault_outcomes(done, ok, [(10.0, "cart", "kill")], t_end=60, onset_s=30, settle_s=5)
    assert (o.lost, o.recovery_s, o.status) == (2, None, "unrecovered")


def test_fault_plan_kills_services_in_turn_and_restarts_the_broker() -> None:
    plan = SoakPlan(duration_s=1800, fault_period_s=300, downtime_s=5)
    faults = fault_plan(fault_targets(resolve("shop-amqp")), plan)
    kills = [(f.at_s, f.role, f.action) for f in faults if f.action == "kill" or f.role == "broker"]
    assert [k[0] for k in kills] == [300, 600, 900, 1200, 1500]
    assert "gateway" not in {f.role for f in faults}
    # each killed service is started again downtime_s later
    for f in faults:
        if f.action == "kill":
            assert any(g.role == f.role and g.at_s == f.at_s + 5 for g in faults)
    targets = fault_targets(resolve("shop-amqp"))
    assert targets[-1] == "broker" and "gateway" not in targets
    with pytest.raises(ValueError):
        fault_targets(resolve("shop-rest"), ["broker"])


def test_a_fault_is_timed_when_it_began_not_when_its_event_was_written() -> None:
    # a broker restart planned at 45 s took 16 s; its event says 61 s; the service's
    # restart after its kill is no fault; the fault at 300 s never happened (run cut short)
    planned = [
        {"at_s": 30.0, "role": "cart", "action": "kill"},
        {"at_s": 35.0, "role": "cart", "action": "restart"},
        {"at_s": 45.0, "role": "broker", "action": "restart"},
        {"at_s": 300.0, "role": "reviews", "action": "kill"},
    ]
    events = [
        {"t": 1030.1, "event": "kill", "role": "cart"},
        {"t": 1035.1, "event": "restart", "role": "cart"},
        {"t": 1061.0, "event": "restart", "role": "broker"},
    ]
    assert fault_times(planned, events, t_load=1000.0) == [
        (1030.0, "cart", "kill"),
        (1045.0, "broker", "restart"),
    ]
