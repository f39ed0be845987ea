"""The GC coincidence test (N29a, N30a): each run's GC schedule shifted in time, the run the
unit. On synthetic runs: extremes independent of the GCs are rejected at most at the
nominal rate; extremes that coincide with GCs are significant."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ipclab import claims as claims_mod
from ipclab.studies.nyflott import gcshift, published, verdicts

WINDOW_S = 30.0


def synthetic_run(
    rng: np.random.Generator, name: str, coincide: bool
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One run's extremes and GCs over a 30 s window: 10-20 GCs at uniform times, most of
    them short (20 ms) and a few long (0.3-1 s); one episode of 2-4 extremes (0.5-1 s
    each), at a uniform time (independent) or inside the run's longest GC (coinciding)."""
    n_gc = int(rng.integers(10, 21))
    gc_t = rng.uniform(0.0, WINDOW_S, n_gc)
    gc_ms = np.where(rng.random(n_gc) < 0.2, rng.uniform(300, 1000, n_gc), 20.0)
    k = int(rng.integers(2, 5))
    at = gc_t[np.argmax(gc_ms)] + 0.01 if coincide else rng.uniform(0.0, WINDOW_S)
    ext = pd.DataFrame(
        {
            "run": name,
            "t_rel": np.mod(at + rng.uniform(0, 0.005, k), WINDOW_S),
            "latency_ms": rng.uniform(500, 1000, k),
        }
    )
    return ext, pd.DataFrame({"run": name, "t_rel": gc_t, "ms": gc_ms})


def synthetic(seed: int, runs: int, coincide: bool) -> verdicts.GcRecords:
    rng = np.random.default_rng(seed)
    parts = [synthetic_run(rng, f"r{i}", coincide) for i in range(runs)]
    windows = pd.Series(WINDOW_S, index=[f"r{i}" for i in range(runs)])
    return verdicts.GcRecords(
        pd.concat([e for e, _ in parts], ignore_index=True),
        pd.concat([g for _, g in parts], ignore_index=True),
        windows,
    )


def p_values(gc: verdicts.GcRecords, shifts: int) -> dict[str, float]:
    names = list(gc.windows.index)
    _, nulls = gcshift.run_nulls(gc.extremes, gc.gc_events, gc.windows, names, shifts)
    return {side: gcshift.combine(nulls[side].values()).p_value for side in gcshift.SIDES}


def test_overlap_on_the_circle_and_its_shares() -> None:
    # a request at 10.0-10.5 s; GCs at 10.2 (100 ms) and 29.95 (100 ms: wraps to 0.05)
    req, gcs = gcshift.shifted_overlaps(
        np.array([10.0, 0.0]), np.array([500.0, 20.0]), np.array([10.2, 29.95]),
        np.array([100.0, 100.0]), WINDOW_S, shifts=300,
    )  # fmt: skip
    assert req[0] == 1.0 and gcs[0] == 1.0  # both requests meet a GC, both GCs a request
    assert 0 < req.mean() < 1 and len(req) == 300
    # no GC: the share of requests is 0 at every offset; the share of GCs has no value
    req, gcs = gcshift.shifted_overlaps(np.array([1.0]), np.array([5.0]), np.zeros(0),
                                        np.zeros(0), WINDOW_S, shifts=10)  # fmt: skip
    assert (req == 0).all() and np.isnan(gcs).all()


def test_combine_is_the_exact_null_of_the_mean_over_runs() -> None:
    run = np.array([1.0, 0.0, 0.0, 0.0])  # observed 1, reached by 1 offset in 4
    c = gcshift.combine([run, run])
    assert c.runs == 2 and c.observed == 1.0 and c.expected == pytest.approx(0.25)
    assert c.p_upper == pytest.approx(1 / 16) and c.p_value == pytest.approx(2 / 16)
    low = gcshift.combine([np.array([0.0, 1.0, 1.0, 1.0])] * 2)  # observed below chance
    assert low.p_lower == pytest.approx(1 / 16) and low.observed < low.expected
    const = gcshift.combine([np.zeros(5), run, np.full(3, np.nan)])  # constant; no share
    assert const.runs == 2 and const.p_upper == pytest.approx(0.25)
    assert np.isnan(gcshift.combine([]).p_value)


