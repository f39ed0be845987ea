"""Nyfløtt 2017 from runs to results, for notebook 03 and the reference rebuilder.

:func:`analyse` reads every run (its per-request records, 1 Hz resources and role logs)
into per-run tables, summarises them per cell (adapter set, protocol, delay) with 95% t
intervals over runs (docs/statistics.md), sets them beside the thesis's Tables 2 and 3, and
judges the claims on the **python** adapter set (all three protocols; the native set,
nginx for HTTP/1.1, nghttpx for h2c and Californium for CoAP, is shown beside it:
:func:`adapter_effect`, and every claim judged on its runs too: :func:`adapter_verdicts`).
:func:`write_results` writes the tables and figures into a ``StudyResults``.

A committed reference keeps no per-request records or logs (``.gitignore``): the per-run
tables this module derives from them are written to the results folder (``runs.csv``,
``hosts_runs.csv``, ``per_test_case_runs.csv``, ``gc_extremes_runs.csv``, ``extremes.csv``,
``gc_events.csv``, ``slow_requests.csv``) and :func:`analyse` reads a run's rows back from
there (``cached``) when the run has no records; a run with neither is listed in
``Analysis.missing``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ipclab import claims as claims_mod
from ipclab import robustness, stats
from ipclab.runs import Run
from ipclab.stacks import LOADGEN
from ipclab.stats.plausibility_runs import annotate
from ipclab.studies.nyflott import (
    extremes,
    gcshift,
    hosts,
    hotspot,
    published,
    tables,
    verdicts,
    window,
)

PRIMARY = "python"  # the adapter set the thesis comparison and the claims use
THESIS_WINDOW_S = 600.0

#: the per-run tables, as written to (and read back from) the results folder
CACHE = {
    "runs": "runs.csv",
    "hosts_runs": "hosts_runs.csv",
    "cases_runs": "per_test_case_runs.csv",
    "gc_runs": "gc_extremes_runs.csv",
    "extremes": "extremes.csv",
    "gc_events": "gc_events.csv",
    "slow": "slow_requests.csv",
}

DEVIATIONS = [
    "Python stand-ins for IBM's AcmeAir microservices (Java on WebSphere Liberty with "
    "MongoDB): a gateway (an HTTP/1.1 reverse proxy, as the thesis's nginx1) and the auth, "
    "flight, booking and customer services with seeded data; the same eight test cases and "
    "paths; booking and customer validate every session with auth over HTTP/1.1.",
    "Adapters: the thesis ran nginx 1.13.7 (HTTP/1.1), nghttpx 1.12 (h2c) and Californium "
    "1.0.6 (CoAP). Here the python set (adapters built from ipclab's transport modules: aiohttp, "
    "an h2 client and server, aiocoap) carries all three protocols and is what the thesis's "
    "tables and claims are compared with; the native set carries the three protocols beside "
    "it: Debian's nginx 1.22 (HTTP/1.1) and nghttpx 1.52 (h2c), and for CoAP ipclab's own "
    "HTTP/CoAP cross-proxy on Eclipse Californium 3.11 (californium-core, on the JVM: OpenJDK 17, "
    "services/java/californium), where the thesis used Californium 1.0.6's proxy.",
    "CoAP client: aiocoap keeps RFC 7252's NSTART = 1 (one exchange in flight) per UDP "
    "endpoint, so the egress adapter keeps a pool of endpoints per peer, one per exchange in "
    "flight, up to 100 per peer (services/transports/coap.py), as the thesis fixed "
    "Californium with a pool of EndPointManagers.",
    "CoAP's Query Flight answer (3,752 B) travels block-wise (RFC 7959) in 4 blocks of at "
    "most 1,024 B (UDP CoAP's largest block), each block a round trip between the gateway "
    "and flight hosts: measured as 10 delayed hops where HTTP/1.1 and h2c take 4 "
    "(tests/docker/test_acmeair_delay.py). Query Flight being about half the requests (5 "
    "of the driver's ~10 per iteration), CoAP's mean response time carries ~3 extra round "
    "trips (6 x the per-host delay) on half its requests; the thesis does not discuss "
    "block-wise transfer.",
    "One machine (2 shared cores): every host is a container with its own network "
    "namespace (docker backend) instead of an OpenStack VM with 2 vCPUs and 4 GB, the load "
    "generator included (Locust in a container's namespace); the kernel has no netem, so "
    "the delay is an NFQUEUE delayer in every host, holding each packet on its way in "
    "rather than out (every hop between hosts is still delayed once, TCP and UDP alike; "
    "held on the way out, a packet stays charged to its socket and Linux then delays a "
    "second small write by one more delay: docs/docker.md). The local backend (quick "
    "profile) runs processes on loopback: no delay (0 ms only) and no per-host network "
    "counters.",
    "Load: Locust (FastHttpUser, 10 closed-loop users, no think time) running the AcmeAir "
    "JMeter driver's mix, in place of JMeter; repetitions in a randomized, interleaved order "
    "(the thesis ran each configuration once); every statistic is per run, then summarised "
    "over runs with 95% t intervals.",
    "Table 3 sums the bytes (packets) sent and received by the gateway and the four service "
    "hosts (not the load generator) over the measured window, per request; the thesis does "
    "not say which hosts and directions it summed.",
    "CPU is each container's (process's) CPU, 100 = one core, summed over the roles of a "
    "host (the service and its adapter), sampled about once a second; the thesis read "
    "OperatingSystemMXBean on each VM (which getter is not stated).",
    "GC against extremes (Fig. 19) is measured in the main experiment's CoAP runs (0, 2 and "
    "5 ms), on the major GCs of every role (gateway, services, adapters); the thesis "
    "measured it on its profiling testbed of two Californium proxies without added delay. "
    "ipclab's profiling testbed (profiling.py: the Californium adapters at 0 ms on the "
    "local backend) gives Figs. 9, 17 and 18 but keeps no per-request times, so Fig. 19 is "
    "not measured on it. Extremes are each "
    "run's slowest 0.021% (the thesis's 53 of 252,636), not the thesis's fixed 30 ms (at "
    "5 ms of added delay per host every request takes more than 20 ms; and the committed "
    "per-run tables keep only the requests above each run's quantile). The thesis counted "
    "coincidences on a plot; here they are tested against each run's own GC schedule "
    "shifted circularly in its window (gcshift), the run the unit.",
    "The gateway answers 504 when a service has not answered within its deadline "
    "(IPCLAB_CALL_TIMEOUT_S, 2 s); the thesis states no timeout for its nginx1. In the "
    "reference's 30 s windows no request failed; in the longer windows of its window check "
    "CoAP's growing major GCs cut 7-20 requests per run at the deadline (docs/acmeair.md), "
    "which a 10 min window would count as failures rather than as extremes.",
    "Claims N32a-b (R2: the bandwidth gap the largest) compare two effects' sizes, which "
    "no claim kind of ipclab.claims computes: the study's delta-method t test "
    "(verdicts.size_gap) is given to evaluate_claims as the claims' effect, so it joins "
    "the delay experiment's Holm family with every other test of it.",
]


@dataclass
class Analysis:
    runs: pd.DataFrame  # one row per run: Table 2 (tables.run_rows) and hosts.row_from_hosts
    hosts_runs: pd.DataFrame  # per run and host (hosts.host_table)
    cases_runs: pd.DataFrame  # per run and test case (tables.per_test_case)
    gc_runs: pd.DataFrame  # per run: extremes and GCs (extremes.run_extremes)
    extremes: pd.DataFrame  # every extreme request
    gc_events: pd.DataFrame  # every major GC in a measured window
    slow: pd.DataFrame  # Fig. 16's requests (80 < RT < 200 ms) of the runs at 0 ms
    table2: pd.DataFrame  # per cell, numeric, published beside
    table3: pd.DataFrame
    hosts: pd.DataFrame  # per cell and host
    cases: pd.DataFrame  # per cell and test case
    gc: pd.DataFrame  # per cell
    adapters: pd.DataFrame  # native / python per protocol and delay
    claims: pd.DataFrame
    statements: pd.DataFrame
    power: pd.DataFrame
    machine: pd.DataFrame
    gc_shift: pd.DataFrame = field(default_factory=pd.DataFrame)  # gcshift.sensitivity
    gc_shift_runs: pd.DataFrame = field(default_factory=pd.DataFrame)  # per run and side
    # every claim judged on each adapter set's runs, side by side (robustness.side_by_side)
    adapter_verdicts: pd.DataFrame = field(default_factory=pd.DataFrame)
    # each decided claim carried to a 2-minute window by the window check (window.py)
    window: pd.DataFrame = field(default_factory=pd.DataFrame)
    # the profiling testbed's tables (profiling.py: flame, heap, histogram), where one ran
    profile: dict[str, pd.DataFrame] = field(default_factory=dict)
    # the same testbed with the thesis's logging (profiling.py --config thesis), where it ran
    thesis_profile: dict[str, pd.DataFrame] = field(default_factory=dict)
    # Fig. 9's hotspot share with its interval per logging configuration (hotspot.py)
    hotspot: pd.DataFrame = field(default_factory=pd.DataFrame)
    missing: list[str] = field(default_factory=list)
    deviations: list[str] = field(default_factory=list)


def warmup_of(run: Run, default: float = 0.0) -> float:
    """The warm-up the run was made with (its load profile), else ``default``."""
    profile = run.parameters.get("profile") or {}
    value = profile.get("warmup_s") if isinstance(profile, dict) else None
    return float(value) if value is not None else float(default)


def has_records(run: Run) -> bool:
    return any((run.path / "requests").glob("part-*.parquet"))


def read_cache(directory: Path | None) -> dict[str, pd.DataFrame]:
    """The per-run tables of an earlier analysis (a results folder), where present."""
    out: dict[str, pd.DataFrame] = {}
    if directory is None:
        return out
    for key, name in CACHE.items():
        p = Path(directory) / name
        if p.is_file() and p.stat().st_size:
            try:
                out[key] = pd.read_csv(p)
            except pd.errors.EmptyDataError:
                continue
    return out


def _measure(run: Run, warmup_s: float) -> dict[str, pd.DataFrame]:
    """Every per-run table of one run with per-request records."""
    row = tables.run_rows([run], warmup_s)
    ht = hosts.host_table(run, warmup_s)
    wide = pd.DataFrame([hosts.row_from_hosts(tables.run_label(run), ht)])
    gc_row, ext, gcs = extremes.run_extremes(run, warmup_s)
    return {
        "runs": row.merge(wide, on="run", how="left"),
        "hosts_runs": ht,
        "cases_runs": tables.per_test_case([run], warmup_s),
        "gc_runs": pd.DataFrame([gc_row]),
        "extremes": ext,
        "gc_events": gcs,
        "slow": extremes.slow_requests([run], warmup_s),
    }


def per_run_tables(
    runs: Sequence[Run], warmup_s: float | None = None, cached: Path | None = None
) -> tuple[dict[str, pd.DataFrame], list[str]]:
    """The per-run tables of every complete run (each at its own warm-up unless
    ``warmup_s`` is given), read back from ``cached`` for runs without records; and the
    runs that had neither."""
    cache = read_cache(cached)
    parts: dict[str, list[pd.DataFrame]] = {k: [] for k in CACHE}
    missing = []
    for run in runs:
        if not run.complete:
            continue
        name = tables.run_label(run)
        if has_records(run):
            got = _measure(run, warmup_s if warmup_s is not None else warmup_of(run))
        elif "runs" in cache and (cache["runs"]["run"] == name).any():
            got = {k: df[df["run"] == name] for k, df in cache.items() if "run" in df.columns}
        else:
            missing.append(name)
            continue
        for k, df in got.items():
            if len(df):
                parts[k].append(df)
    out = {k: pd.concat(v, ignore_index=True) if v else pd.DataFrame() for k, v in parts.items()}
    if len(out["runs"]):  # when each run started: the claims test within sittings (stats)
        started = {tables.run_label(r): r.manifest.get("started_at") for r in runs}
        out["runs"]["started_at"] = out["runs"]["run"].map(started)
    if len(out["gc_runs"]):  # roles without GCs in a run with role logs: 0
        g = out["gc_runs"]
        counts = [c for c in g.columns if c.startswith("gc_") and c not in extremes._GC_STATS]
        logs = g["role_logs"].astype(bool)
        g.loc[logs, counts] = g.loc[logs, counts].fillna(0)
    if len(out["slow"]) and len(out["runs"]):  # Fig. 16 reads the runs at 0 ms only
        zero = set(out["runs"].loc[out["runs"]["delay_ms"].astype(float) == 0, "run"])
        out["slow"] = out["slow"][out["slow"]["run"].isin(zero)].reset_index(drop=True)
    return out, missing


RATIO_METRICS = (
    "mean_ms", "rps", "p99_ms", "sd_ms", "bytes_per_request", "packets_per_request",
    "cpu_gateway_percent", "cpu_system_percent",
)  # fmt: skip


def adapter_effect(rows: pd.DataFrame) -> pd.DataFrame:
    """What the adapters change: per protocol and delay with both sets, native / python of
    each metric's mean over runs, with its 95% log-ratio interval, Welch's p-value (``p``)
    and the same Holm-adjusted over the table's rows (``p_holm``: the table is one family,
    as every pairwise tests table, docs/statistics.md)."""
    if rows.empty or "adapters" not in rows.columns:
        return pd.DataFrame()
    out = []
    for (style, delay), g in rows.groupby(["style", "delay_ms"], sort=True):
        py, na = g[g["adapters"] == "python"], g[g["adapters"] == "native"]
        if py.empty or na.empty:
            continue
        for metric in RATIO_METRICS:
            if metric not in g.columns:
                continue
            a, b = na[metric].to_numpy(float), py[metric].to_numpy(float)
            a, b = a[np.isfinite(a)], b[np.isfinite(b)]
            if not len(a) or not len(b):
                continue
            iv = stats.log_ratio_interval([(1, [a]), (-1, [b])])
            out.append(
                {
                    "style": style, "delay_ms": delay, "metric": metric,
                    "python": float(b.mean()), "native": float(a.mean()),
                    "runs_python": len(b), "runs_native": len(a),
                    "ratio": iv.estimate, "ci_low": iv.low, "ci_high": iv.high, "p": iv.p_value,
                }
            )  # fmt: skip
    effect = pd.DataFrame(out)
    if len(effect):
        effect["p_holm"] = stats.holm(effect["p"])
    return effect


def machine_state(rows: pd.DataFrame) -> pd.DataFrame:
    """``stats.machine_check`` per cell: a request's CPU cost across the cell's
    repetitions, other processes' CPU and steal time."""
    if rows.empty or "stack_cpu_ms_per_request" not in rows.columns:
        return pd.DataFrame()
    return stats.machine_check(rows, by=("adapters", "style", "delay_ms"))


