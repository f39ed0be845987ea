"""Johansson 2017 from runs to results, for notebook 04 and the reference rebuilder.

:func:`analyse` turns the three experiments' runs (:mod:`experiment`) into tables: one row
per run and interface (:mod:`tables`), cells with 95% t intervals (:mod:`cells`),
GraphQL/REST ratios with log-ratio intervals (:mod:`ratios`), published beside measured,
and the claims with computed verdicts (:mod:`verdicts`); :func:`declared` gives them and the
figures (:mod:`figures`) as the core's ``ipclab.protocol.Analysis``, which writes them;
:func:`summary_markdown` gives the reference README's tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pandas as pd

from ipclab import claims as claims_mod
from ipclab import protocol
from ipclab.protocol import Table
from ipclab.runs import Run
from ipclab.stats import interval_text
from ipclab.stats.plausibility_runs import annotate
from ipclab.studies.johansson import published
from ipclab.studies.johansson import serialisation as ser
from ipclab.studies.johansson.cells import (
    CELL_METRICS,
    SATURATION_METRICS,
    saturation_detected,
    saturation_summary,
    side_by_side,
    summarise,
    wide,
)
from ipclab.studies.johansson.experiment import profile
from ipclab.studies.johansson.ratios import paired_ratios, ratios, sequential_effect
from ipclab.studies.johansson.tables import (
    machine_state,
    request_series,
    saturation_runs,
    style_runs,
)
from ipclab.studies.johansson.verdicts import claims_table, power_table


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
    serialisation: pd.DataFrame = field(default_factory=pd.DataFrame)  # per process and round
    serialisation_cells: pd.DataFrame = field(default_factory=pd.DataFrame)
    series: dict[int, pd.DataFrame] = field(default_factory=dict)  # rows -> request_series


def analyse(
    runs: dict[str, list[Run]], profile_name: str, serialisation: pd.DataFrame | None = None
) -> Analysis:
    """Every table of the study from the three experiments' runs
    (``experiment.run_experiments``) and, optionally, the serialisation micro-benchmark's
    table (per process and round; the process is the replicate)."""
    p = profile(profile_name)
    thesis = style_runs(runs.get("thesis", []))
    sweep = style_runs(runs.get("sweep", []))
    sat = saturation_runs(runs.get("saturation", []), p.saturation.warmup_s)
    by = ("sequential", "rows", "style")
    sat_cells = summarise(sat, SATURATION_METRICS, ("rows", "style", "users"))
    thesis_cells = summarise(thesis, CELL_METRICS, by)
    thesis_ratios = ratios(thesis) if len(thesis) else pd.DataFrame()
    serial = serialisation if serialisation is not None else pd.DataFrame()
    base = thesis[~thesis["sequential"]] if len(thesis) else thesis
    power = power_table(base, serial)
    hours = claims_mod.run_hours([r.manifest for r in runs.get("thesis", [])])  # its tests' runs
    judged = claims_table(annotate(base, runs.get("thesis", [])), serial)  # flagged cells named
    claim_table = claims_mod.mark_underpowered(judged, power, hours)
    return Analysis(
        profile=profile_name,
        thesis=thesis,
        sweep=sweep,
        saturation=sat,
        thesis_cells=thesis_cells,
        sweep_cells=summarise(sweep, CELL_METRICS, by),
        saturation_cells=sat_cells,
        thesis_ratios=thesis_ratios,
        thesis_paired=paired_ratios(thesis) if len(thesis) else pd.DataFrame(),
        sweep_ratios=ratios(sweep) if len(sweep) else pd.DataFrame(),
        sweep_paired=paired_ratios(sweep) if len(sweep) else pd.DataFrame(),
        saturation_ratios=ratios(
            sat, ("rps", "mean_ms", "p95_ms", "gateway_cpu_ms"), by=("rows", "users")
        ) if len(sat) else pd.DataFrame(),  # fmt: skip
        saturation_best=saturation_summary(sat_cells) if len(sat) else pd.DataFrame(),
        saturation_detected=saturation_detected(sat),
        sequential=sequential_effect(sweep),
        side_by_side=side_by_side(thesis_cells, thesis_ratios) if len(thesis) else pd.DataFrame(),
        claims=claim_table,
        statements=claims_mod.statement_verdicts(claim_table) if len(claim_table) else
        pd.DataFrame(),
        power=power,
        machine=machine_state(thesis, sweep, sat),
        serialisation=serial,
        serialisation_cells=ser.cells(serial) if len(serial) else pd.DataFrame(),
        series={r: request_series(runs.get("thesis", []), r) for r in p.thesis.rows},
    )  # fmt: skip


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
        return (
            interval_text(*hit[["ratio", "ci_low", "ci_high"]].iloc[0], ".2f") if len(hit) else "-"
        )

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
                f"{interval_text(*m[:3], '.2f')} | {interval_text(*p[:3], '.2f')} | "
                f"{interval_text(*s[:3], '.2f')} | {interval_text(*c[:3], '.3f')} | "
                + (f"{ratio} | {thesis} |" if style == "graphql" else " | | |")
            )
    best = a.saturation_best
    if not len(best):  # a reference of the thesis test alone (the docker one)
        return "\n".join(out)
    out += [
        "",
        "| rows/table | interface | saturation req/s [95% CI] | at users | mean ms there | "
        "GraphQL/REST req/s there [95% CI] |",
        "|---|---|---|---|---|---|",
    ]
    sr = a.saturation_ratios
    for _, b in best.iterrows() if len(best) else []:
        rr = sr[(sr["rows"] == b["rows"]) & (sr["users"] == b["users"]) & (sr["metric"] == "rps")]
        ratio = (
            interval_text(*rr[["ratio", "ci_low", "ci_high"]].iloc[0], ".3f") if len(rr) else "-"
        )
        out.append(
            f"| {b['rows']} | {'REST' if b['style'] == 'rest' else 'GraphQL'} | "
            f"{interval_text(b['rps'], b['rps_ci_low'], b['rps_ci_high'], '.0f')} | {b['users']} | "
            f"{b['mean_ms']:.0f} | {ratio if b['style'] == 'graphql' else ''} |"
        )
    return "\n".join(out)


def machine_markdown(a: Analysis) -> str:
    """The README's machine-check table: per experiment its cells, runs (an interleaved run
    once per interface), other processes' largest CPU, the largest spread of CPU per
    request within a cell and how many cells pass (``results/machine_state.csv``)."""
    out = [
        "| experiment | cells | runs | other processes' CPU, max (% of a core) | "
        "CPU per request, max spread | cells comparable |",
        "|---|---|---|---|---|---|",
    ]
    for name in ("thesis", "sweep", "saturation"):
        m = a.machine[a.machine["experiment"] == name] if len(a.machine) else a.machine
        if m.empty:
            continue
        ok = int((m["comparable"] == True).sum())  # noqa: E712 - an object column of bools
        out.append(
            f"| {name} | {len(m)} | {int(m['runs'].sum())} | "
            f"{m['other_cpu_percent_max'].max():.0f} | {m['cost_ratio'].max():.2f}x | "
            f"{ok} of {len(m)} |"
        )
    return "\n".join(out)


def readme_blocks(a: Analysis) -> dict[str, str]:
    """The generated blocks of a reference README (``ipclab.findings.fill_blocks``)."""
    return {"tables": summary_markdown(a), "machine": machine_markdown(a)}


#: the metrics of the written cell tables (``mean [low, high]`` text columns)
THESIS_CELLS = ("mean_ms", "p95_ms", "server_ms", "outside_ms", "bytes", "gateway_cpu_ms")
SWEEP_CELLS = ("mean_ms", "p95_ms", "server_ms", "bytes", "gateway_cpu_ms")
SATURATION_CELLS = ("rps", "mean_ms", "p95_ms", "gateway_cpu_ms")
_SERIALISATION_COLUMNS = ("rows", "style", "bytes", "encode_us", "encode_us_ci", "decode_us",
                          "decode_us_ci", "bytes_vs_json", "roundtrip_us_vs_json")  # fmt: skip
_SIDE_COLUMNS = (
    "test", "rows", "style", "published_min_ms", "published_mean_ms", "published_max_ms",
    "measured_mean_ci", "measured_p95_ci", "runs", "published_ratio", "published_printed",
    "measured_ratio_ci",
)  # fmt: skip


def declared(a: Analysis) -> protocol.Analysis:
    """The core's analysis of ``a``: each experiment's tables when it has runs, the claims
    (when any; before the runs each test needs), the figures (each drawn when written), the
    reference README's blocks and what the notebook shows beside the tables."""
    from ipclab.studies.johansson import figures

    tables = []
    if len(a.side_by_side):
        tables.append(
            Table(
                "published_vs_measured",
                a.side_by_side[list(_SIDE_COLUMNS)],
                "Thesis tests 1-3 (sections 7.1-7.3) beside the measured thesis test: printed "
                "fastest, mean and slowest request (ms) per interface; measured mean and p95 (ms), "
                "mean over runs with the 95% t interval; GraphQL / REST of the means, printed "
                "(as G / R) and measured (95% log-ratio interval). Test 1 at 5 rows per table.",
            )
        )
    if len(a.thesis_ratios):
        tables += _thesis_tables(a)
    if len(a.sweep):
        tables += _sweep_tables(a)
    if len(a.sequential):
        tables.append(
            Table(
                "sequential_sensitivity",
                a.sequential,
                "Sensitivity: gateways calling the four services sequentially over concurrently, "
                "per interface and size (95% log-ratio intervals).",
            )
        )
    if len(a.saturation):
        tables += _saturation_tables(a)
    if len(a.serialisation):
        tables += _serialisation_tables(a)
    if len(a.power):
        tables.append(
            Table(
                "power",
                a.power,
                "Runs per cell each single-size test needs to detect the published ratio with 80% "
                "power at the strictest Holm level of its family (alpha over the family's "
                "distinct tests, facts apart; docs/statistics.md section 7).",
                in_report=False,
            )
        )
    return protocol.Analysis(
        a.claims if len(a.claims) else pd.DataFrame(),  # none judged: no claims table
        tuple(tables),
        tuple(figures.all_figures(a)),
        readme=partial(readme_blocks, a),
        views={
            "summary": summary_markdown(a),
            # the thesis's own arithmetic, as printed and as its means give it
            "published_ratios": published.published_ratios(),
            "serialisation": ser.summary(a.serialisation) if len(a.serialisation) else None,
        },
        claims_before="power",
    )


