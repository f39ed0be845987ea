"""TLS as a factor of the Shafabakhsh matrix (issues 32 and 50): what encryption costs each
style, on every hop and at the edge only (the thesis's own set-up), and the thesis's remark
that it costs REST more than gRPC.

The thesis's clients sent their requests "over HTTPS to the API gateway endpoint" (section
4.1) and its discussion (section 6.1) says that "adding extra security mechanism to REST API
based communication can lead to a decline in communication performance which does not occur
in gRPC communication as gRPC takes advantage of multiplexed stream function and header
compression that exists in HTTP/2.0". Here the Python matrix runs twice in one sitting, in
the clear and with ``--tls`` (HTTPS to the gateway, HTTPS, gRPC over TLS or AMQPS behind it;
a private authority per stack start) and with ``--tls-hops edge`` (HTTPS to the gateway
only, the gateway's calls to the services and the broker in the clear: the thesis's
configuration), the three variants' cells shuffled together in each repetition
(``Experiment``'s variants), so the ratios TLS / plain of each style are measured on one
machine state. A sitting recorded before the edge level existed (two variants,
:data:`LEGACY_NAME`) is analysed as it was.

What it gives: per style and load, TLS / plain of throughput, mean latency and the stack's
CPU per request with log-ratio intervals (``ratio_table``); and the thesis's remark as an
interaction per load and metric (``claims``): REST's TLS / plain over gRPC's, below 1 for
throughput (REST loses more), above 1 for latency and CPU. In the claims' table the
"load" of an interaction is the TLS factor (0: plain, 1: TLS) and each real load is a
style of its own (``rest@200``), so the study's interaction test applies unchanged. The
remark is judged once per TLS level (claims ``TLS-*``: every hop; ``TLS-EDGE-*``: the edge
only, the thesis's configuration, so the verdict that answers the thesis), each level its
own family (each against the same plain runs).
"""

from __future__ import annotations

from dataclasses import dataclass
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
from ipclab.protocol import Plot, Table
from ipclab.published import Claim
from ipclab.runs import DEFAULT_ROOT, Run
from ipclab.stats.plausibility_runs import annotate
from ipclab.studies.shafabakhsh import figures as figs
from ipclab.studies.shafabakhsh import performance as perf
from ipclab.studies.shafabakhsh import ratios
from ipclab.studies.shafabakhsh.readme import machine_markdown, sitting_markdown
from ipclab.studies.shafabakhsh.stacks import COMPARED, IN_NODE

VARIANTS = {
    "plain": StackOptions(),
    "tls": StackOptions(tls=True),  # every hop
    "edge": StackOptions(tls="edge"),  # HTTPS to the gateway only, as the thesis ran it
}
TREATED = ("tls", "edge")  # the TLS levels, each against plain
#: whose stacks the matrix runs, and the levels each runtime's roles serve (Node.js: the
#: gateway's HTTPS alone, lib/tls.js refuses every hop)
RUNTIMES = {"python": COMPARED, "node": IN_NODE}
RUNTIME_VARIANTS = {"python": tuple(VARIANTS), "node": ("plain", "edge")}
LEVEL = {"tls": "every hop", "edge": "the edge only (the thesis's configuration)"}
CLAIM_PREFIX = {"tls": "TLS", "edge": "TLS-EDGE"}
METRICS = ("rps", "mean_ms", "stack_cpu_ms_per_request")
FAMILY = "tls"
FAMILIES = {"tls": FAMILY, "edge": "tls-edge"}  # each level's claims a family of their own
QUOTE = (
    "adding extra security mechanism to REST API based communication can lead to a decline "
    "in communication performance which does not occur in gRPC communication as gRPC takes "
    "advantage of multiplexed stream function and header compression that exists in HTTP/2.0"
)
DEVIATIONS = [
    *perf.SETUP_DEVIATIONS,
    "Two TLS levels beside plain, interleaved in one sitting. The edge level (--tls-hops "
    "edge) is the thesis's set-up (section 4.1: requests 'over HTTPS to the API gateway "
    "endpoint'): HTTPS from the load generator to the gateway, the gateway's calls to the "
    "services and the broker in the clear; its verdict on the remark is the one that "
    "answers the thesis. The every-hop level (--tls) also encrypts the styles' own hops "
    "(HTTPS, gRPC over TLS or AMQPS to the broker): neither document says whether the hops "
    "behind the gateway were encrypted, and the remark is about the styles, so their own "
    "hops are what it would cost; its verdict is kept beside. The plain runs are the "
    "reference matrix's set-up (plain HTTP/1.1 from the load generator). A sitting recorded "
    "before the edge level (two variants) has no edge verdict.",
    "A private certificate authority per stack start, ECDSA P-256 keys, TLS 1.3 on every "
    "hop but Python's gRPC, whose credentials take no version setting (it negotiates 1.3 "
    "with these peers); every client verifies its peer (docs/tls.md). Connection reuse is "
    "each client's own: Locust's users keep their connections open, REST's gateway keeps a "
    "pool per service, gRPC one channel per service, AMQP one connection per role, so a "
    "handshake is paid per connection, not per page (the bench's per-call and handshake "
    "costs: bench/transports.py --tls).",
    "The window is the Go matrix's (60 s measured after 10 s of warm-up), not the reference "
    "matrix's 180 s: the 135 runs of the three variants fit one sitting. Every variant is "
    "measured with it, so the ratios TLS / plain are of like with like.",
    perf.DEADLINE_DEVIATION,
]
# REST's TLS / plain against gRPC's: REST loses more throughput, gains more latency and CPU
_RELATION = {"rps": "<", "mean_ms": ">", "stack_cpu_ms_per_request": ">"}