def measured_deviations(rows: pd.DataFrame) -> list[str]:
    """Deviations the runs themselves show (their windows, what was not run)."""
    out = []
    windows = sorted({round(float(w)) for w in rows.get("duration_s", [])})
    if windows and max(windows) < THESIS_WINDOW_S * 0.95:
        warm = sorted({float(w) for w in rows.get("warmup_s", [])})
        out.append(
            f"Measured window {min(windows)}-{max(windows)} s per run after a warm-up of "
            f"{', '.join(f'{w:g}' for w in warm) or '?'} s (the thesis: 10 min after 2 min); "
            "request counts are therefore given as req/s. A short window leaves out what "
            "grows over a longer run: CoAP's deduplication state and its major GCs "
            "(docs/acmeair.md), and the Python adapters' slow-down (the reference's "
            "window_check.csv: ratios between protocols at 0 ms up to about 20% off a "
            "2 min window)."
        )
    delays = sorted({float(d) for d in rows.get("delay_ms", [])})
    if delays and delays != [0.0, 2.0, 5.0]:
        out.append(
            f"Added delays run: {', '.join(f'{d:g}' for d in delays)} ms (the thesis: 0, 2 "
            "and 5 ms); claims about the others are inconclusive (no runs)."
        )
    sets = sorted(set(rows.get("adapters", [])))
    if sets and "native" not in sets:
        out.append(
            "The native adapter set (nginx, nghttpx, Californium) was not run in this profile."
        )
    keys = [k for k in ("adapters", "style", "delay_ms") if k in rows.columns]
    if len(rows) and keys:
        per_cell = rows.groupby(keys).size()
        lo, hi = int(per_cell.min()), int(per_cell.max())
        need = claims_mod.Rules().min_repetitions
        if lo < need:
            runs = f"{lo}" if lo == hi else f"{lo}-{hi}"
            out.append(
                f"{runs} runs per cell, fewer than the {need} a test needs: a cell with "
                "fewer decides no claim (inconclusive)."
            )
    return out


