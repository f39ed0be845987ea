"""Johansson 2017 (Umeå): a REST gateway against a GraphQL gateway over the same four data
services and PostgreSQL; the experiments, their analysis and results.

Three experiments (:func:`experiments`), each a randomized matrix of run directories that a
rerun reuses (``ipclab.experiments``):

* **thesis**: the thesis's test made sound. One client, a pause after every request (the
  thesis's 1 s), 100 measured requests per interface per data size (5, 25, 50 rows per
  table: tests 1-3), discarded warm-up requests; both stacks run at once and the client
  sends REST and GraphQL requests **interleaved in a random order** (a group run,
  ``ipclab.load.group``), so every run compares the two under the same machine state;
  repetitions with the sizes in a random order. Per request: client time, body bytes and
  the gateway's own time (``Server-Timing``); per run and gateway: CPU per request.
* **sweep**: the same design over 1-200 rows per table for the trend, with the gateways
  calling the four services **sequentially** as a sensitivity factor at some sizes.
* **saturation**: the suite's load profile, one stack per run: closed-loop users without
  think time (50, 100, 200) per interface and data size: throughput and latency at
  saturation, CPU per request.

``analyse`` turns runs into tables (one row per run and interface, cells with 95% t
intervals, GraphQL/REST ratios with log-ratio intervals, published beside measured, the
claims with computed verdicts); ``write_results`` writes them and the figures.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.stats as sps

from ipclab import claims as claims_mod
from ipclab import stats
from ipclab.backends import StackOptions
from ipclab.experiments import Experiment
from ipclab.load.group import GroupLoad
from ipclab.paths import from_repo, repo_relative
from ipclab.runs import DEFAULT_ROOT, Run
from ipclab.stacks import resolve
from ipclab.studies.johansson import published
from ipclab.studies.johansson.schedule import WARMUP
from ipclab.studies.johansson.stacks import COMPARED

STACKS = tuple(s.name for s in COMPARED)
STYLES = ("rest", "graphql")
USERS_MODULE = "ipclab.studies.johansson.users_interleaved"
ROWS_ENV = "IPCLAB_BUNDLE_ROWS"


@dataclass(frozen=True)
class Interleaved:
    """One client, REST and GraphQL interleaved: ``requests`` measured and ``warmup``
    discarded requests per interface, ``pause_s`` after each, per size of ``rows`` (and of
    ``sequential_rows`` with sequential gateways), ``repetitions`` times."""

    rows: tuple[int, ...]
    requests: int
    warmup: int
    pause_s: float
    repetitions: int
    sequential_rows: tuple[int, ...] = ()

    @property
    def sends(self) -> int:
        """Requests per run, both interfaces, warm-up included."""
        return len(STACKS) * (self.requests + self.warmup)

    @property
    def bound_s(self) -> float:
        """The most a run may take (a slower schedule fails the run)."""
        return self.sends * (self.pause_s + 0.25) + 30.0


@dataclass(frozen=True)
class Saturation:
    users: tuple[int, ...]
    rows: tuple[int, ...]
    duration_s: float  # per run, warm-up included
    warmup_s: float
    repetitions: int


@dataclass(frozen=True)
class Profile:
    thesis: Interleaved
    sweep: Interleaved
    saturation: Saturation
    serialisation_rounds: int
    serialisation_seconds: float  # per format, size and round (both directions)


PROFILES = {
    # a first look and CI: seconds per run, one repetition, few sizes
    "quick": Profile(
        thesis=Interleaved((5, 25, 50), requests=20, warmup=3, pause_s=0.05, repetitions=1),
        sweep=Interleaved(
            (1, 50, 200),
            requests=20,
            warmup=3,
            pause_s=0.02,
            repetitions=1,
            sequential_rows=(50,),
        ),  # fmt: skip
        saturation=Saturation((10, 40), (25,), duration_s=8, warmup_s=2, repetitions=1),
        serialisation_rounds=3,
        serialisation_seconds=0.05,
    ),
    # the thesis's 100 requests per interface with 10 warm-up requests, 5 repetitions; the
    # pause halved (0.5 s) so that the whole profile fits in about 80 minutes (a deviation,
    # stated in the reference result's README); the sweep and the saturation runs shorter
    "full": Profile(
        thesis=Interleaved((5, 25, 50), requests=100, warmup=10, pause_s=0.5, repetitions=5),
        sweep=Interleaved(
            (1, 5, 10, 25, 50, 100, 200),
            requests=50,
            warmup=5,
            pause_s=0.05,
            repetitions=5,
            sequential_rows=(5, 25, 50),
        ),  # fmt: skip
        saturation=Saturation(
            (50, 100, 200), (5, 25, 50), duration_s=15, warmup_s=3, repetitions=5
        ),
        serialisation_rounds=10,
        serialisation_seconds=0.3,
    ),
}

DEVIATIONS = [
    "Python on Linux (asyncio, uvicorn) instead of .NET on Windows Server 2012 R2; the GraphQL "
    "engine is ariadne on graphql-core (chosen by bench/graphql_engines.py), not graphql-dotnet.",
    "Both gateways and the four services run on one shared 2-core machine (local processes) "
    "instead of a 3-node Azure Service Fabric cluster of single-core Standard A0 VMs; "
    "PostgreSQL (a private cluster per stack, seeded identically) instead of Microsoft SQL "
    "databases on a separate VM.",
    "The gateways reach the services over gRPC (the thesis: Service Fabric's built-in "
    "remoting) and call the four concurrently; sequential calls are run as a sensitivity "
    "factor (the thesis does not say which it did).",
    "The client is Locust's FastHttpUser on the same machine (no browser, no Apollo or Axios, "
    "no network between client and gateway); the REST request is GET /api/Databundle/, the "
    "GraphQL request POST /api/graphql with the four-field query.",
    "Test 1's row count is not printed; 5 rows per table are used.",
    "The pause after each request is 0.5 s in the full profile (the thesis: 1 s) and 0.05 s in "
    "the quick one; with requests of 5-30 ms the gateways are idle most of the time either "
    "way. The sweep pauses 0.05 s and sends 50 requests per interface.",
    "Added: discarded warm-up requests, REST and GraphQL interleaved in a random order within "
    "each run (both stacks up at once), 5 repetitions with the sizes in a random order, body "
    "bytes and the gateways' own time (Server-Timing) per request, CPU per request, and a "
    "saturation test (50-200 closed-loop users without think time) the thesis did not run.",
    "Serialisation (Tables 5.1 and 5.2 are rankings from the thesis's literature, no "
    "measurement of its own): the micro-benchmark times Python libraries, and which library "
    "decides a comparison: XML with the standard library's ElementTree, JSON with orjson (a C "
    "library, the gateways' encoder), Thrift binary with thriftpy2 (Cython binary protocol, "
    "struct handling partly in Python), Protocol Buffers with protobuf's upb runtime. Library "
    "speed in Python is not format speed: the JSON-against-Thrift time claims (S03b encoding, "
    "S05a decoding, J16f encode plus decode) are decided by orjson against thriftpy2. Sizes "
    "are those of these encodings (compact JSON, one XML element per field, Thrift's binary "
    "protocol, proto3) of the seeded bundles.",
]


def profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; choose {', '.join(PROFILES)}") from None


def options(rows: int, sequential: bool = False) -> StackOptions:
    """The stacks' knobs for ``rows`` rows per table."""
    return StackOptions(sequential=sequential, extra_env={ROWS_ENV: str(rows)})


