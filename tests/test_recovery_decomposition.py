"""Recovery decomposed (ipclab.availability.recovery) and the clients' reconnect settings
(ipclab_services.reconnect): pure functions, no stack."""

from __future__ import annotations

import pytest
from ipclab_services import reconnect

from ipclab.availability.model import Cycle, CycleStatus
from ipclab.availability.recovery import decompose, ready_events, ready_lines, summarise
from ipclab.backends import StackOptions
from ipclab.studies.shafabakhsh import availability as study


def _cycle(
    index: int, component: str, t_fail: float, detected: float, restart: float, recovered: float
) -> Cycle:
    return Cycle(
        index=index,
        status=CycleStatus.RECOVERED,
        t_up=t_fail - 5,
        ttf_s=5.0,
        ttr_s=recovered - t_fail,
        t_fail=t_fail,
        t_fail_detected=detected,
        component=component,
        t_restart=restart,
        t_recovered=recovered,
        restart_to_recovery_s=recovered - restart,
    )


def test_ready_lines_from_local_and_docker_logs() -> None:
    logs = {
        "reviews": 'INFO starting\nipclab-ready {"t": 14.5, "role": "reviews"}\n',
        "gateway": '2026-11-27T00:00:01.5Z ipclab-ready {"t": 3.0, "role": "gateway"}\n'
        'ipclab-ready {"t": 9',  # cut by a kill: skipped
    }
    assert ready_lines(logs) == [{"t": 3.0, "role": "gateway"}, {"t": 14.5, "role": "reviews"}]
    assert ready_events(logs, 10.0, 20.0) == [{"event": "ready", "t": 14.5, "role": "reviews"}]


def test_parts_add_up_to_the_down_time() -> None:
    events = [
        {"event": "restart", "t": 13.0, "role": "reviews"},
        {"event": "restarted", "t": 13.2, "role": "reviews"},
        {"event": "ready", "t": 14.5, "role": "reviews"},
        # the broker prints no ready line: ready when its restart returned
        {"event": "restart", "t": 31.0, "role": "broker"},
        {"event": "restarted", "t": 38.0, "role": "broker"},
        # a component whose readiness is unknown: start and reconnect stay unknown
        {"event": "restart", "t": 51.0, "role": "gateway"},
    ]
    cycles = [
        _cycle(0, "reviews", 10.0, 12.0, 13.0, 16.0),
        _cycle(1, "broker", 28.0, 30.0, 31.0, 43.0),
        _cycle(2, "gateway", 50.0, 50.5, 51.0, 52.0),
    ]
    parts = decompose(cycles, events).set_index("cycle")
    assert parts.loc[0, ["detection_s", "reaction_s", "start_s", "reconnect_s"]].tolist() == [
        2.0,
        1.0,
        1.5,
        1.5,
    ]
    assert parts.loc[1, "start_s"] == 7.0 and parts.loc[1, "reconnect_s"] == 5.0
    assert parts.loc[2, "start_s"] is None or parts.loc[2, "start_s"] != parts.loc[2, "start_s"]
    total = parts[["detection_s", "reaction_s", "start_s", "reconnect_s"]].sum(axis=1)
    assert total.loc[0] == parts.loc[0, "ttr_s"] and total.loc[1] == parts.loc[1, "ttr_s"]
    s = summarise(parts.reset_index())
    assert s["recovered_cycles"] == 3 and s["mean_start_s"] == pytest.approx(4.25)


def test_the_kubelets_restart_splits_the_start() -> None:
    """Kubernetes: the restart is marked at the kill (the kubelet does not wait for the
    detection: reaction negative), and the start splits at the new container's start, its
    process start where read (exact), else the middle of the kubelet's whole second."""
    events = [
        {"event": "restart", "t": 10.1, "role": "reviews", "by": "orchestrator"},
        {"event": "container_exited", "t": 10.0, "role": "reviews"},
        {"event": "container_started", "t": 10.0, "role": "reviews"},  # 10.0-11.0
        {"event": "process_started", "t": 10.4, "role": "reviews"},
        {"event": "pod_ready", "t": 11.0, "role": "reviews"},  # 11.0-12.0
        {"event": "ready", "t": 11.6, "role": "reviews"},  # after both: ready here
        {"event": "restarted", "t": 11.8, "role": "reviews"},
        # a back-off: started 15 s later, its pod Ready (a whole second) after its ready line
        {"event": "restart", "t": 40.2, "role": "cart", "by": "orchestrator"},
        {"event": "container_started", "t": 55.0, "role": "cart"},
        {"event": "ready", "t": 55.7, "role": "cart"},
        {"event": "pod_ready", "t": 56.0, "role": "cart"},
    ]
    cycles = [
        _cycle(0, "reviews", 10.15, 11.5, 10.1, 12.0),
        _cycle(1, "cart", 40.3, 41.0, 40.2, 57.0),
    ]
    parts = decompose(cycles, events).set_index("cycle")
    reviews = parts.loc[0]
    assert reviews["reaction_s"] == pytest.approx(-1.4)
    assert reviews["kubelet_restart_s"] == pytest.approx(0.3)  # the process start
    assert reviews["readiness_s"] == pytest.approx(1.2)  # to the ready line
    assert reviews["start_s"] == pytest.approx(1.5) and reviews["reconnect_s"] == pytest.approx(0.4)
    cart = parts.loc[1]
    assert cart["kubelet_restart_s"] == pytest.approx(15.3)  # 55.5, the second's middle
    assert cart["readiness_s"] == pytest.approx(0.5) and cart["start_s"] == pytest.approx(15.8)
    for row in (reviews, cart):
        total = row[["detection_s", "reaction_s", "start_s", "reconnect_s"]].sum()
        assert total == pytest.approx(row["ttr_s"])
        split = row["kubelet_restart_s"] + row["readiness_s"]
        assert split == pytest.approx(row["start_s"])
    s = summarise(parts.reset_index())
    assert s["mean_kubelet_restart_s"] == pytest.approx(7.8)