def test_extremes_independent_of_gcs_are_rejected_at_most_at_the_nominal_rate() -> None:
    reps, alpha = 400, 0.05
    rejected = {side: 0 for side in gcshift.SIDES}
    for seed in range(reps):
        for side, p in p_values(synthetic(seed, 5, coincide=False), shifts=300).items():
            rejected[side] += p < alpha
    for side, n in rejected.items():  # binomial SE at 0.05 over 400: 0.011
        assert n / reps <= alpha + 0.025, (side, n / reps)


def test_extremes_that_coincide_with_gcs_are_significant() -> None:
    for seed in range(5):
        p = p_values(synthetic(1000 + seed, 10, coincide=True), shifts=300)
        assert p["extremes"] < 0.01 and p["gcs"] < 0.05, p


def test_gc_claims_reproduced_only_when_the_extremes_coincide() -> None:
    cl = [c for c in published.claims() if c.metric in verdicts.GC_METRICS]
    assert {c.claim_id for c in cl} == {"N29a", "N30a"}
    runs = pd.DataFrame({"run": [f"r{i}" for i in range(15)], "style": "coap",
                         "users": [0, 2, 5] * 5})  # fmt: skip
    hit = verdicts.gc_rows(cl, runs, synthetic(7, 15, coincide=True)).set_index("claim_id")
    assert (hit["verdict"] == claims_mod.REPRODUCED).all()
    assert (hit["family"] == verdicts.GC_FAMILY).all() and (hit["n_a"] == 15).all()
    assert hit.loc["N29a", "measured_a"] == 1.0 and hit.loc["N29a", "measured_ratio"] > 1
    # the two claims are one family: Holm over their two tests
    assert hit.loc["N29a", "p_value"] >= hit.loc["N29a", "p_raw"]
    few = verdicts.gc_rows(cl, runs.iloc[:2], synthetic(7, 15, coincide=True))
    assert set(few["verdict"]) == {claims_mod.INCONCLUSIVE}
    assert "too few repetitions" in few["reason"].iloc[0]
    none = verdicts.gc_rows(cl, runs, None)
    assert set(none["verdict"]) == {claims_mod.INCONCLUSIVE}


def test_every_reproduced_gc_claim_has_an_interval_over_runs() -> None:
    """docs/statistics.md section 3 (issue 47.5): the ratio of the mean observed share to
    its mean under the shifts, with the t interval of its log over runs (paired, delta
    method); N29a and N30a were reproduced with no interval before."""
    cl = [c for c in published.claims() if c.metric in verdicts.GC_METRICS]
    runs = pd.DataFrame({"run": [f"r{i}" for i in range(15)], "style": "coap",
                         "users": [0, 2, 5] * 5})  # fmt: skip
    hit = verdicts.gc_rows(cl, runs, synthetic(7, 15, coincide=True)).set_index("claim_id")
    for cid in ("N29a", "N30a"):
        r = hit.loc[cid]
        assert r["verdict"] == claims_mod.REPRODUCED
        assert 1 < r["ci_low"] <= r["measured_ratio"] <= r["ci_high"] < np.inf, cid
        assert r["measured"].count("[") == 1 and r["p_floor"] < 1e-10
        assert r["design"] == "can pass"
    # the interval by hand: observed / expected per run, the log ratio's delta method
    o, e = np.array([1.0, 1.0, 1.0, 1.0]), np.array([0.4, 0.5, 0.45, 0.55])
    ci = gcshift.ratio_interval(o, e)
    se = np.sqrt(np.var(e, ddof=1) / len(e)) / e.mean()
    q = 3.182446305284263  # t(0.975, 3)
    assert (ci.low, ci.high) == pytest.approx((ci.estimate / np.exp(q * se),
                                               ci.estimate * np.exp(q * se)))  # fmt: skip


