"""The verdict rules of docs/statistics.md that decide whether a verdict can come out either
way: facts, the size words' bands, the band-sensitivity table, the test that agrees with its
interval. Synthetic claims and runs; no services."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ipclab import claims as C
from ipclab.published import Claim


def claim(cid: str, test: str, rel: str, metric: str = "m", magnitude: str = "",
          band: tuple[float, float] | None = None, stated: str = "") -> Claim:  # fmt: skip
    lo, hi = band or (None, None)
    return Claim(cid, cid[:3], "thesis", "1", "1", "a quote", "performance", metric, test, rel,
                 "a", (1,), "b", (1,), None, None, stated, "", "", None, lo, hi, "",
                 magnitude)  # fmt: skip


def runs(a: float, b: float, rel: float = 0.02, n: int = 5, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = [{"style": s, "users": 1, "m": c * (1 + rel * rng.standard_normal()),
             "bytes": 1000.0 if s == "a" else 700.0}
            for s, c in (("a", a), ("b", b)) for _ in range(n)]  # fmt: skip
    return pd.DataFrame(rows)


def one(c: Claim, df: pd.DataFrame, **kw: object) -> pd.Series:
    return C.evaluate_claims(df, [c], **kw).iloc[0]  # type: ignore[arg-type]


# --------------------------------------------------------------------------- facts


def test_a_deterministic_comparison_carries_no_p_value_and_joins_no_family() -> None:
    fact = claim("F01a", "direction", ">", metric="bytes")
    tests = [claim(f"T0{i}a", "direction", ">") for i in range(1, 4)]
    table = C.evaluate_claims(runs(110, 100), [fact, *tests], facts=("bytes",), family="e1")
    f = table.set_index("claim_id").loc["F01a"]
    assert f["evidence"] == C.FACT and f["p_method"] == "fact"
    assert np.isnan(f["p_value"]) and np.isnan(f["p_raw"]) and np.isnan(f["ci_low"])
    assert f["verdict"] == C.REPRODUCED and f["measured_ratio"] == pytest.approx(1000 / 700)
    # the family is the three tests alone: with the fact the Holm factor would be 2, not 1
    alone = C.evaluate_claims(runs(110, 100), tests, family="e1")
    assert table["p_value"].iloc[1:].tolist() == pytest.approx(alone["p_value"].tolist())
    assert C.tally(table) == {C.REPRODUCED: 1} and C.tally(table, C.FACT) == {C.REPRODUCED: 1}
    assert list(table["family"]) == ["", "e1", "e1", "e1"]  # a fact joins no family


def test_a_fact_comes_out_either_way_and_needs_one_run() -> None:
    df = runs(110, 100, n=1)
    assert one(claim("F01a", "direction", ">", "bytes"), df, facts=("bytes",))["verdict"] == (
        C.REPRODUCED)  # fmt: skip
    assert one(claim("F01a", "direction", "<", "bytes"), df, facts=("bytes",))["verdict"] == (
        C.NOT_REPRODUCED)  # fmt: skip
    inside = claim("F02a", "ratio", ">", "bytes", band=(1.42, 1.44), stated="43")
    outside = claim("F02a", "ratio", ">", "bytes", band=(1.2, 1.3), stated="25")
    assert one(inside, df, facts=("bytes",))["verdict"] == C.REPRODUCED
    assert one(outside, df, facts=("bytes",))["verdict"] == C.NOT_REPRODUCED


def test_a_declared_fact_that_varies_is_not_decided() -> None:
    r = one(claim("F01a", "direction", ">"), runs(110, 100), facts=("m",))
    assert r["verdict"] == C.INCONCLUSIVE and "declared a fact" in r["reason"]


# --------------------------------------------------------------------------- size words


@pytest.mark.parametrize(
    ("a", "rel", "want"),
    [(50.0, 0.01, C.REPRODUCED), (100.0, 0.01, C.NOT_REPRODUCED),
     (80.0, 0.01, C.NOT_REPRODUCED), (65.0, 0.12, C.INCONCLUSIVE),
     (150.0, 0.01, C.NOT_REPRODUCED)],
)  # fmt: skip
def test_considerably_lower_is_judged_on_its_side_and_its_own_band(
    a: float, rel: float, want: str
) -> None:
    c = claim("K01a", "direction", "<", magnitude="considerable")
    assert one(c, runs(a, 100.0, rel))["verdict"] == want


def test_no_estimate_is_both_slight_and_considerable() -> None:
    slight = claim("S01a", "direction", ">", magnitude="slight")
    big = claim("S02a", "differ", "!=", magnitude="considerable")
    for ratio in np.linspace(1.02, 3.0, 60):
        df = runs(100.0 * ratio, 100.0, rel=0.005)
        both = {one(slight, df)["verdict"], one(big, df)["verdict"]}
        assert both != {C.REPRODUCED}, ratio


def test_the_sensitivity_columns_apply_each_band() -> None:
    eq = claim("E01a", "equal", "=")
    r = one(eq, runs(108.0, 100.0, rel=0.005))  # 1.08: equal at +-10% and +-20%, not +-5%
    assert r["verdict"] == C.REPRODUCED and r["band"].startswith("[0.8, 1.25]")
    assert (r["verdict_5pct"], r["verdict_10pct"], r["verdict_20pct"]) == (
        C.NOT_REPRODUCED, C.REPRODUCED, C.REPRODUCED)  # fmt: skip
    table = C.evaluate_claims(runs(108.0, 100.0, rel=0.005), [eq, claim("D01a", "direction", ">")])
    bands = C.band_sensitivity(table)
    assert list(bands["claims"]) == ["E01a"] and bool(bands["band_decides"].iloc[0])


def test_a_stated_band_is_not_varied() -> None:
    c = claim("E02a", "equal", "=", band=(0.85, 1.15), stated="20")
    r = one(c, runs(108.0, 100.0, rel=0.005))
    assert r["band"].endswith("(stated)") and r["verdict_5pct"] == ""


# --------------------------------------------------------------------------- one method


@pytest.mark.parametrize("seed", range(40))
def test_the_raw_p_agrees_with_the_interval(seed: int) -> None:
    rng = np.random.default_rng(seed)
    df = runs(100 * float(rng.uniform(0.7, 1.4)), 100.0, rel=float(rng.uniform(0.02, 0.6)),
              n=int(rng.integers(3, 8)), seed=seed)  # fmt: skip
    r = one(claim("P01a", "direction", ">"), df)
    excludes = r["ci_low"] > 1 or r["ci_high"] < 1
    assert (r["p_raw"] < 0.05) == excludes


# --------------------------------------------------------------------------- families


def _committed_claims_tables() -> list:
    from ipclab.paths import from_repo

    root = from_repo("data/runs/reference")
    return sorted(p for p in root.glob("*/results/claims*.csv") if p.name != "claims_code.csv")


@pytest.mark.parametrize("path", _committed_claims_tables(), ids=lambda p: p.parent.parent.name)
def test_every_committed_family_is_holm_adjusted_as_one(path) -> None:  # noqa: ANN001
    """docs/statistics.md section 3: one family, one adjustment over all its distinct tests
    (a test a study computes itself included; facts in none)."""
    from ipclab.stats import holm

    table = pd.read_csv(path)
    if "family" not in table.columns:
        pytest.skip(f"{path}: written before families were labelled")
    tests = table[table["evidence"].fillna(C.TEST) == C.TEST]
    for fam, g in tests.groupby("family"):
        d = g.drop_duplicates("test_key")
        raw = d["p_raw"].to_numpy(float)
        want = holm(raw)
        got = d["p_value"].to_numpy(float)
        ok = np.isfinite(raw)
        assert np.allclose(got[ok], want[ok], rtol=1e-9), f"{path.name}: family {fam}"
    facts = table[table["evidence"] == C.FACT]
    assert facts["p_value"].isna().all() and facts["p_raw"].isna().all()