def variant(rows: int, sequential: bool = False) -> str:
    return f"{'seq-' if sequential else ''}rows{rows}"


@dataclass(frozen=True)
class Experiments:
    thesis: Experiment
    sweep: Experiment
    saturation: Experiment

    def all(self) -> tuple[Experiment, Experiment, Experiment]:
        return self.thesis, self.sweep, self.saturation


def _interleaved(name: str, p: Interleaved, backend: str, root: Path) -> Experiment:
    variants = {variant(r): options(r) for r in p.rows}
    variants |= {variant(r, True): options(r, True) for r in p.sequential_rows}
    load = GroupLoad(
        USERS_MODULE,
        requests=p.sends,
        env={"IPCLAB_SCHEDULE_REQUESTS": str(p.requests), "IPCLAB_SCHEDULE_WARMUP": str(p.warmup)},
    )
    return Experiment(
        name=name, stacks=STACKS, users=(1,), repetitions=p.repetitions, duration_s=p.bound_s,
        warmup_s=0.0, spawn_rate=1.0, think_time_s=p.pause_s, variants=variants, group=load,
        backend=backend, root=root,
    )  # fmt: skip


def experiments(
    profile_name: str, backend: str = "local", root: Path = DEFAULT_ROOT
) -> Experiments:
    """The three experiments of a profile; their runs go under
    ``<root>/johansson-<profile>-<backend>/{thesis,sweep,saturation}/``."""
    p = profile(profile_name)
    base = from_repo(root) / f"johansson-{profile_name}-{backend}"
    s = p.saturation
    saturation = Experiment(
        name="saturation", stacks=STACKS, users=s.users, repetitions=s.repetitions,
        duration_s=s.duration_s, warmup_s=s.warmup_s,
        variants={variant(r): options(r) for r in s.rows}, backend=backend, root=base,
    )  # fmt: skip
    return Experiments(
        _interleaved("thesis", p.thesis, backend, base),
        _interleaved("sweep", p.sweep, backend, base),
        saturation,
    )


def run_experiments(
    profile_name: str,
    backend: str = "local",
    root: Path = DEFAULT_ROOT,
    progress: Callable[[str], None] = print,
) -> dict[str, list[Run]]:
    return {e.name: e.run(progress) for e in experiments(profile_name, backend, root).all()}


def measure_serialisation(
    profile_name: str, progress: Callable[[str], None] | None = print
) -> pd.DataFrame:
    """The serialisation micro-benchmark at the profile's rounds (per round, format, size)."""
    from ipclab.studies.johansson import serialisation as ser

    p = profile(profile_name)
    return ser.measure(p.serialisation_rounds, p.serialisation_seconds, progress=progress)


# --------------------------------------------------------------------------- per-run tables


def _run_rows(run: Run) -> tuple[int, bool]:
    """Rows per table and whether the gateways called the services sequentially."""
    opts = run.parameters.get("options") or {}
    rows = (opts.get("extra_env") or {}).get(ROWS_ENV)
    if rows is None:
        raise ValueError(f"{run.path}: no {ROWS_ENV} in its options; not a bundle run")
    return int(rows), bool(opts.get("sequential", False))


def _cpu_seconds(res: pd.DataFrame, components: Sequence[str]) -> float:
    """CPU seconds used by ``components`` over a run, from its samples: each row's CPU % is
    the mean since the previous sample of its component, so it weighs by that interval (the
    first row of a component by the usual 1 s step)."""
    if res.empty:
        return float("nan")
    sel = res[res["component"].isin(components)].dropna(subset=["cpu_percent"])
    if sel.empty:
        return float("nan")
    total = 0.0
    for _, g in sel.groupby("component"):
        t = g["t"].to_numpy(dtype=float)
        order = np.argsort(t, kind="stable")
        dt = np.diff(t[order], prepend=t[order][0] - 1.0)
        total += float((g["cpu_percent"].to_numpy(dtype=float)[order] * dt).sum()) / 100.0
    return total


