"""Nyfløtt's claims judged on small synthetic per-run tables (no stacks)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ipclab import claims as claims_mod
from ipclab.runs import read_run
from ipclab.studies.nyflott import published, tables, verdicts
from tests.test_nyflott_tables import make_run

BASE_MS = {"http1": 5.0, "h2c": 5.6, "coap": 6.4}  # Table 2's order at 0 ms
SD_MS = {  # Table 2's SDs, rounded: CoAP's stands out at 0 ms, is lowest at 5 ms
    ("http1", 0): 2.8, ("h2c", 0): 2.8, ("coap", 0): 4.0,
    ("http1", 2): 4.1, ("h2c", 2): 4.15, ("coap", 2): 4.2,
    ("http1", 5): 7.1, ("h2c", 5): 7.0, ("coap", 5): 6.9,
}  # fmt: skip


def synthetic(reps: int = 4) -> pd.DataFrame:
    """Per-run rows shaped like Table 2: the protocol gaps shrink as the delay grows."""
    rows = []
    for style, base in BASE_MS.items():
        for d in published.DELAYS_MS:
            for r in range(reps):
                f = 1.0 + 0.005 * (r - (reps - 1) / 2)  # a little run-to-run spread
                mean = (base + 4.8 * d) * f
                rows.append(
                    {
                        "run": f"{style}-{d}-{r}",
                        "style": style,
                        "delay_ms": float(d),
                        "users": 10,
                        "repetition": r,
                        "mean_ms": mean,
                        "sd_ms": SD_MS[(style, d)] * f,
                        "min_ms": 1.0 + 4.0 * d,
                        **{  # N07, N20: every request type's minimum the same
                            verdicts.case_metric(c): 1.0 + 4.0 * d * f for c in tables.TEST_CASES
                        },
                        "rps": 10_000.0 / mean,
                        "slow_per_1000": (5.0 if (style, d) == ("coap", 0) else 0.5) * f,
                    }
                )
    return pd.DataFrame(rows)


def test_verdicts_follow_the_runs() -> None:
    # 6 runs a cell: the family's Holm level is about 0.05 / 100 distinct tests
    t = verdicts.evaluate(synthetic(reps=6)).set_index("claim_id")
    assert list(t.index) == [c.claim_id for c in published.claims()]
    v = t["verdict"]
    assert v["N02b"] == "reproduced"  # HTTP/1.1's mean below h2c's at 0 ms
    assert v["N06a"] == "reproduced"  # the CoAP / HTTP/1.1 gap shrinks from 0 to 5 ms
    assert v["N07a2"] == "reproduced"  # equal Query Flight minima at 5 ms, inside [0.8, 1.25]
    assert t.loc["N07a2", "comparison"] == "min_ms_query_flight: coap@5 ~= http1@5"
    assert t.loc["N07a2", "band"] == "[0.8, 1.25] (standard)"
    assert v["N14a"] == "reproduced"  # more slow requests for CoAP at 0 ms
    assert v["N13j"] == "not reproduced"  # CoAP's SD at 0 ms is below HTTP/1.1's at 2 ms
    # "much lower": outside the considerable band [0.64, 1.5625]; 5.6/6.4 and 5.0/6.4 of
    # h2c's and HTTP/1.1's req/s are lower, but inside it
    assert v["N25c"] == "not reproduced" and v["N25d"] == "not reproduced"
    assert v["N31e"] == "reproduced"  # the abstract: CoAP's throughput below HTTP/1.1's at 0 ms
    assert t.loc["N31e", "p_value"] == t.loc["N25b", "p_value"]  # one test, two sentences
    # the GC claims need the extremes and GCs; N32 the bytes: inconclusive, saying why
    assert v["N29a"] == "inconclusive" and "GC records" in t.loc["N29a", "reason"]
    assert v["N32a"] == "inconclusive" and "bytes_per_request" in t.loc["N32a", "reason"]
    assert set(t["family"]) == {verdicts.FAMILY, verdicts.GC_FAMILY, verdicts.FIX_FAMILY}
    assert t.loc["N02b", "measured_users"] == "0"
    # CPU and network are not in the run table yet: inconclusive, saying why
    assert v["N10a"] == "inconclusive" and "not measured" in t.loc["N10a", "reason"]
    assert v["N09d"] == "inconclusive" and "bytes_per_request" in t.loc["N09d", "reason"]
    # one test per key: sentences that repeat a comparison share its adjusted p-value
    assert t.loc["N01c", "p_value"] == t.loc["N02a", "p_value"]
    s = verdicts.statements(t.reset_index()).set_index("statement_id")
    assert s.loc["N13", "verdict"] == "not reproduced"
    assert s.loc["N10", "verdict"] == "inconclusive"
    assert s.loc["N06", "verdict"] == "reproduced"


def with_bytes(rows: pd.DataFrame, bytes_ratio: float) -> pd.DataFrame:
    """``rows`` with bytes per request: h2c's ``bytes_ratio`` x HTTP/1.1's (a little noise)."""
    rng = np.random.default_rng(1)
    base = {"http1": 3800.0, "h2c": 3800.0 * bytes_ratio, "coap": 3250.0}
    noise = rng.normal(1.0, 0.004, len(rows))
    return rows.assign(bytes_per_request=rows["style"].map(base) * noise)


def test_size_gap_r2_bandwidth_the_largest_difference() -> None:
    # h2c's response time 5.6/5.0 .. 1.02x HTTP/1.1's, its req/s the inverse: a bytes gap
    # of 0.6x is the larger (N32 reproduced), one of 0.99x the smaller (not reproduced)
    for ratio, want in ((0.6, "reproduced"), (0.99, "not reproduced")):
        t = verdicts.evaluate(with_bytes(synthetic(), ratio)).set_index("claim_id")
        assert t.loc["N32a", "verdict"] == want, t.loc["N32a", "reason"]
        assert t.loc["N32a", "family"] == verdicts.FAMILY
        assert t.loc["N32a", "p_value"] >= t.loc["N32a", "p_raw"]  # Holm over the family
        if want == "reproduced":
            assert t.loc["N32a", "ci_low"] > 1 and t.loc["N32a", "measured_a"] == pytest.approx(
                1 / 0.6, rel=0.01
            )
    runs = verdicts.claim_runs(with_bytes(synthetic(), 0.6))
    gap = next(c for c in published.claims() if c.claim_id == "N32a")
    e = verdicts.size_gap(gap, runs, claims_mod.Rules())
    # the estimate: |log r_bytes| - |log r_time| on the averages over 0, 2 and 5 ms
    mean = runs.groupby(["style", "users"])["mean_ms"].mean()
    rt = mean["h2c"].sum() / mean["http1"].sum()
    rb = runs.groupby("style")["bytes_per_request"].mean()
    want = np.exp(abs(np.log(rb["h2c"] / rb["http1"])) - abs(np.log(rt)))
    assert e.ratio.estimate == pytest.approx(want, rel=1e-3)


def test_too_few_runs_are_inconclusive() -> None:
    t = verdicts.evaluate(synthetic(reps=2)).set_index("claim_id")
    assert t.loc["N02b", "verdict"] == "inconclusive"
    assert "too few repetitions" in t.loc["N02b", "reason"]
    assert np.isnan(t.loc["N02b", "ci_low"])  # the estimate alone


def test_missing_delays_are_inconclusive_not_errors() -> None:
    runs = synthetic()
    t = verdicts.evaluate(runs[runs["delay_ms"] == 0]).set_index("claim_id")  # local backend
    assert t.loc["N02b", "verdict"] == "reproduced"
    assert t.loc["N02c", "verdict"] == "inconclusive"
    assert "no runs for" in t.loc["N02c", "reason"]


def test_power_lists_single_delay_tests() -> None:
    p = verdicts.power(synthetic())
    assert len(p) and (p["runs_per_cell"] == 4).all()
    assert {"N02b", "N06a", "N25a"} <= set(p["claim_id"])
    assert "N08a" not in set(p["claim_id"])  # averaged over delays, and not measured


def test_claim_runs_maps_delay_to_load_and_rejects_others() -> None:
    runs = verdicts.claim_runs(synthetic())
    assert sorted(runs["users"].unique()) == [0, 2, 5] and (runs["n_users"] == 10).all()
    bad = synthetic()
    bad.loc[0, "delay_ms"] = 3.0
    with pytest.raises(ValueError, match="delay_ms 3.0 is not one of"):
        verdicts.claim_runs(bad)
    with pytest.raises(ValueError, match="lacks delay_ms"):
        verdicts.claim_runs(synthetic().drop(columns="delay_ms"))


def test_run_rows_count_fig16_slow_requests(tmp_path: Path) -> None:
    lat = [10.0] * 6 + [80.0, 81.0, 199.0, 200.0]  # only 81 and 199 are inside (80, 200)
    run = read_run(make_run(tmp_path, "acmeair-coap", 1, 0.0, lat))
    rows = tables.run_rows([run], warmup_s=0.0)
    assert rows.loc[0, "slow_per_1000"] == pytest.approx(200.0)
    assert np.isnan(tables.slow_per_1000(np.array([])))
    t = verdicts.evaluate(rows).set_index("claim_id")  # one run: inconclusive everywhere
    assert set(t["verdict"]) == {"inconclusive"}
