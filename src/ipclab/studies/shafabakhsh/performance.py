"""Shafabakhsh 2020 (KTH thesis + QuASoQ paper): REST vs gRPC vs RabbitMQ, performance.

What notebook 01's part (``protocol.Performance``) calls: ``experiments`` (the load matrix
and the think-time sensitivity run), ``analyse`` (tables, tests, claims) and ``declared``
(its figures and tables as the core's ``ipclab.protocol.Analysis``, which writes them into a
results folder for the report). Published numbers come from ``data/published/``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ipclab import claims as claims_mod
from ipclab import protocol, stats
from ipclab.backends import StackOptions
from ipclab.experiments import Experiment
from ipclab.paths import from_repo
from ipclab.planner import Need, needs_of
from ipclab.protocol import Plot, Table
from ipclab.runs import DEFAULT_ROOT, Run
from ipclab.stats.plausibility_runs import annotate
from ipclab.studies.shafabakhsh import complexity, published
from ipclab.studies.shafabakhsh import figures as figs
from ipclab.studies.shafabakhsh.readme import LABELS, machine_markdown, sitting_markdown
from ipclab.studies.shafabakhsh.stacks import COMPARED

STACKS = tuple(s.name for s in COMPARED)
PUBLISHED_DURATION_S = 180.0


@dataclass(frozen=True)
class Profile:
    users: tuple[int, ...]
    repetitions: int
    duration_s: float  # per run, warm-up included
    warmup_s: float
    sensitivity_users: tuple[int, ...]
    sensitivity_repetitions: int
    think_time_s: tuple[float, float] = (1.0, 2.0)
    # the think-time runs are light and steady (X ~ N / (R + Z)); None: same as duration_s
    sensitivity_duration_s: float | None = None
    # a style's loads on one stack, back to back (Experiment.share_stacks)
    share_stacks: bool = False


PROFILES = {
    # seconds per cell, one repetition: for CI and a first look (4 s a cell, 2 s measured
    # after the spawn's 2 s: 300-900 requests a cell on the Python stacks, measured
    # 2026-11-26, and the three styles' ordering at every load is plain in them); a style's
    # three loads on one stack, started once (a broker's start is ~10 s)
    "quick": Profile(
        users=(50, 100, 200),
        repetitions=1,
        duration_s=4,
        warmup_s=2,
        sensitivity_users=(50,),
        sensitivity_repetitions=1,
        share_stacks=True,
    ),
    # the thesis's 180 s per cell (after a 10 s warm-up), five repetitions in random order
    "full": Profile(
        users=(50, 100, 200),
        repetitions=5,
        duration_s=190,
        warmup_s=10,
        sensitivity_users=(50, 100, 200),
        sensitivity_repetitions=3,
        sensitivity_duration_s=70,  # 60 s measured after the warm-up: rps within ~1%
    ),
}

#: Deviations of the set-up: language, machine, data, load generator, gateway, broker.
#: The runtime: the thesis's services were Node.js (every Shafabakhsh experiment on the
#: Python stacks states it).
LANGUAGE_DEVIATION = (
    "Services are Python (asyncio) instead of Node.js; each style uses the fastest idiomatic "
    "Python library measured by bench/transports.py (aiohttp client for REST, grpc.aio, "
    "aio-pika)."
)
SETUP_DEVIATIONS = [
    LANGUAGE_DEVIATION,
    "All stacks run on one 2-core machine (local processes or containers) instead of three "
    "3-node AKS clusters (DS2-v2); the load generator shares the machine and its CPU is "
    "recorded in every run.",
    "Data comes from a seeded in-memory generator instead of MongoDB/MySQL; the same data in "
    "every style.",
    "Locust (closed loop, no think time) instead of JMeter; all users start within the first "
    "second; a warm-up is discarded; repetitions in randomized order.",
    "The gateway calls the five services concurrently (the thesis does not say).",
    "RabbitMQ topology (not stated in the thesis): per-service queues, transient messages, "
    "manual acks, prefetch 64, an exclusive reply queue with correlation ids.",
]

#: Deviations of the client and the gateway, the same in every Shafabakhsh experiment
#: (performance, languages, availability).
CLIENT_DEVIATIONS = [
    "The load generator reaches the gateway over plain HTTP/1.1, without TLS; the thesis's "
    "clients send their request 'over HTTPS to the API gateway endpoint' (thesis section 4.1, "
    "with Fig. 4.2, p. 28; paper section 3, p. 58). TLS would cost the gateway a handshake per "
    "connection and encryption per page, the same in every style (the styles differ behind the "
    "gateway; neither document says whether those calls were encrypted, and ipclab's are not). "
    "Notebook 07 measures what TLS costs: the same matrix with HTTPS to the gateway only "
    "(--tls-hops edge, the thesis's configuration) and with every hop encrypted (--tls), "
    "interleaved with plain runs (ipclab.studies.shafabakhsh.encryption, docs/tls.md; "
    "full-profile reference of plain and every hop: "
    "data/runs/reference/shafabakhsh-tls-full-local; the three levels in one sitting: "
    "shafabakhsh-tls-levels-full-local, once measured).",
]

#: The gateway's deadline as the performance and language experiments run it.
DEADLINE_DEVIATION = (
    "The gateway gives a page's five service calls a deadline of "
    f"{StackOptions().call_timeout_s:g} s (StackOptions.call_timeout_s, passed to every stack as "
    "IPCLAB_CALL_TIMEOUT_S: the Python gateways hold the whole page to it, the Go gateways each "
    "of the five concurrent calls); a page not complete by then is answered 504, which Locust "
    "counts as a failed request. The thesis states no deadline: its mean response times of "
    "3.3-7.8 s at 100 and 200 users (Tables 5.2-5.3), in so far as they were spent waiting for "
    "the services, would be failed requests here, not slow ones (each run's failures: "
    "failure_rate in runs.csv)."
)

DEVIATIONS = [*SETUP_DEVIATIONS, *CLIENT_DEVIATIONS, DEADLINE_DEVIATION]


def profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; choose {', '.join(PROFILES)}") from None


def experiments(
    profile_name: str,
    backend: str = "local",
    root: Path = DEFAULT_ROOT,
    options: StackOptions | None = None,
) -> tuple[Experiment, Experiment]:
    """The performance matrix and the think-time sensitivity run."""
    p = profile(profile_name)
    common = dict(
        stacks=STACKS,
        backend=backend,
        root=from_repo(root),
        warmup_s=p.warmup_s,
        duration_s=p.duration_s,
        options=options or StackOptions(),
        share_stacks=p.share_stacks,
    )
    perf = Experiment(
        name=f"shafabakhsh-{profile_name}-{backend}",
        users=p.users,
        repetitions=p.repetitions,
        **common,
    )  # type: ignore[arg-type]
    lo, hi = p.think_time_s
    sens = Experiment(
        name=f"shafabakhsh-think-{profile_name}-{backend}",
        users=p.sensitivity_users,
        repetitions=p.sensitivity_repetitions,
        think_time_s=lo,
        think_time_max_s=hi,
        variant=f"think{lo:g}-{hi:g}s",
        **{**common, "duration_s": p.sensitivity_duration_s or p.duration_s},
    )  # type: ignore[arg-type]
    return perf, sens


@dataclass
class Analysis:
    profile: str
    runs: pd.DataFrame  # one row per run (no think time)
    cells: pd.DataFrame  # cell_summary, long format
    comparisons: pd.DataFrame  # pairwise tests per load, for rps and mean_ms
    power: pd.DataFrame  # runs per cell each test needs to detect the published effect
    little: pd.DataFrame
    saturation: pd.DataFrame
    side_by_side: pd.DataFrame  # published vs measured
    claims: pd.DataFrame
    statements: pd.DataFrame
    complexity: pd.DataFrame
    sensitivity_runs: pd.DataFrame
    sensitivity_cells: pd.DataFrame
    published_saturation: pd.DataFrame = field(default_factory=pd.DataFrame)
    machine: pd.DataFrame = field(default_factory=pd.DataFrame)  # per cell: comparable machine?


def side_by_side(cells: pd.DataFrame) -> pd.DataFrame:
    """Thesis tables 5.1-5.3 next to the measured cells (mean with 95% CI over runs)."""
    pub = published.load_performance()
    rows = []
    for _, r in pub.iterrows():
        rps, mean = (_cell(cells, r["style"], r["users"], m) for m in ("rps", "mean_ms"))
        rows.append(
            {
                "style": r["style"],
                "users": int(r["users"]),
                "published_mean_rt_s": r["mean_rt_s"],
                "measured_mean_rt_s": mean.get("mean", np.nan) / 1000,
                "measured_mean_rt_ci_s": _ci_text(mean, 1 / 1000, 4),
                "published_total_requests_180s": int(r["total_requests"]),
                "measured_requests_per_180s": rps.get("mean", np.nan) * PUBLISHED_DURATION_S,
                "measured_requests_per_180s_ci": _ci_text(rps, PUBLISHED_DURATION_S, 0),
                "published_rps": r["total_requests"] / PUBLISHED_DURATION_S,
                "measured_rps": rps.get("mean", np.nan),
                "runs": int(rps.get("n", 0)) if len(rps) else 0,
            }
        )
    return pd.DataFrame(rows)


def _cell(cells: pd.DataFrame, style: str, users: int, metric: str) -> pd.Series:
    hit = cells[(cells["style"] == style) & (cells["users"] == users) & (cells["metric"] == metric)]
    return hit.iloc[0] if len(hit) else pd.Series(dtype=float)


def _ci_text(row: pd.Series, scale: float, digits: int) -> str:
    if not len(row) or not np.isfinite(row.get("ci_low", np.nan)):
        return "n/a (1 run)" if len(row) else "not measured"
    return f"[{row['ci_low'] * scale:.{digits}f}, {row['ci_high'] * scale:.{digits}f}]"


def analyse(
    perf_runs: list[Run], sensitivity_runs: list[Run], profile_name: str, seed: int = 0
) -> Analysis:
    p = profile(profile_name)
    runs = stats.runs_table(perf_runs, warmup_s=p.warmup_s)
    cells = stats.cell_summary(runs, seed=seed)
    comparisons = pd.concat(
        [
            stats.compare_styles(runs, m, styles=("rest", "grpc", "amqp"), seed=seed)
            for m in ("rps", "mean_ms")
        ],
        ignore_index=True,
    )
    comparisons["p_holm"] = stats.holm(comparisons["p"])  # the table is one family
    srun = stats.runs_table(sensitivity_runs, warmup_s=p.warmup_s)
    # N = X(R + Z) on every run: the think-time runs' Z is their mean think time
    little = stats.littles_law_table(
        pd.concat([runs, srun], ignore_index=True) if len(srun) else runs
    )
    means = runs.groupby(["style", "users"], as_index=False)[["rps", "mean_ms"]].mean()
    saturation = stats.detect_saturation(means)
    code = complexity.complexity_table()
    claims = evaluate(annotate(runs, perf_runs), code)  # each claim names a flagged cell
    base = runs[np.isclose(runs["think_time_s"].astype(float), 0.0)] if len(runs) else runs
    power = claims_mod.repetitions(published.claims(scope="performance"), base)  # its family
    hours = claims_mod.run_hours([r.manifest for r in perf_runs])
    claims = claims_mod.mark_underpowered(claims, power, hours)
    return Analysis(
        profile=profile_name,
        runs=runs,
        cells=cells,
        comparisons=comparisons,
        power=power,
        little=little,
        saturation=saturation,
        side_by_side=side_by_side(cells),
        claims=claims,
        statements=claims_mod.statement_verdicts(claims),
        complexity=code,
        sensitivity_runs=srun,
        sensitivity_cells=stats.cell_summary(srun, seed=seed) if len(srun) else pd.DataFrame(),
        published_saturation=stats.detect_saturation(published.published_cells()),
        machine=stats.machine_check(runs),
    )


#: One Holm family per experiment (docs/statistics.md section 3): the load matrix; the
#: code-size claims (``compare``, decided on ipclab's code) are evaluated apart.
FAMILIES = (("performance", "performance"), ("complexity", "code"))


def evaluate(runs: pd.DataFrame, code: pd.DataFrame) -> pd.DataFrame:
    """The claims table: one ``evaluate_claims`` call per family (``FAMILIES``), the load
    matrix's runs without think time."""
    return pd.concat(
        [
            claims_mod.evaluate_claims(
                runs,
                published.claims(scope=scope),
                scope=scope,
                complexity=code,
                think_time_s=0.0,
                family=family,
            )  # fmt: skip
            for scope, family in FAMILIES
        ],
        ignore_index=True,
    )