def _latency_row(lat: np.ndarray) -> dict[str, float]:
    if not len(lat):
        return dict.fromkeys(("mean_ms", "p50_ms", "p95_ms", "min_ms", "max_ms", "sd_ms"), np.nan)
    return {
        "mean_ms": float(lat.mean()),
        "p50_ms": float(np.percentile(lat, 50)),
        "p95_ms": float(np.percentile(lat, 95)),
        "min_ms": float(lat.min()),
        "max_ms": float(lat.max()),
        "sd_ms": float(lat.std(ddof=1)) if len(lat) > 1 else np.nan,
    }


def style_runs(runs: Sequence[Run]) -> pd.DataFrame:
    """One row per group run and interface (the thesis and sweep experiments): its measured
    requests' client time (mean, p50, p95, min, max), the gateway's own time
    (``server_ms``), what lies outside it (``outside_ms``: HTTP, client, loopback), body
    bytes, and CPU per request of the gateway and of the whole stack (gateway, services,
    database; warm-up included, as the CPU is). ``users`` repeats ``rows`` for the claims
    machinery (its users columns hold sizes in this study)."""
    out = []
    for run in runs:
        if not run.complete:
            continue
        rows, sequential = _run_rows(run)
        req = run.requests()
        res = run.resources()
        params = run.parameters
        for stack in (params.get("group") or {}).get("stacks", []):
            style = resolve(stack).style
            sel = req[req["name"] == style]
            sent = int((req["name"] == style).sum() + (req["name"] == WARMUP + style).sum())
            lat = sel["latency_ms"].to_numpy(dtype=float)
            server = pd.to_numeric(sel.get("server_ms"), errors="coerce").to_numpy(dtype=float)
            comps = [] if res.empty else [c for c in res["component"].unique()
                                          if str(c).startswith(f"{stack}/")]  # fmt: skip
            gw = _cpu_seconds(res, [f"{stack}/gateway"])
            total = _cpu_seconds(res, comps)
            out.append(
                {
                    "run": run.path.name,
                    "experiment": params.get("experiment"),
                    "repetition": params.get("repetition"),
                    "variant": params.get("variant"),
                    "started_at": run.manifest.get("started_at"),
                    "rows": rows,
                    "users": rows,
                    "sequential": sequential,
                    "pause_s": float(params["profile"]["think_time_s"]),
                    "style": style,
                    "requests": len(sel),
                    "failures": int((~sel["ok"].astype(bool)).sum()),
                    **_latency_row(lat),
                    "server_ms": float(np.nanmean(server)) if np.isfinite(server).any()
                    else np.nan,
                    "server_p95_ms": float(np.nanpercentile(server, 95))
                    if np.isfinite(server).any() else np.nan,
                    "outside_ms": float(np.nanmean(lat - server)) if np.isfinite(server).any()
                    else np.nan,
                    "bytes": float(sel["bytes"].mean()) if len(sel) else np.nan,
                    "gateway_cpu_ms": 1000 * gw / sent if sent else np.nan,
                    "stack_cpu_ms": 1000 * total / sent if sent else np.nan,
                    # the machine while the run ran (both stacks share it): ipclab.summary
                    "other_cpu_percent": run.summary.get("other_cpu_percent", np.nan),
                    "steal_percent": run.summary.get("steal_percent", np.nan),
                }
            )  # fmt: skip
    return pd.DataFrame(out)


def machine_state(
    thesis: pd.DataFrame, sweep: pd.DataFrame, saturation: pd.DataFrame
) -> pd.DataFrame:
    """``stats.machine_check`` per cell of every experiment (column ``experiment``): how
    much a request cost across a cell's repetitions, and what else the machine ran."""
    parts = []
    for name, df, by in (
        ("thesis", thesis, ("style", "rows")),
        ("sweep", sweep, ("style", "rows", "sequential")),
        ("saturation", saturation, ("style", "rows", "users")),
    ):
        if len(df):
            m = stats.machine_check(
                df.rename(columns={"stack_cpu_ms": "stack_cpu_ms_per_request"}), by=by
            )
            parts.append(m.assign(experiment=name))
    if not parts:
        return pd.DataFrame()
    out = pd.concat(parts, ignore_index=True)
    return out[["experiment", *[c for c in out.columns if c != "experiment"]]]


def request_series(runs: Sequence[Run], rows: int, sequential: bool = False) -> pd.DataFrame:
    """The measured requests of every run at ``rows``: ``repetition, style, seq`` (1..n
    per interface, in sending order), ``latency_ms, server_ms, bytes`` (thesis Figs. 7.1,
    7.3, 7.5 plot such a series)."""
    parts = []
    for run in runs:
        if not run.complete or _run_rows(run) != (rows, sequential):
            continue
        req = run.requests().sort_values("t", kind="stable")
        req = req[req["name"].isin(STYLES)].copy()
        req["style"] = req["name"]
        req["seq"] = req.groupby("style").cumcount() + 1
        req["repetition"] = run.parameters.get("repetition")
        parts.append(req[["repetition", "style", "seq", "latency_ms", "server_ms", "bytes"]])
    if not parts:
        return pd.DataFrame(
            columns=["repetition", "style", "seq", "latency_ms", "server_ms", "bytes"]
        )
    return pd.concat(parts, ignore_index=True)


def saturation_runs(runs: Sequence[Run], warmup_s: float) -> pd.DataFrame:
    """One row per saturation run (:func:`ipclab.stats.runs_table`) with ``rows`` and the
    gateway's CPU per request (``gateway_cpu_ms``) beside the whole stack's."""
    done = [r for r in runs if r.complete]
    table = stats.runs_table(done, warmup_s=warmup_s)
    if table.empty:
        return table
    by_path = {repo_relative(r.path): r for r in done}
    rows, gw = [], []
    for _, r in table.iterrows():
        run = by_path[r["path"]]
        rows.append(_run_rows(run)[0])
        cpu = (run.summary.get("cpu_percent_mean") or {}).get("gateway")
        gw.append(10.0 * cpu / r["rps"] if cpu is not None and r["rps"] else np.nan)
    table.insert(table.columns.get_loc("users") + 1, "rows", rows)
    table["gateway_cpu_ms"] = gw
    table = table.rename(columns={"stack_cpu_ms_per_request": "stack_cpu_ms"})
    return table


