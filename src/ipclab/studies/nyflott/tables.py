"""Table 2 (requests and response times), Table 3 (bytes and packets per request), the
per-test-case view (Fig. 10) and the per-host view (Figs. 11-15, 20-23), measured.

Every number is first computed per run over its measured window (the warm-up discarded,
``stats.run_metrics``'s window), then summarised over the runs of a cell with a t interval
(``docs/statistics.md``: the run is the unit of replication). A cell is an adapter set
(``adapters``: the manifest's ``stack_spec.adapters``, ``python`` or ``native``; runs
recorded before it was, ``python``), a protocol (``style``) and an added delay. Table 2's
columns as the thesis prints them (requests, mean, max, min, population SD) plus req/s and
p50/p95/p99; Table 3's as printed (bytes, packets and bytes per packet per request, summed
as ``hosts`` says).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ipclab import stats
from ipclab.runs import Run
from ipclab.stacks import resolve
from ipclab.studies.nyflott import published

TABLE2_METRICS = (
    "requests",
    "rps",
    "mean_ms",
    "max_ms",
    "min_ms",
    "sd_ms",
    "p50_ms",
    "p95_ms",
    "p99_ms",
)


def measured_requests(run: Run, warmup_s: float) -> pd.DataFrame:
    """The run's requests in its measured window (from ``warmup_s`` after the first request
    to the end of the last one): every request started at least ``warmup_s`` after the
    first."""
    req = run.requests()
    t = req["t"].astype(float)
    return req[t >= float(t.min()) + warmup_s]


#: the thesis's eight test cases in its order; the Locust user (``users.py``) names its
#: requests so
TEST_CASES = (
    "Login",
    "Query Flight",
    "List Bookings",
    "Logout",
    "Book Flight",
    "View Profile Information",
    "Update Customer",
    "Cancel Booking",
)

#: the adapter set of a run whose manifest does not record one (made before the field)
DEFAULT_ADAPTERS = "python"


def adapters_of(run: Run) -> str:
    """The run's adapter set: ``stack_spec.adapters`` (``python`` or ``native``)."""
    spec = run.manifest.get("stack_spec") or {}
    value = spec.get("adapters") if isinstance(spec, dict) else None
    return str(value) if value else DEFAULT_ADAPTERS


def _style(run: Run, stack: str) -> str:
    spec = run.manifest.get("stack_spec") or {}
    recorded = spec.get("style") if isinstance(spec, dict) else None
    return str(recorded) if recorded else resolve(stack).style


def run_label(run: Run) -> str:
    """A run's label in every per-run table (its "run" column; not its reuse key,
    ``ipclab.runstore.run_key``): its experiment folder and its own (a run's directory name
    repeats in each delay's folder, ``delay0ms/acmeair-h2c-u10-base-r1``)."""
    return f"{run.path.parent.name}/{run.path.name}"


def _identity(run: Run) -> dict[str, object]:
    stack = str(run.manifest.get("stack") or run.parameters.get("stack"))
    return {
        "run": run_label(run),
        "stack": stack,
        "adapters": adapters_of(run),
        "style": _style(run, stack),
        "delay_ms": float(run.parameters.get("options", {}).get("delay_ms", 0.0)),
        "repetition": run.parameters.get("repetition"),
    }


#: Fig. 16's range of "high" response times (ms), bounds excluded as the thesis's filter
SLOW_RANGE_MS = (80.0, 200.0)


def slow_per_1000(latency_ms: np.ndarray) -> float:
    """Requests with a response time inside Fig. 16's range, per 1000 requests."""
    lat = np.asarray(latency_ms, dtype=float)
    if not len(lat):
        return np.nan
    lo, hi = SLOW_RANGE_MS
    return float(1000.0 * np.count_nonzero((lat > lo) & (lat < hi)) / len(lat))


def run_rows(runs: Sequence[Run], warmup_s: float) -> pd.DataFrame:
    """One row per run: Table 2's numbers over its measured window, Fig. 16's slow
    requests per 1000 (``slow_per_1000``) and the machine's state (``stats.MACHINE_COLUMNS``)."""
    rows = []
    for run in runs:
        m = stats.run_metrics(run, warmup_s)
        lat = measured_requests(run, warmup_s)["latency_ms"].astype(float).to_numpy()
        rows.append(
            {
                **_identity(run),
                **{k: m[k] for k in ("requests", "failures", "rps", "mean_ms", "max_ms")},
                **{k: m[k] for k in ("p50_ms", "p95_ms", "p99_ms", "duration_s")},
                **{k: m[k] for k in stats.MACHINE_COLUMNS},
                "warmup_s": float(warmup_s),
                "min_ms": float(lat.min()) if len(lat) else np.nan,
                "sd_ms": float(lat.std(ddof=0))
                if len(lat)
                else np.nan,  # population, as MariaDB STD
                "slow_per_1000": slow_per_1000(lat),
            }
        )
    return pd.DataFrame(rows)


def _cells(rows: pd.DataFrame) -> pd.core.groupby.DataFrameGroupBy:
    """The runs grouped by cell: adapter set (where the table has it), protocol, delay."""
    keys = [k for k in ("adapters", "style", "delay_ms") if k in rows.columns]
    return rows.groupby(keys, sort=True)