def gc_records(per: dict[str, pd.DataFrame], rows: pd.DataFrame) -> verdicts.GcRecords:
    """What the GC test reads from the per-run tables: the extremes, the GCs in each
    window, each run's window length (``duration_s``)."""
    windows = (
        rows.set_index("run")["duration_s"].astype(float)
        if len(rows) and "duration_s" in rows.columns
        else pd.Series(dtype=float)
    )
    return verdicts.GcRecords(per["extremes"], per["gc_events"], windows)


def gc_shift_tables(
    gc: verdicts.GcRecords, rows: pd.DataFrame, slow: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The shift test (N29a, N30a) and its sensitivity (``gcshift.sensitivity``) on the
    CoAP runs of the claims' adapter set, and its per-run rows."""
    if gc.extremes.empty or rows.empty or gc.windows.empty:
        return pd.DataFrame(), pd.DataFrame()
    coap = rows[rows["style"] == "coap"]
    by_delay = {float(d): sorted(g["run"].astype(str)) for d, g in coap.groupby("delay_ms")}
    return gcshift.sensitivity(gc.extremes, slow, gc.gc_events, gc.windows, by_delay)


def set_claims(
    rows: pd.DataFrame, cases_runs: pd.DataFrame, gc: verdicts.GcRecords, hours: float,
    fix: pd.DataFrame | None = None,
) -> pd.DataFrame:  # fmt: skip
    """The claims table judged on ``rows`` (one adapter set's runs; the Californium fix's
    claim on ``fix``, ``verdicts.fix_rows``), its undecided tests marked underpowered where
    their runs cannot decide them (docs/statistics.md §7)."""
    primary = verdicts.with_test_cases(rows, cases_runs)
    table = verdicts.evaluate(primary, gc=gc, fix=fix)
    return claims_mod.mark_underpowered(table, verdicts.power(primary), hours)


def adapter_verdicts(
    claims: pd.DataFrame, rows: pd.DataFrame, cases_runs: pd.DataFrame,
    gc: verdicts.GcRecords, hours: float, fix: pd.DataFrame | None = None,
) -> pd.DataFrame:  # fmt: skip
    """Every claim judged on the other adapter set's runs beside the claims table (judged
    on ``PRIMARY``'s): where the implementation of a protocol, not the protocol, moves a
    verdict (``ipclab.robustness``; a protocol the other set has no runs of: not
    measured). Empty when only one set ran."""
    sets = sorted(set(rows["adapters"])) if len(rows) and "adapters" in rows.columns else []
    other = [a for a in sets if a != PRIMARY]
    if PRIMARY not in sets or not other or claims.empty:
        return pd.DataFrame()
    theirs = set_claims(rows[rows["adapters"] == other[0]], cases_runs, gc, hours, fix)
    pair = robustness.Pair("adapter sets", (PRIMARY, other[0]), claims, theirs)
    return robustness.side_by_side(pair, factor="adapters")


def window_margins(claims: pd.DataFrame, cached: Path | None) -> pd.DataFrame:
    """The window check's margins (``window.margins``) where the reference beside ``cached``
    (its results folder) has one."""
    check = window.read_check(cached.parent if cached is not None else None)
    if check is None or claims.empty:
        return pd.DataFrame()
    return window.margins(claims, published.claims(), check)


PROFILE_TABLES = ("flame", "heap", "histogram")
#: jcmd's names of array classes -> the thesis's (Java's own spelling)
JAVA_NAMES = {"[B": "byte[]", "[C": "char[]", "[Ljava.lang.Object;": "java.lang.Object[]"}


def read_profile(directory: Path | None) -> dict[str, pd.DataFrame]:
    """The profiling testbed's tables (``profiling.run_profile``), where a profile was
    made in ``directory``; none otherwise."""
    if directory is None or not all((directory / f"{n}.csv").exists() for n in PROFILE_TABLES):
        return {}
    names = (*PROFILE_TABLES, "hotspot")  # hotspot.csv: profiles made since issue 52
    return {n: pd.read_csv(directory / f"{n}.csv") for n in names
            if (directory / f"{n}.csv").exists()}  # fmt: skip


def hotspot_table(profiles: dict[str, dict[str, pd.DataFrame]]) -> pd.DataFrame:
    """Fig. 9's hotspot per logging configuration (``hotspot.share_table``) from the
    profiles that have ``hotspot.csv``."""
    shares = {c: hotspot.share_of(p["hotspot"]) for c, p in profiles.items() if "hotspot" in p}
    return hotspot.share_table(shares) if shares else pd.DataFrame()


def heap_beside_published(histogram: pd.DataFrame) -> pd.DataFrame:
    """Fig. 18 beside the thesis's: per class its share of the heap's bytes and of its
    instances, as printed and as measured (the classes of either list)."""
    pub = published.load_heap()[["class", "instances_pct", "bytes_pct"]]
    mine = histogram.assign(**{"class": histogram["class"].map(lambda c: JAVA_NAMES.get(c, c))})
    mine = mine[["class", "instances_pct", "bytes_pct"]]
    out = pub.merge(mine, on="class", how="outer", suffixes=("_published", "_measured"))
    return out.sort_values("bytes_pct_measured", ascending=False, ignore_index=True)


def analyse(
    runs: Sequence[Run],
    warmup_s: float | None = None,
    cached: Path | None = None,
    profiling: Path | None = None,
    fix_runs: Sequence[Run] = (),
    thesis_profiling: Path | None = None,
) -> Analysis:
    """Every table of the study from ``runs`` (see the module's doc); ``fix_runs``: the
    Californium fix experiment's (``experiment.fix_experiment``), for claim N33a."""
    per, missing = per_run_tables(runs, warmup_s, cached)
    fix = (verdicts.fix_rows(fix_runs, warmup_of(fix_runs[0], warmup_s or 0.0))
           if fix_runs else None)  # fmt: skip
    rows = per["runs"]
    primary = rows[rows["adapters"] == PRIMARY] if len(rows) else rows
    gc = gc_records(per, rows)
    hours = claims_mod.run_hours([r.manifest for r in runs])
    judged, every = annotate(primary, runs), annotate(rows, runs)  # flagged cells named
    claim_table = (
        set_claims(judged, per["cases_runs"], gc, hours, fix) if len(primary) else pd.DataFrame()
    )
    primary = verdicts.with_test_cases(primary, per["cases_runs"])
    power = verdicts.power(primary) if len(primary) else pd.DataFrame()
    shift, shift_runs = gc_shift_tables(gc, primary, per["slow"])
    profiles = {"thesis": read_profile(thesis_profiling), "fixed": read_profile(profiling)}
    return Analysis(
        runs=rows, hosts_runs=per["hosts_runs"], cases_runs=per["cases_runs"],
        gc_runs=per["gc_runs"], extremes=per["extremes"], gc_events=per["gc_events"],
        slow=per["slow"],
        table2=tables.table2(rows) if len(rows) else pd.DataFrame(),
        table3=tables.table3(rows) if len(rows) else pd.DataFrame(),
        hosts=tables.host_cells(per["hosts_runs"], rows),
        cases=tables.test_case_cells(per["cases_runs"]),
        gc=extremes.extremes_cells(per["gc_runs"], rows),
        adapters=adapter_effect(rows),
        claims=claim_table,
        statements=claims_mod.statement_verdicts(claim_table) if len(claim_table) else
        pd.DataFrame(),
        power=power, machine=machine_state(rows), gc_shift=shift, gc_shift_runs=shift_runs,
        adapter_verdicts=adapter_verdicts(claim_table, every, per["cases_runs"], gc, hours, fix),
        window=window_margins(claim_table, cached),
        missing=missing, profile=profiles["fixed"], thesis_profile=profiles["thesis"],
        hotspot=hotspot_table(profiles),
        deviations=[*DEVIATIONS, *measured_deviations(rows)],
    )  # fmt: skip


# --------------------------------------------------------------------------- presentation

STYLE_NAMES = {"http1": "HTTP/1.1", "h2c": "h2c", "coap": "CoAP"}
SOURCES = {
    "thesis": "thesis (nginx, nghttpx, Californium)",
    "python": "measured: python adapters",
    "native": "measured: native adapters (nginx, nghttpx, Californium)",
}


def _num(x: float, digits: int) -> str:
    return f"{x:,.{digits}f}" if np.isfinite(x) else "-"


def _side_by_side(
    cells: pd.DataFrame, metrics: dict[str, tuple[str, int]], published_of: dict[str, str]
) -> pd.DataFrame:
    """Per protocol and delay, a thesis row and one row per adapter set measured:
    ``metrics`` maps a column to its (heading, digits); ``published_of`` maps a column to
    the thesis's column."""
    out = []
    order = {s: i for i, s in enumerate(published.STYLES)}
    keys = cells[["style", "delay_ms"]].drop_duplicates()
    keys = keys.assign(o=keys["style"].map(order)).sort_values(["delay_ms", "o"])
    for style, delay in zip(keys["style"], keys["delay_ms"], strict=True):
        g = cells[(cells["style"] == style) & (cells["delay_ms"] == delay)]
        base = {"protocol": STYLE_NAMES.get(style, style), "delay (ms)": f"{float(delay):g}"}
        first = g.iloc[0]
        out.append({**base, "source": SOURCES["thesis"], "runs": "1", **{
            head: _num(float(first.get(published_of[m], np.nan)), d) if m in published_of else "-"
            for m, (head, d) in metrics.items()
        }})  # fmt: skip
        for adapters in ("python", "native"):
            for _, r in g[g["adapters"] == adapters].iterrows():
                out.append({**base, "source": SOURCES[adapters], "runs": str(int(r["runs"])), **{
                    head: _row_ci(r, m, d) for m, (head, d) in metrics.items()
                }})  # fmt: skip
    return pd.DataFrame(out)


def table2_text(t2: pd.DataFrame) -> pd.DataFrame:
    """Table 2 for a reader: per protocol and delay the thesis's row, then each adapter
    set's measured row (mean over runs [95% t interval])."""
    if t2.empty:
        return t2
    metrics = {"requests": ("requests", 0), "rps": ("req/s", 0), "mean_ms": ("mean ms", 2),
               "sd_ms": ("SD ms", 2), "min_ms": ("min ms", 2), "max_ms": ("max ms", 1),
               "p50_ms": ("p50 ms", 2), "p95_ms": ("p95 ms", 1),
               "p99_ms": ("p99 ms", 1)}  # fmt: skip
    pub = {"requests": "published_requests", "rps": "published_rps",
           "mean_ms": "published_mean_ms", "sd_ms": "published_sd_ms",
           "min_ms": "published_min_ms", "max_ms": "published_max_ms"}  # fmt: skip
    return _side_by_side(t2, metrics, pub)


def table3_text(t3: pd.DataFrame) -> pd.DataFrame:
    """Table 3 for a reader, laid out as :func:`table2_text`."""
    if t3.empty:
        return t3
    metrics = {"bytes_per_request": ("bytes/request", 1),
               "packets_per_request": ("packets/request", 2),
               "bytes_per_packet": ("bytes/packet", 1)}  # fmt: skip
    return _side_by_side(t3, metrics, {m: f"published_{m}" for m in metrics})


def _row_ci(r: pd.Series, metric: str, digits: int) -> str:
    return stats.interval_text(r[metric], r[f"{metric}_low"], r[f"{metric}_high"], f",.{digits}f")


def hosts_text(cells: pd.DataFrame) -> pd.DataFrame:
    """Per cell and host: CPU (mean over runs [95% CI], and the SD within a run), bytes and
    packets sent and received per request [95% CI], and the run totals over the window."""
    if cells.empty:
        return cells
    order = {h: i for i, h in enumerate((*hosts.THESIS_HOSTS, LOADGEN))}
    cells = cells.assign(o=cells["host"].map(order).fillna(len(order)))
    cells = cells.sort_values(["adapters", "delay_ms", "style", "o", "host"], kind="stable")
    out = []
    for _, r in cells.iterrows():
        out.append(
            {
                "adapters": r["adapters"], "protocol": STYLE_NAMES.get(r["style"], r["style"]),
                "delay (ms)": f"{float(r['delay_ms']):g}", "host": r["host"],
                "runs": int(r["runs"]), "CPU % [95% CI]": _row_ci(r, "cpu_mean", 1),
                "CPU SD within run": _num(float(r["cpu_sd"]), 1),
                "tx B/request": _row_ci(r, "tx_bytes_per_request", 0),
                "rx B/request": _row_ci(r, "rx_bytes_per_request", 0),
                "tx packets/request": _row_ci(r, "tx_packets_per_request", 2),
                "rx packets/request": _row_ci(r, "rx_packets_per_request", 2),
                "tx MB in window": _num(float(r["tx_bytes"]) / 1e6, 1),
                "rx MB in window": _num(float(r["rx_bytes"]) / 1e6, 1),
            }
        )  # fmt: skip
    df = pd.DataFrame(out)
    unmeasured = [c for c in df.columns[6:] if (df[c] == "-").all()]  # no counters (local)
    return df.drop(columns=unmeasured)


def gc_text(cells: pd.DataFrame) -> pd.DataFrame:
    """Fig. 19's numbers per cell beside the thesis's: extremes, episodes, how many
    coincide with a major GC, the share per run [95% CI] against the share of the other
    requests, and the GCs per run of every role."""
    th = extremes.THESIS
    rows = [{
        "source": "thesis (profiling testbed, CoAP via Californium, 1 run)", "runs": 1,
        "requests": f"{th['requests']:,}", "threshold ms": f"{th['threshold_ms']:g}",
        "extremes": str(th["extremes"]), "with a GC": str(th["with_gc"]),
        "share with a GC [95% CI]": f"{th['with_gc'] / th['extremes']:.3f}",
        "other requests with a GC": "not reported",
        "major GCs per run": f"HTTP gateway {th['gc_http_gateway']}, "
                             f"CoAP gateway {th['gc_coap_gateway']}",
    }]  # fmt: skip
    for _, r in cells.iterrows():
        counts = {
            c.removeprefix("gc_").removesuffix("_per_run"): r[c]
            for c in cells.columns
            if c.startswith("gc_") and c.endswith("_per_run") and c != "gc_events_per_run"
        }
        gcs = ", ".join(f"{k} {v:.1f}" for k, v in sorted(counts.items()) if np.isfinite(v) and v)
        rows.append(
            {
                "source": f"{r['adapters']}, {STYLE_NAMES.get(r['style'], r['style'])}, "
                          f"{float(r['delay_ms']):g} ms",
                "runs": int(r["runs"]), "requests": f"{int(r['requests']):,}",
                "threshold ms": _num(float(r["threshold_ms"]), 1),
                "extremes": f"{int(r['extremes'])} ({int(r['episodes'])} episodes)",
                "with a GC": _num(float(r["with_gc"]), 0),
                "share with a GC [95% CI]": stats.interval_text(
                    r["fraction"], r["fraction_low"], r["fraction_high"], ",.3f"),
                "other requests with a GC": stats.interval_text(
                    r["baseline_fraction"], r["baseline_low"], r["baseline_high"], ",.4f"),
                "major GCs per run": gcs or ("none" if r["runs_with_logs"] else "no role logs"),
            }
        )  # fmt: skip
    return pd.DataFrame(rows)


def gc_shift_text(table: pd.DataFrame) -> pd.DataFrame:
    """The shift test for a reader: per request set, delays and share, the mean share over
    the CoAP runs, observed and under shifted GC schedules, and the unadjusted p-values."""
    if table.empty:
        return table
    return pd.DataFrame(
        {
            "requests": table["requests_set"], "delays (ms)": table["delays_ms"],
            "share of": table["share"], "runs": table["runs"],
            "observed": [_num(x, 3) for x in table["observed"]],
            "shifted GCs (chance)": [_num(x, 3) for x in table["expected"]],
            "observed / chance": [_num(x, 2) for x in table["ratio"]],
            "p (one-sided, above)": [f"{x:.2g}" for x in table["p_upper"]],
            "p (two-sided)": [f"{x:.2g}" for x in table["p_two_sided"]],
        }
    )  # fmt: skip


def adapters_text(effect: pd.DataFrame) -> pd.DataFrame:
    """What the adapters change, for a reader: native / python per metric."""
    if effect.empty:
        return effect
    out = []
    for _, r in effect.iterrows():
        out.append(
            {
                "protocol": STYLE_NAMES.get(r["style"], r["style"]),
                "delay (ms)": f"{float(r['delay_ms']):g}", "metric": r["metric"],
                "python": _num(r["python"], 2), "native": _num(r["native"], 2),
                "runs (python, native)": f"{r['runs_python']}, {r['runs_native']}",
                "native / python [95% CI]": stats.interval_text(
                    r["ratio"], r["ci_low"], r["ci_high"], ",.3f"),
                "p": _num(r["p"], 4), "p (Holm)": _num(r["p_holm"], 4),
            }
        )  # fmt: skip
    return pd.DataFrame(out)


def md(df: pd.DataFrame) -> str:
    """A table as Markdown ("(no runs)" when empty)."""
    if df.empty:
        return "(no runs)"
    head = "| " + " | ".join(df.columns) + " |"
    rule = "|" + "---|" * len(df.columns)
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in df.to_numpy()]
    return "\n".join([head, rule, *body])