# --------------------------------------------------------------------------- analysis

CELL_METRICS = (
    "mean_ms", "p50_ms", "p95_ms", "min_ms", "max_ms", "server_ms", "outside_ms", "bytes",
    "gateway_cpu_ms", "stack_cpu_ms", "failures",
)  # fmt: skip
SATURATION_METRICS = ("rps", "mean_ms", "p95_ms", "gateway_cpu_ms", "stack_cpu_ms", "failures")

#: metrics fixed by construction, compared as facts (docs/statistics.md): the bytes of the
#: seeded bundles, as one library encodes them (serialisation rounds) or as one response
#: body (thesis test), are the same in every round and run
FACTS = ("bytes",)

#: one Holm family per experiment (docs/statistics.md section 3): the claims' scope and the
#: family's label; the thesis test's runs feed the first, the serialisation rounds the second
FAMILIES = (("performance", "thesis test"), ("serialisation", "serialisation micro-benchmark"))


def _family_runs(
    thesis: pd.DataFrame, serialisation: pd.DataFrame
) -> list[tuple[str, str, pd.DataFrame]]:
    """(scope, family label, per-run table) of every family that has runs."""
    runs = (thesis, serialisation)
    return [(s, label, r) for (s, label), r in zip(FAMILIES, runs, strict=True) if len(r)]


def claims_table(thesis: pd.DataFrame, serialisation: pd.DataFrame) -> pd.DataFrame:
    """The claims with their verdicts: one ``evaluate_claims`` call, so one Holm family, per
    experiment (the thesis test's concurrent runs; the serialisation rounds), bytes as
    facts."""
    tables = [
        claims_mod.evaluate_claims(
            runs, published.claims(scope=scope), scope=scope, facts=FACTS, family=label
        )
        for scope, label, runs in _family_runs(thesis, serialisation)
    ]
    return pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()


def power_table(thesis: pd.DataFrame, serialisation: pd.DataFrame) -> pd.DataFrame:
    """``claims.repetitions`` per family, each with exactly that family's claims (alpha over
    its own distinct tests, facts apart); a ``family`` column first."""
    parts = []
    for scope, label, runs in _family_runs(thesis, serialisation):
        rep = claims_mod.repetitions(published.claims(scope=scope), runs, facts=FACTS)
        if len(rep):
            parts.append(rep.assign(family=label))
    if not parts:
        return pd.DataFrame()
    out = pd.concat(parts, ignore_index=True)
    return out[["family", *[c for c in out.columns if c != "family"]]]


def _no_interval_alone(ci: stats.Interval) -> stats.Interval:
    """A ratio from one run per side is an estimate alone: no interval, no p-value (a
    single value has no spread to make one from; docs/statistics.md)."""
    if ci.n >= 2:
        return ci
    return dataclasses.replace(ci, low=float("nan"), high=float("nan"), p_value=float("nan"))


