"""The plausibility check: whether a cell's numbers can be the system's, read against physics
(docs/statistics.md section 9), beside the machine check.

Four rules, each on what the committed run files hold (summaries, manifests, Locust's
per-second history and per-name table, cycles and events; per-request records are mostly
not committed):

- **latency against CPU and delay**: the cell's median response time against what the
  stack's CPU (each component's CPU per request, and the machine's cores) and the added
  network delay explain at its load, by mean value analysis of a closed loop
  (:func:`explained_response_ms`). A stack whose latency is far above that waits on
  something that is not CPU and not the network: a single-threaded stage, a lock, a pool of
  one (a *stall*);
- **Little's law**: users = throughput x (response time + think time) over the analysed
  window, the users counted over that window, and a shortfall allowed only as large as the
  share of time the load generator itself was busy;
- **failures only where the raw requests show them**: a failure with no injected fault
  counts only when Locust's per-second counts show failed requests after the previous
  recovery and by its detection;
- **no failure before the load is up**: a failure dated before the ramp's end plus one of
  the detector's windows rests on a window that holds the ramp.

This module is pure: it evaluates a per-run table (:mod:`ipclab.stats.plausibility_runs`
reads one from run directories) and gives one row per cell (:func:`plausibility_check`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class PlausibilityLimits:
    """When a cell's numbers are not the system's (docs/statistics.md section 9)."""

    # the median response over what CPU and delay explain: the committed healthy cells reach
    # 1.26 (a cell's median over runs; 1.30 in one run), the stalled Californium cells 1.56
    # and more (1.49 in one run); 1.4 is about their geometric mean, ~11% from each
    latency_factor: float = 1.4
    latency_slack_ms: float = 1.0  # a fixed cost no CPU counter sees (timers, loopback)
    # X (R + Z) / N - 1 beyond the generator's own busy share: the committed runs reach +2.3%
    # above and -2.1% below it
    little_tolerance: float = 0.05
    evidence_slack_s: float = 1.0  # Locust's history is per second
    window_s: float = 5.0  # the detector's error-rate window, where a run records none


#: The limits every reference is checked against.
LIMITS = PlausibilityLimits()

#: Column order of the per-run table :func:`plausibility_check` reads (the reader's).
RUN_COLUMNS = (
    "path", "run", "kind", "method", "experiment", "stack", "variant", "users",
    "think_time_s", "delay_ms", "p50_ms", "mean_ms", "rps", "explained_ms", "explained_by",
    "path_delay_ms", "users_window", "little_error", "loadgen_utilisation", "failures",
    "failures_without_evidence", "failures_at_startup", "failure_notes",
)  # fmt: skip

#: The columns that name a cell of the plausibility table.
CELL_COLUMNS = ("experiment", "method", "stack", "variant", "users", "think_time_s", "delay_ms")


@dataclass(frozen=True)
class Station:
    """A queueing centre of a closed network: its demand per request and its servers."""

    demand_ms: float
    servers: float = 1.0


def mva_response_ms(stations: Sequence[Station], delay_ms: float, users: float) -> float:
    """Mean response time (ms) of a closed network of ``users`` with think and pure delay
    ``delay_ms`` outside the queues, by exact mean value analysis; a station of m servers
    by Seidmann's approximation (a queue of demand D/m and a fixed delay of D(m-1)/m)."""
    n_users = max(int(round(users)), 1)
    queue = np.array([s.demand_ms / s.servers for s in stations], dtype=float)
    fixed = sum(s.demand_ms * (s.servers - 1) / s.servers for s in stations)
    q = np.zeros(len(queue))
    r = queue.copy()
    for n in range(1, n_users + 1):
        r = queue * (1.0 + q)
        x = n / (delay_ms + fixed + float(r.sum()))
        q = x * r
    return float(r.sum()) + fixed


