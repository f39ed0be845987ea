"""claims.across_backends: a claim's verdicts and estimates on two backends side by side,
and the ratio of the estimates with its interval."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ipclab import claims as claims_mod
from ipclab.published import Claim


def _runs(scale_rest: float, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for style, mean in (("rest", 100.0 * scale_rest), ("grpc", 50.0)):
        for _ in range(5):
            rows.append({"style": style, "users": 50, "mean_ms": rng.normal(mean, 3.0)})
    return pd.DataFrame(rows)


def test_the_same_effect_on_both_backends_agrees_and_a_changed_one_shows() -> None:
    claim = Claim(
        claim_id="X01a", statement_id="X01", document="d", section="1", page="1", quote="q",
        scope="performance", metric="mean_ms", test="direction", relation=">",
        a_style="rest", a_users=(50,), b_style="grpc", b_users=(50,), from_users=None,
        to_users=None, published_value="", published_unit="", table_value="",
        published_ratio=2.0, band_low=None, band_high=None, note="",
    )  # fmt: skip
    local, docker, slower = _runs(1.0, 1), _runs(1.0, 2), _runs(1.5, 3)
    tables = [
        claims_mod.evaluate_claims(r, [claim], scope="performance") for r in (local, docker, slower)
    ]
    same = claims_mod.across_backends([claim], local, docker, tables[0], tables[1])
    row = same.iloc[0]
    assert row["agree"] and row["ci_low"] < 1 < row["ci_high"]
    moved = claims_mod.across_backends([claim], local, slower, tables[0], tables[2]).iloc[0]
    assert moved["docker_over_local"] > 1.3 and moved["ci_low"] > 1 and moved["p_value"] < 0.05
