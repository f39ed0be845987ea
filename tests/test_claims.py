"""Claim verdicts on synthetic run tables: each verdict, each kind of test. No services."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ipclab import claims as C
from ipclab import stats
from ipclab.runs import RunWriter, read_run
from ipclab.studies.shafabakhsh import published

ALL = {c.claim_id: c for c in published.claims()}


def table(
    cells: dict[tuple[str, int], tuple[float, float]],
    reps: int = 5,
    noise: float = 0.01,
    metric: str = "rps",
    seed: int = 0,
) -> pd.DataFrame:
    """Per-run rows: for each (style, users), ``reps`` values around ``center`` with relative
    noise (deterministic)."""
    rng = np.random.default_rng(seed)
    rows = []
    for (style, users), (center, rel) in cells.items():
        for k in range(reps):
            rows.append(
                {
                    "style": style,
                    "users": users,
                    "repetition": k + 1,
                    metric: center * (1 + (rel or noise) * rng.standard_normal()),
                }
            )
    return pd.DataFrame(rows)


def one(claim_id: str, runs: pd.DataFrame, **kw: object) -> pd.Series:
    out = C.evaluate_claims(runs, [ALL[claim_id]], **kw)  # type: ignore[arg-type]
    assert len(out) == 1
    return out.iloc[0]


# T01a: rps, gRPC > REST at 50 users (published ratio 4304/4261 = 1.0101)


def test_direction_reproduced() -> None:
    runs = table({("grpc", 50): (110.0, 0.01), ("rest", 50): (100.0, 0.01)})
    r = one("T01a", runs)
    assert r["verdict"] == C.REPRODUCED
    assert r["measured_ratio"] == pytest.approx(r["measured_a"] / r["measured_b"])
    assert r["ci_low"] > 1 and r["p_value"] < 0.05 and r["p_method"] == "t (log ratio)"
    assert r["cliffs_delta"] == 1.0


def test_direction_not_reproduced_opposite() -> None:
    runs = table({("grpc", 50): (90.0, 0.01), ("rest", 50): (100.0, 0.01)})
    r = one("T01a", runs)
    assert r["verdict"] == C.NOT_REPRODUCED
    assert "opposite" in r["reason"]


def test_a_direction_is_judged_on_its_direction_never_on_its_size() -> None:
    # no difference, measured precisely: the CI excludes the published +1.0%, but a claim
    # of direction is not refuted by a size it never stated (docs/statistics.md)
    runs = table({("grpc", 50): (100.0, 0.0005), ("rest", 50): (100.0, 0.0005)}, seed=3)
    r = one("T01a", runs)
    assert r["p_value"] >= 0.05
    assert r["ci_high"] < ALL["T01a"].published_ratio
    assert r["verdict"] == C.INCONCLUSIVE and "not significant" in r["reason"]


def test_slightly_means_a_small_difference() -> None:
    # T03a: REST "slightly faster" than RabbitMQ at 50 users (mean_ms a/b < 1)
    def runs(rest_ms: float) -> pd.DataFrame:
        cells = {("rest", 50): (rest_ms, 0.01), ("amqp", 50): (100.0, 0.01)}
        return table(cells, seed=4, metric="mean_ms")

    assert ALL["T03a"].magnitude == "slight"
    assert one("T03a", runs(90.0))["verdict"] == C.REPRODUCED
    far = one("T03a", runs(33.0))
    assert far["verdict"] == C.NOT_REPRODUCED and "not slight" in far["reason"]
    assert one("T03a", runs(110.0))["verdict"] == C.NOT_REPRODUCED  # the other direction


def test_direction_inconclusive_when_noisy() -> None:
    runs = table({("grpc", 50): (100.0, 0.05), ("rest", 50): (100.0, 0.05)}, seed=1)
    r = one("T01a", runs)
    assert r["verdict"] == C.INCONCLUSIVE
    assert r["ci_low"] < ALL["T01a"].published_ratio < r["ci_high"]


def test_too_few_repetitions_is_inconclusive() -> None:
    runs = table({("grpc", 50): (200.0, 0.01), ("rest", 50): (100.0, 0.01)}, reps=2)
    r = one("T01a", runs)
    assert r["verdict"] == C.INCONCLUSIVE and "too few repetitions" in r["reason"]
    # n < 3: the estimate alone, no interval and no p-value (none enters the Holm family)
    assert r["measured_ratio"] == pytest.approx(2.0, rel=0.05)
    assert all(np.isnan(r[k]) for k in ("ci_low", "ci_high", "p_value", "p_raw", "p_welch"))
    one_run = table({("grpc", 50): (200.0, 0.0), ("rest", 50): (100.0, 0.0)}, reps=1)
    r = one("T01a", one_run)
    assert np.isnan(r["p_value"]) and np.isnan(r["ci_low"]) and "[" not in r["measured"]
    r1 = one("T01a", runs, rules=C.Rules(min_repetitions=2))
    assert r1["verdict"] == C.REPRODUCED


def test_missing_cells_and_metrics_are_inconclusive() -> None:
    runs = table({("grpc", 50): (110.0, 0.01)})
    r = one("T01a", runs)
    assert r["verdict"] == C.INCONCLUSIVE and "no runs for rest@50" in r["reason"]
    r2 = one("T03a", runs)  # mean_ms not in the table
    assert r2["verdict"] == C.INCONCLUSIVE and "not measured" in r2["reason"]


def test_mann_whitney_option_and_holm() -> None:
    runs = table({("grpc", 50): (110.0, 0.01), ("rest", 50): (100.0, 0.01)})
    r = one("T01a", runs, rules=C.Rules(test="mannwhitney"))
    assert r["p_method"] == "mannwhitney"
    assert r["p_value"] == pytest.approx(r["p_mannwhitney"])
    assert r["p_value"] == pytest.approx(2 / 252)  # exact, complete separation, n = 5 + 5
    both = C.evaluate_claims(runs, [ALL["T01a"], ALL["T01b"]], rules=C.Rules(p_adjust="holm"))
    assert both.loc[0, "p_value"] == pytest.approx(min(1.0, 1 * both.loc[0, "p_raw"]))
    assert both.loc[1, "verdict"] == C.INCONCLUSIVE  # no amqp runs


def test_users_map_for_scaled_loads() -> None:
    runs = table({("grpc", 5): (110.0, 0.01), ("rest", 5): (100.0, 0.01)})
    r = one("T01a", runs, users_map={50: 5})
    assert r["verdict"] == C.REPRODUCED and r["measured_users"] == "5"


def test_several_think_times_must_be_chosen() -> None:
    runs = table({("grpc", 50): (110.0, 0.01), ("rest", 50): (100.0, 0.01)})
    runs = pd.concat([runs.assign(think_time_s=0.0), runs.assign(think_time_s=1.5)])
    with pytest.raises(ValueError, match="think times"):
        C.evaluate_claims(runs, [ALL["T01a"]])
    assert one("T01a", runs, think_time_s=1.5)["n_a"] == 5


# T11a: mean RT REST / RabbitMQ at 200 users = 1.22 (band 1.215 to 1.225)


def test_ratio_claim_all_verdicts() -> None:
    def runs(rest: float, rel: float = 0.005) -> pd.DataFrame:
        return table(
            {("rest", 200): (rest, rel), ("amqp", 200): (100.0, rel)}, metric="mean_ms", seed=2
        )

    assert one("T11a", runs(122.0))["verdict"] == C.REPRODUCED
    r = one("T11a", runs(105.0))
    assert r["verdict"] == C.NOT_REPRODUCED and "although the direction holds" in r["reason"]
    assert one("T11a", runs(115.0, rel=0.2))["verdict"] == C.INCONCLUSIVE


# T07a: mean RT REST = RabbitMQ at 100 users: "equal", no number stated: [0.8, 1.25]


def test_equal_claim_all_verdicts() -> None:
    def runs(rest: float, rel: float) -> pd.DataFrame:
        return table(
            {("rest", 100): (rest, rel), ("amqp", 100): (100.0, rel)}, metric="mean_ms", seed=4
        )

    claim = replace(ALL["T07a"], band_low=None, band_high=None)
    ALL["T07a_std"] = claim
    assert one("T07a_std", runs(100.0, 0.003))["verdict"] == C.REPRODUCED
    assert one("T07a_std", runs(140.0, 0.003))["verdict"] == C.NOT_REPRODUCED
    assert one("T07a_std", runs(124.0, 0.05))["verdict"] == C.INCONCLUSIVE


# "considerable difference": outside [0.64, 1.5625] (docs/statistics.md), never an own band


def test_differ_claim_all_verdicts() -> None:
    def runs(rest: float, rel: float) -> pd.DataFrame:
        return table({("rest", 200): (rest, rel), ("amqp", 200): (100.0, rel)}, seed=5)

    ALL["differ"] = replace(ALL["T01a"], test="differ", relation="!=", a_style="rest",
                            a_users=(200,), b_style="amqp", b_users=(200,),
                            magnitude="considerable")  # fmt: skip
    assert one("differ", runs(50.0, 0.01))["verdict"] == C.REPRODUCED
    assert one("differ", runs(100.0, 0.002))["verdict"] == C.NOT_REPRODUCED
    assert (
        one("differ", runs(80.0, 0.01))["verdict"] == C.NOT_REPRODUCED
    )  # 1.25x: not "considerable"
    assert one("differ", runs(66.0, 0.08))["verdict"] == C.INCONCLUSIVE


# T14a: mean RT growth 50 -> 200, RabbitMQ's below REST's


def test_interaction_claim() -> None:
    def runs(amqp_growth: float, rest_growth: float, rel: float = 0.01) -> pd.DataFrame:
        return table(
            {
                ("amqp", 50): (100.0, rel),
                ("amqp", 200): (100.0 * amqp_growth, rel),
                ("rest", 50): (80.0, rel),
                ("rest", 200): (80.0 * rest_growth, rel),
            },
            metric="mean_ms",
            seed=6,
        )

    good = one("T14a", runs(2.0, 4.0))
    assert good["verdict"] == C.REPRODUCED and good["p_method"] == "t (log ratio)"
    assert good["measured_ratio"] == pytest.approx(good["measured_a"] / good["measured_b"])
    assert good["measured_a"] == pytest.approx(2.0, rel=0.05)
    assert one("T14a", runs(4.0, 2.0))["verdict"] == C.NOT_REPRODUCED
    assert one("T14a", runs(3.0, 3.0, rel=0.2))["verdict"] == C.INCONCLUSIVE


def test_constant_samples_off_the_claimed_side_or_equal_are_not_reproduced() -> None:
    # every run gives one value (seeded bytes, a 0/1 outcome): the interval is the point
    def runs(grpc: float, rest: float, reps: int = 7) -> pd.DataFrame:
        cells = [("grpc", grpc), ("rest", rest)]
        return pd.DataFrame(
            [{"style": s, "users": 50, "repetition": k + 1, "rps": v} for s, v in cells
             for k in range(reps)]
        )  # fmt: skip

    zero = one("T01a", runs(0.0, 0.0))  # 0 against 0: the ratio is undefined, no difference
    assert zero["verdict"] == C.NOT_REPRODUCED and "same value" in zero["reason"]
    assert one("T01a", runs(5.0, 5.0))["verdict"] == C.NOT_REPRODUCED
    assert one("T01a", runs(90.0, 100.0))["verdict"] == C.NOT_REPRODUCED
    right = one("T01a", runs(110.0, 100.0))  # the claimed side: the permutation test decides
    assert right["verdict"] == C.REPRODUCED and right["p_method"] == "permutation"
    assert one("T01a", runs(0.0, 0.0, reps=2))["verdict"] == C.INCONCLUSIVE  # too few runs


# T18a: throughput averaged over 50/100/200 users, RabbitMQ above REST


def test_average_over_loads() -> None:
    cells = {
        (s, u): (v * (1 + u / 1000), 0.01)
        for s, v in (("amqp", 105.0), ("rest", 100.0))
        for u in (50, 100, 200)
    }
    r = one("T18a", table(cells))
    assert r["verdict"] == C.REPRODUCED and r["p_method"] == "t (log ratio)"
    assert r["measured_users"] == "50+100+200"


def test_compare_claims_on_code_measures() -> None:
    code = pd.DataFrame(
        {
            "style": ["rest", "grpc", "amqp"],
            "loc": [50, 170, 110],
            "functions": [7, 21, 12],
            "files": [1, 2, 1],
        }
    )
    t = C.evaluate_claims(
        pd.DataFrame(columns=["style", "users"]),
        [ALL[i] for i in ("T16a", "T16b", "T17b", "T18g")],
        complexity=code,
    )
    assert t["verdict"].tolist() == [C.REPRODUCED] * 4
    worse = code.assign(loc=[200, 170, 110])
    assert one("T16a", pd.DataFrame(), complexity=worse)["verdict"] == C.NOT_REPRODUCED
    assert one("T16a", pd.DataFrame())["verdict"] == C.INCONCLUSIVE


def test_verdict_rules_are_pure_and_cover_p_values() -> None:
    c = ALL["T01a"]
    eff = C.Effect(stats.Interval(1.05, 1.02, 1.08, 5), 105.0, 100.0, 5, 5, 5, 0.01, "welch")
    assert C.verdict(c, eff, 0.01, C.Rules())[0] == C.REPRODUCED
    assert C.verdict(c, eff, 0.2, C.Rules())[0] == C.INCONCLUSIVE
    assert C.verdict(c, eff, 0.01, C.Rules(alpha=0.005))[0] == C.INCONCLUSIVE
    flipped = replace(c, relation="<")
    assert C.verdict(flipped, eff, 0.01, C.Rules())[0] == C.NOT_REPRODUCED


def test_published_consistency_flags_the_documents_own_contradictions() -> None:
    assert C.published_consistent(ALL["T01a"]) is True
    # "on average asynchronous ... better performance efficiency": by the tables gRPC's
    # average throughput (4368.3) is above RabbitMQ's (4345)
    assert C.published_consistent(ALL["P19b"]) is False
    assert C.published_consistent(ALL["T18b"]) is False
    assert C.published_consistent(ALL["P19a"]) is True
    assert C.published_consistent(ALL["P14a"]) is None  # figure only, no number


def test_full_table_and_statement_verdicts() -> None:
    cells = {}
    for s, x, r in (("rest", 100.0, 50.0), ("grpc", 110.0, 45.0), ("amqp", 90.0, 60.0)):
        for u in (50, 100, 200):
            cells[(s, u)] = (x, r * u / 50)
    rng = np.random.default_rng(0)
    rows = [
        {
            "style": s,
            "users": u,
            "repetition": k,
            "rps": x * (1 + 0.01 * rng.normal()),
            "mean_ms": r * (1 + 0.01 * rng.normal()),
        }
        for (s, u), (x, r) in cells.items()
        for k in range(5)
    ]
    t = C.evaluate_claims(pd.DataFrame(rows), published.claims())
    perf = [c for c in published.claims() if c.scope in ("performance", "complexity")]
    assert len(t) == len(perf)
    assert set(t["verdict"]) <= set(C.VERDICTS)
    for col in (
        "claim_id",
        "quote",
        "source",
        "published_value",
        "measured",
        "ci_low",
        "ci_high",
        "p_value",
        "cliffs_delta",
        "verdict",
        "reason",
    ):
        assert col in t.columns
    sv = C.statement_verdicts(t)
    assert sv["statement_id"].is_unique
    t01 = sv.set_index("statement_id").loc["T01"]
    assert t01["verdict"] == C.REPRODUCED  # gRPC is 10% above both others here
    t13 = sv.set_index("statement_id").loc["T13"]
    assert t13["verdict"] == C.NOT_REPRODUCED  # RabbitMQ is slowest at every load here


def _run_dir(root: Path, stack: str, latency_ms: float, repetition: int) -> Path:
    path = root / f"{stack}-{repetition}"
    w = RunWriter(path, "load", {"users": 100, "repetition": repetition}, stack=stack)
    (path / "requests").mkdir()
    pd.DataFrame(
        {
            "t": 1000.0 + 0.1 * np.arange(50),
            "name": "/product",
            "latency_ms": latency_ms,
            "bytes": 900,
            "status": 200,
            "ok": True,
            "error": None,
        }
    ).to_parquet(path / "requests" / "part-00000.parquet")
    w.finish("complete")
    return path


def test_end_to_end_from_run_directories(tmp_path: Path) -> None:
    runs = []
    for k in range(4):
        for stack, lat in (("shop-grpc", 10.0), ("shop-rest", 12.0)):
            runs.append(read_run(_run_dir(tmp_path, stack, lat + 0.1 * k, k + 1)))
    df = stats.runs_table(runs)
    r = one("T06a", df)  # mean RT gRPC < REST at 100 users
    assert r["verdict"] == C.REPRODUCED
    assert r["n_a"] == 4 and r["n_b"] == 4


def test_b_metric_compares_two_measures_of_one_cell_as_a_test_of_its_own() -> None:
    base = replace(ALL["T01a"], a_style="grpc", b_style="grpc", a_users=(50,), b_users=(50,))
    two = replace(base, claim_id="T01x", metric="share_a", b_metric="share_b")
    rng = np.random.default_rng(1)
    runs = pd.DataFrame(
        {
            "style": "grpc",
            "users": 50,
            "share_a": 0.9 + 0.02 * rng.standard_normal(5),
            "share_b": 0.05 + 0.01 * rng.standard_normal(5),
        }
    )
    r = C.evaluate_claims(runs, [two]).iloc[0]
    assert r["verdict"] == C.REPRODUCED
    assert r["measured_a"] == pytest.approx(runs["share_a"].mean())
    assert r["measured_b"] == pytest.approx(runs["share_b"].mean())
    assert two.describe() == "share_a of grpc@50 > share_b of grpc@50"
    # not the same test as a one-metric comparison of the same cells, and swapping the
    # sides (with their metrics) is the same test
    assert C.test_key(two) != C.test_key(replace(two, b_metric=""))
    swapped = replace(two, metric="share_b", b_metric="share_a", relation="<")
    assert C.test_key(two) == C.test_key(swapped)
    missing = C.evaluate_claims(runs.drop(columns="share_b"), [two]).iloc[0]
    assert missing["verdict"] == C.INCONCLUSIVE and "share_b" in missing["reason"]


def test_each_claim_says_whether_its_cells_pass_the_machine_check() -> None:
    runs = table({("grpc", 50): (110.0, 0.01), ("rest", 50): (100.0, 0.01)})
    assert one("T01a", runs)["machine_check"] == ""  # runs without machine state
    runs = runs.assign(stack_cpu_ms_per_request=2.0, other_cpu_percent=5.0, steal_percent=0.0)
    assert one("T01a", runs)["machine_check"] == "pass"
    busy = runs.copy()
    busy.loc[(busy["style"] == "rest") & (busy["repetition"] == 2), "other_cpu_percent"] = 80.0
    check = one("T01a", busy)["machine_check"]
    assert check.startswith("fail: rest@50") and "80% CPU" in check
    costly = runs.copy()
    costly.loc[(costly["style"] == "grpc") & (costly["repetition"] == 1),
               "stack_cpu_ms_per_request"] = 3.0  # fmt: skip
    assert "grpc@50: CPU per request varies 1.50x" in one("T01a", costly)["machine_check"]


def test_a_side_that_is_zero_in_every_run_is_judged_by_the_exact_test() -> None:
    def outage(rest: list[float]) -> pd.DataFrame:
        rows = [{"style": "amqp", "users": 50, "outage_failure_fraction": 0.0}] * 5
        rows += [{"style": "rest", "users": 50, "outage_failure_fraction": v} for v in rest]
        return pd.DataFrame(rows)

    # REST failing in every run: the ratio is exactly 0, the permutation test decides
    r = one("T22a", outage([0.9, 1.0, 0.95, 1.0, 0.97]), scope="availability")
    assert r["measured_ratio"] == 0 and r["p_method"] == "permutation"
    assert r["verdict"] == C.REPRODUCED and r["p_value"] == pytest.approx(1 / 126, rel=1e-6)
    # REST failing in two runs of five: still a ratio of 0, but no evidence of a difference
    r = one("T22a", outage([0.0, 0.02, 0.0, 0.01, 0.0]), scope="availability")
    assert r["measured_ratio"] == 0 and r["verdict"] == C.INCONCLUSIVE
    assert "not significant" in r["reason"]
