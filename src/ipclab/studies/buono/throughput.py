"""Beyond the thesis: throughput of the payload stack at 50, 100 and 200 closed-loop users,
for a small and a large payload, JSON against Protobuf.

One experiment per payload (``small``: nested 5 payments; ``large``: nested 650) and format,
each cell a fresh stack (gzip and cache off, orjson) under a closed loop of GETs of that
payload in that format (:mod:`users_throughput`); the cells of all four experiments run
interleaved in one shuffled order (``ipclab.experiments.run_interleaved``), so no format
or payload runs all at one time of the sitting. The quick profile maps 50/100/200 users to
5/10/20.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from ipclab.experiments import Experiment, run_interleaved
from ipclab.load.group import GroupLoad
from ipclab.runs import Run
from ipclab.stats import log_ratio_interval, t_interval
from ipclab.studies.buono.procedure import FORMATS, Variant, parse_cell
from ipclab.studies.buono.stacks import PAYLOAD

PAYLOADS = {"small": "nested 5", "large": "nested 650"}


@dataclass(frozen=True)
class Profile:
    users: tuple[int, ...]
    repetitions: int
    duration_s: float
    warmup_s: float


PROFILES = {
    # 3 s measured after a 1 s warm-up: ~600 requests a cell on a quiet machine even for
    # the large payload, enough for the cells' order; most of a quick cell is its starts
    "quick": Profile(users=(5, 10, 20), repetitions=1, duration_s=4.0, warmup_s=1.0),
    "full": Profile(users=(50, 100, 200), repetitions=3, duration_s=20.0, warmup_s=5.0),
}


def experiments(profile: str, backend: str, base: Path) -> list[Experiment]:
    """One experiment per payload and format, runs under
    ``<base>/throughput-<payload>-<format>/``."""
    p = PROFILES[profile]
    return [
        Experiment(
            name=f"throughput-{name}-{fmt}",
            stacks=[PAYLOAD.name],
            users=list(p.users),
            repetitions=p.repetitions,
            duration_s=p.duration_s,
            warmup_s=p.warmup_s,
            backend=backend,
            options=Variant(gzip=False, cache=False).options(),
            group=GroupLoad(
                "ipclab.studies.buono.users_throughput",
                None,
                {"IPCLAB_PAYLOAD": f"{fmt} {payload}"},
            ),  # fmt: skip
            root=base,
        )
        for name, payload in PAYLOADS.items()
        for fmt in FORMATS
    ]


def run(experiments: list[Experiment], progress: Callable[[str], None] = print) -> list[Run]:
    return run_interleaved(experiments, order_seed=2021, progress=progress)


def runs_table(runs: list[Run]) -> pd.DataFrame:
    """One row per run: its payload, format and users, and its summary's requests per
    second, mean and p95 response time over the measured window (after the warm-up)."""
    rows = []
    sizes = {int(v.split()[1]): k for k, v in PAYLOADS.items()}
    for run in runs:
        s = run.summary
        payload = run.parameters.get("group", {}).get("env", {}).get("IPCLAB_PAYLOAD", "")
        if not run.complete or not payload or not s.get("requests"):
            continue
        cell = parse_cell("GET " + payload)
        rows.append(
            {
                "payload": sizes.get(cell.count, str(cell.count)),
                "structure": cell.structure,
                "count": cell.count,
                "fmt": cell.fmt,
                "users": int(run.parameters["users"]),
                "repetition": int(run.parameters.get("repetition", 0)),
                "rps": float(s["rps"]),
                "mean_ms": float(s["latency_ms"]["mean"]),
                "p95_ms": float(s["latency_ms"]["p95"]),
                "failures": int(s["failures"]),
                "run": run.path.name,
            }
        )
    return pd.DataFrame(rows)


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per payload and users: each format's req/s and mean latency (mean over runs, 95 %
    t interval) and Protobuf / JSON of req/s (log-ratio interval)."""
    rows = []
    if table.empty:
        return pd.DataFrame()
    for (payload, users), g in table.groupby(["payload", "users"]):
        j, p = g[g["fmt"] == "json"], g[g["fmt"] == "protobuf"]
        row: dict[str, object] = {"payload": payload, "count": int(g["count"].iloc[0]),
                                  "users": int(users), "runs": int(g["run"].nunique())}  # fmt: skip
        for fmt, x in (("json", j), ("protobuf", p)):
            for metric in ("rps", "mean_ms"):
                ci = t_interval(x[metric].to_numpy(float))
                row[f"{fmt}_{metric}"] = ci.estimate
                row[f"{fmt}_{metric}_low"], row[f"{fmt}_{metric}_high"] = ci.low, ci.high
        r = log_ratio_interval([(1, [p["rps"].to_numpy(float)]), (-1, [j["rps"].to_numpy(float)])])
        if min(len(j), len(p)) < 2:  # one run a side: an estimate, no interval
            r = replace(r, low=float("nan"), high=float("nan"))
        row["rps_ratio"], row["rps_ratio_low"], row["rps_ratio_high"] = r.estimate, r.low, r.high
        row["failures"] = int(g["failures"].sum())
        rows.append(row)
    return pd.DataFrame(rows)
