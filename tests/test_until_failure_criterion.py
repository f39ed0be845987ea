"""Method 1 judges unavailability, not slowness (docs/availability.md, "Method 1": what
fails): its detector reads the users' own requests, the probe only witnesses the recovery;
Little's law's prediction is recorded with each run; the design check of P14a-f."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ipclab.availability import little, runner
from ipclab.availability.model import SPONTANEOUS, CycleStatus, Mark
from ipclab.availability.runner import PROBE_MARGIN_S, Common, LoadTail, method_1_common
from ipclab.availability.tracker import LOAD, Criteria, CycleTracker, detect_cycles
from ipclab.findings import GENERATED
from ipclab.paths import REPO_ROOT
from ipclab.runs import read_run
from ipclab.studies.shafabakhsh.availability import plan as plan_mod
from ipclab.studies.shafabakhsh.availability.profiles import profile, superseded_dirs
from ipclab.studies.shafabakhsh.availability.until_failure import little_prediction

DOCKER = REPO_ROOT / "data/runs/reference/availability-full-docker"
REFERENCE = REPO_ROOT / "data/runs/reference"
M1 = Criteria(cap_s=900.0, await_restart="always", failure_source=LOAD)


def users(t0: float, t1: float, rate: float, latency_ms: float, ok: bool) -> pd.DataFrame:
    """Requests a closed loop's users end at ``rate`` per second from ``t0`` to ``t1``."""
    t = np.arange(t0, t1, 1.0 / rate)
    return pd.DataFrame({"t": t, "latency_ms": latency_ms, "ok": ok})


def probe(t0: float, t1: float, ok: bool, latency_ms: float) -> pd.DataFrame:
    """The probe's rows, one every 100 ms."""
    t = np.arange(t0, t1, 0.1)
    return pd.DataFrame({"t": t, "ok": ok, "latency_ms": latency_ms, "complete": ok})


def test_a_saturated_stack_that_answers_is_not_down() -> None:
    """300 users served at 3.6 s each (slow, every request answered) while the probe's every
    request times out at 1 s: the old criterion (the probe's) calls it down at once, the
    users' requests do not."""
    load = users(0.0, 120.0, 300 / 3.6, 3600.0, True)
    slow_probe = probe(0.0, 120.0, False, 1000.0)
    marks = [Mark(0.0, "start")]
    old = detect_cycles(slow_probe, marks, Criteria(cap_s=900.0, await_restart="always"))
    assert old[0].failed and old[0].ttf_s < 2.0
    new = detect_cycles(slow_probe, marks, M1, t_end=125.0, load=load)
    assert [c.status for c in new] == [CycleStatus.CENSORED] and new[0].ttf_s == 125.0


@pytest.mark.parametrize(
    "error, latency_ms",
    [("refused", 2.0), ("504 at the call timeout", 15000.0), ("the user's timeout", 30000.0)],
)
def test_a_stack_whose_requests_fail_is_down(error: str, latency_ms: float) -> None:
    """From t = 60 s every user's request fails (refused at once, the gateway's 504 at its
    call timeout, or the user's own 30 s timeout): a failure, spontaneous, with its onset
    when the first failed request was learned, that recovers at the probe's first complete
    page after the runner's restart."""
    load = pd.concat([
        users(0.0, 60.0, 400.0, 500.0, True),
        users(60.0, 100.0, 400.0, latency_ms, False),
    ])  # fmt: skip
    pr = pd.concat([probe(0.0, 100.0, False, 1000.0), probe(100.0, 110.0, True, 20.0)])
    marks = [Mark(0.0, "start"), Mark(100.0, "restart"), Mark(110.0, "end")]
    c = detect_cycles(pr, marks, M1, load=load)[0]
    assert c.status == CycleStatus.RECOVERED and c.kind == SPONTANEOUS, error
    assert c.t_fail == pytest.approx(60.0 + latency_ms / 1000.0, abs=0.01)
    assert c.t_recovered == pytest.approx(100.02, abs=0.01)  # the probe's, after the restart
    assert c.bad and c.rule in ("error_rate", "silence")  # the silence rule: nothing good for 10 s


