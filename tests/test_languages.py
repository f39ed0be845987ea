"""The language factor (issue 18): the ordering claims follow Python's measured order and
are judged in both languages by the rules of docs/statistics.md; the sittings check."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ipclab.claims import evaluate_claims, statement_verdicts
from ipclab.reproduce import why_not
from ipclab.runs import Run, RunWriter, read_run
from ipclab.studies import get_study
from ipclab.studies.shafabakhsh import languages

RPS = {"rest": 1500.0, "grpc": 900.0, "amqp": 500.0}


def _runs(lang: str, rps: dict[str, float], users: int = 50, n: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(len(lang) + users)

    def noisy(x: float) -> float:
        return x * (1 + 0.02 * rng.standard_normal())

    rows = [
        {"language": lang, "style": s, "users": users, "rps": noisy(v),
         "mean_ms": noisy(users * 1000 / v)}
        for s, v in rps.items()
        for _ in range(n)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def _statements(go_rps: dict[str, float], n: int = 5) -> pd.DataFrame:
    py = _runs("python", RPS, n=n)
    runs = pd.concat([py, _runs("go", go_rps, n=n)], ignore_index=True)
    claims = languages.ordering_claims(py)
    table = evaluate_claims(languages._tagged(runs), claims)
    return statement_verdicts(table).set_index("statement_id")


def test_claims_follow_pythons_measured_order_and_cover_every_pair_in_both_languages() -> None:
    py = _runs("python", {"rest": 500.0, "grpc": 1500.0, "amqp": 900.0})
    claims = languages.ordering_claims(py)
    assert len(claims) == 2 * 3 * 2  # metrics x pairs x languages, one load
    rps = [c for c in claims if c.metric == "rps"]
    assert {(c.a_style, c.b_style) for c in rps} == {
        ("grpc-python", "amqp-python"), ("grpc-python", "rest-python"),
        ("amqp-python", "rest-python"), ("grpc-go", "amqp-go"), ("grpc-go", "rest-go"),
        ("amqp-go", "rest-go"),
    }  # fmt: skip
    assert all(c.relation == ">" for c in rps)
    assert all(c.relation == "<" for c in claims if c.metric == "mean_ms")
    assert "gRPC > AMQP > REST" in rps[0].quote


def test_the_same_order_in_go_is_reproduced() -> None:
    s = _statements({"rest": 3000.0, "grpc": 2000.0, "amqp": 1000.0})
    assert (s["verdict"] == "reproduced").all(), s


def test_a_pair_go_orders_the_other_way_makes_the_statement_not_reproduced() -> None:
    s = _statements({"rest": 2400.0, "grpc": 3300.0, "amqp": 1000.0})
    assert (s["verdict"] == "not reproduced").all(), s
    assert (s["not reproduced"] == 1).all()  # REST against gRPC in Go only


def test_one_repetition_is_inconclusive_never_a_verdict() -> None:
    s = _statements({"rest": 2400.0, "grpc": 3300.0, "amqp": 1000.0}, n=1)
    assert (s["verdict"] == "inconclusive").all()


def test_sittings_are_comparable_only_when_a_request_costs_the_same() -> None:
    py = pd.DataFrame(
        {"style": ["rest"] * 3, "users": [50] * 3, "rps": [1500.0, 1480.0, 1520.0],
         "stack_cpu_ms_per_request": [1.0, 1.05, 0.95]}
    )  # fmt: skip
    same = py.iloc[:1].assign(stack_cpu_ms_per_request=1.1, rps=1450.0)
    slower = py.iloc[:1].assign(stack_cpu_ms_per_request=1.6, rps=900.0)
    assert bool(languages.sittings(py, same)["comparable"].iloc[0])
    row = languages.sittings(py, slower).iloc[0]
    assert not row["comparable"] and row["cost_ratio"] == pytest.approx(1.6)
    assert languages.sittings(py, py.iloc[:0]).empty


def test_the_languages_notebook_says_why_not_when_go_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    nb = next(n for n in get_study("shafabakhsh").notebooks if n.results == "languages")
    monkeypatch.setattr("ipclab.gobuild.toolchain_missing", lambda: "no Go toolchain: install")
    assert why_not(nb, "local") == "no Go toolchain: install"
    assert why_not(nb, "docker") is not None


def test_the_go_matrix_mirrors_the_python_matrix() -> None:
    from ipclab.studies.shafabakhsh import performance

    for name in ("quick", "full"):
        py = performance.experiments(name)[0]
        go = languages.experiment(name)
        assert go.users == py.users and go.repetitions == py.repetitions
        assert go.warmup_s == py.warmup_s and go.order_seed == py.order_seed
        assert go.share_stacks == py.share_stacks
        if name == "quick":  # the full Go matrix measures 60 s, not 180 (its deviation)
            assert go.duration_s == py.duration_s
        assert go.options == py.options
        assert set(go.stacks) == {f"{s}-go" for s in py.stacks}
    assert languages.anchor("quick") is None
    full = languages.anchor("full")
    assert full is not None and set(full.stacks) == set(languages.LANGUAGES["python"])


def _history_run(path: Path, seconds: int, fast_until: int, users: int = 50) -> Run:
    """A complete run whose Locust history (Aggregated rows, one a second) has 100 req/s at
    50 ms until ``fast_until`` s, then 50 req/s at 100 ms; a per-endpoint row beside each."""
    w = RunWriter(path, "load", {"users": users, "repetition": 2}, stack="shop-grpc")
    rows = ["Timestamp,User Count,Type,Name,Requests/s,Total Request Count,"
            "Total Average Response Time"]  # fmt: skip
    n, total = 0, 0.0
    for t in range(seconds + 1):
        rows.append(f"{1000 + t},{users},GET,/product/[id],0,{n},{total / n if n else 0}")
        rows.append(f"{1000 + t},{users},,Aggregated,0,{n},{total / n if n else 0}")
        rate, ms = (100, 50.0) if t < fast_until else (50, 100.0)
        n, total = n + rate, total + rate * ms
    (path / "locust_stats_history.csv").write_text("\n".join(rows) + "\n")
    w.write_json("summary.json", {"rps": 66.0, "latency_ms": {"mean": 75.0}})
    w.finish("complete")
    return read_run(path)


def test_the_window_check_sets_the_first_window_against_the_whole(tmp_path: Path) -> None:
    # warm-up 10 s, window 60 s: 100 req/s at 50 ms in it, then 120 s of 50 req/s at 100 ms
    run = _history_run(tmp_path / "long", seconds=190, fast_until=70)
    short = _history_run(tmp_path / "short", seconds=60, fast_until=70)  # no longer window
    check = languages.window_check([run, short], warmup_s=10, window_s=60)
    assert len(check) == 1
    row = check.iloc[0]
    assert (row["style"], row["users"], row["repetition"]) == ("grpc", 50, 2)
    assert (row["window_s"], row["whole_s"]) == (60, 180)
    assert row["rps_window"] == pytest.approx(100) and row["mean_ms_window"] == pytest.approx(50)
    assert row["rps_whole"] == pytest.approx((60 * 100 + 120 * 50) / 180)
    assert row["mean_ms_whole"] == pytest.approx(75)  # as many requests at 50 as at 100 ms
    assert row["rps_ratio"] == pytest.approx(1.5) and row["mean_ms_ratio"] == pytest.approx(2 / 3)
    assert row["rps_summary"] == 66.0
    # the same run measured at an even rate throughout: a ratio of 1
    even = languages.window_check(
        [_history_run(tmp_path / "even", seconds=190, fast_until=999)], 10, 60
    )
    s = languages.window_summary(pd.concat([check, even], ignore_index=True)).set_index("metric")
    assert s.loc["rps", "runs"] == 2 and s.loc["rps", "max"] == pytest.approx(1.5)
    assert s.loc["rps", "within_1pct"] == 1 and s.loc["mean_ms", "min"] == pytest.approx(2 / 3)
    assert s.loc["rps", "cells"] == 1 and s.loc["rps", "cell_mean_max"] == pytest.approx(1.25)
    assert languages.window_summary(check.iloc[:0]).empty


def _with_reps(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(repetition=df.groupby("style").cumcount() + 1)


def test_the_runs_that_define_the_order_never_test_it() -> None:
    py = _with_reps(_runs("python", RPS))
    anchor = _with_reps(_runs("python", RPS, n=1))
    defining, testing, source = languages.split_python(py, anchor)
    assert defining is anchor and testing is py and source == languages.ANCHOR_SOURCE
    defining, testing, source = languages.split_python(py, py.iloc[:0])
    assert set(defining["repetition"]) == {1} and 1 not in set(testing["repetition"])
    assert len(defining) + len(testing) == len(py) and source == languages.HELD_OUT_SOURCE
    roles = languages.roles(defining, testing, _runs("go", RPS), source).set_index("role")
    assert roles.loc["defines the claimed ordering", "runs"] == 3
    assert roles.loc["tests the Python parts", "runs_per_cell"] == "4"


def test_a_python_part_can_fail_when_its_order_is_read_off_other_runs() -> None:
    """Not circular: the anchor orders gRPC above REST, the Python matrix the other way
    round, so the Python part of that pair is not reproduced (and Go's, ordered as the
    matrix, neither); judged on the anchor's own runs it could only have passed."""
    anchor = _runs("python", {"rest": 900.0, "grpc": 1500.0, "amqp": 500.0}, n=1)
    py, go = _runs("python", RPS), _runs("go", RPS)
    claims = languages.ordering_claims(anchor, languages.ANCHOR_SOURCE)
    assert languages.ANCHOR_SOURCE in claims[0].quote
    table = evaluate_claims(languages._tagged(pd.concat([py, go])), claims).set_index("claim_id")
    for lang in ("python", "go"):
        assert table.loc[f"L-rps-50-grpc-rest-{lang}", "verdict"] == "not reproduced"
        assert table.loc[f"L-rps-50-grpc-amqp-{lang}", "verdict"] == "reproduced"


def test_the_language_deviations_name_the_plain_http_client_and_the_deadline() -> None:
    from ipclab.backends import StackOptions
    from ipclab.studies.shafabakhsh import performance

    for deviations in (performance.DEVIATIONS, languages.DEVIATIONS):
        text = " ".join(deviations)
        assert "HTTPS" in text and "thesis section 4.1" in text and "paper section 3" in text
        assert f"deadline of {StackOptions().call_timeout_s:g} s" in text and "504" in text
