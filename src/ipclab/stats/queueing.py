"""Little's law for a closed loop, N = X (R + Z): whether a run's users were all busy with
requests or think time (docs/statistics.md)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class LittleCheck:
    """Closed-loop Little's law N = X (R + Z) for one run."""

    users: float  # N
    throughput_rps: float  # X
    response_s: float  # R
    think_s: float  # Z, as configured
    implied_users: float  # X (R + Z)
    relative_error: float  # (X (R + Z) - N) / N
    implied_think_s: float  # N / X - R


def littles_law(
    users: float, throughput_rps: float, response_s: float, think_s: float = 0.0
) -> LittleCheck:
    """Check N = X (R + Z). A relative error near 0 means the users were all busy with
    requests or think time; a negative one means fewer were (ramp-up inside the window, a
    generator that could not keep up, or unaccounted waits); ``implied_think_s`` is the
    think time that would close the equation."""
    n, x, r, z = float(users), float(throughput_rps), float(response_s), float(think_s)
    implied = x * (r + z)
    rel = (implied - n) / n if n else float("nan")
    zt = n / x - r if x > 0 else float("nan")
    return LittleCheck(n, x, r, z, implied, rel, zt)


def littles_law_table(
    runs: pd.DataFrame, throughput: str = "rps", response_ms: str = "mean_ms"
) -> pd.DataFrame:
    """:func:`littles_law` on every row of a per-run table (``users``, ``think_time_s``,
    ``rps``, ``mean_ms``); adds ``implied_users``, ``relative_error``, ``implied_think_s``."""
    rows = [
        littles_law(
            r["users"], r[throughput], r[response_ms] / 1000.0, r.get("think_time_s", 0.0) or 0.0
        )
        for _, r in runs.iterrows()
    ]
    return runs.assign(
        implied_users=[c.implied_users for c in rows],
        relative_error=[c.relative_error for c in rows],
        implied_think_s=[c.implied_think_s for c in rows],
    )
