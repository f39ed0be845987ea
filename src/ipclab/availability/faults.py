"""A seeded fault schedule: exponential times between failures, which component to kill.

The schedule is a pure function of its arguments. Gaps and component choices draw from two
independent streams spawned from the seed, so changing the component list does not move
the fault times, and vice versa.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Fault:
    """The ``index``-th fault: kill ``component`` after ``gap_s`` of up time.

    ``gap_s`` is meant as up time since the previous recovery (the runner waits for recovery,
    then ``gap_s``, then kills), so repairs never overlap and the up times are exponential
    with the given mean. ``at_s`` is the cumulative sum of the gaps, for a runner that
    prefers a fixed wall-clock plan from its start.
    """

    index: int
    gap_s: float
    at_s: float
    component: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def fault_schedule(
    seed: int,
    mean_s: float,
    n: int,
    components: Sequence[str],
    weights: Sequence[float] | None = None,
    min_gap_s: float = 0.0,
) -> list[Fault]:
    """``n`` faults, gaps ~ ``min_gap_s`` + Exponential(rate = 1 / ``mean_s``).

    ``components`` are role names (e.g. ``"reviews"``, ``"gateway"``, ``"broker"``), drawn
    with ``weights`` (default uniform). The mean gap is ``min_gap_s + mean_s``.
    """
    if mean_s <= 0:
        raise ValueError("mean_s must be > 0")
    if n < 0:
        raise ValueError("n must be >= 0")
    if min_gap_s < 0:
        raise ValueError("min_gap_s must be >= 0")
    comps = list(components)
    if not comps:
        raise ValueError("components must not be empty")
    p = None
    if weights is not None:
        w = np.asarray(weights, dtype=float)
        if w.shape != (len(comps),) or (w < 0).any() or w.sum() <= 0:
            raise ValueError("weights: one non-negative weight per component, not all zero")
        p = w / w.sum()
    gap_seq, comp_seq = np.random.SeedSequence(seed).spawn(2)
    gaps = min_gap_s + np.random.default_rng(gap_seq).exponential(mean_s, size=n)
    picks = np.random.default_rng(comp_seq).choice(len(comps), size=n, p=p)
    at = np.cumsum(gaps)
    return [
        Fault(index=i, gap_s=float(gaps[i]), at_s=float(at[i]), component=comps[int(picks[i])])
        for i in range(n)
    ]