def test_the_tracker_judges_the_users_when_up_and_the_probe_when_down() -> None:
    tracker = CycleTracker(M1, t_start=0.0)
    for i in range(20):  # the probe's bad answers do not count while up
        tracker.observe(i * 0.1, False, 1000.0)
    assert tracker.state == "up"
    for i in range(10):
        tracker.observe(3.0 + i * 0.01, False, 1.0, source=LOAD)
    assert tracker.state == "down"
    tracker.mark(Mark(4.0, "restart"))
    tracker.observe(4.5, True, 1.0, source=LOAD)  # a user's answer is no recovery
    assert tracker.state == "down"
    assert tracker.observe(4.6, True, 1.0) is not None and tracker.state == "up"


def test_load_tail_reads_each_part_once_in_completion_order(tmp_path: Path) -> None:
    folder = tmp_path / "requests"
    folder.mkdir()
    tail = LoadTail(tmp_path)
    assert tail.new_rows().empty
    for i, rows in enumerate(([(1.0, 900.0, True), (1.5, 10.0, False)], [(2.0, 5.0, True)])):
        t, lat, ok = zip(*rows, strict=True)
        table = pa.table({"t": t, "name": ["p"] * len(t), "latency_ms": lat, "ok": ok})
        pq.write_table(table, folder / f"part-{i:05d}.parquet")
        got = tail.new_rows()
        assert len(got) == len(rows)
    assert tail.new_rows().empty
    (folder / "part-00000.parquet").unlink()
    assert tail.new_rows().empty


def test_method_1_probe_waits_past_the_call_timeout() -> None:
    assert method_1_common(Common(), 15.0).probe_timeout_s == 15.0 + PROBE_MARGIN_S == 20.0
    assert Common().probe_timeout_s == 1.0  # methods 2 and 3 unchanged


def test_little_prediction_from_the_docker_performance_reference() -> None:
    """X_max is each style's plateau in shafabakhsh-full-docker (docs/availability.md
    quotes them, and N / X_max at 400 users); none of them lets 400 users time calls out."""
    sat = REFERENCE / "shafabakhsh-full-docker/results/saturation.csv"
    if not sat.exists():
        pytest.skip("no docker performance reference")
    doc = " ".join((REPO_ROOT / "docs/availability.md").read_text().split())
    want = {
        "rest": ("REST", 876, 0.46),
        "grpc": ("gRPC", 601, 0.67),
        "amqp": ("RabbitMQ", 370, 1.08),
    }
    quoted_x = ", ".join(f"{name} {x:,}" for name, x, _ in want.values()).replace(
        "REST 876", "REST 876 req/s"
    )
    assert quoted_x in doc
    assert "N / X_max is 0.46, 0.67 and 1.08 s" in doc
    for style, (_, x, rt) in want.items():
        p = little_prediction(style, 400, "docker", 15.0, limited=True)
        assert round(p.x_max_rps or 0) == x and round(p.response_s or 0, 2) == rt
        assert p.times_out is False and p.verdict == little.CANNOT
        assert "lower bound" in p.source
    none = little_prediction("rest", 400, "swarm", 15.0, limited=True)
    assert none.x_max_rps is None and none.times_out is None and none.verdict == little.NONE
    slow = little.LittlePrediction(400, 15.0, 20.0, "a slow stack")
    assert slow.response_s == 20.0 and slow.times_out and slow.as_dict()["timeout_ratio"] > 1