def _thesis_tables(a: Analysis) -> list[Table]:
    """The thesis test's ratios, per-run rows and cells."""
    return [
        Table(
            "thesis_ratios",
            a.thesis_ratios,
            "Thesis test: GraphQL / REST per size for client time (mean, p95), the gateway's "
            "own time, gateway CPU per request and body bytes, with 95% log-ratio intervals.",
            in_report=False,
        ),
        Table(
            "thesis_within_run_ratios",
            a.thesis_paired,
            "Thesis test: GraphQL / REST within each run (both interfaces interleaved in "
            "every run), geometric mean over runs with the 95% t interval of the logs.",
        ),
        Table(
            "thesis_runs", a.thesis, "Thesis test: one row per run and interface.", in_report=False
        ),
        Table(
            "thesis_cells",
            wide(a.thesis_cells, THESIS_CELLS, ("rows", "style")),
            "Thesis test per size and interface: client time (mean, p95), the gateway's own "
            "time (Server-Timing), the rest (HTTP, client, loopback), body bytes and gateway "
            "CPU per request, each the mean over runs with its 95% t interval.",
        ),
    ]


def _sweep_tables(a: Analysis) -> list[Table]:
    """The size sweep's cells, ratios and per-run rows."""
    conc = a.sweep_cells[~a.sweep_cells["sequential"].astype(bool)]
    sr = a.sweep_ratios
    return [
        Table(
            "sweep_cells",
            wide(conc, SWEEP_CELLS, ("rows", "style")),
            "The size sweep (one client, shorter pause): per size and interface, mean over "
            "runs with its 95% t interval.",
        ),
        Table(
            "sweep_ratios",
            sr[(sr["metric"] == "mean_ms") & ~sr["sequential"].astype(bool)],
            "The size sweep: GraphQL / REST of the mean response time per size (95% "
            "log-ratio interval).",
        ),
        Table("sweep_runs", a.sweep, "Size sweep: one row per run and interface.", in_report=False),
    ]