def test_a_significant_shift_test_whose_interval_crosses_1_is_inconclusive() -> None:
    c = next(c for c in published.claims() if c.claim_id == "N29a")
    wide = claims_mod.Effect(gcshift.Interval(1.5, 0.9, 2.5, 15), 0.6, 0.4, 15, 15, 15, 1e-4,
                             "circular shift")  # fmt: skip
    comb = gcshift.Combined(15, 0.6, 0.4, 5e-5, 1.0, 1e-4)
    v, why = verdicts.gc_verdict(c, wide, comb, 1e-4, claims_mod.Rules())
    assert v == claims_mod.INCONCLUSIVE and "does not exclude 1" in why
    none = claims_mod.Effect(gcshift.Interval(1.5, np.nan, np.nan, 15), 0.6, 0.4, 15, 15, 15,
                             1e-4, "circular shift")  # fmt: skip
    v, why = verdicts.gc_verdict(c, none, comb, 1e-4, claims_mod.Rules())
    assert v == claims_mod.INCONCLUSIVE and "no interval" in why


def test_sensitivity_per_delay_and_for_figure_16s_range() -> None:
    gc = synthetic(3, 6, coincide=True)
    slow = gc.extremes.assign(latency_ms=150.0)
    by_delay = {0.0: ["r0", "r1", "r2"], 5.0: ["r3", "r4", "r5"]}
    slow = slow[slow["run"].isin(by_delay[0.0])]  # Fig. 16's requests: kept at 0 ms only
    table, per_run = gcshift.sensitivity(
        gc.extremes, slow, gc.gc_events, gc.windows, by_delay, shifts=100
    )
    got = set(zip(table["requests_set"], table["delays_ms"], strict=True))
    ext, fig16 = gcshift.SETS["extremes"], gcshift.SETS["slow"]
    assert got == {(ext, "0, 2, 5"), (ext, "0"), (ext, "5"), (fig16, "0")}
    assert len(table) == 2 * len(got) and (table["runs"] <= 6).all()
    assert len(per_run) == 6 + 3  # each run once per request set


def test_the_committed_reference_observed_shares_agree_with_its_extremes_table() -> None:
    """At offset 0 the circle's coincidences are ``extremes.coincides``'s (the GC each
    extreme met, committed in extremes.csv)."""
    from ipclab.paths import from_repo

    results = from_repo("data/runs/reference/nyflott-full-docker/results")
    if not (results / "gc_shift_runs.csv").exists():
        pytest.skip("no committed Nyfløtt reference with the shift test")
    per_run = pd.read_csv(results / "gc_shift_runs.csv")
    ext = pd.read_csv(results / "extremes.csv", keep_default_na=False)
    per_run = per_run[per_run["requests_set"] == gcshift.SETS["extremes"]]
    met = ext.assign(met=ext["gc_role"] != "").groupby("run")["met"].mean()
    assert len(per_run) == 15
    for _, r in per_run.iterrows():
        assert r["extremes_observed"] == pytest.approx(met[r["run"]]), r["run"]
    claims = pd.read_csv(results / "claims.csv")
    assert set(claims["family"]) == {verdicts.FAMILY, verdicts.GC_FAMILY, verdicts.FIX_FAMILY}


def test_the_convolution_is_the_double_loop_over_pairs_bit_for_bit() -> None:
    """``gcshift._convolve`` (numpy) gives the values, their order and their probabilities
    of the plain loop over every pair into a dict, float for float."""
    rng = np.random.default_rng(7)

    def loop(a: dict[float, float], b: dict[float, float]) -> dict[float, float]:
        out: dict[float, float] = {}
        for x, p in a.items():
            for y, q in b.items():
                k = round(x + y, gcshift._ROUND - 2)
                out[k] = out.get(k, 0.0) + p * q
        return out

    runs = [rng.integers(0, k, 300) / k for k in (7, 3, 11, 5)]  # shares as a run's are
    runs += [np.round(rng.random(20), 12), (rng.integers(0, 9, 300) + 0.5) / 1e10]  # halves
    dist: dict[float, float] = {0.0: 1.0}
    values, probs = np.zeros(1), np.ones(1)
    for x in runs:
        v, p = gcshift._distribution(x)
        dist = loop(dist, dict(zip(v.tolist(), p.tolist(), strict=True)))
        values, probs = gcshift._convolve((values, probs), (v, p))
        assert values.tolist() == list(dist) and probs.tolist() == list(dist.values())