@dataclass(frozen=True)
class TlsProfile:
    users: tuple[int, ...]
    repetitions: int
    duration_s: float  # per run, warm-up included
    warmup_s: float


PROFILES = {
    # the Python matrix's quick window: 4 s a cell, 2 s measured after the spawn's 2 s
    "quick": TlsProfile(users=(50,), repetitions=1, duration_s=4, warmup_s=2),
    # the Go matrix's window (60 s measured after 10 s), the Python matrix's loads and
    # repetitions: 90 runs in one sitting
    "full": TlsProfile(users=(50, 100, 200), repetitions=5, duration_s=70, warmup_s=10),
}


LEGACY_NAME = "shafabakhsh-tls-{profile}-{backend}"  # plain and every hop, before the edge


def experiment(
    profile_name: str, backend: str = "local", root: Path = DEFAULT_ROOT, runtime: str = "python"
) -> Experiment:
    """The matrix in the clear, with TLS on every hop and at the edge only, the variants'
    cells shuffled together (a folder of its own: the two-variant sitting's cells would
    otherwise be reused, and the edge runs measured in another sitting). ``runtime``: the
    Python stacks (three levels) or the Node.js ones (plain and the edge, in
    ``shafabakhsh-tls-levels-node-*``)."""
    if runtime not in RUNTIMES:
        raise ValueError(f"unknown runtime {runtime!r}; choose {', '.join(RUNTIMES)}")
    p = PROFILES[profile_name]
    tag = "" if runtime == "python" else f"{runtime}-"
    return Experiment(
        name=f"shafabakhsh-tls-levels-{tag}{profile_name}-{backend}",
        stacks=[s.name for s in RUNTIMES[runtime]],
        users=p.users,
        repetitions=p.repetitions,
        duration_s=p.duration_s,
        warmup_s=p.warmup_s,
        backend=backend,
        root=from_repo(root),
        variants={v: VARIANTS[v] for v in RUNTIME_VARIANTS[runtime]},
    )


def legacy_directory(profile_name: str, backend: str = "local", root: Path = DEFAULT_ROOT) -> Path:
    """The two-variant sitting's folder (plain and every hop, recorded before the edge)."""
    return from_repo(root) / LEGACY_NAME.format(profile=profile_name, backend=backend)


def runs_table(runs: list[Run], warmup_s: float) -> pd.DataFrame:
    """One row per run (``stats.runs_table``'s), its ``variant`` plain, tls or edge."""
    return stats.runs_table(runs, warmup_s=warmup_s)


def levels(runs: pd.DataFrame) -> tuple[str, ...]:
    """The TLS levels the runs hold (``tls``, ``edge``), in :data:`TREATED`'s order."""
    held = set(runs["variant"]) if "variant" in runs.columns else set()
    return tuple(t for t in TREATED if t in held)


def ratio_table(runs: pd.DataFrame, treated: str = "tls") -> pd.DataFrame:
    """Per style, load and metric: the means in the clear and at the TLS level ``treated``
    (``tls``: every hop; ``edge``), and its ratio to plain (column ``<treated>_over_plain``)
    with its log-ratio interval (the runs are the unit)."""
    return ratios.ratio_table(runs, METRICS, treated=treated, baseline="plain")


def claims(users: tuple[int, ...], treated: str = "tls") -> list[Claim]:
    """The thesis's remark as interactions, one per load and metric: REST's growth from plain
    (``0``) to the TLS level ``treated`` (``1``) over gRPC's."""
    prefix, level = CLAIM_PREFIX[treated], LEVEL[treated]
    out = []
    for u in users:
        for metric in METRICS:
            out.append(
                Claim(
                    claim_id=f"{prefix}-{metric}-{u}", statement_id=prefix, document="thesis",
                    section="6.1", page="-", quote=QUOTE, scope="performance", metric=metric,
                    test="interaction", relation=_RELATION[metric],
                    a_style=f"rest@{u}", a_users=(), b_style=f"grpc@{u}", b_users=(),
                    from_users=0, to_users=1, published_value="", published_unit="",
                    table_value="", published_ratio=None, band_low=None, band_high=None,
                    note=f"TLS on {level}, at {u} users: (REST TLS / plain) / (gRPC TLS / "
                    f"plain) {_RELATION[metric]} 1; the 'load' 0 is plain, 1 TLS",
                )
            )  # fmt: skip
    return out