def readme_blocks(a: Analysis) -> dict[str, str]:
    """The reference README's generated tables (``ipclab.findings.fill_blocks``): Tables 2
    and 3 beside the thesis's, the extremes and GCs per cell, the shift test."""
    return {
        "table2": md(table2_text(a.table2)),
        "table3": md(table3_text(a.table3)),
        "gc": md(gc_text(a.gc)),
        "gc-shift": md(gc_shift_text(a.gc_shift)),
    }


def summary_markdown(a: Analysis) -> str:
    """Tables 2 and 3 beside the thesis's, the GC test and the claims, in Markdown."""
    parts = [
        "**Table 2** (response times; thesis beside each adapter set, mean over runs "
        "[95% t interval]):", "", md(table2_text(a.table2)), "",
        "**Table 3** (bytes and packets per request, sent and received over the gateway and "
        "the four service hosts):", "", md(table3_text(a.table3)), "",
        "**Extremes and major GCs** (Fig. 19):", "", md(gc_text(a.gc)), "",
        "**Extremes against shifted GC schedules** (the test of N29a and N30a and its "
        "sensitivity; p-values unadjusted):", "", md(gc_shift_text(a.gc_shift)),
    ]  # fmt: skip
    if len(a.claims):
        parts += ["", "**Claims**: the findings block of the reference README "
                  "(`ipclab.findings`, from `results/claims.csv`)."]  # fmt: skip
    if a.missing:
        parts += ["", f"Runs without per-request records or cached rows: {', '.join(a.missing)}"]
    return "\n".join(parts)