def explained_response_ms(
    cpu_percent: Mapping[str, float],
    host_percent: float | None,
    rps: float,
    cores: float,
    users: float,
    think_s: float = 0.0,
    delay_ms: float = 0.0,
    cpus: float | None = None,
) -> tuple[float, str]:
    """What the CPU and the added delay explain of a cell's mean response time (ms), and
    what binds it: the larger of two closed-loop models at the run's users, think time and
    throughput: the **machine** (every busy CPU per request on the host, load generator
    included, on ``cores`` servers) and the **processes** (each component's CPU per request
    on a server of its own, as a single-threaded process has; a container limited to
    ``cpus`` < 1 serves slower). The delay ``delay_ms`` a request spends on the network
    is added to both and, as think time is, kept outside the queues. Each model leaves the
    other's constraint out, so each is a lower estimate, and the larger is taken."""
    if not rps or rps <= 0 or not cpu_percent:
        return float("nan"), ""
    per_request = {k: 10.0 * float(v) / rps for k, v in cpu_percent.items() if v == v}
    slow = 1.0 / cpus if cpus and cpus < 1 else 1.0
    outside = 1000.0 * think_s + delay_ms
    host = float(host_percent) if host_percent else sum(float(v) for v in cpu_percent.values())
    machine = mva_response_ms([Station(10.0 * host / rps, max(cores, 1.0))], outside, users)
    procs = [Station(d * slow) for d in per_request.values() if d > 0]
    processes = mva_response_ms(procs, outside, users) if procs else 0.0
    if machine >= processes:
        return machine + delay_ms, f"machine ({cores:g} cores)"
    bottleneck = max(per_request, key=lambda k: per_request[k])
    return processes + delay_ms, f"processes ({bottleneck})"


def little_error(users: float, rps: float, response_ms: float, think_s: float = 0.0) -> float:
    """(X (R + Z) - N) / N: Little's law's relative error for a closed loop."""
    if not users or rps is None or response_ms is None:
        return float("nan")
    return (float(rps) * (float(response_ms) / 1000.0 + float(think_s)) - users) / users


def little_holds(error: float, generator_share: float, limits: PlausibilityLimits) -> bool | None:
    """Whether a run's Little's-law error is within ``limits``: at most the tolerance above
    0, and below it at most the tolerance plus the share of time the load generator was
    busy (users inside the generator are in neither a request nor think time)."""
    if error != error:
        return None
    share = generator_share if generator_share == generator_share else 0.0
    return -(limits.little_tolerance + min(share, 1.0)) <= error <= limits.little_tolerance


def _median(x: pd.Series) -> float:
    v = pd.to_numeric(x, errors="coerce").dropna()
    return float(v.median()) if len(v) else float("nan")


def _latency(sub: pd.DataFrame, limits: PlausibilityLimits) -> dict[str, Any]:
    """The latency rule over one cell's runs: the median margin decides."""
    p50 = pd.to_numeric(sub["p50_ms"], errors="coerce")
    expl = pd.to_numeric(sub["explained_ms"], errors="coerce")
    known = p50.notna() & expl.notna() & (expl > 0)
    if not known.any():
        return {"latency_ratio": np.nan, "runs_above": 0, "stalled": None, "latency_why": ""}
    margin = p50[known] - (limits.latency_factor * expl[known] + limits.latency_slack_ms)
    ratio = float((p50[known] / expl[known]).median())
    stalled = bool(margin.median() > 0)
    why = (
        f"stall: median response {_median(p50):.1f} ms is {ratio:.2f}x the "
        f"{_median(expl):.1f} ms that CPU and delay explain ({int((margin > 0).sum())} of "
        f"{int(known.sum())} runs above {limits.latency_factor:g}x + "
        f"{limits.latency_slack_ms:g} ms)"
        if stalled
        else ""
    )
    return {"latency_ratio": ratio, "runs_above": int((margin > 0).sum()), "stalled": stalled,
            "latency_why": why}  # fmt: skip


def _little(sub: pd.DataFrame, limits: PlausibilityLimits) -> dict[str, Any]:
    """Little's law over one cell's runs: every run must hold it."""
    err = pd.to_numeric(sub["little_error"], errors="coerce")
    share = pd.to_numeric(sub["loadgen_utilisation"], errors="coerce")
    held = [little_holds(float(e), float(s), limits) for e, s in zip(err, share, strict=True)]
    known = [h for h in held if h is not None]
    failed = sum(1 for h in known if h is False)
    why = (
        f"Little's law: X (R + Z) is {err.min():+.0%} to {err.max():+.0%} of the users in "
        f"{failed} of {len(known)} runs (allowed: +{limits.little_tolerance:.0%} down to "
        f"-{limits.little_tolerance:.0%} minus the load generator's busy share)"
        if failed
        else ""
    )
    return {
        "little_error_min": float(err.min()) if err.notna().any() else np.nan,
        "little_error_max": float(err.max()) if err.notna().any() else np.nan,
        "little_failed": failed if known else None,
        "little_why": why,
    }


