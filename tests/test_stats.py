"""ipclab.stats against scipy's own results and hand-computed values. No services started."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from ipclab import stats
from ipclab.runs import RunWriter, read_run
from ipclab.studies.shafabakhsh import published

# --------------------------------------------------------------------------- bootstrap


def test_bootstrap_ci_matches_scipy_and_contains_the_mean() -> None:
    x = np.array([12.0, 15.0, 11.0, 14.0, 13.0, 16.0, 12.5])
    ci = stats.bootstrap_ci(x, seed=7)
    ref = sps.bootstrap(
        (x,), np.mean, method="percentile", n_resamples=9999, rng=np.random.default_rng(7)
    )
    assert ci.estimate == pytest.approx(x.mean())
    assert ci.low == pytest.approx(ref.confidence_interval.low)
    assert ci.high == pytest.approx(ref.confidence_interval.high)
    assert ci.low < x.mean() < ci.high
    assert ci.contains(x.mean())


def test_bootstrap_ci_bca_matches_scipy() -> None:
    x = np.array([3.1, 2.9, 3.4, 3.0, 3.8, 2.7, 3.3, 3.2])
    ci = stats.bootstrap_ci(x, method="BCa", seed=3)
    ref = sps.bootstrap((x,), np.mean, method="BCa", n_resamples=9999, rng=np.random.default_rng(3))
    assert ci.low == pytest.approx(ref.confidence_interval.low)
    assert ci.high == pytest.approx(ref.confidence_interval.high)


def test_bootstrap_ci_is_seeded() -> None:
    x = [1.0, 4.0, 2.0, 8.0, 5.0]
    assert stats.bootstrap_ci(x, seed=1) == stats.bootstrap_ci(x, seed=1)


def test_bootstrap_ci_degenerate_cases() -> None:
    one = stats.bootstrap_ci([5.0])
    assert one.estimate == 5.0 and np.isnan(one.low) and np.isnan(one.high) and one.n == 1
    const = stats.bootstrap_ci([2.0, 2.0, 2.0], method="BCa")
    assert (const.low, const.estimate, const.high) == (2.0, 2.0, 2.0)
    empty = stats.bootstrap_ci([float("nan")])
    assert empty.n == 0 and np.isnan(empty.estimate)


def test_bootstrap_means_ratio_and_p_value() -> None:
    a = np.array([110.0, 112.0, 108.0, 111.0, 109.0])
    b = np.array([100.0, 101.0, 99.0, 100.5, 99.5])
    r = stats.bootstrap_means([a, b], lambda m: m[0] / m[1], null=1.0, seed=0)
    assert r.estimate == pytest.approx(a.mean() / b.mean())
    assert 1.0 < r.low < r.estimate < r.high
    assert r.p_value == pytest.approx(2 / 10000)  # no resample at or below 1: (0 + 1) / (B + 1)
    same = stats.bootstrap_means([a, a], lambda m: m[0] / m[1], null=1.0, seed=0)
    assert same.p_value > 0.5


# --------------------------------------------------------------------------- tests, effect size


def test_interval_text_prints_estimate_and_interval_with_each_option() -> None:
    """The one ``estimate [low, high]`` text (issue 49): number format, and what it prints
    without an estimate or an interval, as each table, README and report asks."""
    nan, inf = float("nan"), float("inf")
    text = stats.interval_text
    assert text(1.23456, 1.1, 1.4) == "1.235 [1.1, 1.4]"
    assert text(1234.5, 1000, 1500.25, ",.1f") == "1,234.5 [1,000.0, 1,500.2]"
    assert text(2.0, 1.0, 3.0, lambda x: f"<{x:g}>") == "<2> [<1>, <3>]"
    # without an estimate (NaN, None, inf, not a number): the stand-in, or every number as is
    assert [text(x, 1, 2) for x in (nan, None, inf, "?", pd.NA)] == ["-"] * 5
    assert text(nan, 1, 2, missing="not measured") == "not measured"
    assert text(nan, nan, nan, missing=None) == "nan [nan, nan]"
    # without an interval (either end missing): the estimate alone and a note, or the ends
    assert text(2.0, nan, 3.0, ".1f") == text(2.0, 1.0, None, ".1f") == "2.0"
    assert text(2.0, nan, nan, ".1f", no_interval=" (1 run)") == "2.0 (1 run)"
    assert text(2.0, nan, nan, ".1f", no_interval=None) == "2.0 [nan, nan]"
    # an open end (censored data) is a bound only with open_ends, and so is an inf estimate
    assert text(5.0, 2.0, inf, ".0f") == "5"
    assert text(5.0, 2.0, inf, ".0f", open_ends=True) == "5 [2, inf]"
    assert text(inf, 2.0, inf, ".0f", open_ends=True) == "inf [2, inf]"
    assert text(nan, 1, 2, open_ends=True) == "-"
    # a point interval: the estimate alone only when asked
    assert text(2.0, 2.0, 2.0, ".1f") == "2.0 [2.0, 2.0]"
    assert text(2.0, 2.0001, 1.9999, ".1f", point=True) == "2.0"
    assert str(stats.Interval(1.5, nan, nan, 1)) == "1.5 [nan, nan]"


def test_cliffs_delta_known_values() -> None:
    assert stats.cliffs_delta([1, 2, 3], [1, 2, 3]) == 0.0
    assert stats.cliffs_delta([4, 5, 6], [1, 2, 3]) == 1.0
    assert stats.cliffs_delta([1, 2, 3], [4, 5, 6]) == -1.0
    # by hand: per x, #(y < x) - #(y > x) = -5, -5, -4, -2, 0 -> -16 / 25
    assert stats.cliffs_delta([1, 2, 3, 4, 5], [3, 4, 5, 6, 7]) == pytest.approx(-0.64)
    assert stats.cliffs_delta([1.0, 2.0], [1.5]) == 0.0


def test_cliffs_delta_equals_rescaled_mann_whitney_u() -> None:
    rng = np.random.default_rng(0)
    x, y = rng.normal(0, 1, 17), rng.normal(0.4, 1, 11)
    u = sps.mannwhitneyu(x, y).statistic  # U of x, ties counted 1/2
    assert stats.cliffs_delta(x, y) == pytest.approx(2 * u / (len(x) * len(y)) - 1)


def test_cliffs_delta_ci_contains_estimate() -> None:
    ci = stats.cliffs_delta_ci([1, 2, 3, 4, 5], [3, 4, 5, 6, 7], seed=0)
    assert ci.estimate == pytest.approx(-0.64)
    assert -1.0 <= ci.low <= ci.estimate <= ci.high <= 1.0


def test_compare_samples_matches_scipy() -> None:
    a = [10.0, 11.0, 12.0, 13.0, 12.0]
    b = [9.0, 9.5, 10.0, 10.2, 9.8]
    c = stats.compare_samples(a, b)
    w = sps.ttest_ind(a, b, equal_var=False)
    m = sps.mannwhitneyu(a, b, alternative="two-sided")
    assert c.welch_t == pytest.approx(w.statistic) and c.welch_p == pytest.approx(w.pvalue)
    assert c.mannwhitney_u == pytest.approx(m.statistic)
    assert c.mannwhitney_p == pytest.approx(m.pvalue)
    assert c.ratio.estimate == pytest.approx(np.mean(a) / np.mean(b))
    assert c.diff == pytest.approx(np.mean(a) - np.mean(b))
    assert c.cliffs_delta.estimate == pytest.approx(stats.cliffs_delta(a, b))


def test_compare_samples_constant_samples() -> None:
    # no variance, no t test: the exact permutation test decides, and it is never 0
    c = stats.compare_samples([5.0, 5.0, 5.0], [5.0, 5.0, 5.0])
    assert np.isnan(c.welch_p) and c.permutation_p == 1.0 and c.p == 1.0
    d = stats.compare_samples([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])  # the outage claims' case
    assert np.isnan(d.welch_p) and d.p == pytest.approx(2 / 20)  # 3 vs 3: 20 labellings
    assert stats.permutation_p([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) == pytest.approx(2 / 252)


def test_compare_styles_every_pair_at_every_load() -> None:
    rows = [
        {"style": s, "users": u, "rps": v + k}
        for s, v in (("rest", 100), ("grpc", 110), ("amqp", 90))
        for u in (50, 100)
        for k in range(4)
    ]
    out = stats.compare_styles(pd.DataFrame(rows), "rps", styles=("rest", "grpc", "amqp"))
    assert len(out) == 6
    first = out.iloc[0]
    assert (first["a"], first["b"], first["users"]) == ("rest", "grpc", 50)
    assert first["diff"] == pytest.approx(-10.0)
    assert first["cliffs_delta"] == pytest.approx(-1.0)


def test_holm_by_hand() -> None:
    adj = stats.holm([0.01, 0.04, 0.03, float("nan")])
    assert adj[:3] == pytest.approx([0.03, 0.06, 0.06])
    assert np.isnan(adj[3])


# --------------------------------------------------------------------------- Little's law


def test_littles_law_exact_case() -> None:
    c = stats.littles_law(users=50, throughput_rps=20.0, response_s=0.5, think_s=2.0)
    assert c.implied_users == pytest.approx(50.0)
    assert c.relative_error == pytest.approx(0.0)
    assert c.implied_think_s == pytest.approx(2.0)


def test_littles_law_missing_users() -> None:
    # 100 users, zero think time, 10 req/s at 5 s: only 50 users were busy
    c = stats.littles_law(100, 10.0, 5.0)
    assert c.implied_users == pytest.approx(50.0)
    assert c.relative_error == pytest.approx(-0.5)
    assert c.implied_think_s == pytest.approx(5.0)


def test_littles_law_on_the_published_50_user_row() -> None:
    # Table 5.1, REST: 4261 requests in 180 s at 0.23 s -> about 1.88 s unreported think time
    c = stats.littles_law(50, 4261 / 180, 0.23)
    assert c.implied_users == pytest.approx(4261 / 180 * 0.23)
    assert c.implied_think_s == pytest.approx(50 / (4261 / 180) - 0.23)
    assert 1.8 < c.implied_think_s < 1.95


def test_littles_law_table_adds_columns() -> None:
    df = pd.DataFrame(
        {
            "users": [10, 20],
            "rps": [10.0, 10.0],
            "mean_ms": [1000.0, 1500.0],
            "think_time_s": [0.0, 0.5],
        }
    )
    out = stats.littles_law_table(df)
    assert out["implied_users"].tolist() == pytest.approx([10.0, 20.0])
    assert out["relative_error"].tolist() == pytest.approx([0.0, 0.0])
    assert out["implied_think_s"].tolist() == pytest.approx([0.0, 0.5])


# --------------------------------------------------------------------------- saturation


def _synthetic_cells() -> pd.DataFrame:
    rows = []
    for u, x, r in ((50, 100.0, 10.0), (100, 199.0, 10.2), (200, 390.0, 10.5)):
        rows.append({"style": "scales", "users": u, "rps": x, "mean_ms": r})
    for u, x, r in ((50, 100.0, 500.0), (100, 102.0, 1000.0), (200, 101.0, 2000.0)):
        rows.append({"style": "flat", "users": u, "rps": x, "mean_ms": r})
    for u, x, r in ((50, 50.0, 1000.0), (100, 100.0, 1000.0), (200, 102.0, 2000.0)):
        rows.append({"style": "late", "users": u, "rps": x, "mean_ms": r})
    return pd.DataFrame(rows)


def test_saturation_detection_on_synthetic_data() -> None:
    res = stats.detect_saturation(_synthetic_cells()).set_index("style")
    assert not res.loc["scales", "saturated"]
    assert res.loc["flat", "saturated"] and res.loc["flat", "onset_users"] == 50
    assert res.loc["flat", "plateau_rps"] == pytest.approx(101.0)
    assert res.loc["late", "saturated"] and res.loc["late", "onset_users"] == 100
    steps = stats.saturation_steps(_synthetic_cells())
    s = steps[(steps["style"] == "scales") & (steps["from_users"] == 50)].iloc[0]
    assert s["throughput_gain"] == pytest.approx(0.99)
    assert s["scaling_efficiency"] == pytest.approx(0.99)


def test_saturation_thresholds_are_parameters() -> None:
    strict = stats.detect_saturation(_synthetic_cells(), stats.Saturation(max_throughput_gain=0.01))
    flat = strict.set_index("style").loc["flat"]
    assert flat["onset_users"] == 100  # +2% from 50 to 100 is no longer "flat"
    lax = stats.detect_saturation(_synthetic_cells(), stats.Saturation(min_latency_growth=2.0))
    assert not lax["saturated"].any()


def test_published_tables_are_saturated_near_24_rps() -> None:
    res = stats.detect_saturation(published.published_cells()).set_index("style")
    assert res["saturated"].all()
    assert (res["onset_users"] == 50).all()
    assert res["plateau_rps"].between(23.5, 25.0).all()


# --------------------------------------------------------------------------- per-run table


def test_parse_durations_and_think_times() -> None:
    assert stats.parse_seconds("30s") == 30.0
    assert stats.parse_seconds("1m30s") == 90.0
    assert stats.parse_seconds(180) == 180.0
    assert stats.parse_seconds(None) is None
    with pytest.raises(ValueError):
        stats.parse_seconds("soon")
    assert stats.parse_think_time(None) == 0.0
    assert stats.parse_think_time([1, 2]) == 1.5
    assert stats.parse_think_time({"min": 1, "max": 2}) == 1.5
    assert stats.parse_think_time("1-2s") == 1.5
    assert stats.parse_think_time("between(1, 2)") == 1.5
    assert stats.parse_think_time("0.5s") == 0.5
    assert stats.parse_think_time(2) == 2.0


def make_run(
    root: Path,
    stack: str,
    users: int,
    latencies_ms: list[float],
    start: float = 1000.0,
    spacing_s: float = 0.1,
    ok: list[bool] | None = None,
    repetition: int | None = None,
    think_time: object = None,
    status: str = "complete",
) -> Path:
    """A synthetic run directory: requests every ``spacing_s`` seconds from ``start``."""
    params: dict[str, object] = {"users": users, "duration": "10s"}
    if repetition is not None:
        params["repetition"] = repetition
    if think_time is not None:
        params["think_time"] = think_time
    path = root / f"{stack}-{users}-{repetition}-{start}"
    w = RunWriter(path, "load", params, stack=stack, backend="local")
    n = len(latencies_ms)
    ok = ok if ok is not None else [True] * n
    req = pd.DataFrame(
        {
            "t": start + spacing_s * np.arange(n),
            "name": "/product",
            "latency_ms": np.asarray(latencies_ms, dtype=float),
            "bytes": 1000,
            "status": [200 if o else 503 for o in ok],
            "ok": ok,
            "error": [None if o else "503" for o in ok],
        }
    )
    (path / "requests").mkdir()
    req.to_parquet(path / "requests" / "part-00000.parquet")
    w.write_json("summary.json", {"requests": n, "failures": int(n - sum(ok))})
    w.finish(status)
    return path


def test_runs_table_from_run_directories(tmp_path: Path) -> None:
    lat = [100.0] * 20 + [10.0] * 80  # a slow first 2 s (warm-up), then fast
    ok = [True] * 95 + [False] * 5
    p = make_run(tmp_path, "shop-rest", 10, lat, ok=ok, think_time=[1, 2])
    df = stats.runs_table([read_run(p)], warmup_s=2.0)
    row = df.iloc[0]
    assert row["style"] == "rest" and row["users"] == 10 and row["think_time_s"] == 1.5
    assert row["repetition"] == 1 and row["source"] == "requests"
    # window: from t0 + 2 s to the end of the last request (t0 + 9.9 s + 10 ms)
    assert row["duration_s"] == pytest.approx(9.9 + 0.01 - 2.0)
    assert row["requests"] == 80
    assert row["failures"] == 5
    assert row["rps"] == pytest.approx(80 / (9.9 + 0.01 - 2.0))
    assert row["mean_ms"] == pytest.approx(10.0)
    assert row["failure_rate"] == pytest.approx(5 / 80)
    whole = stats.runs_table([read_run(p)]).iloc[0]
    kept = np.array(lat)
    assert whole["requests"] == 100
    assert whole["mean_ms"] == pytest.approx(kept.mean())
    assert whole["p95_ms"] == pytest.approx(np.percentile(kept, 95))
    assert whole["p99_ms"] == pytest.approx(np.percentile(kept, 99))
    assert whole["p50_ms"] == pytest.approx(np.percentile(kept, 50))
    ok_only = stats.runs_table([read_run(p)], latency_of="ok").iloc[0]
    assert ok_only["mean_ms"] == pytest.approx(np.mean(kept[:95]))


def test_runs_table_assigns_repetitions_and_skips_incomplete(tmp_path: Path) -> None:
    a = make_run(tmp_path, "shop-grpc", 5, [5.0] * 10, start=2000.0)
    b = make_run(tmp_path, "shop-grpc", 5, [6.0] * 10, start=1000.0)
    c = make_run(tmp_path, "shop-grpc", 5, [7.0] * 10, start=3000.0, status="running")
    # started_at comes from the writer's clock: b was written after a, so a is repetition 1
    runs = [read_run(x) for x in (b, a, c)]
    df = stats.runs_table(runs)
    assert len(df) == 2
    assert sorted(df["repetition"]) == [1, 2]
    assert len(stats.runs_table(runs, complete_only=False)) == 3


def test_runs_table_falls_back_to_summary(tmp_path: Path) -> None:
    path = tmp_path / "r"
    w = RunWriter(path, "load", {"users": 20, "repetition": 3}, stack="shop-amqp")
    w.write_json(
        "summary.json",
        {
            "requests": 600,
            "failures": 6,
            "rps": 20.0,
            "duration_s": 30.0,
            "latency_ms": {"mean": 12.0, "p50": 10.0, "p95": 30.0, "p99": 40.0, "max": 90.0},
        },
    )
    w.finish("complete")
    row = stats.runs_table([read_run(path)]).iloc[0]
    assert row["source"] == "summary" and row["style"] == "amqp"
    assert row["rps"] == 20.0 and row["p95_ms"] == 30.0 and row["repetition"] == 3
    assert row["failure_rate"] == pytest.approx(0.01)
    assert json.loads((path / "manifest.json").read_text())["status"] == "complete"


def test_warmup_longer_than_run_is_an_error(tmp_path: Path) -> None:
    p = make_run(tmp_path, "shop-rest", 1, [1.0] * 10)
    with pytest.raises(ValueError, match="no window"):
        stats.runs_table([read_run(p)], warmup_s=60.0)


def test_cell_summary_over_repetitions() -> None:
    df = pd.DataFrame(
        {
            "style": ["rest"] * 5 + ["grpc"] * 5,
            "users": [50] * 10,
            "rps": [10, 11, 12, 13, 14, 20, 20, 21, 19, 20.0],
        }
    )
    s = stats.cell_summary(df, metrics=("rps",), seed=1)
    rest = s[s["style"] == "rest"].iloc[0]
    assert rest["n"] == 5 and rest["mean"] == 12.0 and rest["median"] == 12.0
    assert rest["sd"] == pytest.approx(np.std([10, 11, 12, 13, 14], ddof=1))
    assert rest["ci_low"] < 12.0 < rest["ci_high"]
    table = stats.cell_table(s, "rps")
    assert table.loc[50, "rest"].startswith("12.0 [")


def test_machine_load_by_hand() -> None:
    """Two seconds of samples: stack 150% CPU at 500 rps = 3 ms per request; the host was
    busy 190%, of which 150 + 20 (load generator) are ours, so 20% is someone else's."""
    from ipclab.summary import machine_load

    rows = []
    for t in (1.0, 2.0):
        rows += [
            {"t": t, "component": "gateway", "kind": "process", "cpu_percent": 100.0},
            {"t": t, "component": "broker", "kind": "broker", "cpu_percent": 50.0},
            {"t": t, "component": "loadgen", "kind": "loadgen", "cpu_percent": 20.0},
            {"t": t, "component": "host", "kind": "host", "cpu_percent": 190.0, "steal_percent": 4},
        ]
    out = machine_load(pd.DataFrame(rows), rps=500.0)
    assert out["stack_cpu_ms_per_request"] == pytest.approx(3.0)
    assert out["host_cpu_percent"] == 190.0 and out["other_cpu_percent"] == pytest.approx(20.0)
    assert out["steal_percent"] == 4.0 and "host" not in out["cpu_percent_mean"]
    old = machine_load(pd.DataFrame([r for r in rows if r["component"] != "host"]), rps=500.0)
    assert old["host_cpu_percent"] is None and old["stack_cpu_ms_per_request"] == 3.0
    # a window with no sample of the stack (a very short run) gives no value, not 0
    unsampled = [r for r in rows if r["component"] in ("loadgen", "host")]
    none = machine_load(pd.DataFrame(unsampled), rps=500.0)
    assert none["stack_cpu_ms_per_request"] is None and none["other_cpu_percent"] is None
    assert none["host_cpu_percent"] == 190.0


def test_machine_check_flags_a_cell_run_on_a_slower_machine() -> None:
    runs = pd.DataFrame(
        {
            "style": ["rest"] * 3 + ["grpc"] * 2 + ["amqp"],
            "users": [50] * 6,
            "stack_cpu_ms_per_request": [1.0, 1.1, 2.0, 3.0, 3.3, None],
            "other_cpu_percent": [2.0, 3.0, 1.0, 30.0, 2.0, None],
            "steal_percent": [0.0, 0.0, 0.0, 0.0, 0.0, None],
        }
    )
    m = stats.machine_check(runs).set_index("style")
    assert m.loc["rest", "cost_ratio"] == pytest.approx(2.0)
    assert m.loc["rest", "comparable"] is False and "2.00x" in m.loc["rest", "why"]
    assert m.loc["grpc", "cost_ratio"] == pytest.approx(1.1)
    assert m.loc["grpc", "comparable"] is False and "30%" in m.loc["grpc", "why"]
    assert m.loc["amqp", "comparable"] is None  # no machine state recorded
    loose = stats.machine_check(runs, stats.MachineLimits(2.5, 50.0, 10.0)).set_index("style")
    assert bool(loose.loc["rest", "comparable"]) and bool(loose.loc["grpc", "comparable"])