# --------------------------------------------------------------------------- results


def write_results(a: Analysis, results: Any) -> None:
    """Every table and figure of the study into ``results`` (a ``StudyResults``)."""
    import matplotlib.pyplot as plt

    from ipclab.studies.nyflott import figures

    results.deviations = list(a.deviations)
    results.skipped = _skipped(a)
    _write_thesis_tables(a, results)
    _write_gc_tables(a, results)
    _write_supporting_tables(a, results)
    _write_per_run_tables(a, results)
    _write_profile_tables(a, results)
    for name, (fig, caption) in figures.all_figures(a).items():
        results.figure(fig, name, caption)
        plt.close(fig)
    if len(a.claims):
        results.claims_table(a.claims)
    results.save()


def _write_profile_tables(a: Analysis, results: Any) -> None:
    """The profiling testbed's Fig. 18 beside the thesis's, its heap per collection, and
    Fig. 9's hotspot share per logging configuration."""
    if len(a.hotspot):
        results.table(a.hotspot, "fig9_hotspot", "Fig. 9's hotspot: the share of the "
                      "Californium CoAP gateway's stack samples that build a message's log "
                      "text (a Californium toString, or the thesis logging's eager building), "
                      "per logging configuration (thesis: Listing 4.1's eager concatenation; "
                      "fixed: Californium 3.11), with its 95% Wilson interval on the samples "
                      "over the design effect of 5 s batches, and the samples a +-5-point "
                      "interval needs (hotspot.py).")  # fmt: skip
    if not a.profile:
        return
    results.table(heap_beside_published(a.profile["histogram"]), "fig18_heap", "Fig. 18: "
                  "the classes of the Californium HTTP gateway's heap (the egress adapter, "
                  "jcmd GC.class_histogram -all at the end of the profiling load, unreachable "
                  "objects included), each one's share of the heap's bytes and instances, "
                  "beside the thesis's heap dump (p. 59).")  # fmt: skip
    results.table(a.profile["heap"], "fig17_heap", "Fig. 17's numbers: the HTTP gateway's "
                  "heap before and after every collection (JFR GCHeapSummary).",
                  in_report=False)  # fmt: skip


