"""The design check (docs/statistics.md section 3): the smallest p-value a test can reach at
the runs it has or is planned to have, against the level it must pass in its Holm family.

An exact test on per-run values (the permutation test of §3, an exact rank test) can give
no p-value below one over its number of labellings, whatever the runs measure: 3 against 3
runs can never go below 0.1. A test whose smallest p is not below its family's Holm level
(alpha over the number of its family's distinct tests, the strictest step, as in §7's
power) could not have been decided whatever the data: that is known before a run is made.
A t test has no such floor (its p-value reaches 0 continuously). Pure: numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: the permutation test enumerates every labelling up to this many, else draws this many
#: random ones (``ipclab.stats.permutation_p``), counted as (k + 1) / (B + 1)
MAX_EXACT = 1_000_000
N_RANDOM = 20_000

#: the p-methods whose smallest p is the exact two-sample floor of their runs
EXACT_METHODS = ("permutation", "mannwhitney", "permutation (by sitting)")
#: the p-methods with no floor (a t test's p reaches 0 continuously; any "t (...)" too)
T_METHODS = ("t (log ratio)", "t (log ratio, by sitting)", "welch", "t (one sample)")


def labellings(n_a: int, n_b: int) -> int:
    """How many ways ``n_a + n_b`` runs split into the two cells: C(n_a + n_b, n_a)."""
    return math.comb(n_a + n_b, n_a)


def exact_floor(n_a: int, n_b: int) -> float:
    """The smallest two-sided p-value of the exact permutation test of two means (or an
    exact rank test) on ``n_a`` against ``n_b`` runs: the observed labelling is counted,
    and with equal cells its mirror too (it gives the same |difference|): 2 / C(n, n_a),
    else 1 / C(n, n_a); beyond :data:`MAX_EXACT` labellings the random test's 1 / (B + 1)."""
    return stratified_floor([(n_a, n_b)])


def stratified_floor(strata: Sequence[tuple[int, int]]) -> float:
    """:func:`exact_floor` of a permutation test whose runs are permuted within strata
    (sittings): one over the product of the strata's labellings (two over it when every
    stratum is balanced)."""
    if not strata or any(a < 1 or b < 1 for a, b in strata):
        return math.nan
    total = math.prod(labellings(a, b) for a, b in strata)
    if total > MAX_EXACT:
        return 1.0 / (N_RANDOM + 1)
    mirror = 2 if all(a == b for a, b in strata) else 1
    return min(1.0, mirror / total)


def floor_of(method: str, n_a: int, n_b: int) -> float:
    """The smallest p-value the test named ``method`` (a claims table's ``p_method``) can
    reach at ``n_a`` against ``n_b`` runs: the exact floor of an exact test, 0 for a t test,
    NaN for a test this module does not know (a study's own test states its floor)."""
    if method in EXACT_METHODS:
        return exact_floor(n_a, n_b) if n_a >= 1 and n_b >= 1 else math.nan
    if method in T_METHODS or method.startswith("t ("):
        return 0.0
    return math.nan


def holm_level(alpha: float, family: int) -> float:
    """The level a test must pass at the strictest step of Holm over ``family`` tests."""
    return alpha / max(family, 1)


def runs_to_reach(
    level: float, floor: Callable[[int, int], float] = exact_floor, n_max: int = 1000
) -> int | None:
    """The fewest runs per cell (equal in both) whose ``floor`` lies below ``level``; None
    when no number up to ``n_max`` does."""
    for n in range(2, n_max + 1):
        if floor(n, n) < level:
            return n
    return None


@dataclass(frozen=True)
class Design:
    """One test's design check: its smallest reachable p, its Holm level, whether the floor
    lies below it, and the runs per cell that would reach it (None: none up to 1,000, or
    not an exact test)."""

    floor: float
    level: float
    runs: int | None = None

    @property
    def known(self) -> bool:
        return math.isfinite(self.floor) and math.isfinite(self.level)

    @property
    def can_pass(self) -> bool:
        """Whether some data could pass the level (True where the floor is unknown)."""
        return not self.known or self.floor < self.level

    def text(self, method: str, n_a: int, n_b: int) -> str:
        """Why the test cannot pass, for a verdict's reason ("" when it can)."""
        if self.can_pass:
            return ""
        could = (
            f"{self.runs} runs per cell could reach it"
            if self.runs is not None
            else "no number of runs up to 1,000 per cell reaches it"
        )
        return (
            f"by design: the {method} test's smallest p at {n_a} + {n_b} runs is "
            f"{self.floor:.2g}, not below its Holm level {self.level:.2g} ({could})"
        )


def design(
    method: str, n_a: int, n_b: int, alpha: float, family: int, floor: float = math.nan
) -> Design:
    """The design check of one test (``floor``: a study's own test's floor, else the one its
    ``method`` has at these runs)."""
    f = floor if math.isfinite(floor) else floor_of(method, n_a, n_b)
    level = holm_level(alpha, family)
    runs = runs_to_reach(level) if method in EXACT_METHODS and f >= level else None
    return Design(f, level, runs)