def ratios(
    table: pd.DataFrame,
    metrics: Sequence[str] = ("mean_ms", "p95_ms", "server_ms", "gateway_cpu_ms", "bytes"),
    by: Sequence[str] = ("sequential", "rows"),
    a: str = "graphql",
    b: str = "rest",
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Per cell of ``by`` and metric: the ratio of ``a``'s mean to ``b``'s over runs, with
    its t interval on the log scale and the p-value against 1 (docs/statistics.md)."""
    out = []
    keys = [k for k in by if k in table.columns]
    for key, g in table.groupby(keys, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        for m in metrics:
            xa = g.loc[g["style"] == a, m].to_numpy(dtype=float)
            xb = g.loc[g["style"] == b, m].to_numpy(dtype=float)
            ci = _no_interval_alone(stats.log_ratio_interval([(1, [xa]), (-1, [xb])], confidence))
            out.append(
                {
                    **dict(zip(keys, key, strict=True)),
                    "metric": m,
                    "a": a,
                    "b": b,
                    "n": ci.n,
                    "mean_a": float(np.nanmean(xa)) if len(xa) else np.nan,
                    "mean_b": float(np.nanmean(xb)) if len(xb) else np.nan,
                    "ratio": ci.estimate,
                    "ci_low": ci.low,
                    "ci_high": ci.high,
                    "p": ci.p_value,
                }
            )
    return pd.DataFrame(out)


def paired_ratios(
    table: pd.DataFrame,
    metrics: Sequence[str] = ("mean_ms", "p95_ms", "server_ms"),
    by: Sequence[str] = ("sequential", "rows"),
    a: str = "graphql",
    b: str = "rest",
    confidence: float = 0.95,
) -> pd.DataFrame:
    """The within-run ratio of the interleaved experiments: each run measures both
    interfaces, so a / b of that run is one per-run value; its geometric mean over runs with
    the Student-t interval of the logs (the run the unit, docs/statistics.md sections 1-2),
    and the p-value of the t test of log ratio = 0. Drifts between runs cancel in it."""
    out = []
    keys = [k for k in by if k in table.columns]
    for key, g in table.groupby(keys, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        for m in metrics:
            wide = g.pivot_table(index="run", columns="style", values=m, aggfunc="first")
            if a not in wide or b not in wide:
                continue
            logs = np.log((wide[a] / wide[b]).to_numpy(dtype=float))
            logs = logs[np.isfinite(logs)]
            ci = stats.t_interval(logs, confidence)
            p = (
                float(sps.ttest_1samp(logs, 0.0).pvalue)
                if len(logs) > 1 and np.ptp(logs) > 0 else np.nan
            )  # fmt: skip
            out.append(
                {
                    **dict(zip(keys, key, strict=True)), "metric": m, "a": a, "b": b,
                    "n": len(logs), "ratio": float(np.exp(ci.estimate)),
                    "ci_low": float(np.exp(ci.low)), "ci_high": float(np.exp(ci.high)), "p": p,
                }
            )  # fmt: skip
    return pd.DataFrame(out)


def sequential_effect(sweep: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """At every size run both ways: sequential over concurrent service calls, per interface
    (mean client time and the gateway's own time), with log-ratio intervals."""
    out = []
    seq_rows = sorted(sweep.loc[sweep["sequential"], "rows"].unique()) if len(sweep) else []
    for rows in seq_rows:
        at = sweep[sweep["rows"] == rows]
        for style in STYLES:
            for m in ("mean_ms", "server_ms"):
                s = at.loc[at["sequential"] & (at["style"] == style), m].to_numpy(dtype=float)
                c = at.loc[~at["sequential"] & (at["style"] == style), m].to_numpy(dtype=float)
                ci = _no_interval_alone(stats.log_ratio_interval([(1, [s]), (-1, [c])], confidence))
                out.append(
                    {
                        "rows": int(rows), "style": style, "metric": m, "n": ci.n,
                        "sequential": float(np.mean(s)) if len(s) else np.nan,
                        "concurrent": float(np.mean(c)) if len(c) else np.nan,
                        "ratio": ci.estimate, "ci_low": ci.low, "ci_high": ci.high,
                        "p": ci.p_value,
                    }
                )  # fmt: skip
    return pd.DataFrame(out)


def _fmt_ci(mean: float, lo: float, hi: float, digits: int = 1) -> str:
    if not np.isfinite(mean):
        return "not measured"
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return f"{mean:.{digits}f} (1 run)"
    return f"{mean:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def _cell(cells: pd.DataFrame, metric: str, **key: Any) -> pd.Series:
    sel = cells["metric"] == metric
    for k, v in key.items():
        sel &= cells[k] == v
    hit = cells[sel]
    return hit.iloc[0] if len(hit) else pd.Series({"mean": np.nan, "ci_low": np.nan,
                                                   "ci_high": np.nan, "n": 0})  # fmt: skip


def side_by_side(cells: pd.DataFrame, ratio_table: pd.DataFrame) -> pd.DataFrame:
    """Thesis tests 1-3 beside the measured thesis test: per size and interface the printed
    min / mean / max and the measured mean and p95 (95% t interval over runs), and the
    GraphQL / REST ratio of the means, printed and measured (log-ratio interval)."""
    pub = published.published_cells()
    rat = published.published_ratios().set_index("test")
    out = []
    for _, r in pub.iterrows():
        key = {"rows": int(r["rows"]), "style": r["style"], "sequential": False}
        mean = _cell(cells, "mean_ms", **key)
        p95 = _cell(cells, "p95_ms", **key)
        rr = ratio_table[
            (ratio_table["rows"] == r["rows"]) & (ratio_table["metric"] == "mean_ms")
            & ~ratio_table["sequential"].astype(bool)
        ]  # fmt: skip
        ratio = rr.iloc[0] if len(rr) else pd.Series({"ratio": np.nan, "ci_low": np.nan,
                                                       "ci_high": np.nan})  # fmt: skip
        out.append(
            {
                "test": int(r["test"]),
                "rows": int(r["rows"]),
                "style": r["style"],
                "published_min_ms": r["min_ms"],
                "published_mean_ms": r["mean_ms"],
                "published_max_ms": r["max_ms"],
                "measured_mean_ms": mean["mean"],
                "measured_mean_ci": _fmt_ci(mean["mean"], mean["ci_low"], mean["ci_high"], 2),
                "measured_p95_ms": p95["mean"],
                "measured_p95_ci": _fmt_ci(p95["mean"], p95["ci_low"], p95["ci_high"], 2),
                "runs": int(mean["n"]),
                "published_ratio": float(rat.loc[int(r["test"]), "ratio"]),
                "published_printed": rat.loc[int(r["test"]), "printed_as"],
                "measured_ratio": ratio["ratio"],
                "measured_ratio_ci": _fmt_ci(ratio["ratio"], ratio["ci_low"], ratio["ci_high"], 3),
            }
        )
    return pd.DataFrame(out)


def saturation_summary(cells: pd.DataFrame) -> pd.DataFrame:
    """Per size and interface: the highest mean throughput over the loads run (the
    saturation throughput), with its load and 95% interval, and the latency there."""
    rps = cells[cells["metric"] == "rps"]
    out = []
    for (rows, style), g in rps.groupby(["rows", "style"], sort=True):
        best = g.loc[g["mean"].idxmax()]
        lat = _cell(cells, "mean_ms", rows=rows, style=style, users=best["users"])
        out.append(
            {
                "rows": int(rows), "style": style, "users": int(best["users"]),
                "rps": best["mean"], "rps_ci_low": best["ci_low"], "rps_ci_high": best["ci_high"],
                "mean_ms": lat["mean"], "runs": int(best["n"]),
            }
        )  # fmt: skip
    return pd.DataFrame(out)


@dataclass
class Analysis:
    profile: str
    thesis: pd.DataFrame  # style_runs of the thesis test
    sweep: pd.DataFrame  # style_runs of the sweep (sequential rows included)
    saturation: pd.DataFrame  # saturation_runs
    thesis_cells: pd.DataFrame
    sweep_cells: pd.DataFrame
    saturation_cells: pd.DataFrame
    thesis_ratios: pd.DataFrame
    thesis_paired: pd.DataFrame  # within-run GraphQL / REST ratios
    sweep_ratios: pd.DataFrame
    sweep_paired: pd.DataFrame
    saturation_ratios: pd.DataFrame
    saturation_best: pd.DataFrame
    saturation_detected: pd.DataFrame
    sequential: pd.DataFrame
    side_by_side: pd.DataFrame
    claims: pd.DataFrame
    statements: pd.DataFrame
    power: pd.DataFrame
    machine: pd.DataFrame
    serialisation: pd.DataFrame = field(default_factory=pd.DataFrame)  # per format/size/round
    serialisation_cells: pd.DataFrame = field(default_factory=pd.DataFrame)
    series: dict[int, pd.DataFrame] = field(default_factory=dict)  # rows -> request_series


def _cells(table: pd.DataFrame, metrics: Sequence[str], by: Sequence[str]) -> pd.DataFrame:
    if table.empty:
        return pd.DataFrame(columns=[*by, "metric", "n", "mean", "ci_low", "ci_high"])
    return stats.cell_summary(table, metrics, by=by)


def analyse(
    runs: dict[str, list[Run]], profile_name: str, serialisation: pd.DataFrame | None = None
) -> Analysis:
    """Every table of the study from the three experiments' runs (``run_experiments``) and,
    optionally, the serialisation micro-benchmark's per-round table."""
    p = profile(profile_name)
    thesis = style_runs(runs.get("thesis", []))
    sweep = style_runs(runs.get("sweep", []))
    sat = saturation_runs(runs.get("saturation", []), p.saturation.warmup_s)
    by = ("sequential", "rows", "style")
    sat_cells = _cells(sat, SATURATION_METRICS, ("rows", "style", "users"))
    thesis_cells = _cells(thesis, CELL_METRICS, by)
    thesis_ratios = ratios(thesis) if len(thesis) else pd.DataFrame()
    serial = serialisation if serialisation is not None else pd.DataFrame()
    base = thesis[~thesis["sequential"]] if len(thesis) else thesis
    claim_table = claims_table(base, serial)
    detected = []
    for rows, g in sat.groupby("rows") if len(sat) else ():
        if g["users"].nunique() < 2:  # saturation needs a step between two loads
            continue
        means = g.groupby(["style", "users"], as_index=False)[["rps", "mean_ms"]].mean()
        detected.append(stats.detect_saturation(means).assign(rows=rows))
    from ipclab.studies.johansson import serialisation as ser

    return Analysis(
        profile=profile_name,
        thesis=thesis,
        sweep=sweep,
        saturation=sat,
        thesis_cells=thesis_cells,
        sweep_cells=_cells(sweep, CELL_METRICS, by),
        saturation_cells=sat_cells,
        thesis_ratios=thesis_ratios,
        thesis_paired=paired_ratios(thesis) if len(thesis) else pd.DataFrame(),
        sweep_ratios=ratios(sweep) if len(sweep) else pd.DataFrame(),
        sweep_paired=paired_ratios(sweep) if len(sweep) else pd.DataFrame(),
        saturation_ratios=ratios(
            sat, ("rps", "mean_ms", "p95_ms", "gateway_cpu_ms"), by=("rows", "users")
        ) if len(sat) else pd.DataFrame(),  # fmt: skip
        saturation_best=saturation_summary(sat_cells) if len(sat) else pd.DataFrame(),
        saturation_detected=pd.concat(detected, ignore_index=True) if detected else pd.DataFrame(),
        sequential=sequential_effect(sweep),
        side_by_side=side_by_side(thesis_cells, thesis_ratios) if len(thesis) else pd.DataFrame(),
        claims=claim_table,
        statements=claims_mod.statement_verdicts(claim_table) if len(claim_table) else
        pd.DataFrame(),
        power=power_table(base, serial),
        machine=machine_state(thesis, sweep, sat),
        serialisation=serial,
        serialisation_cells=ser.cells(serial) if len(serial) else pd.DataFrame(),
        series={r: request_series(runs.get("thesis", []), r) for r in p.thesis.rows},
    )  # fmt: skip


# --------------------------------------------------------------------------- results


def _md_ci(mean: float, lo: float, hi: float, digits: int = 2) -> str:
    if not np.isfinite(mean):
        return "-"
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def _md_get(cells: pd.DataFrame, metric: str, **key: object) -> tuple[float, float, float, int]:
    sel = cells["metric"] == metric
    for k, v in key.items():
        sel &= cells[k] == v
    hit = cells[sel]
    if hit.empty:
        return np.nan, np.nan, np.nan, 0
    r = hit.iloc[0]
    return float(r["mean"]), float(r["ci_low"]), float(r["ci_high"]), int(r["n"])


def summary_markdown(a: Analysis) -> str:
    """The README's tables: per size REST and GraphQL mean and p95 with 95% intervals, the
    ratio beside the thesis's, the gateways' own time and CPU; saturation throughput."""
    pub = published.published_ratios().set_index("rows")
    out = [
        "| test (rows/table) | interface | runs | mean ms [95% CI] | p95 ms [95% CI] | "
        "gateway's own ms | gateway CPU ms/request | GraphQL/REST mean [95% CI] | "
        "within-run GraphQL/REST [95% CI] | thesis |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]

    def _ratio(table: pd.DataFrame, rows: int) -> str:
        if table.empty:
            return "-"
        hit = table[(table["rows"] == rows) & (table["metric"] == "mean_ms")
                    & ~table["sequential"].astype(bool)]  # fmt: skip
        return _md_ci(*hit[["ratio", "ci_low", "ci_high"]].iloc[0].tolist()) if len(hit) else "-"

    for rows in sorted(a.thesis["rows"].unique()) if len(a.thesis) else []:
        ratio = f"{_ratio(a.thesis_ratios, rows)} | {_ratio(a.thesis_paired, rows)}"
        test = int(pub.loc[rows, "test"]) if rows in pub.index else None
        thesis = f"{pub.loc[rows, 'ratio']:.2f}x" if rows in pub.index else "-"
        for style in ("rest", "graphql"):
            key = {"rows": rows, "style": style, "sequential": False}
            m = _md_get(a.thesis_cells, "mean_ms", **key)
            p = _md_get(a.thesis_cells, "p95_ms", **key)
            s = _md_get(a.thesis_cells, "server_ms", **key)
            c = _md_get(a.thesis_cells, "gateway_cpu_ms", **key)
            label = f"{test} ({rows})" if test else f"({rows})"
            out.append(
                f"| {label} | {'REST' if style == 'rest' else 'GraphQL'} | {m[3]} | "
                f"{_md_ci(*m[:3])} | {_md_ci(*p[:3])} | {_md_ci(*s[:3])} | "
                f"{_md_ci(*c[:3], digits=3)} | "
                + (f"{ratio} | {thesis} |" if style == "graphql" else " | | |")
            )
    out += [
        "",
        "| rows/table | interface | saturation req/s [95% CI] | at users | mean ms there | "
        "GraphQL/REST req/s there [95% CI] |",
        "|---|---|---|---|---|---|",
    ]
    best = a.saturation_best
    sr = a.saturation_ratios
    for _, b in best.iterrows() if len(best) else []:
        rr = sr[(sr["rows"] == b["rows"]) & (sr["users"] == b["users"]) & (sr["metric"] == "rps")]
        ratio = (
            _md_ci(*rr[["ratio", "ci_low", "ci_high"]].iloc[0].tolist(), digits=3)
            if len(rr)
            else "-"
        )
        out.append(
            f"| {b['rows']} | {'REST' if b['style'] == 'rest' else 'GraphQL'} | "
            f"{_md_ci(b['rps'], b['rps_ci_low'], b['rps_ci_high'], 0)} | {b['users']} | "
            f"{b['mean_ms']:.0f} | {ratio if b['style'] == 'graphql' else ''} |"
        )
    return "\n".join(out)


_SIDE_COLUMNS = (
    "test", "rows", "style", "published_min_ms", "published_mean_ms", "published_max_ms",
    "measured_mean_ci", "measured_p95_ci", "runs", "published_ratio", "published_printed",
    "measured_ratio_ci",
)  # fmt: skip


def _wide(cells: pd.DataFrame, metrics: Sequence[str], keys: Sequence[str]) -> pd.DataFrame:
    """One row per cell, ``metric`` as ``mean [low, high]`` text columns."""
    if cells.empty:
        return pd.DataFrame()
    c = cells[cells["metric"].isin(metrics)].copy()
    c["text"] = [
        _fmt_ci(m, lo, hi, 3 if abs(m) < 10 else 1) for m, lo, hi in
        zip(c["mean"], c["ci_low"], c["ci_high"], strict=True)
    ]  # fmt: skip
    out = c.pivot_table(index=list(keys), columns="metric", values="text", aggfunc="first")
    n = c.groupby(list(keys))["n"].max().rename("runs")
    return out.join(n).reset_index()[[*keys, "runs", *[m for m in metrics if m in out.columns]]]


def write_results(a: Analysis, results: Any) -> None:
    """Every table and figure of the study into ``results`` (a ``StudyResults``)."""
    import matplotlib.pyplot as plt

    from ipclab.studies.johansson import figures as figs
    from ipclab.studies.johansson import serialisation as ser

    results.deviations = DEVIATIONS
    pub_cells = published.published_cells()
    if len(a.side_by_side):
        results.table(
            a.side_by_side[list(_SIDE_COLUMNS)],
            "published_vs_measured",
            "Thesis tests 1-3 (sections 7.1-7.3) beside the measured thesis test: printed "
            "fastest, mean and slowest request (ms) per interface; measured mean and p95 (ms), "
            "mean over runs with the 95% t interval; GraphQL / REST of the means, printed "
            "(as G / R) and measured (95% log-ratio interval). Test 1 at 5 rows per table.",
        )
    if len(a.thesis_ratios):
        results.table(
            a.thesis_ratios,
            "thesis_ratios",
            "Thesis test: GraphQL / REST per size for client time (mean, p95), the gateway's "
            "own time, gateway CPU per request and body bytes, with 95% log-ratio intervals.",
            in_report=False,
        )
        results.table(
            a.thesis_paired,
            "thesis_within_run_ratios",
            "Thesis test: GraphQL / REST within each run (both interfaces interleaved in every "
            "run), geometric mean over runs with the 95% t interval of the logs.",
        )
        results.table(a.thesis, "thesis_runs", "Thesis test: one row per run and interface.",
                      in_report=False)  # fmt: skip
        results.table(
            _wide(a.thesis_cells, ("mean_ms", "p95_ms", "server_ms", "outside_ms", "bytes",
                                   "gateway_cpu_ms"), ("rows", "style")),
            "thesis_cells",
            "Thesis test per size and interface: client time (mean, p95), the gateway's own "
            "time (Server-Timing), the rest (HTTP, client, loopback), body bytes and gateway "
            "CPU per request, each the mean over runs with its 95% t interval.",
        )  # fmt: skip
    if len(a.sweep):
        conc = a.sweep_cells[~a.sweep_cells["sequential"].astype(bool)]
        results.table(
            _wide(conc, ("mean_ms", "p95_ms", "server_ms", "bytes", "gateway_cpu_ms"),
                  ("rows", "style")),
            "sweep_cells",
            "The size sweep (one client, shorter pause): per size and interface, mean over runs "
            "with its 95% t interval.",
        )  # fmt: skip
        sr = a.sweep_ratios
        results.table(
            sr[(sr["metric"] == "mean_ms") & ~sr["sequential"].astype(bool)],
            "sweep_ratios",
            "The size sweep: GraphQL / REST of the mean response time per size (95% "
            "log-ratio interval).",
        )
        results.table(a.sweep, "sweep_runs", "Size sweep: one row per run and interface.",
                      in_report=False)  # fmt: skip
    if len(a.sequential):
        results.table(
            a.sequential,
            "sequential_sensitivity",
            "Sensitivity: gateways calling the four services sequentially over concurrently, "
            "per interface and size (95% log-ratio intervals).",
        )
    if len(a.saturation):
        results.table(
            _wide(a.saturation_cells, ("rps", "mean_ms", "p95_ms", "gateway_cpu_ms"),
                  ("rows", "style", "users")),
            "saturation_cells",
            "Saturation: closed-loop users without think time, one stack per run; throughput, "
            "response time and gateway CPU per request, mean over runs with 95% t intervals.",
        )  # fmt: skip
        results.table(
            a.saturation_best,
            "saturation_throughput",
            "Saturation throughput per size and interface: the highest mean throughput over "
            "the loads run, its load and 95% t interval, and the mean response time there.",
        )
        sr = a.saturation_ratios
        results.table(
            sr[sr["metric"].isin(["rps", "gateway_cpu_ms"])],
            "saturation_ratios",
            "Saturation: GraphQL / REST of throughput and of gateway CPU per request per "
            "size and load (95% log-ratio intervals).",
        )
        results.table(a.saturation, "saturation_runs", "Saturation: one row per run.",
                      in_report=False)  # fmt: skip
        results.table(
            a.machine,
            "machine_state",
            "Machine check per cell of every experiment: stack CPU per request across "
            "repetitions (more than 25% apart: the machine changed) and other processes' "
            "CPU (above 25% of a core: the machine was shared).",
            in_report=False,
        )
    if len(a.serialisation):
        s = ser.summary(a.serialisation)
        results.table(
            s[["rows", "style", "bytes", "encode_us", "encode_us_ci", "decode_us",
               "decode_us_ci", "bytes_vs_json", "roundtrip_us_vs_json"]],
            "serialisation",
            "Serialisation (thesis Tables 5.1 and 5.2) on the test 2 and 3 bundles: bytes, "
            "encode and decode time per operation (mean over rounds, 95% t interval), size "
            "and encode + decode time relative to JSON (orjson). No Thrift-vs-Protocol "
            "Buffers time order is claimed.",
        )  # fmt: skip
        results.table(a.serialisation, "serialisation_rounds", "Serialisation: per round.",
                      in_report=False)  # fmt: skip
    if len(a.claims):
        results.claims_table(a.claims)
    if len(a.power):
        results.table(
            a.power,
            "power",
            "Runs per cell each single-size test needs to detect the published ratio with 80% "
            "power at the strictest Holm level of its family (alpha over the family's "
            "distinct tests, facts apart; docs/statistics.md section 7).",
            in_report=False,
        )
    _figures(a, pub_cells, results, figs)
    plt.close("all")


def _figures(a: Analysis, pub_cells: pd.DataFrame, results: Any, figs: Any) -> None:
    tests = {int(r): int(t) for t, r in zip(pub_cells["test"], pub_cells["rows"], strict=True)}
    for rows, series in sorted(a.series.items()):
        test = tests.get(rows)
        if test is None or series.empty:
            continue
        f_req, f_mean = figs.TEST_FIGURES[test]
        results.figure(
            figs.requests_figure(pub_cells, series, test, rows),
            f"johansson_fig{f_req.replace('.', '_')}_test{test}_requests",
            f"Test {test} ({rows} rows per table; thesis Fig. {f_req}): the response time of "
            "every request, published (printed min, mean, max) and measured (every run; the "
            "first as a line, dashed: the mean).",
        )
        r = a.thesis_ratios
        hit = r[(r["rows"] == rows) & (r["metric"] == "mean_ms") & ~r["sequential"].astype(bool)]
        results.figure(
            figs.means_figure(pub_cells, a.thesis_cells, hit.iloc[0] if len(hit) else None,
                              test, rows),
            f"johansson_fig{f_mean.replace('.', '_')}_test{test}_means",
            f"Test {test} ({rows} rows per table; thesis Fig. {f_mean}): mean response time "
            "per interface, published and measured (95% t interval over runs).",
        )  # fmt: skip
    if len(a.sweep):
        results.figure(
            figs.trend_figure(
                a.sweep_cells, a.sweep_ratios, published.published_ratios(), a.thesis_ratios
            ),
            "johansson_trend",
            "Mean time per request and the GraphQL / REST ratio against rows per table (the "
            "sweep; bands: 95% intervals), the thesis test's ratios (diamonds) and the "
            "thesis's ratios of its printed means (squares).",
        )
    if len(a.sweep) or len(a.saturation):
        results.figure(
            figs.cpu_figure(a.sweep_cells, a.saturation_cells),
            "johansson_cpu",
            "The CPU test the thesis announced and did not report: gateway CPU per request, "
            "one client and at saturation (95% intervals).",
        )
    if len(a.saturation):
        results.figure(
            figs.saturation_figure(a.saturation_cells),
            "johansson_saturation",
            "Saturation curves: throughput and mean response time against closed-loop users "
            "without think time, per size (REST solid, GraphQL dashed).",
        )
    if len(a.sequential):
        results.figure(
            figs.sequential_figure(a.sequential),
            "johansson_sequential",
            "Sensitivity: sequential over concurrent service calls in the gateways.",
        )
    if len(a.serialisation_cells):
        results.figure(
            figs.serialisation_figure(a.serialisation_cells),
            "johansson_serialisation",
            "Serialisation formats on the test 2 and 3 bundles (thesis Tables 5.1, 5.2): "
            "bytes, encode and decode time per operation (95% t intervals over rounds).",
        )