def claims_table(runs: pd.DataFrame, treated: str = "tls") -> pd.DataFrame:
    """The per-run table the claims of the TLS level ``treated`` read (its runs and the plain
    ones): each real load a style of its own, the TLS factor the load (0: plain, 1: TLS)."""
    runs = runs[runs["variant"].isin(("plain", treated))]
    return runs.assign(
        style=runs["style"] + "@" + runs["users"].astype(int).astype(str),
        users=(runs["variant"] == treated).astype(int),
    )


def judge(table: pd.DataFrame) -> pd.DataFrame:
    """The remark judged at every TLS level the runs hold, each level its own family."""
    users = tuple(sorted(int(u) for u in table["users"].unique())) if len(table) else ()
    judged = [
        claims_mod.evaluate_claims(
            claims_table(table, t), claims(users, t), family=FAMILIES[t]
        )
        for t in levels(table) or ("tls",)
    ]  # fmt: skip
    return pd.concat(judged, ignore_index=True) if len(judged) > 1 else judged[0]


AGREEMENT = "tls_agreement"  # results/tls_agreement.csv: the report's plain vs TLS pair


def agreement(table: pd.DataFrame, treated: str = "tls") -> pd.DataFrame:
    """The thesis's load-matrix claims (its performance family, as notebook 01 judges them)
    judged on the plain runs and on the runs of the TLS level ``treated`` apart, side by side
    (:func:`ipclab.robustness.side_by_side`, factor ``tls``): whether a verdict depends on
    TLS (docs/statistics.md section 8)."""
    from ipclab import robustness as rb
    from ipclab.studies.shafabakhsh import published

    sides = [
        claims_mod.evaluate_claims(
            table[table["variant"] == variant], published.claims(scope="performance"),
            scope="performance", think_time_s=0.0, family="performance",
        )
        for variant in ("plain", treated)
    ]  # fmt: skip
    return rb.side_by_side(rb.Pair("TLS", ("plain", treated), *sides), factor="tls")


@dataclass
class Analysis:
    profile: str
    runs: pd.DataFrame
    ratios: pd.DataFrame
    claims: pd.DataFrame
    machine: pd.DataFrame
    agreement: pd.DataFrame | None = None
    edge_ratios: pd.DataFrame | None = None  # edge / plain, when the sitting has the edge


def analyse(runs: list[Run], profile_name: str) -> Analysis:
    p = PROFILES[profile_name]
    table = runs_table(runs, p.warmup_s)
    judged = judge(annotate(table, runs))
    held = levels(table)  # the Node.js sitting holds the edge alone
    return Analysis(
        profile=profile_name,
        runs=table,
        ratios=ratio_table(table) if "tls" in held or not held else pd.DataFrame(),
        claims=judged,
        machine=stats.machine_check(table, by=("variant", "style", "users")),
        agreement=agreement(table, held[0]) if len(table) and held else None,
        edge_ratios=ratio_table(table, "edge") if "edge" in levels(table) else None,
    )


def ratio_figure(ratios: pd.DataFrame, treated: str = "tls") -> plt.Figure:
    """TLS / plain per style and load at the level ``treated``, one panel per metric (95%
    intervals)."""
    column = f"{treated}_over_plain"
    tag = "TLS" if treated == "tls" else "edge TLS"
    fig, axes = plt.subplots(1, len(METRICS), figsize=(14, 4.2))
    loads = sorted(ratios["users"].unique()) if len(ratios) else []
    styles = [s for s in figs.STYLE_COLORS if s in set(ratios.get("style", []))]
    x = np.arange(len(loads))
    width = 0.8 / max(len(styles), 1)
    for ax, metric in zip(axes, METRICS, strict=True):
        for i, style in enumerate(styles):
            r = ratios[(ratios["style"] == style) & (ratios["metric"] == metric)]
            r = r.set_index("users").reindex(loads)
            est = r[column].to_numpy(float)
            lo, hi = r["low"].to_numpy(float), r["high"].to_numpy(float)
            pos = x + (i - (len(styles) - 1) / 2) * width
            ax.bar(pos, est, width, color=figs.STYLE_COLORS[style],
                   label=figs.STYLE_LABELS.get(style, style))  # fmt: skip
            ok = np.isfinite(lo) & np.isfinite(hi)
            if ok.any():
                ax.errorbar(pos[ok], est[ok], yerr=[est[ok] - lo[ok], hi[ok] - est[ok]],
                            fmt="none", ecolor="black", capsize=3, linewidth=1)  # fmt: skip
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(x, [str(u) for u in loads])
        ax.set_xlabel("Concurrent users")
        ax.set_title(f"{figs.METRIC_LABELS.get(metric, metric)}: {tag} / plain")
        ax.grid(axis="y", alpha=0.3)
    axes[-1].legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def every_hop(a: Analysis) -> bool:
    """Whether the sitting holds the every-hop level (the Node.js sitting does not; a
    sitting with no TLS run keeps the every-hop table, empty, as before the edge)."""
    held = levels(a.runs)
    return "tls" in held or not held


