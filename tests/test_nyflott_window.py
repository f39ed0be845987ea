"""ipclab.studies.nyflott.window: a decided claim carried from the reference's 30 s window to
a 2-minute one by the window check's factors, and whether its verdict holds there."""

from __future__ import annotations

import pandas as pd
import pytest

from ipclab.studies.nyflott import published, window

CLAIMS = {c.claim_id: c for c in published.claims()}
# N01d: mean_ms coap@0 > http1@0 (a direction); the check: short / long window per run
CHECK = pd.DataFrame({
    "run": ["delay0ms/acmeair-coap-u10-base-r1", "delay0ms/acmeair-http1-u10-base-r1",
            "delay0ms/acmeair-http1-u10-base-r2", "delay0ms/acmeair-http1-nginx-u10-base-r1"],
    "rps_ratio": [0.9, 1.1, 1.1, 2.0], "mean_ms_ratio": [1.2, 0.9, 1.1, 5.0],
})  # fmt: skip


def _row(claim_id: str, low: float, high: float, verdict: str = "reproduced") -> dict:
    return {"claim_id": claim_id, "comparison": CLAIMS[claim_id].describe(), "verdict": verdict,
            "measured": f"[{low}, {high}]", "ci_low": low, "ci_high": high,
            "band_low": float("nan"), "band_high": float("nan"),
            "test_key": claim_id}  # fmt: skip


def test_factors_are_the_python_stacks_mean_ratios_per_delay() -> None:
    f = window.factors(CHECK)
    assert f[("mean_ms", "coap", 0)] == pytest.approx(1.2)
    assert f[("mean_ms", "http1", 0)] == pytest.approx(1.0)  # the native stack left out
    assert window.claim_factor(CLAIMS["N01d"], f) == pytest.approx(1.2)


def test_a_verdict_holds_when_its_margin_exceeds_the_windows_bias() -> None:
    table = pd.DataFrame([_row("N01d", 1.5, 2.0)])
    m = window.margins(table, list(CLAIMS.values()), CHECK).set_index("claim_id")
    assert m.loc["N01d", "holds"] == True  # noqa: E712 - object column
    assert m.loc["N01d", "ci_low_2min"] == pytest.approx(1.25)
    close = pd.DataFrame([_row("N01d", 1.1, 1.3)])
    m = window.margins(close, list(CLAIMS.values()), CHECK).set_index("claim_id")
    assert m.loc["N01d", "holds"] == False  # noqa: E712 - 1.1/1.2 < 1: across 1 there


def test_cells_the_check_did_not_run_are_said_so() -> None:
    table = pd.DataFrame([_row("N01d", 1.5, 2.0)])
    only_http = CHECK[CHECK["run"].str.contains("http1")]
    m = window.margins(table, list(CLAIMS.values()), only_http)
    assert m.iloc[0]["holds"] is None and "did not run" in m.iloc[0]["note"]
    undecided = pd.DataFrame([_row("N01d", 0.9, 1.2, verdict="inconclusive")])
    assert window.margins(undecided, list(CLAIMS.values()), CHECK).empty
