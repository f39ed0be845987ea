"""The committed availability references' derived tables against the rules of issue 47
(rebuilt with ``python -m ipclab.studies.shafabakhsh.reference``): every MTTF test states
the model check that chose it, and docs/availability.md's plan prices the missing runs as
the claims tables do (before: 95.8 h in the doc, 36 h in the claims, for T19a)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ipclab.findings import GENERATED
from ipclab.paths import REPO_ROOT
from ipclab.studies.shafabakhsh.availability import plan

REFERENCE = REPO_ROOT / "data/runs/reference/availability-full-docker"


def test_the_documented_plan_prices_as_the_claims_do() -> None:
    """docs/availability.md's plan block prints the committed docker power table's
    machine-hours for method 1's tests, the same numbers as the claims' reasons (before: a
    run at the cap x every run needed, 95.8 h, beside the claims' 36 h)."""
    doc = (REPO_ROOT / "docs" / "availability.md").read_text()
    blocks = {m.group("name"): m.group(0) for m in GENERATED.finditer(doc)}
    body = blocks["availability-plan"]
    power = pd.read_csv(REFERENCE / "results" / "power.csv")
    for _, p in power[power["family"] == "until failure"].iterrows():
        if np.isfinite(p["hours_more"]):
            assert f"| {p['runs_needed']:,.0f} |" in body and f"| {p['hours_more']:,.1f} |" in body
    tables, committed = plan.committed_tables(REPO_ROOT / "data/runs/reference")
    assert plan.plan_markdown(plan.plan_table(tables, committed)) in body


def test_every_mttf_test_of_the_reference_states_its_model_check() -> None:
    t = pd.read_csv(REFERENCE / "results" / "claims.csv")
    mttf = t[t["comparison"].str.startswith("mttf_s")]
    unmeasured = mttf["reason"].fillna("").str.contains("no run of the current method")
    never = mttf.loc[unmeasured, "verdict"].isin(("inconclusive", "underpowered"))
    assert never.all()  # a cell with no run of the current method is never evidence
    mttf = mttf[~unmeasured]
    assert (
        "model_check" in t
        and mttf["model_check"].astype(str).str.startswith("exponential model").all()
    )
    assert (mttf["reason"].astype(str).str.contains("exponential model")).all()