def _published_summary() -> pd.DataFrame:
    pub = published.published_cells()
    long = pub.melt(
        id_vars=["style", "users"],
        value_vars=["rps", "mean_ms"],
        var_name="metric",
        value_name="mean",
    )
    return long.assign(n=1, ci_low=np.nan, ci_high=np.nan)


def _pair(
    metric: str, measured: pd.DataFrame, title: str, fn: Callable[..., object], **kw: object
) -> plt.Figure:
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.2), sharey=False)
    fn(_published_summary(), metric, ax=a, title=f"Published ({title})", **kw)
    fn(measured, metric, ax=b, title="Measured here (mean, 95% CI over runs)", **kw)
    a.get_legend().remove() if a.get_legend() else None
    fig.tight_layout()
    return fig


def declared(a: Analysis, perf_runs: list[Run]) -> protocol.Analysis:
    """The core's analysis of ``a``: every table, then the claims, and every figure (each
    drawn when written; the time series from ``perf_runs``) and the README's blocks."""
    plots = [
        Plot(
            "shafabakhsh_fig5_1_latency",
            partial(_pair, "mean_ms", a.cells, "thesis Fig. 5.1", figs.grouped_bars),
            "Mean response time per style and load (thesis Fig. 5.1): published "
            "(left) and measured (right).",
        ),
        Plot(
            "shafabakhsh_fig5_2_throughput",
            partial(_pair, "rps", a.cells, "thesis Fig. 5.2 / paper Fig. 3", figs.grouped_bars),
            "Throughput per style and load (thesis Fig. 5.2, paper Fig. 3): published "
            "requests per 180 s as req/s (left) and measured (right).",
        ),
        Plot(
            "shafabakhsh_fig5_3_latency_growth",
            partial(
                _pair, "mean_ms", a.cells, "thesis Fig. 5.3", figs.latency_growth, normalize=True
            ),
            "Growth of mean response time with load, normalised to 50 users (thesis "
            "Fig. 5.3): published (left) and measured (right).",
        ),  # fmt: skip
        Plot(
            "shafabakhsh_figA_2_latency",
            partial(_latency_a2, a.cells),
            "Latency of the three IPC methods at each load (thesis Fig. A.2, p. 54, 'Graph "
            "demonstrating the latency difference between the three IPC methods', printed as "
            "an image only; its numbers are those of Tables 5.1-5.3): published mean response "
            "time (left) and measured (right): mean with its 95% interval over runs, and the "
            "mean of the runs' 95th percentiles dashed; log scale.",
        ),
        *_timeseries_plots(a, perf_runs),
        Plot(
            "shafabakhsh_complexity",
            partial(_complexity_figure, a.complexity),
            "Code per IPC style (thesis section 5.2.2): transport code and schema, "
            "hand-written and generated.",
        ),
    ]
    return protocol.Analysis(a.claims, _tables(a), tuple(plots), readme=partial(readme_blocks, a))