def test_without_the_orchestrators_record_the_split_is_unknown() -> None:
    events = [{"event": "restart", "t": 13.0, "role": "reviews"},
              {"event": "ready", "t": 14.5, "role": "reviews"}]  # fmt: skip
    parts = decompose([_cycle(0, "reviews", 10.0, 12.0, 13.0, 16.0)], events)
    assert parts["kubelet_restart_s"].isna().all() and parts["readiness_s"].isna().all()
    assert parts.loc[0, "start_s"] == 1.5


def test_censored_and_unrecovered_cycles_have_no_parts() -> None:
    censored = Cycle(index=0, status=CycleStatus.CENSORED, t_up=0.0, ttf_s=9.0)
    assert decompose([censored], []).empty
    assert summarise(decompose([censored], []))["mean_reconnect_s"] is None


def test_reconnect_settings_default_and_tuned() -> None:
    assert reconnect.mode({}) == "default"
    assert reconnect.grpc_channel_options({}) == []
    tuned = dict(reconnect.grpc_channel_options({reconnect.ENV: "tuned"}))
    assert tuned["grpc.initial_reconnect_backoff_ms"] == 100
    assert reconnect.amqp_reconnect_interval({}) == 5.0
    assert reconnect.amqp_reconnect_interval({reconnect.ENV: "tuned"}) == 0.5
    with pytest.raises(ValueError, match="IPCLAB_RECONNECT"):
        reconnect.mode({reconnect.ENV: "fast"})
    assert StackOptions(reconnect="tuned").env()[reconnect.ENV] == "tuned"
    with pytest.raises(ValueError, match="reconnect 'fast'"):
        StackOptions(reconnect="fast")


def test_full_profile_jobs_tuned_runs_share_the_default_schedule() -> None:
    e = study.experiments("full", "docker", methods=("outage", "fault_injection"))
    jobs = [j for s in e.stacks for j in e.jobs(s)]
    assert len({j.key for j in jobs}) == len(jobs) == 3 * (5 + 5 + 1)
    order = e.order()
    assert sorted(j.key for j in order) == sorted(j.key for j in jobs) and order == e.order()
    assert [j.repetition for j in order] == sorted(j.repetition for j in order)
    fi = {(j.stack, j.repetition, j.reconnect): j for j in jobs if j.method == "fault_injection"}
    stack = e.stacks[0]
    seeds = {r: e.plan(fi[stack, r, "default"]).seed for r in range(1, 6)}  # type: ignore[union-attr]
    assert len(set(seeds.values())) == 5
    assert e.plan(fi[stack, 1, "tuned"]).seed == seeds[1]  # type: ignore[union-attr]
    assert e.options(fi[stack, 1, "tuned"]).reconnect == "tuned"
    assert e.options(fi[stack, 1, "default"]).reconnect is None
    assert fi[stack, 1, "tuned"].key.endswith("-r1-tuned")


def test_configuration_share_of_the_mttr() -> None:
    import pandas as pd

    from ipclab.studies.shafabakhsh.availability.analysis import configuration_share

    rec = pd.DataFrame(
        {
            "method": ["fault_injection"] * 4,
            "style": ["grpc", "grpc", "rest", "rest"],
            "reconnect": ["default", "tuned"] * 2,
            "kind": ["service"] * 4,
            "restart_to_recovery_s": [6.0, 1.5, 0.8, 0.8],
            "cycles": [30, 6, 30, 6],
        }
    )
    share = configuration_share(rec).set_index("style")["configuration_share"]
    assert share["grpc"] == 0.75 and share["rest"] == 0.0
    assert configuration_share(rec[rec["reconnect"] == "default"]).empty
