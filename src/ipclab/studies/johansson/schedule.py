"""The thesis test's request schedule: which gateway each request of one client goes to.

Warm-up requests first (discarded by the analysis), then the measured ones. Each round
sends one request to every target, in an order drawn from a seeded RNG, so the interfaces
alternate at random but stay balanced at every point of the run (a drift of the machine
hits both alike), and request *k* of one interface is close in time to request *k* of the
other, as the thesis's per-request figures compare them.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from ipclab.load.targets import parse_targets

WARMUP = "warmup "  # the prefix of a warm-up request's name


def schedule(
    targets: Sequence[str], requests: int, warmup: int = 0, seed: int = 1
) -> list[tuple[str, str]]:
    """``(request name, target)`` for every request: ``warmup`` then ``requests`` rounds of
    one request per target, each round in a random order."""
    if not targets:
        raise ValueError("no targets to send requests to")
    if requests < 1 or warmup < 0:
        raise ValueError("requests must be at least 1 and warm-up not negative")
    rng = random.Random(seed)
    out = []
    for prefix, rounds in ((WARMUP, warmup), ("", requests)):
        for _ in range(rounds):
            order = list(targets)
            rng.shuffle(order)
            out.extend((f"{prefix}{t}", t) for t in order)
    return out


__all__ = ["WARMUP", "parse_targets", "schedule"]
