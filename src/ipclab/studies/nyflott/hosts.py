"""Per-host CPU and network of a run (Table 3, Figs. 11-15 and 20-23 and their claims).

A **host** is the thesis's VM: the gateway (the thesis's ``nginx1``), the auth, booking,
customer and flight services, and the load generator (``loadgen``; the thesis's
``acmeair-jmeter1``, left out of its figures). Every role of a stack runs on one host: the
run manifest's ``stack_spec.hosts`` (role -> host) says which where it is recorded; without
it the stack's declaration does (``StackSpec.host_of``: ``egress`` on the gateway's host,
``<svc>-ingress`` on ``<svc>``'s), and any other component is a host of its own name, so
no role is ever dropped (:func:`host_of`).

``resources.csv`` has one row per component (role, ``loadgen``) about once a second
(``cpu_percent``: 100 = one core; ``net_*``: the interface counters of the container the
component runs in since it started; a sidecar sharing its host's interface reports none).
Over the run's **measured window** (the first request + ``warmup_s`` to the end of the last
request; the samples inside it):

* a host's CPU at a sampling round is the **sum over its roles**; ``cpu_mean`` and
  ``cpu_sd`` are the mean and SD over the rounds (Fig. 15 draws the SD);
* a host's ``tx_bytes`` ... ``rx_packets`` are the counters' increase between the window's
  first and last sample, summed over its roles that report counters (run totals, as Figs.
  11-14 and 20-23 draw them, which mix per-request cost with throughput); ``*_per_request``
  divides by the requests started between those two samples;
* **Table 3** (``bytes_per_request``, ``packets_per_request``, ``bytes_per_packet``): the
  bytes (packets) **sent and received, summed over the five thesis hosts** (gateway and
  the four services; not the load generator), per request. A packet between two of them is
  counted twice (sent by one, received by the other); one between the load generator and
  the gateway once (the thesis does not say what its Table 3 sums). ``cpu_system_percent``
  is the CPU summed over the same five hosts.

A host without samples, or without counters (the local backend has no per-role network
counters), gives NaN, and so does a counter that went down in the window (a restarted
container).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ipclab.runs import Run
from ipclab.stacks import UnknownStack, resolve
from ipclab.studies.nyflott import tables

THESIS_HOSTS = ("gateway", "auth", "booking", "customer", "flight")  # figures, Table 3
COUNTERS = ("tx_bytes", "rx_bytes", "tx_packets", "rx_packets")
MACHINE = "host"  # resources.csv's whole-machine row: no role, not a host of the stack
ROUND_GAP_S = 0.5  # samples further apart than this belong to different sampling rounds


def host_of(run: Run, role: str) -> str:
    """The host ``role`` ran on in ``run``: the manifest's ``stack_spec.hosts`` where it
    names the role, else the stack's declaration (``StackSpec.host_of``: ``egress`` ->
    the gateway, ``<svc>-ingress`` -> ``<svc>``), else (an unknown stack, or a component
    that is no role, as ``loadgen``) the role itself."""
    spec = run.manifest.get("stack_spec") or {}
    recorded = spec.get("hosts") if isinstance(spec, dict) else None
    if isinstance(recorded, dict) and role in recorded:
        return str(recorded[role])
    try:
        return resolve(str(run.manifest.get("stack", ""))).host_of(role)
    except UnknownStack:
        return role


def _window(run: Run, warmup_s: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The run's requests and its component samples inside the measured window."""
    req = run.requests()
    res = run.resources()
    if not len(req) or not len(res) or "component" not in res.columns:
        return req.iloc[0:0], pd.DataFrame()
    t = req["t"].astype(float)
    start = float(t.min()) + warmup_s
    end = float((t + req["latency_ms"].astype(float) / 1000.0).max())
    rt = res["t"].astype(float)
    res = res[(rt >= start) & (rt <= end) & (res["component"].astype(str) != MACHINE)].copy()
    res["component"] = res["component"].astype(str)
    return req, res


def _rounds(t: pd.Series) -> pd.Series:
    """Sampling round of every sample: a new round where samples are more than
    :data:`ROUND_GAP_S` apart (the components of one round are sampled within ms)."""
    order = t.sort_values(kind="stable")
    new = order.diff().fillna(np.inf) > ROUND_GAP_S
    return new.cumsum().reindex(t.index)


def _counter_delta(samples: pd.DataFrame, column: str) -> tuple[float, float] | None:
    """A component's counter increase over its samples and the time between its first and
    last sample: None without two samples; NaN when the counter went down (a restart)."""
    if column not in samples.columns:
        return None
    s = samples.sort_values("t")
    x = pd.to_numeric(s[column], errors="coerce").dropna()
    if len(x) < 2:
        return None
    t = s.loc[x.index, "t"].astype(float)
    d = float(x.iloc[-1] - x.iloc[0])
    return (d if d >= 0 else float("nan")), float(t.iloc[-1] - t.iloc[0])