def _has_network_counters(a: Analysis) -> bool:
    """Whether the runs have per-host network counters (the docker backend's; Table 3)."""
    return bool(len(a.runs) and a.runs["bytes_per_request"].notna().any())


def _skipped(a: Analysis) -> list[str]:
    """What the results leave out and why: runs with nothing to analyse, and Table 3 when
    the backend counted no network traffic."""
    skipped = []
    if a.missing:
        skipped.append(
            f"{len(a.missing)} run(s) without per-request records or cached rows: "
            + ", ".join(a.missing)
        )
    if len(a.runs) and not _has_network_counters(a):
        skipped.append(
            "Table 3 and Figs. 11-14, 20-23: no per-host network counters in these runs "
            "(the local backend has none; the docker backend counts every container's "
            "interface)."
        )
    return skipped


def _write_thesis_tables(a: Analysis, results: Any) -> None:
    """Tables 2 and 3 beside the thesis's, and the per-host view of Figs. 11-15, 20-23."""
    net = _has_network_counters(a)
    if len(a.table2):
        results.table(table2_text(a.table2), "table2", "Table 2 beside the thesis's: per "
                      "protocol and added delay (per host) the thesis's row, then each "
                      "adapter set's, mean over runs [95% t interval] of each run's value over "
                      "its measured window; the thesis's req/s: its requests / 600 s.")  # fmt: skip
        results.table(a.table2, "table2_cells", "Table 2 per cell, numeric (estimate, low, "
                      "high per metric; published values beside).", in_report=False)  # fmt: skip
    if net and len(a.table3):
        results.table(table3_text(a.table3), "table3", "Table 3 beside the thesis's: bytes "
                      "and packets per request, sent and received, summed over the gateway "
                      "and the four service hosts (a packet between two of them counted at "
                      "both; load generator to gateway once; the thesis does not say what it "
                      "summed), mean over runs [95% t interval].")  # fmt: skip
        results.table(a.table3, "table3_cells", "Table 3 per cell, numeric.", in_report=False)
    if len(a.hosts):
        results.table(hosts_text(a.hosts), "hosts", "Per host (Figs. 11-15, 20-23; measured "
                      "only: the thesis prints no numbers): CPU summed over the host's roles "
                      "(100 = one core; mean over runs [95% CI], and the SD over a run's "
                      "1 Hz samples), bytes and packets sent and received per request [95% "
                      "CI], and the totals over the measured window (mean over runs); "
                      "loadgen is the load generator's host.")  # fmt: skip
        results.table(a.hosts, "hosts_cells", "Per cell and host, numeric.", in_report=False)