def _saturation_tables(a: Analysis) -> list[Table]:
    """The saturation runs' cells, throughput, ratios and per-run rows, and the
    machine check of every experiment."""
    sr = a.saturation_ratios
    return [
        Table(
            "saturation_cells",
            wide(a.saturation_cells, SATURATION_CELLS, ("rows", "style", "users")),
            "Saturation: closed-loop users without think time, one stack per run (the quick "
            "profile: one per interface and repetition); throughput, "
            "response time and gateway CPU per request, mean over runs with 95% t intervals.",
        ),
        Table(
            "saturation_throughput",
            a.saturation_best,
            "Saturation throughput per size and interface: the highest mean throughput over "
            "the loads run, its load and 95% t interval, and the mean response time there.",
        ),
        Table(
            "saturation_ratios",
            sr[sr["metric"].isin(["rps", "gateway_cpu_ms"])],
            "Saturation: GraphQL / REST of throughput and of gateway CPU per request per "
            "size and load (95% log-ratio intervals).",
        ),
        Table("saturation_runs", a.saturation, "Saturation: one row per run.", in_report=False),
        Table(
            "machine_state",
            a.machine,
            "Machine check per cell of every experiment: stack CPU per request across "
            "repetitions (more than 25% apart: the machine changed) and other processes' "
            "CPU (above 25% of a core: the machine was shared).",
            in_report=False,
        ),
    ]


def _serialisation_tables(a: Analysis) -> list[Table]:
    """The serialisation micro-benchmark's summary and its rounds (with their process)."""
    s = ser.summary(a.serialisation)
    return [
        Table(
            "serialisation",
            s[list(_SERIALISATION_COLUMNS)],
            "Serialisation (thesis Tables 5.1 and 5.2) on the test 2 and 3 bundles: bytes, "
            "encode and decode time per operation (mean over processes, each a fresh "
            "interpreter whose rounds are averaged; 95% t interval over processes), size "
            "and encode + decode time relative to JSON (orjson). No Thrift-vs-Protocol "
            "Buffers time order is claimed.",
        ),
        Table(
            "serialisation_rounds",
            a.serialisation,
            "Serialisation: per process and "
            "round (a table without a process column: every round in one process).",
            in_report=False,
        ),
    ]
