"""Runs made in several sittings: which sitting a run belongs to, and the log-ratio test
with the sitting as a block (docs/statistics.md section 7).

A reference is measured in one sitting (one VM, one stretch of time); runs added later to
decide a test (``ipclab plan``) come from another, on a VM whose speed may differ (measured
here: the same cell cost 1.3-1.4x the CPU per request five days later). Every compared cell
gets the same number of added runs, so pooling them does not bias a comparison, but a
shift between sittings then counts as noise and takes the power the added runs were for.
So a comparison of cells measured in several sittings is made **within** each sitting and
the sittings' estimates are combined (a stratified estimate):

- per sitting, the statistic of :func:`ipclab.stats.log_ratio_interval` (the log of a
  product of sums of means) from that sitting's runs; its variance by the delta method from
  each cell's squared coefficient of variation, **pooled over the sittings** (the run-to-run
  spread relative to the mean, which a shift of level leaves alone), so a sitting with one
  run of a cell still counts;
- the sittings' estimates weighted by the inverse of their variance; the degrees of freedom
  by Welch-Satterthwaite over the cells' pooled variances; the p-value the t test of the
  combined log statistic = 0.

A sitting lacking one of the compared cells gives no estimate of its own (its runs still
inform their cell's variance). With one sitting the result is exactly
:func:`~ipclab.stats.log_ratio_interval`'s. Where no sitting holds every sample, or no
sample varies within any sitting, the estimate is undefined (NaN): never the pooled test in
its place (the claims engine then says why, or makes §3's exact test within sittings).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats as sps

from ipclab.stats.intervals import Interval, log_ratio_interval

#: runs further apart than this start a new sitting
SITTING_GAP_H = 6.0
METHOD = "t (log scale, by sitting)"


def sittings(started_at: Iterable[object], gap_h: float = SITTING_GAP_H) -> np.ndarray:
    """Each run's sitting (0, 1, ...), in the order given: runs sorted by start, a new
    sitting where more than ``gap_h`` hours pass between two starts. A run with no start
    time is its own sitting's (-1): never compared within a sitting."""
    t = pd.to_datetime(pd.Series(list(started_at), dtype=object), utc=True, errors="coerce")
    out = np.full(len(t), -1, dtype=int)
    known = t.notna().to_numpy()
    if not known.any():
        return out
    order = np.argsort(t[known].to_numpy(), kind="stable")
    times = t[known].to_numpy()[order]
    gaps = np.diff(times).astype("timedelta64[s]").astype(float) / 3600.0
    ids = np.concatenate([[0], np.cumsum(gaps > gap_h)])
    idx = np.flatnonzero(known)[order]
    out[idx] = ids
    return out


def pooled_cv2(x: np.ndarray, labels: np.ndarray) -> tuple[float, int]:
    """A sample's squared coefficient of variation pooled over its sittings, and its
    degrees of freedom (sum of n - 1 over sittings)."""
    num, df = 0.0, 0
    for s in np.unique(labels):
        xs = x[labels == s]
        if len(xs) >= 2 and xs.mean() > 0:
            num += (len(xs) - 1) * float(xs.var(ddof=1)) / float(xs.mean()) ** 2
            df += len(xs) - 1
    return (num / df if df else math.nan), df


def log_ratio_interval_by_sitting(
    terms: Sequence[tuple[int, Sequence[ArrayLike]]],
    labels: Sequence[Sequence[ArrayLike]],
    confidence: float = 0.95,
) -> Interval:
    """:func:`~ipclab.stats.log_ratio_interval`'s statistic, estimated within each sitting
    and combined (see the module docstring). ``labels`` gives each sample's runs' sittings,
    in the shape of ``terms``' samples."""
    nan = float("nan")
    samples = [np.asarray(x, dtype=float) for _, g in terms for x in g]
    marks = [np.asarray(s) for g in labels for s in g]
    keep = [np.isfinite(x) for x in samples]
    samples = [x[k] for x, k in zip(samples, keep, strict=True)]
    marks = [s[k] for s, k in zip(marks, keep, strict=True)]
    common = set.intersection(*(set(s.tolist()) for s in marks)) - {-1} if marks else set()
    if len(set().union(*(set(s.tolist()) for s in marks)) - {-1}) <= 1:
        return log_ratio_interval(terms, confidence)  # one sitting: the plain test
    if not common:  # no sitting holds every sample: no within-sitting estimate
        return Interval(nan, nan, nan, min((len(x) for x in samples), default=0), confidence,
                        METHOD)  # fmt: skip
    pooled = [pooled_cv2(x, s) for x, s in zip(samples, marks, strict=True)]
    n = min(len(x) for x in samples)
    if any(df == 0 or not np.isfinite(c) for c, df in pooled):
        return Interval(nan, nan, nan, n, confidence, METHOD)
    sizes = [len(g) for _, g in terms]
    logs, variances, coefs = [], [], []
    for sitting in sorted(common):
        means = [float(x[s == sitting].mean()) for x, s in zip(samples, marks, strict=True)]
        counts = [int((s == sitting).sum()) for s in marks]
        log_s, coef, i = 0.0, [], 0
        for (sign, _), size in zip(terms, sizes, strict=True):
            total = sum(means[i : i + size])
            if total <= 0:
                return Interval(nan, nan, nan, n, confidence, METHOD)
            log_s += sign * math.log(total)
            coef += [means[j] ** 2 / counts[j] / total**2 for j in range(i, i + size)]
            i += size
        logs.append(log_s)
        coefs.append(coef)
        variances.append(sum(c * cv2 for c, (cv2, _) in zip(coef, pooled, strict=True)))
    if not all(v > 0 for v in variances):  # no spread within any sitting: no t test (the
        return Interval(nan, nan, nan, n, confidence, METHOD)  # exact test's, section 3)
    w = np.array([1.0 / v for v in variances])
    log_est = float(np.dot(w, logs) / w.sum())
    # V = 1 / sum(w) = sum_i cv2_i * A_i with A_i = sum_s (w_s / W)^2 coef_si
    share = (w / w.sum()) ** 2
    parts = [
        (cv2 * float(sum(share[k] * coefs[k][i] for k in range(len(coefs)))), df)
        for i, (cv2, df) in enumerate(pooled)
    ]
    v = sum(c for c, _ in parts)
    df = v**2 / sum(c**2 / d for c, d in parts if c > 0)
    q = float(sps.t.ppf(0.5 + confidence / 2, df))
    se = math.sqrt(v)
    est = math.exp(log_est)
    p = float(2 * sps.t.sf(abs(log_est) / se, df))
    return Interval(est, est * math.exp(-q * se), est * math.exp(q * se), n, confidence, METHOD, p)
