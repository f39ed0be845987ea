"""A fresh run's claims beside the committed reference's: per claim, both estimates (ratio
a/b) and whether they lie on the same side of 1."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ipclab.report import html as rh
from ipclab.report.context import Counter


def agreement(fresh: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """Per claim: the reference's and this run's estimate (ratio a/b) and whether they lie
    on the same side of 1."""
    cols = ["claim_id", "comparison", "measured_ratio", "verdict"]
    m = reference[cols].merge(fresh[cols], on=["claim_id", "comparison"], suffixes=("_ref", ""))
    side = np.sign(np.log(m["measured_ratio_ref"].astype(float)))
    fresh_side = np.sign(np.log(m["measured_ratio"].astype(float)))
    m["same_direction"] = np.where(
        np.isfinite(side) & np.isfinite(fresh_side), side == fresh_side, np.nan
    )
    return m.rename(
        columns={
            "measured_ratio_ref": "reference ratio",
            "verdict_ref": "reference verdict",
            "measured_ratio": "this run's ratio",
            "verdict": "this run's verdict",
        }
    )


def agreement_html(fresh: pd.DataFrame, reference: pd.DataFrame, n: Counter) -> str:
    a = agreement(fresh, reference)
    known = a["same_direction"].dropna()
    agree = int((known == True).sum())  # noqa: E712 - an object column of bools
    head = (
        f"<h2>Beside the reference</h2><p>This run's estimate agrees in direction with the "
        f"committed reference on {agree} of {len(known)} claims with an estimate in both.</p>"
    )
    cap = rh.caption("Table", n.table(), "Each claim's ratio a/b in the committed reference "
                     "and in this run, and whether both lie on the same side of 1.")  # fmt: skip
    return head + rh.frame_table(a, cap)
