"""Whether the reference's short window decides its verdicts: each decided claim's estimate
carried to a 2-minute window by the window check, and whether its verdict holds there.

The reference measures 30 s after a 30 s warm-up where the thesis measured 10 min after 2
min. ``window_check.csv`` (beside the reference's runs) holds, for 18 earlier runs of one
stack and delay each, req/s and mean response time over seconds 30-60 (the reference's
window) and over seconds 60-180 (a 2-minute window) of the same run, so the machine's drift
does not enter. Per stack and delay, the mean of those ratios (short over long) is the
factor by which the short window moves that stack's metric. A claim's ratio moves by the
product of its cells' factors, as its statistic combines them
(``ipclab.claims.measure._terms``: a ratio's two sides, an interaction's four cells); its
estimate and interval in a 2-minute window are those of the short window divided by that
factor. A decided claim holds when its interval, so moved, lies on the same side of its
threshold (1, or its band's edges) as before; one that does not is the cells to measure
again with the thesis's window. Claims on other metrics, or on cells the check did not run,
are not checked (said so)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ipclab import claims as claims_mod
from ipclab.claims import NOT_REPRODUCED, REPRODUCED
from ipclab.published import Claim

CHECKED = {"rps": "rps_ratio", "mean_ms": "mean_ms_ratio"}  # metric -> the check's column
STACK_STYLE = {"acmeair-http1": "http1", "acmeair-h2c": "h2c", "acmeair-coap": "coap"}


def factors(check: pd.DataFrame) -> dict[tuple[str, str, int], float]:
    """(metric, style, delay) -> the mean short-over-long ratio of the check's runs of the
    python adapter set's stack of that style at that delay."""
    rows = check.assign(
        folder=check["run"].str.split("/").str[0],
        stack=check["run"].str.split("/").str[1].str.replace(r"-u\d+-.*$", "", regex=True),
    )
    rows["delay"] = rows["folder"].str.extract(r"delay(\d+)ms", expand=False).astype(int)
    rows["style"] = rows["stack"].map(STACK_STYLE)
    out = {}
    for (style, delay), g in rows.dropna(subset=["style"]).groupby(["style", "delay"]):
        for metric, col in CHECKED.items():
            out[(metric, str(style), int(delay))] = float(g[col].mean())
    return out


def claim_factor(claim: Claim, found: dict[tuple[str, str, int], float]) -> float:
    """The factor by which the short window moves ``claim``'s statistic (NaN: not checked)."""
    if claim.metric not in CHECKED or (claim.b_metric and claim.b_metric != claim.metric):
        return math.nan
    cells, _, k = claims_mod._cells(claim, None)
    w = [found.get((claim.metric, s, int(u)), math.nan) for s, u in cells if u is not None]
    if len(w) != len(cells) or not np.isfinite(w).all():
        return math.nan
    if claim.test == "interaction":  # (a@to / a@from) / (b@to / b@from)
        return w[1] / w[0] / (w[3] / w[2])
    a, b = np.exp(np.mean(np.log(w[:k]))), np.exp(np.mean(np.log(w[k:])))
    return float(a / b)


def _where(low: float, high: float, band: tuple[float, float] | None) -> str:
    """Where an interval lies: against 1 (a direction) or against a band."""
    if band is None:
        return "above" if low > 1 else "below" if high < 1 else "across"
    lo, hi = band
    if low >= lo and high <= hi:
        return "inside"
    if high < lo or low > hi:
        return "outside"
    return "across"


def margins(table: pd.DataFrame, claims: Sequence[Claim], check: pd.DataFrame) -> pd.DataFrame:
    """One row per decided test on a checked metric: its interval in the reference's window
    and carried to a 2-minute window, and whether its verdict holds there."""
    by_id = {c.claim_id: c for c in claims}
    found = factors(check)
    rows = []
    decided = table[table["verdict"].isin([REPRODUCED, NOT_REPRODUCED])]
    for _, r in decided.drop_duplicates("test_key").iterrows():
        c = by_id.get(r["claim_id"])
        if c is None or c.metric not in CHECKED:
            continue
        f = claim_factor(c, found)
        band = (
            (float(r["band_low"]), float(r["band_high"]))
            if c.test in ("equal", "ratio", "differ") and pd.notna(r.get("band_low"))
            else None
        )
        lo, hi = float(r["ci_low"]), float(r["ci_high"])
        before = _where(lo, hi, band)
        after = _where(lo / f, hi / f, band) if np.isfinite(f) else ""
        rows.append({
            "claim_id": r["claim_id"], "comparison": r["comparison"], "verdict": r["verdict"],
            "measured": r["measured"], "window_factor": f,
            "ci_low_2min": lo / f, "ci_high_2min": hi / f,
            "holds": (after == before) if after else None,
            "note": "" if after else "a cell the window check did not run",
        })  # fmt: skip
    return pd.DataFrame(rows)


def read_check(directory: Path | None) -> pd.DataFrame | None:
    """``window_check.csv`` of a reference folder, if it has one."""
    path = None if directory is None else Path(directory) / "window_check.csv"
    return pd.read_csv(path) if path is not None and path.is_file() else None


def _spread(values: pd.Series) -> str:
    return (f"mean {values.mean():.3f}, median {values.median():.3f}, "
            f"range {values.min():.2f}-{values.max():.2f}")  # fmt: skip


def check_markdown(check: pd.DataFrame) -> str:
    """The window check's runs in numbers (the reference README's ``window-check`` block):
    how many runs, the short-over-long ratios of req/s and mean response time over them,
    and each run's."""
    lines = [
        f"{len(check)} runs (`window_check.csv`). Req/s ratio (30-60 s over 60-180 s): "
        f"{_spread(check['rps_ratio'])}; mean response time: {_spread(check['mean_ms_ratio'])}.",
        "",
        "| run | req/s ratio | mean response time ratio |",
        "|---|---|---|",
    ]
    for r in check.sort_values("run").itertuples():
        lines.append(f"| {r.run} | {r.rps_ratio:.3f} | {r.mean_ms_ratio:.3f} |")
    return "\n".join(lines)
