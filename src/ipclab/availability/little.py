"""Little's law before a run until failure: can the load alone make requests fail?

A closed loop of N users with think time Z at throughput X has response time R = N / X - Z
(Little's law). At the stack's highest throughput X_max the load can hold R no lower than
N / X_max - Z; the gateway answers every call by its call timeout T (a 504 after it), so
the load itself makes requests fail only once that R exceeds T, or when a resource runs
out (memory, connections, a queue). :class:`LittlePrediction` states which before a run
(recorded in its parameters and its summary); :func:`observed` reads what the run's load
generator saw (docs/statistics.md, "Little's law before a run until failure").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

#: what the prediction says, by case
TIMES_OUT = "the load alone makes calls time out (N / X_max - Z > the call timeout)"
CANNOT = (
    "the load alone cannot make calls time out (N / X_max - Z <= the call timeout): "
    "a failure needs an exhausted resource"
)
NONE = "no prediction: no performance reference of this backend and style"


@dataclass(frozen=True)
class LittlePrediction:
    """``users`` closed-loop users (``think_time_s`` between requests) on a stack whose
    highest throughput is ``x_max_rps`` (None: unknown; ``source`` says where it came from
    or why there is none), against the gateway's ``call_timeout_s``."""

    users: int
    call_timeout_s: float
    x_max_rps: float | None
    source: str
    think_time_s: float = 0.0

    @property
    def response_s(self) -> float | None:
        """The lowest response time the load can hold: N / X_max - Z."""
        if self.x_max_rps is None or self.x_max_rps <= 0:
            return None
        return max(self.users / self.x_max_rps - self.think_time_s, 0.0)

    @property
    def times_out(self) -> bool | None:
        r = self.response_s
        return None if r is None else r > self.call_timeout_s

    @property
    def verdict(self) -> str:
        t = self.times_out
        return NONE if t is None else TIMES_OUT if t else CANNOT

    def as_dict(self) -> dict[str, Any]:
        r = self.response_s
        return {
            **asdict(self),
            "response_s": None if r is None else round(r, 4),
            "timeout_ratio": None if r is None else round(r / self.call_timeout_s, 4),
            "times_out": self.times_out,
            "verdict": self.verdict,
        }


def observed(run_dir: Path, users: int, t_from: float, t_to: float) -> dict[str, Any]:
    """What the run's load generator saw between ``t_from`` and ``t_to`` (Locust's
    per-second history): its mean throughput, the response time Little's law gives for it
    (``users / x``) and the median of the seconds' medians; None values without rows."""
    out: dict[str, Any] = {"x_rps": None, "response_s": None, "median_ms": None}
    path = Path(run_dir) / "locust_stats_history.csv"
    if not path.exists() or t_to <= t_from:
        return out
    h = pd.read_csv(path)
    h = h[h["Name"] == "Aggregated"] if "Name" in h.columns else h
    h = h[(h["Timestamp"] >= t_from) & (h["Timestamp"] <= t_to)]
    x = pd.to_numeric(h["Requests/s"], errors="coerce").dropna()
    if not len(x) or x.mean() <= 0:
        return out
    med = pd.to_numeric(h["50%"], errors="coerce").dropna()
    out["x_rps"] = round(float(x.mean()), 2)
    out["response_s"] = round(users / float(x.mean()), 4)
    out["median_ms"] = float(med.median()) if len(med) else None
    return out