def test_each_method_1_run_records_the_prediction(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The experiment gives every method-1 run its prediction (its parameters), and the run's
    summary puts it beside what the users saw and the time to failure."""
    from ipclab.backends import local
    from ipclab.studies.shafabakhsh.availability import profiles

    seen: dict[str, Any] = {}
    monkeypatch.setattr(local, "wait_ready", lambda *a, **k: None)
    monkeypatch.setattr(profiles, "run_until_failure", lambda *a: seen.update(extra=a[-1]))
    exp = profiles.AvailabilityExperiment("full", "docker", tmp_path)
    job = profiles.Job("until_failure", "shop-rest", 400, 1)
    exp._run_job(job, SimpleNamespace(gateway_url="http://x"), lambda _: None)  # type: ignore[arg-type]
    rec = seen["extra"]["little"]
    assert rec["users"] == 400 and rec["call_timeout_s"] == 15.0 and "times_out" in rec

    pd.DataFrame({
        "Timestamp": [100, 101, 102, 103], "Name": "Aggregated", "Requests/s": 500.0,
        "50%": 800.0,
    }).to_csv(tmp_path / "locust_stats_history.csv", index=False)  # fmt: skip
    tracker = CycleTracker(M1, t_start=100.0)
    mon = SimpleNamespace(t_start=100.0, tracker=tracker)
    s = runner.little_summary(tmp_path, mon, 400, {}, {"little": rec}, None)  # type: ignore[arg-type]
    assert s["predicted"] == rec and s["observed"]["x_rps"] == 500.0
    assert s["observed"]["response_s"] == 0.8 and s["ttf_s"] is None
    json.dumps(s)


def test_the_committed_method_1_failures_show_no_failed_user_request() -> None:
    """The measurement behind the criterion: each of the 18 failures the probe found in the
    committed docker method-1 runs has no failed user request from the load's start to the
    harness's stop of the stack (Locust's history, whose rows count up to a second after
    their timestamp); the four that counted came where the users' median was 610-990 ms,
    at the probe's 1 s timeout."""
    rows = []
    for d in superseded_dirs(DOCKER):  # the committed runs, wherever a later sitting put them
        run = read_run(d)
        cycles = pd.read_csv(d / "cycles.csv")
        failed = cycles[cycles["status"] != "censored"]
        if not len(failed):
            continue
        t_fail = float(failed["t_fail"].iloc[0])
        stop = min(e["t"] for e in run.events() if e["event"] == "stop_component")
        h = run.history()
        h = h[h["Name"] == "Aggregated"].sort_values("Timestamp")
        before = h[h["Timestamp"] + 1 <= stop]
        near = h[(h["Timestamp"] > t_fail - 5) & (h["Timestamp"] <= t_fail)]["50%"]
        rows.append((d.name, int(before["Total Failure Count"].iloc[-1]),
                     int(before["Total Request Count"].iloc[-1]), near))  # fmt: skip
    if not rows:
        pytest.skip("no committed method-1 runs")
    assert len(rows) == 18 and all(r[1] == 0 for r in rows)
    assert min(r[2] for r in rows) == 235 and max(r[2] for r in rows) == 101_782
    counted = ("amqp-u200-r3", "grpc-u300-r2", "grpc-u400-r1", "grpc-u400-r3")
    medians = pd.concat([r[3] for r in rows if r[0].endswith(counted)]).astype(float)
    assert (medians.min(), medians.max()) == (610.0, 990.0)
    doc = " ".join((REPO_ROOT / "docs/availability.md").read_text().split())
    assert "0 of 235 to 101,782 requests" in doc and "610-990 ms" in doc


def test_the_p14_design_check() -> None:
    """All censored: the test on runs, underpowered by design at 3 + 3 runs, never
    evidence (inconclusive where its floor could pass); the test on runs cannot reach the
    level at 3 + 3 runs; the Poisson test only when every run of the higher load fails
    early; the block in docs/availability.md is the plan's."""
    full = profile("full")
    d = plan_mod.p14_design(full, 0.05 / 17)
    assert d["outcome"].iloc[0] == "underpowered by design (censored), never evidence"
    assert plan_mod.p14_design(full, 0.2)["outcome"].iloc[0].startswith("inconclusive")
    assert d["best_p"].iloc[1] == pytest.approx(0.1) and "cannot pass" in d["outcome"].iloc[1]
    poisson = d.iloc[2:]
    passing = poisson[~poisson["outcome"].str.startswith("cannot")]
    assert len(poisson) == 9 and all(r.startswith("3 of 3") for r in passing["runs"])
    doc = (REPO_ROOT / "docs/availability.md").read_text()
    blocks = {m.group("name"): m.group(0) for m in GENERATED.finditer(doc)}
    assert plan_mod.p14_markdown(d, full) in blocks["availability-m1-design"]