_PAIRWISE_COLUMNS = (
    "metric", "users", "a", "b", "n_a", "n_b", "mean_a", "mean_b", "ratio", "ratio_low",
    "ratio_high", "welch_p", "permutation_p", "mannwhitney_p", "p", "p_holm", "cliffs_delta",
)  # fmt: skip
_LITTLE_COLUMNS = (
    "style", "users", "repetition", "rps", "mean_ms", "think_time_s", "implied_users",
    "relative_error", "implied_think_s",
)  # fmt: skip
_COMPLEXITY_COLUMNS = (
    "style", "files", "loc", "functions", "files_with_generated", "loc_with_generated",
    "functions_with_generated",
)  # fmt: skip


def _tables(a: Analysis) -> tuple[Table, ...]:
    tables = [
        Table(
            "published_vs_measured",
            a.side_by_side,
            "Thesis tables 5.1-5.3 beside the measured cells: mean response time (s) and "
            "requests per 180 s (measured rps x 180), mean and 95% t interval over runs.",
        ),
        Table(
            "pairwise_tests",
            a.comparisons[list(_PAIRWISE_COLUMNS)],
            "Pairwise tests between styles at each load (per-run values): the ratio of means "
            "with its 95% t interval (log scale), Welch's t (primary), the exact permutation "
            "test and Mann-Whitney U; p is the primary p-value, p_holm the same adjusted by "
            "Holm over the table; Cliff's delta (estimate only).",
        ),
        Table(
            "littles_law",
            a.little[list(_LITTLE_COLUMNS)],
            "Little's law N = X(R+Z) on every run: the users implied "
            "by measured throughput and response time.",
        ),
        Table(
            "saturation",
            a.saturation,
            "Saturation (throughput flat while latency grows) per style, measured.",
        ),
        Table(
            "machine_state",
            a.machine,
            "Was the machine comparable across each cell's repetitions? Stack CPU ms per "
            "request (slowest over fastest: cost_ratio), other processes' CPU and steal time, "
            "per cell.",
        ),
        Table(
            "saturation_published",
            a.published_saturation,
            "Saturation detected in the published tables (same rule).",
            in_report=False,
        ),
        Table(
            "complexity",
            a.complexity[list(_COMPLEXITY_COLUMNS)],
            "Thesis section 5.2.2 computed from this repository: files, "
            "lines of code and functions per style, without and with generated code.",
        ),
        Table(
            "power",
            a.power,
            "Runs per cell that each primary test (Welch's t; for a growth claim the t test "
            "of the log interaction) needs to detect the published ratio with 80% power at "
            "the strictest Holm level of the family (docs/statistics.md section 7), from the "
            "runs' own variance; empty runs_needed: more than 1,000.",
        ),
        Table("runs", a.runs, "Every run (per-run metrics).", in_report=False),
        Table("cells", a.cells, "Per-cell statistics over runs.", in_report=False),
    ]
    if len(a.sensitivity_cells):
        sc = a.sensitivity_cells
        sc = sc[sc["metric"].isin(["rps", "mean_ms"])]
        tables.append(Table(
            "think_time_sensitivity",
            sc[["style", "users", "think_time_s", "metric", "n", "mean", "ci_low", "ci_high"]],
            "Sensitivity: 1-2 s of think time per user (the published 50-user figures imply "
            "one).",
        ))  # fmt: skip
    return tuple(tables)