def declared(a: Analysis) -> protocol.Analysis:
    """The core's analysis of ``a``: the tables (the edge level's after the claims), the
    figures, the reference README's blocks (``readme_blocks``)."""
    edge = a.edge_ratios is not None
    every = every_hop(a)
    tls_over_plain = Table(
        "tls_over_plain",
        a.ratios,
        "Per style, load and metric: the mean over runs in the clear and with TLS on every "
        "hop, and TLS / plain with its 95% log-ratio interval (the runs are the unit; both "
        "variants shuffled together in each repetition, one sitting).",
    )
    tables = [
        *([tls_over_plain] if every else []),
        Table(
            "machine_state",
            a.machine,
            "Was the machine comparable across each cell's repetitions, per variant? Stack "
            "CPU ms per request (slowest over fastest: cost_ratio), other processes' CPU and "
            "steal.",
        ),
        Table("runs", a.runs, "Every run (per-run metrics).", in_report=False),
    ]
    if a.agreement is not None:
        tables.append(Table(
            AGREEMENT,
            a.agreement,
            "The thesis's load-matrix claims judged on the plain runs and on the TLS runs "
            "apart: each side's estimate and verdict, TLS / plain of the estimates and what "
            "explains a disagreement (docs/statistics.md section 8).",
            in_report=False,
        ))  # fmt: skip
    figures = [
        Plot(
            "shafabakhsh_tls_over_plain",
            partial(ratio_figure, a.ratios),
            "What TLS on every hop costs each style: TLS / plain of req/s, mean response time "
            "and the stack's CPU per request at each load, mean and 95% interval over runs "
            "(1: no cost; the thesis's remark expects REST's bars further from 1 than "
            "gRPC's).",
        )
    ][: 1 if every else 0]
    if edge:  # HTTPS to the gateway only: the thesis's set-up
        tables.append(Table(
            "edge_over_plain",
            a.edge_ratios,
            "Per style, load and metric: the mean over runs in the clear and with TLS at the "
            "edge only (HTTPS from the load generator to the gateway, the thesis's set-up; "
            "the gateway's calls in the clear), and edge / plain with its 95% log-ratio "
            "interval (the runs are the unit; shuffled with the plain and every-hop runs, "
            "one sitting).",
        ))  # fmt: skip
        figures.append(Plot(
            "shafabakhsh_edge_tls_over_plain",
            partial(ratio_figure, a.edge_ratios, "edge"),
            "What HTTPS to the gateway alone (the thesis's set-up) costs each style: edge / "
            "plain of req/s, mean response time and the stack's CPU per request at each "
            "load, mean and 95% interval over runs (1: no cost).",
        ))  # fmt: skip
    return protocol.Analysis(
        a.claims, tuple(tables), tuple(figures), readme=partial(readme_blocks, a),
        claims_before="edge_over_plain",
    )  # fmt: skip


def ratios_markdown(table: pd.DataFrame, treated: str = "tls") -> str:
    """TLS / plain per style and load, one column per metric, with 95% intervals."""
    return ratios.ratios_markdown(table, METRICS, f"{treated}_over_plain")


def readme_blocks(a: Analysis) -> dict[str, str]:
    """The generated blocks of the TLS reference's README (``ipclab.findings.fill_blocks``)."""
    machine = [
        f"{variant}:\n\n" + machine_markdown(m.drop(columns="variant"), f"the {variant} runs")
        for variant, m in a.machine.groupby("variant")
    ]
    counted = f"{int((a.runs['variant'] == 'tls').sum())} with TLS"
    if a.edge_ratios is not None:
        counted += f" on every hop, {int((a.runs['variant'] == 'edge').sum())} at the edge"
    blocks = {
        "sitting": sitting_markdown(a.runs, f"{len(a.runs)} runs ({counted})"),
        "ratios": ratios_markdown(a.ratios) if every_hop(a) else "",
        "machine": "\n\n".join(machine),
    }
    if a.edge_ratios is not None:  # a sitting with the edge level (issue 50)
        blocks["edge_ratios"] = ratios_markdown(a.edge_ratios, "edge")
    return blocks