def test_a_method_1_run_judged_by_the_probe_is_not_reused() -> None:
    from ipclab.studies.shafabakhsh.availability.profiles import _judged_by_users

    old = read_run(superseded_dirs(DOCKER)[0]) if superseded_dirs(DOCKER) else None
    if old is not None:
        assert not _judged_by_users(old.parameters)
    assert _judged_by_users({"common": {"criteria": M1.as_dict()}})


def test_the_newcomer_table_is_the_bench_results() -> None:
    """docs/availability.md's probe table against bench/results/probe_newcomer.json (each
    ratio to the users' median of its own sitting)."""
    res = json.loads((REPO_ROOT / "bench/results/probe_newcomer.json").read_text())
    doc = " ".join((REPO_ROOT / "docs/availability.md").read_text().split())
    for s in res["sittings"][:2]:
        u = s["users"]["p50_ms"]

        def ratio(ms: float, digits: int, base: float = u) -> str:
            return f"{ms / base:.{digits}f}x"

        c, k, f = s["closed"]["p50_ms"], s["kept"]["p50_ms"], s["fresh"]["p50_ms"]
        row = (
            f"| 300, 2 ms | {u:.0f} ms | {c:.0f} ms ({ratio(c, 2)}) | {k:,.0f} ms "
            f"({ratio(k, 1)}) | {f / 1000:.1f} s ({ratio(f, 0)}) |"
        )
        assert row in doc
    s = res["sittings"][2]
    u = s["users"]["p50_ms"]
    first, then = (a["end_ms"] for a in s["closed"]["attempts_ms"])
    assert f"| 400, 5 ms | {u / 1000:.2f} s | first answer (a new connection) " in doc
    assert (
        f"{first / 1000:.1f} s ({first / u:.1f}x), then {then / 1000:.1f} s ({then / u:.1f}x" in doc
    )
    assert f"the users' p95 {s['users']['p95_ms'] / 1000:.1f} s" in doc
    assert f"{s['kept']['ok']} of {s['kept']['n']} answered within 30 s" in doc
    assert f"{s['fresh']['ok']} of {s['fresh']['n']} within 30 s" in doc


def test_the_two_criteria_table_is_the_bench_results() -> None:
    """docs/availability.md's table of both criteria on one run each against
    bench/results/until_failure_criterion.json: no user request failed, the old criterion
    found a failure, the users' found none."""
    res = json.loads((REPO_ROOT / "bench/results/until_failure_criterion.json").read_text())
    doc = " ".join((REPO_ROOT / "docs/availability.md").read_text().split())
    for r in res["runs"]:
        (status, kind, ttf), = r["old_criterion"]  # fmt: skip
        (new_status, _, cap), = r["new_criterion"]  # fmt: skip
        assert r["users_failed"] == 0 and status != "censored" and new_status == "censored"
        row = (
            f"| {r['users_requests']:,}, {r['users_failed']} | {r['users_p50_ms'] / 1000:.2f} s "
            f"({r['users_p95_ms'] / 1000:.2f} s) | {r['probe_answers']}, {r['probe_complete']} "
            f"| {r['probe_p50_ms'] / 1000:.2f} s, {r['probe_share_over_1s']:.0%} | failure at "
            f"{ttf} s (start-up) | censored at {cap:g} s |"
        )
        assert row in doc and kind == "startup"
