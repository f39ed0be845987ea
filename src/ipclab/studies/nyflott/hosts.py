"""Per-host CPU and network of a run (Table 3, Figs. 11-15 and their claims), per run.

Every host of the thesis (the gateway ``nginx1`` and the auth, booking, customer and flight
services, each with its adapter) is one container of the docker backend with its own network
namespace, sampled about once a second into ``resources.csv`` (``cpu_percent``: 100 = one
core; ``net_*``: the container's interface counters since it started). Over the run's
measured window (the first request + ``warmup_s`` to the last sample):

* ``cpu_<host>_percent``: the mean of the host's CPU samples; ``cpu_system_percent``: their
  sum over the five hosts;
* ``<host>_tx_bytes`` ... ``<host>_rx_packets``: counter increase over the window, per
  second (Figs. 11-14 and 20-23 show run totals, which mix per-request cost with throughput);
* ``bytes_per_request``, ``packets_per_request``: bytes (packets) **sent and received,
  summed over the five hosts**, per request completed in the same window; a packet between
  two hosts is counted at both, one between the load generator and the gateway once (the
  thesis does not say what its Table 3 sums); ``bytes_per_packet`` is their quotient.

A host without samples (the local backend has no per-role network counters) gives NaN, and
so does a counter that went down in the window (a restarted container).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ipclab.runs import Run

HOSTS = ("gateway", "auth", "booking", "customer", "flight")
COUNTERS = ("tx_bytes", "rx_bytes", "tx_packets", "rx_packets")


def _window(run: Run, warmup_s: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    req = run.requests()
    res = run.resources()
    if not len(req) or not len(res) or "component" not in res.columns:
        return req.iloc[0:0], res.iloc[0:0] if len(res) else pd.DataFrame()
    start = float(req["t"].astype(float).min()) + warmup_s
    res = res[res["t"].astype(float) >= start]
    return req, res


def host_row(run: Run, warmup_s: float) -> dict[str, float | str]:
    """One run's per-host CPU and network numbers over its measured window."""
    req, res = _window(run, warmup_s)
    row: dict[str, float | str] = {"run": run.path.name}
    nan = float("nan")
    totals = {"bytes": 0.0, "packets": 0.0}
    complete = True
    t0 = t1 = nan
    if len(res):
        t0, t1 = float(res["t"].astype(float).min()), float(res["t"].astype(float).max())
    cpu_sum = 0.0
    for host in HOSTS:
        h = res[res["component"] == host].sort_values("t") if len(res) else res
        cpu = pd.to_numeric(h["cpu_percent"], errors="coerce").dropna() if len(h) else h
        row[f"cpu_{host}_percent"] = float(cpu.mean()) if len(cpu) else nan
        cpu_sum += float(row[f"cpu_{host}_percent"])
        for key in COUNTERS:
            col = f"net_{key}"
            x = pd.to_numeric(h[col], errors="coerce") if len(h) and col in h else pd.Series()
            x = x.dropna() if len(x) else x
            ht = h.loc[x.index, "t"].astype(float) if len(x) else x
            ok = len(x) >= 2 and float(x.iloc[-1]) >= float(x.iloc[0])
            delta = float(x.iloc[-1] - x.iloc[0]) if ok else nan
            span = float(ht.iloc[-1] - ht.iloc[0]) if ok else nan
            row[f"{host}_{key}_per_s"] = delta / span if ok and span > 0 else nan
            if not ok:
                complete = False
            else:
                totals["bytes" if key.endswith("bytes") else "packets"] += delta
    row["cpu_system_percent"] = cpu_sum  # NaN when any host lacks CPU samples
    n = 0
    if len(req) and np.isfinite(t0):
        t = req["t"].astype(float)
        n = int(((t >= t0) & (t <= t1)).sum())
    if complete and n > 0:
        row["bytes_per_request"] = totals["bytes"] / n
        row["packets_per_request"] = totals["packets"] / n
        row["bytes_per_packet"] = (
            totals["bytes"] / totals["packets"] if totals["packets"] > 0 else nan
        )
    else:
        row["bytes_per_request"] = row["packets_per_request"] = row["bytes_per_packet"] = nan
    return row


def host_rows(runs: Sequence[Run], warmup_s: float) -> pd.DataFrame:
    """One row per run (keyed by ``run``, the run directory's name, as ``tables.run_rows``):
    merge the two for the claims (``verdicts.evaluate``)."""
    return pd.DataFrame([host_row(r, warmup_s) for r in runs])