def _failures(sub: pd.DataFrame) -> dict[str, Any]:
    """The two failure rules over one cell's runs: any failure that breaks one flags it."""
    fail = pd.to_numeric(sub["failures"], errors="coerce")
    if not fail.notna().any():
        return {"failures": np.nan, "failures_without_evidence": np.nan,
                "failures_at_startup": np.nan, "failures_why": "",
                "failures_checked": False}  # fmt: skip
    phantom = int(pd.to_numeric(sub["failures_without_evidence"], errors="coerce").sum())
    startup = int(pd.to_numeric(sub["failures_at_startup"], errors="coerce").sum())
    notes = [n for s in sub["failure_notes"] if isinstance(s, str) for n in s.split("; ") if n]
    runs_of = {
        col: int((pd.to_numeric(sub[col], errors="coerce") > 0).sum())
        for col in ("failures_without_evidence", "failures_at_startup")
    }
    parts = []
    if phantom:
        parts.append(f"{_failures_word(phantom)} with no injected fault and no failed request "
                     f"({runs_of['failures_without_evidence']} of {len(sub)} runs)")  # fmt: skip
    if startup:
        parts.append(f"{_failures_word(startup)} before the load was up "
                     f"({runs_of['failures_at_startup']} of {len(sub)} runs)")  # fmt: skip
    more = f"; and {len(notes) - 3} more" if len(notes) > 3 else ""
    why = "; ".join(parts) + (f" [{'; '.join(notes[:3])}{more}]" if parts and notes else "")
    return {"failures": int(fail.sum()), "failures_without_evidence": phantom,
            "failures_at_startup": startup, "failures_why": why,
            "failures_checked": True}  # fmt: skip


def _failures_word(n: int) -> str:
    return f"{n} failure" if n == 1 else f"{n} failures"


def plausibility_check(
    runs: pd.DataFrame,
    limits: PlausibilityLimits = LIMITS,
    by: Sequence[str] = CELL_COLUMNS,
) -> pd.DataFrame:
    """One row per cell of a per-run table (:data:`RUN_COLUMNS`): the latency rule's median
    ratio and runs above, Little's law's error range, the failures without evidence and
    before the load was up, ``plausible`` (True, False, or None when no rule could be
    applied) and ``why`` (every rule the cell breaks)."""
    keys = [k for k in by if k in runs.columns]
    rows = []
    for key, sub in runs.groupby(keys, dropna=False, sort=True):
        lat, lit, fl = _latency(sub, limits), _little(sub, limits), _failures(sub)
        verdicts = [lat["stalled"], None if lit["little_failed"] is None else
                    lit["little_failed"] > 0,
                    (fl["failures_without_evidence"] + fl["failures_at_startup"]) > 0
                    if fl["failures_checked"] else None]  # fmt: skip
        known = [v for v in verdicts if v is not None]
        why = "; ".join(w for w in (lat["latency_why"], lit["little_why"], fl["failures_why"]) if w)
        rows.append(
            {
                **dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True)),
                "runs": len(sub),
                "p50_ms": _median(sub["p50_ms"]),
                "explained_ms": _median(sub["explained_ms"]),
                "explained_by": _mode(sub["explained_by"]),
                "path_delay_ms": _median(sub["path_delay_ms"]),
                **{k: v for k, v in lat.items() if k != "latency_why"},
                **{k: v for k, v in lit.items() if k != "little_why"},
                **{k: v for k, v in fl.items() if k not in ("failures_why", "failures_checked")},
                "plausible": (not any(known)) if known else None,
                "why": why,
            }
        )
    return pd.DataFrame(rows)


def _mode(x: pd.Series) -> str:
    v = [str(s) for s in x if isinstance(s, str) and s]
    return max(set(v), key=v.count) if v else ""


def flagged(check: pd.DataFrame) -> pd.DataFrame:
    """The cells of a :func:`plausibility_check` table that fail it."""
    if check.empty or "plausible" not in check.columns:
        return check
    return check[check["plausible"].map(lambda v: v is False or v == False)]  # noqa: E712