def _write_gc_tables(a: Analysis, results: Any) -> None:
    """Extremes against major GCs (Fig. 19) and the shift test of their coincidence."""
    if len(a.gc):
        results.table(gc_text(a.gc), "gc_extremes", "Extremes against major GCs (Fig. 19): "
                      "per cell the extreme requests (each run's slowest 0.021 %, the "
                      "thesis's 53 of 252,636; episodes: extremes in flight together), how "
                      "many overlap a major GC of any role, the share per run [95% t "
                      "interval] beside the share of the run's other requests that overlap "
                      "one, and the GCs per run by role; descriptive: the test of "
                      "coincidence is gc_shift's, against each run's own GC schedule "
                      "shifted in time.")  # fmt: skip
        results.table(a.gc, "gc_extremes_cells", "Extremes and GCs per cell, numeric.",
                      in_report=False)  # fmt: skip
    if len(a.gc_shift):
        results.table(a.gc_shift, "gc_shift", "Do extremes and major GCs meet more often "
                      "than chance? Per request set, delays and share (of the extremes that "
                      "meet a GC; of the GCs that meet an extreme), the mean over the CoAP "
                      "runs of each run's share, observed and under its GC schedule shifted "
                      "circularly in its window (3,000 offsets; the mean's exact null, runs "
                      "shifted independently), and the p-values, unadjusted. The claims "
                      "(N29a, N30a) are the rows at 0, 2, 5 ms on the slowest 0.021%; the "
                      "rest show how the result hangs on the delay and on the "
                      "extremes' definition (Fig. 16's fixed 80-200 ms range, kept for "
                      "0 ms only).")  # fmt: skip
        results.table(a.gc_shift_runs, "gc_shift_runs", "The shift test per CoAP run: "
                      "requests of the set and GCs in the window, each share observed, its "
                      "mean over the offsets and the share of offsets at least as high (the "
                      "run's own one-sided p-value).", in_report=False)  # fmt: skip


