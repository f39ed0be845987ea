"""Fig. 9's hotspot as a number: the share of the CoAP gateway's stack samples that build a
log message's text, with its interval, and how many samples that interval needs.

The thesis (§4.2.5, Fig. 9) saw wide ``StringBuilder.append`` / ``String.valueOf`` frames
under Californium's ``sendResponse``: each message's ``toString()`` run to build log text the
logger then dropped. A sample is **in the hotspot** when its stack holds a Californium
``toString`` frame or the adapters' eager log building (``ipclab.coap.Logging.eager``, the
``thesis`` configuration): :data:`HOTSPOT`. The thesis prints no share (Fig. 9 is an
excerpt), so the samples needed are sized for the worst case, a share of one half.

Stack samples are not independent (a thread busy in one call is sampled in it again 10 ms
later), so the interval is Wilson's score interval on an **effective** sample count: the
samples divided by the design effect, the variance of the share over batches of
:data:`BATCH_S` seconds (the ratio estimator's cluster variance) over the binomial variance,
at least 1.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

#: a stack in the hotspot: a Californium message's toString, or the thesis mode's log building
HOTSPOT = re.compile(
    r"(?:^|;)(?:org[/.]eclipse[/.]californium[/.][^;]*\.toString|ipclab[/.]coap[/.]Logging\.eager)"
    r"(?:;|$)"
)
BATCH_S = 5.0
CONFIDENCE = 0.95
HALF_WIDTH = 0.05  # the interval's target: +-5 points


def in_hotspot(stack: str) -> bool:
    return HOTSPOT.search(str(stack)) is not None


def samples_needed(
    share: float = 0.5, half_width: float = HALF_WIDTH, confidence: float = CONFIDENCE,
    design_effect: float = 1.0,
) -> int:  # fmt: skip
    """Stack samples for a ``confidence`` interval of ``+-half_width`` around ``share``:
    z^2 p (1 - p) deff / h^2 (0.5, 0.05, 0.95: 385 independent samples)."""
    if not 0 < half_width < 1 or not 0 <= share <= 1 or design_effect < 1:
        raise ValueError("share in [0, 1], half_width in (0, 1), design_effect >= 1")
    z = float(sps.norm.ppf(0.5 + confidence / 2))
    p = min(max(share, 0.0), 1.0)
    return math.ceil(z * z * max(p * (1 - p), 1e-12) * design_effect / half_width**2)


@dataclass(frozen=True)
class Share:
    """The hotspot's share of the samples with its interval."""

    samples: int
    hot: int
    share: float
    low: float
    high: float
    design_effect: float
    effective_samples: float
    batches: int

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2


def wilson(share: float, n: float, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Wilson's score interval of a share from ``n`` (effective) samples."""
    if n <= 0:
        return (math.nan, math.nan)
    z = float(sps.norm.ppf(0.5 + confidence / 2))
    centre = (share + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n))
    return (max(0.0, centre - half), min(1.0, centre + half))


def batches(samples: pd.DataFrame, batch_s: float = BATCH_S) -> pd.DataFrame:
    """Per batch of ``batch_s`` seconds (``t_s`` of each sample): its samples and hot ones
    (``samples``: ``t_s``, ``hot``)."""
    if samples.empty:
        return pd.DataFrame({"t0_s": [], "samples": [], "hot": []})
    key = (samples["t_s"].astype(float) // batch_s) * batch_s
    g = samples.assign(t0_s=key).groupby("t0_s")["hot"]
    return pd.DataFrame({"samples": g.size(), "hot": g.sum().astype(int)}).reset_index()


def share_of(per_batch: pd.DataFrame, confidence: float = CONFIDENCE) -> Share:
    """The hotspot's share over every batch, its design effect and Wilson interval."""
    n_i = per_batch["samples"].to_numpy(float)
    k_i = per_batch["hot"].to_numpy(float)
    n, k, b = float(n_i.sum()), float(k_i.sum()), len(n_i)
    if n == 0:
        return Share(0, 0, math.nan, math.nan, math.nan, math.nan, 0.0, b)
    p = k / n
    deff = 1.0
    if b >= 2 and 0 < p < 1:
        cluster = b / (b - 1) * float(np.sum((k_i - p * n_i) ** 2)) / n**2
        deff = max(1.0, cluster / (p * (1 - p) / n))
    low, high = wilson(p, n / deff, confidence)
    return Share(int(n), int(k), p, low, high, deff, n / deff, b)


def share_table(shares: dict[str, Share]) -> pd.DataFrame:
    """One row per configuration: its share with the interval, the design effect and the
    samples the target half-width needs at that share and design effect."""
    rows = []
    for config, s in shares.items():
        need = samples_needed(0.5 if math.isnan(s.share) else s.share, design_effect=(
            1.0 if math.isnan(s.design_effect) else s.design_effect))  # fmt: skip
        rows.append({"config": config, "samples": s.samples, "hot_samples": s.hot,
                     "share": s.share, "low": s.low, "high": s.high,
                     "design_effect": s.design_effect, "batches": s.batches,
                     "samples_needed": need, "enough": s.samples >= need})  # fmt: skip
    return pd.DataFrame(rows)