def host_table(run: Run, warmup_s: float) -> pd.DataFrame:
    """One row per host of the run (the five thesis hosts always, the load generator and
    any other host that has samples): ``run, host, roles, rounds, window_s, requests,
    cpu_mean, cpu_sd, delayer_cpu_mean`` (the delay emulation's own CPU on that host, kept
    out of ``cpu_mean``), the four counters' increase over the window, per second and per
    request (see the module's doc)."""
    req, res = _window(run, warmup_s)
    nan = float("nan")
    n, t0, t1 = 0, nan, nan
    delayers = pd.Series(dtype=float)
    if len(res) and "kind" in res.columns:
        # the delay emulation (docker's NFQUEUE delayer, its CPU already taken off its
        # host's row) is reported beside each host; the machine's own row is no host
        d = res[res["kind"] == "delayer"]
        cpu = pd.to_numeric(d["cpu_percent"], errors="coerce")
        delayers = cpu.groupby(d["component"].str.removesuffix("-delayer")).mean()
        res = res[~res["kind"].isin(["delayer", "host"])]
    if len(res):
        rt = res["t"].astype(float)
        t0, t1 = float(rt.min()), float(rt.max())
        t = req["t"].astype(float)
        n = int(((t >= t0) & (t <= t1)).sum())
        res["host"] = res["component"].map({c: host_of(run, c) for c in set(res["component"])})
        res["round"] = _rounds(rt)
    present = sorted(set(res["host"])) if len(res) else []
    order = [*THESIS_HOSTS, *(h for h in present if h not in THESIS_HOSTS)]
    rows = []
    for host in order:
        h = res[res["host"] == host] if len(res) else res
        roles = sorted(set(h["component"])) if len(h) else []
        row: dict[str, object] = {
            "run": tables.run_label(run), "host": host, "roles": " ".join(roles),
            "rounds": 0, "window_s": t1 - t0, "requests": n, "cpu_mean": nan, "cpu_sd": nan,
            "delayer_cpu_mean": float(delayers.get(host, nan)),
        }  # fmt: skip
        if len(h):
            cpu = pd.to_numeric(h["cpu_percent"], errors="coerce")
            per_round = cpu.groupby(h["round"]).sum(min_count=1).dropna()
            row["rounds"] = len(per_round)
            if len(per_round):
                row["cpu_mean"] = float(per_round.mean())
                row["cpu_sd"] = float(per_round.std(ddof=1)) if len(per_round) > 1 else nan
        for key in COUNTERS:
            deltas = [_counter_delta(g, f"net_{key}") for _, g in h.groupby("component")] if len(
                h) else []  # fmt: skip
            known = [d for d in deltas if d is not None]
            total = float(sum(d for d, _ in known)) if known else nan  # a reset's NaN stays
            row[key] = total
            rates = [d / span if span > 0 else nan for d, span in known]
            row[f"{key}_per_s"] = float(sum(rates)) if rates else nan
            row[f"{key}_per_request"] = total / n if n > 0 else nan
        rows.append(row)
    return pd.DataFrame(rows)


def host_tables(runs: Sequence[Run], warmup_s: float) -> pd.DataFrame:
    """:func:`host_table` of every run, one frame."""
    parts = [host_table(r, warmup_s) for r in runs]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def row_from_hosts(run: str, table: pd.DataFrame) -> dict[str, float | str]:
    """A run's wide row for the claims from its :func:`host_table`:
    ``cpu_<host>_percent`` per host, ``cpu_system_percent`` (the five thesis hosts),
    ``<host>_<counter>_per_s`` and Table 3's ``bytes_per_request``, ``packets_per_request``
    and ``bytes_per_packet`` (sent and received over the five thesis hosts)."""
    nan = float("nan")
    row: dict[str, float | str] = {"run": run}
    t = table.set_index("host") if len(table) else table
    for host in t.index if len(t) else []:
        row[f"cpu_{host}_percent"] = float(t.loc[host, "cpu_mean"])
        for key in COUNTERS:
            row[f"{host}_{key}_per_s"] = float(t.loc[host, f"{key}_per_s"])
    five = t.reindex(list(THESIS_HOSTS)) if len(t) else pd.DataFrame(index=list(THESIS_HOSTS))
    cpu = five["cpu_mean"].to_numpy(dtype=float) if "cpu_mean" in five else np.full(5, nan)
    row["cpu_system_percent"] = float(cpu.sum())  # NaN when any host lacks CPU samples
    n = int(table["requests"].max()) if len(table) else 0
    if len(table) and n > 0:
        b = five[["tx_bytes", "rx_bytes"]].to_numpy(dtype=float).sum()
        p = five[["tx_packets", "rx_packets"]].to_numpy(dtype=float).sum()
        row["bytes_per_request"] = b / n
        row["packets_per_request"] = p / n
        row["bytes_per_packet"] = b / p if p > 0 else nan
    else:
        row["bytes_per_request"] = row["packets_per_request"] = row["bytes_per_packet"] = nan
    return row


def host_row(run: Run, warmup_s: float) -> dict[str, float | str]:
    """One run's per-host CPU and network numbers over its measured window (wide)."""
    return row_from_hosts(tables.run_label(run), host_table(run, warmup_s))


def host_rows(runs: Sequence[Run], warmup_s: float) -> pd.DataFrame:
    """One row per run (keyed by ``run``, the run directory's name, as ``tables.run_rows``):
    merge the two for the claims (``verdicts.evaluate``)."""
    return pd.DataFrame([host_row(r, warmup_s) for r in runs])