def _write_supporting_tables(a: Analysis, results: Any) -> None:
    """What the adapters change, Fig. 10's numbers, power, the machine check and the
    verdict per published sentence."""
    if len(a.adapters):
        results.table(adapters_text(a.adapters), "adapters", "What the adapters change: "
                      "native (nginx for HTTP/1.1, nghttpx for h2c, Californium for CoAP) / "
                      "python per protocol and delay, the ratio of the means over runs "
                      "with its 95% log-ratio interval, Welch's p and the same "
                      "Holm-adjusted over the table's rows (not a claim of the "
                      "thesis).")  # fmt: skip
    if len(a.window):
        held = int((a.window["holds"] == True).sum())  # noqa: E712 - object column
        checked = int(a.window["holds"].notna().sum())
        results.table(a.window, "window_margin", f"The short window against a 2-minute "
                      f"one: each decided test on req/s or mean response time, its interval "
                      f"divided by the factor the window check found for its cells (short "
                      f"over long window, same runs), and whether its verdict holds there: "
                      f"{held} of {checked} checked hold.", in_report=False)  # fmt: skip
    if len(a.adapter_verdicts):
        results.table(a.adapter_verdicts, "adapters_agreement", "Every claim judged on each "
                      "adapter set's runs: the claims table's estimate and verdict (python "
                      "adapters) beside the same claim on the native set's runs, the ratio "
                      "of the two estimates (native/python) and what explains a verdict that "
                      "changes (adapters: the estimates differ; runs, noise or not measured: "
                      "docs/statistics.md section 8).", in_report=False)  # fmt: skip
    if len(a.cases):
        results.table(a.cases, "per_test_case", "Fig. 10's numbers: per cell and test case, "
                      "the mean over runs of each run's mean response time [95% t interval], "
                      "SD and minimum.", in_report=False)  # fmt: skip
    if len(a.power):
        results.table(a.power, "power", "Runs per cell each single-delay test or interaction "
                      "of the delay experiment needs to detect the published effect with 80% "
                      "power at the strictest Holm level of its family (alpha / its distinct "
                      "tests, docs/statistics.md section 7).", in_report=False)  # fmt: skip
    if len(a.machine):
        results.table(a.machine, "machine_state", "Machine check per cell: stack CPU per "
                      "request across repetitions (more than 25% apart: the machine changed) "
                      "and other processes' CPU.", in_report=False)  # fmt: skip
    if len(a.statements):
        results.table(a.statements, "statements", "One verdict per published sentence (every "
                      "part reproduced, any part not, otherwise inconclusive).",
                      in_report=False)  # fmt: skip


def _write_per_run_tables(a: Analysis, results: Any) -> None:
    """The per-run tables (``CACHE``), which a reference without per-request records is
    analysed from again."""
    captions = {
        "runs": "Every run: Table 2's numbers over its measured window and its per-host CPU "
        "and network (the per-run rows the cells and claims are computed from).",
        "hosts_runs": "Every run and host: CPU, counters over the window, per request.",
        "cases_runs": "Every run and test case: count, mean, min, SD.",
        "gc_runs": "Every run: threshold, extremes, how many overlap a GC, GCs by role.",
        "extremes": "Every extreme request and the GC it overlaps.",
        "gc_events": "Every major GC in a measured window.",
        "slow": "Fig. 16's requests (80 < RT < 200 ms) of the runs at 0 ms.",
    }
    for key, name in CACHE.items():
        df = getattr(a, key)
        results.table(df, name.removesuffix(".csv"), captions[key], in_report=False)
