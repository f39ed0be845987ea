"""Nyfløtt 2017's claims (``data/published/nyflott2017_claims.csv``) judged on measured runs.

The verdicts are ``ipclab.claims``'s, under the rules of docs/statistics.md; this module only
shapes the experiment's per-run table for them. The claims' loads are the added delays in ms
(the thesis runs 10 users throughout), so each run's ``delay_ms`` becomes the ``users``
column the claims machinery selects cells by. A claim whose metric the table lacks (CPU or
network per host, until they are measured per run) is inconclusive, with the reason
"metric ... not measured".
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ipclab import claims as claims_mod
from ipclab.published import Claim
from ipclab.runs import Run
from ipclab.studies.nyflott import hosts, published, tables


def per_run(runs: Sequence[Run], warmup_s: float) -> pd.DataFrame:
    """Every metric the claims read, one row per run: Table 2's and Fig. 16's
    (``tables.run_rows``) beside the per-host CPU and network (``hosts.host_rows``)."""
    rows = tables.run_rows(runs, warmup_s)
    if rows.empty:
        return rows
    return rows.merge(hosts.host_rows(runs, warmup_s), on="run", how="left")


#: extremes.run_extremes's columns -> the claims' metrics (N29: extremes against GCs)
GC_SHARES = {"fraction": "extremes_gc_share", "baseline_fraction": "others_gc_share"}


def with_gc_shares(rows: pd.DataFrame, gc_runs: pd.DataFrame) -> pd.DataFrame:
    """``rows`` with each run's share of extremes that overlap a major GC and the same
    share of its other requests (``extremes.run_extremes``), for claim N29."""
    if rows.empty or gc_runs.empty or not set(GC_SHARES) <= set(gc_runs.columns):
        return rows
    shares = gc_runs.loc[:, ["run", *GC_SHARES]].rename(columns=GC_SHARES)
    return rows.drop(columns=list(GC_SHARES.values()), errors="ignore").merge(
        shares, on="run", how="left"
    )


def claim_runs(rows: pd.DataFrame) -> pd.DataFrame:
    """The per-run table the claims read: one row per run with ``style``, ``delay_ms`` and
    metric columns (``tables.run_rows``, plus any per-host columns); ``users`` is set to the
    delay in whole ms (a table's own ``users``, 10 in every run, is kept as ``n_users``)."""
    missing = [c for c in ("style", "delay_ms") if c not in rows.columns]
    if missing:
        raise ValueError(f"the run table lacks {', '.join(missing)}")
    out = rows.copy()
    if "users" in out.columns:
        out = out.rename(columns={"users": "n_users"})
    delay = pd.to_numeric(out["delay_ms"], errors="coerce").to_numpy(dtype=float)
    whole = np.round(delay)
    known = np.isin(whole, published.DELAYS_MS)
    bad = ~np.isfinite(delay) | (np.abs(delay - whole) > 1e-6) | ~known
    if bad.any():
        raise ValueError(
            f"delay_ms {float(delay[bad][0])} is not one of the thesis's {published.DELAYS_MS} ms"
        )
    out["users"] = whole.astype(int)
    return out


def evaluate(
    rows: pd.DataFrame,
    rules: claims_mod.Rules | None = None,
    claims: Sequence[Claim] | None = None,
) -> pd.DataFrame:
    """The claims table (one row per claim: published and measured effect, interval,
    Holm-adjusted p-value, verdict and reason) from a per-run table."""
    cl = list(claims) if claims is not None else published.claims()
    return claims_mod.evaluate_claims(claim_runs(rows), cl, rules=rules, scope="performance")


def statements(table: pd.DataFrame) -> pd.DataFrame:
    """One verdict per published sentence (every part reproduced, any part not, otherwise
    inconclusive)."""
    return claims_mod.statement_verdicts(table)


def power(
    rows: pd.DataFrame,
    rules: claims_mod.Rules | None = None,
    claims: Sequence[Claim] | None = None,
) -> pd.DataFrame:
    """Runs per cell each single-delay test or interaction needs to detect the published
    effect (docs/statistics.md section 7), beside the runs there are."""
    cl = list(claims) if claims is not None else published.claims()
    return claims_mod.repetitions(cl, claim_runs(rows), rules)