def _key(keys: tuple[object, ...] | object, rows: pd.DataFrame) -> dict[str, object]:
    names = [k for k in ("adapters", "style", "delay_ms") if k in rows.columns]
    return dict(zip(names, keys if isinstance(keys, tuple) else (keys,), strict=True))


def _summarise(g: pd.DataFrame, metrics: Sequence[str]) -> dict[str, object]:
    """Each metric's mean over the runs of ``g`` with its 95% t interval."""
    row: dict[str, object] = {"runs": len(g)}
    for metric in metrics:
        values = g[metric].to_numpy(dtype=float) if metric in g else np.array([])
        iv = stats.t_interval(values)
        row[metric] = iv.estimate
        row[f"{metric}_low"], row[f"{metric}_high"] = iv.low, iv.high
    return row


def table2(rows: pd.DataFrame) -> pd.DataFrame:
    """Per cell (adapter set, style, delay): each metric's mean over runs with its 95% t
    interval, and the thesis's value beside it (its requests in 600 s also as req/s)."""
    pub = published.load_requests().set_index(["style", "delay_ms"])
    out = []
    for keys, g in _cells(rows):
        row: dict[str, object] = {**_key(keys, rows), **_summarise(g, TABLE2_METRICS)}
        style, delay = row["style"], row["delay_ms"]
        key = (style, int(float(delay)))  # type: ignore[arg-type]
        if key in pub.index:
            p = pub.loc[key]
            row.update(
                published_requests=int(p["requests"]),
                published_rps=float(p["requests"]) / float(p["duration_s"]),
                published_mean_ms=float(p["mean_ms"]),
                published_max_ms=float(p["max_ms"]),
                published_min_ms=float(p["min_ms"]),
                published_sd_ms=float(p["sd_ms"]),
            )
        out.append(row)
    return pd.DataFrame(out)


def per_test_case(runs: Sequence[Run], warmup_s: float) -> pd.DataFrame:
    """Fig. 10's data: per run and test case, count, mean, min and population SD (ms)."""
    parts = []
    for run in runs:
        w = measured_requests(run, warmup_s)
        g = w.groupby("name")["latency_ms"]
        df = pd.DataFrame(
            {"count": g.size(), "mean_ms": g.mean(), "min_ms": g.min(), "sd_ms": g.std(ddof=0)}
        ).reset_index(names="test_case")
        for k, v in _identity(run).items():
            df[k] = v
        parts.append(df)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


TABLE3_METRICS = ("bytes_per_request", "packets_per_request", "bytes_per_packet")


def table3(rows: pd.DataFrame) -> pd.DataFrame:
    """Table 3 per cell (adapter set, style, delay): bytes, packets and bytes per packet per
    request (sent and received, summed over the gateway and the four service hosts:
    ``hosts``), mean over runs with 95% t intervals, the thesis's values beside them."""
    pub = published.load_network().set_index(["style", "delay_ms"])
    out = []
    for keys, g in _cells(rows):
        row: dict[str, object] = {**_key(keys, rows), **_summarise(g, TABLE3_METRICS)}
        key = (row["style"], int(float(row["delay_ms"])))  # type: ignore[arg-type]
        for metric in TABLE3_METRICS:
            row[f"published_{metric}"] = (
                float(pub.loc[key, metric]) if key in pub.index else np.nan  # type: ignore[index]
            )
        out.append(row)
    return pd.DataFrame(out)


HOST_METRICS = (
    "cpu_mean", "cpu_sd",
    "tx_bytes", "rx_bytes", "tx_packets", "rx_packets",
    "tx_bytes_per_s", "rx_bytes_per_s", "tx_packets_per_s", "rx_packets_per_s",
    "tx_bytes_per_request", "rx_bytes_per_request",
    "tx_packets_per_request", "rx_packets_per_request",
)  # fmt: skip


def host_cells(host_runs: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """Per cell and host (Figs. 11-15, 20-23): every per-host metric of ``hosts.host_table``
    as the mean over runs with its 95% t interval (``cpu_sd``: the mean over runs of the SD
    of the host's CPU within a run, what Fig. 15's error bars show). ``rows`` (the per-run
    table) gives each run's cell."""
    if host_runs.empty or rows.empty:
        return pd.DataFrame()
    keys = [k for k in ("adapters", "style", "delay_ms") if k in rows.columns]
    df = host_runs.merge(rows[["run", *keys]], on="run", how="inner")
    out = []
    for k, g in df.groupby([*keys, "host"], sort=True):
        out.append({**dict(zip([*keys, "host"], k, strict=True)), **_summarise(g, HOST_METRICS)})
    return pd.DataFrame(out)


def test_case_cells(cases: pd.DataFrame) -> pd.DataFrame:
    """Fig. 10 per cell and test case: the mean over runs of each run's mean response time
    with its 95% t interval, and of each run's population SD (the thesis's error bars)."""
    if cases.empty:
        return pd.DataFrame()
    keys = [k for k in ("adapters", "style", "delay_ms") if k in cases.columns]
    out = []
    for k, g in cases.groupby([*keys, "test_case"], sort=True):
        row = {**dict(zip([*keys, "test_case"], k, strict=True)),
               **_summarise(g, ("mean_ms", "sd_ms", "min_ms"))}  # fmt: skip
        row["requests"] = int(g["count"].sum())
        out.append(row)
    return pd.DataFrame(out)