def _latency_a2(cells: pd.DataFrame) -> plt.Figure:
    """Thesis Fig. A.2: mean response time of the three styles over load, published
    (left) and measured with the 95th percentile beside the mean (right)."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.2))
    figs.latency_lines(_published_summary(), ax=a, title="Published (thesis Tables 5.1-5.3)")
    figs.latency_lines(
        cells, ax=b, title="Measured here (mean, 95% CI over runs; p95 dashed)", tail="p95_ms"
    )
    a.get_legend().remove() if a.get_legend() else None
    fig.tight_layout()
    return fig


#: The thesis's time-series figures per load (none at 200 users).
_TIMESERIES_FIGURES = {50: "thesis Figs. A.3 and A.4", 100: "thesis Figs. A.5 and A.6"}
_NO_TIMESERIES = "the thesis shows no time series at this load"


def _timeseries_plots(a: Analysis, perf_runs: list[Run]) -> list[Plot]:
    """Per-second throughput and median latency at each load, first repetition."""
    by_cell: dict[int, dict[str, Run]] = {}
    for run in perf_runs:
        if run.parameters.get("repetition", 1) == 1:
            by_cell.setdefault(int(run.parameters["users"]), {})[str(run.manifest.get("style"))] = (
                run
            )
    return [
        Plot(
            f"shafabakhsh_timeseries_u{users}",
            partial(_timeseries_figure, runs, users, profile(a.profile).warmup_s),
            f"Per-second throughput and median response time at {users} users, first "
            f"repetition ({_TIMESERIES_FIGURES.get(users, _NO_TIMESERIES)}).",
        )
        for users, runs in sorted(by_cell.items())
    ]


def _timeseries_figure(runs: dict[str, Run], users: int, warmup_s: float) -> plt.Figure:
    hist = {style: figs.history_frame(r) for style, r in runs.items()}
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    figs.timeseries(hist, "rps", ax=top, title=f"{users} users: throughput", warmup_s=warmup_s)
    figs.timeseries(hist, "median_ms", ax=bottom, title=f"{users} users: median latency")
    fig.tight_layout()
    return fig


def _complexity_figure(complexity: pd.DataFrame) -> plt.Figure:
    code = complexity[complexity["style"].isin(["rest", "grpc", "amqp"])]
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.4))
    for ax, col, label in zip(
        axes, ("loc", "files", "functions"), ("Lines of code", "Files", "Functions"), strict=True
    ):
        ax.bar(
            code["style"],
            code[col],
            color=[figs.STYLE_COLORS.get(s) for s in code["style"]],
            label="hand-written",
        )
        ax.bar(
            code["style"],
            code[f"{col}_with_generated"] - code[col],
            bottom=code[col],
            color="lightgrey",
            label="generated",
        )
        ax.set_title(label)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(frameon=False)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- README parts

#: The documents' conclusion (T18, P19: averaged over the loads) and the 200-user claims
#: (T13 throughput, T12 mean response time) that the headline reports, in that order.
HEADLINE = (("T18a", "T18b", "T18c", "T18d"), ("T13a", "T13b", "T12a", "T12b"))


def _side(row: pd.Series, relation: str) -> str:
    """'reversed' when significant on the other side of the claim, else the verdict."""
    lo, hi = float(row["ci_low"]), float(row["ci_high"])
    other = hi < 1 if relation == ">" else lo > 1
    return "reversed" if row["verdict"] == claims_mod.NOT_REPRODUCED and other else row["verdict"]


def _ratio_text(row: pd.Series) -> str:
    est, lo, hi = (float(row[k]) for k in ("measured_ratio", "ci_low", "ci_high"))
    return f"{stats.interval_text(est, lo, hi, '.2f')}x"


def headline_markdown(claims: pd.DataFrame) -> str:
    """The headline in one paragraph, from the claims table: does the asynchronous style
    perform better, as the thesis and the paper conclude (T18, P19), and at 200 users (T13,
    T12)? Empty when those claims were not evaluated."""
    by_id = claims.set_index("claim_id")
    if not all(i in by_id.index for ids in HEADLINE for i in ids):
        return ""
    rel = {c.claim_id: c.relation for c in published.claims(scope="performance")}
    parts = []
    for ids, where in zip(HEADLINE, ("averaged over 50, 100 and 200 users", "at 200 users"),
                          strict=True):  # fmt: skip
        r = [by_id.loc[i] for i in ids]
        words = {_side(x, rel[i]) for x, i in zip(r, ids, strict=True)}
        said = words.pop() if len(words) == 1 else "mixed"
        parts.append(
            f"{where} ({', '.join(ids)}: {said}), AMQP carries {_ratio_text(r[0])} REST's "
            f"throughput and {_ratio_text(r[1])} gRPC's, with {_ratio_text(r[2])} REST's mean "
            f"response time and {_ratio_text(r[3])} gRPC's"
        )
    return (
        "**Headline** (generated from `results/claims.csv`). The thesis (ch. 7) and the paper "
        "(section 6) conclude that the asynchronous style offers the better performance "
        "efficiency, and both find RabbitMQ ahead on throughput and response time at 200 "
        f"users. Measured here, {parts[0]}; {parts[1]}. 'reversed': significant on the other "
        "side of the claim."
    )


def power_markdown(power: pd.DataFrame) -> str:
    """``power.csv`` in two sentences: the runs per cell the single-load tests and the
    interactions would need to detect the published ratios."""
    if power.empty:
        return ""
    growth = power["users"].astype(str).str.contains("->")
    single, inter = power[~growth], power[growth]
    need = pd.to_numeric(single["runs_needed"], errors="coerce")
    over = int(need.isna().sum())
    listed = ", ".join(
        f"{r.claim_id} {int(r.runs_needed)}" if np.isfinite(r.runs_needed)
        else f"{r.claim_id} more than 1,000"
        for r in inter.itertuples()
    )  # fmt: skip
    alpha = float(power["alpha"].iloc[0])
    return (
        f"`results/power.csv`: the runs per cell each test of the performance family would "
        f"need to detect the published ratio with 80% power at alpha / family = {alpha:.2g} "
        f"(docs/statistics.md section 7), against the {int(power['runs_per_cell'].min())} made. "
        f"The {len(single)} single-load comparisons' published ratios are "
        f"{single['published_ratio'].min():.4g}-{single['published_ratio'].max():.4g}: they "
        f"would need {need.min():.0f}-{need.max():.0f} runs per cell"
        + (f", {over} of them more than 1,000" if over else "")
        + f". The growth claims (interactions): {listed}."
    )


def cells_markdown(a: Analysis) -> str:
    """Per cell: runs, req/s and mean ms with their intervals, percentiles, and the
    published req/s and mean s; then failures, saturation and Little's law in a sentence."""
    pub = published.published_cells().set_index(["style", "users"])
    lines = [
        "| style | users | runs | req/s (95% CI) | mean ms (95% CI) | p50 ms | p95 ms | p99 ms "
        "| published req/s, mean s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for users in sorted(a.cells["users"].unique()):
        for style in ("rest", "grpc", "amqp"):
            c = {m: _cell(a.cells, style, int(users), m) for m in
                 ("rps", "mean_ms", "p50_ms", "p95_ms", "p99_ms")}  # fmt: skip
            if not len(c["rps"]):
                continue
            cell = [
                stats.interval_text(c[m]["mean"], c[m]["ci_low"], c[m]["ci_high"], ".0f") for m in c
            ]
            p = pub.loc[(style, int(users))] if (style, int(users)) in pub.index else None
            shown = f"{p['rps']:.1f}, {p['mean_ms'] / 1000:.2f}" if p is not None else "-"
            lines.append(f"| {LABELS[style]} | {int(users)} | {int(c['rps']['n'])} | "
                         + " | ".join(cell) + f" | {shown} |")  # fmt: skip
    failed = int(pd.to_numeric(a.runs.get("failures"), errors="coerce").fillna(0).sum())
    sat = a.saturation
    onset = ", ".join(f"{LABELS.get(r.style, r.style)} from {int(r.onset_users)} users"
                      for r in sat.itertuples() if r.saturated)  # fmt: skip
    err = float(a.little["relative_error"].abs().max()) if len(a.little) else float("nan")
    lines += [
        "",
        f"Requests failed in these runs: {failed}. Saturated (throughput flat while latency "
        f"grows): {onset or 'none'}. Little's law N = X(R + Z) holds in every run to within "
        f"{err * 100:.1f}%.",
    ]
    return "\n".join(lines)


def needs(
    claims: pd.DataFrame, runs: pd.DataFrame, perf_runs: list[Run], prefix: str
) -> list[Need]:
    """The performance family's undecided tests for the planner (``ipclab.planner``): cells
    ``<prefix>:<stack>@<users>``, sized from the runs made (``runs``, one row each: an
    internal pilot), each run costing the mean wall time of the runs made (``perf_runs``)."""
    stack_of = {s.style: s.name for s in COMPARED}
    undecided = set(claims.loc[claims["verdict"] == claims_mod.INCONCLUSIVE, "claim_id"])
    base = runs[np.isclose(runs["think_time_s"].astype(float), 0.0)] if len(runs) else runs
    hours = claims_mod.run_hours([r.manifest for r in perf_runs])
    rows = claims_mod.pilot_needs(published.claims(scope="performance"), base, undecided)
    return needs_of("shafabakhsh", rows, claims, hours, lambda s, u: f"{prefix}:{stack_of[s]}@{u}")


def readme_blocks(a: Analysis) -> dict[str, str]:
    """The generated blocks of the reference README (``ipclab.findings.fill_blocks``)."""
    return {
        "sitting": sitting_markdown(a.runs),
        "cells": cells_markdown(a),
        "machine": machine_markdown(a.machine, "the Python matrix"),
        "headline": headline_markdown(a.claims),
        "power": power_markdown(a.power),
    }
