"""The thesis's own runtime (issue 50): the Shafabakhsh matrix on the Node.js shop, and the
thesis's performance claims judged once per runtime (Node.js, Python, Go) and store.

The thesis ran Node.js ("All the microservices has been developed using NodeJs"); ipclab's
matrices ran the Python shop (``performance``) and the Go shop (``languages``). Here the
same matrix runs on the Node.js stacks (``shop-*-node``) at the Python matrix's window (180 s
after 10 s of warm-up, as the thesis), with (full profile) the Python and Go stacks once per
cell in the same sitting (the anchors: whether the Python and Go matrices' sittings compare
with this one). The thesis's load-matrix claims (``published.claims(scope="performance")``,
notebook 01's) are judged on each runtime's own matrix, each its own Holm family (one
experiment each), so a claim's verdict per runtime compares orderings within one sitting; the
table ``runtime_verdicts`` sets them side by side (the thesis's runtime first) and says which
hold on every runtime and which depend on it, each disagreement explained from the estimates
by ``ipclab.robustness`` against the Node.js side (docs/statistics.md section 8). The store
(``memory``, or ``db`` once the stacks take ``--store db``) is read from each run's manifest
and is a column of the table: runs of one store are judged apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from ipclab import claims as claims_mod
from ipclab import protocol, stats
from ipclab import robustness as rb
from ipclab.backends import StackOptions
from ipclab.experiments import Experiment
from ipclab.paths import repo_relative
from ipclab.protocol import Plot, Table
from ipclab.runs import DEFAULT_ROOT, Run
from ipclab.stats.plausibility_runs import annotate
from ipclab.studies.shafabakhsh import figures as figs
from ipclab.studies.shafabakhsh import languages, published
from ipclab.studies.shafabakhsh import performance as perf
from ipclab.studies.shafabakhsh.stacks import COMPARED, IN_GO, IN_NODE

#: the runtimes, the thesis's own first (the verdict table's first column)
RUNTIMES = {
    "node": tuple(s.name for s in IN_NODE),
    "python": tuple(s.name for s in COMPARED),
    "go": tuple(s.name for s in IN_GO),
}
LABELS = {"node": "Node.js", "python": "Python", "go": "Go"}
MEMORY = "memory"  # the services answer from memory (every stack's default)
METRICS = ("rps", "mean_ms")
WORDS = {"rps": "throughput", "mean_ms": "mean response time"}


@dataclass(frozen=True)
class NodeProfile:
    users: tuple[int, ...]
    repetitions: int
    duration_s: float  # per run, warm-up included
    warmup_s: float
    anchor_repetitions: int = 0  # the Python and Go stacks per cell, in the Node.js sitting
    share_stacks: bool = False


PROFILES = {
    # the Python matrix's quick window and shared stacks (performance.PROFILES["quick"])
    "quick": NodeProfile(
        users=(50, 100, 200), repetitions=1, duration_s=4, warmup_s=2, share_stacks=True
    ),
    # the thesis's window (180 s measured after 10 s of warm-up, the Python matrix's), its
    # loads and the Python matrix's 5 repetitions; the anchors once per cell
    "full": NodeProfile(
        users=(50, 100, 200), repetitions=5, duration_s=190, warmup_s=10, anchor_repetitions=1
    ),
}

DEVIATIONS = [
    "The Node.js, Python and Go matrices ran in different sittings: each runtime's claims "
    "are judged on its own matrix (orderings within one sitting); the anchors (the Python and "
    "Go stacks once per cell in the Node.js sitting) tell whether the absolute figures "
    "compare across sittings.",
    "The Go matrix measures 60 s per cell after its warm-up, the Node.js and Python matrices "
    "180 s (languages' window check says what the shorter window changes).",
    "The services answer from a seeded in-memory generator (store memory) unless a run "
    "records another store; the thesis's services read MongoDB and shipping MySQL, a "
    "database round trip per call. Runs of each store are judged apart.",
    *perf.SETUP_DEVIATIONS[1:2],  # one 2-core machine, the load generator on it
    *perf.CLIENT_DEVIATIONS,
    perf.DEADLINE_DEVIATION,
]


def profile(name: str) -> NodeProfile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; choose {', '.join(PROFILES)}") from None


def _matrix(
    name: str, stacks: Sequence[str], repetitions: int, profile_name: str, backend: str,
    root: Path, options: StackOptions | None,
) -> Experiment:  # fmt: skip
    return languages.matrix(name, stacks, repetitions, profile(profile_name), profile_name,
                            backend, root, options)  # fmt: skip


def experiment(
    profile_name: str,
    backend: str = "local",
    root: Path = DEFAULT_ROOT,
    options: StackOptions | None = None,
) -> Experiment:
    """The performance matrix on the Node.js stacks (same loads, order seed and options as
    the Python matrix's)."""
    reps = profile(profile_name).repetitions
    return _matrix("shafabakhsh-node", RUNTIMES["node"], reps, profile_name, backend, root,
                   options)  # fmt: skip


def anchor(
    profile_name: str,
    backend: str = "local",
    root: Path = DEFAULT_ROOT,
    options: StackOptions | None = None,
) -> Experiment | None:
    """The Python and Go stacks at the Node.js matrix's window in its sitting (None in a
    profile without anchors)."""
    reps = profile(profile_name).anchor_repetitions
    if not reps:
        return None
    stacks = (*RUNTIMES["python"], *RUNTIMES["go"])
    return _matrix("shafabakhsh-node-anchor", stacks, reps, profile_name, backend, root, options)


# --------------------------------------------------------------------------- analysis


def runtime_of(stack: str) -> str:
    for runtime, stacks in RUNTIMES.items():
        if stack in stacks:
            return runtime
    raise ValueError(f"{stack!r} is not a stack of the runtime factor")


def store_of(run: Run) -> str:
    """The store a run's services read (``--store``; ``memory`` where the run records none)."""
    options = run.manifest.get("parameters", {}).get("options") or {}
    return str(options.get("store") or MEMORY)


def runs_table(runs: list[Run], warmup_s: float) -> pd.DataFrame:
    """Per-run metrics (``stats.runs_table``'s) with ``runtime`` and ``store`` columns."""
    df = stats.runs_table(runs, warmup_s=warmup_s)
    if df.empty:
        return df.assign(runtime=pd.Series(dtype=str), store=pd.Series(dtype=str))
    stores = {repo_relative(r.path): store_of(r) for r in runs}
    return df.assign(
        runtime=[runtime_of(s) for s in df["stack"]],
        store=[stores.get(str(p), MEMORY) for p in df["path"]],
    )


def family(runtime: str, store: str) -> str:
    """The Holm family of one runtime's and store's claims (one matrix, one experiment)."""
    return f"performance ({runtime}, {store})"


def judge(runs: pd.DataFrame, manifests: Mapping[str, dict] | None = None) -> pd.DataFrame:
    """The thesis's load-matrix claims judged on each runtime's and store's runs apart (as
    notebook 01 judges them on the Python matrix: underpowered marked the same way, at the
    mean wall time of that runtime's runs, from ``manifests`` by run path), ids
    ``<claim>-<runtime>`` (``-<store>`` after it when not in memory)."""
    judged = []
    claims = published.claims(scope="performance")
    manifests = manifests or {}
    for (runtime, store), g in runs.groupby(["runtime", "store"], sort=False):
        t = claims_mod.evaluate_claims(g, claims, scope="performance", think_time_s=0.0,
                                       family=family(str(runtime), str(store)))  # fmt: skip
        mine = [manifests[p] for p in g.get("path", pd.Series(dtype=str)).astype(str)
                if p in manifests]  # fmt: skip
        hours = claims_mod.run_hours(mine)
        t = claims_mod.mark_underpowered(t, claims_mod.repetitions(claims, g), hours)
        suffix = f"-{runtime}" + ("" if store == MEMORY else f"-{store}")
        judged.append(t.assign(claim_id=t["claim_id"] + suffix, runtime=runtime, store=store))
    if not judged:
        return pd.DataFrame()
    order = {r: i for i, r in enumerate(RUNTIMES)}
    out = pd.concat(judged, ignore_index=True)
    return out.sort_values("runtime", key=lambda s: s.map(order), kind="stable").reset_index(
        drop=True
    )


SAME = "same on every runtime"
NONE_DECIDED = "undecided on every runtime"  # the same verdict, but inconclusive everywhere
DIFFERS = "depends on the runtime"  # the estimates differ (the factor explains it)
UNDECIDED = "differs, not by the estimates"  # runs or noise: the estimates do not differ
MISSING = "not measured on every runtime"


def _side(claims: pd.DataFrame, runtime: str, store: str) -> pd.DataFrame:
    t = claims[(claims["runtime"] == runtime) & (claims["store"] == store)]
    suffix = f"-{runtime}" + ("" if store == MEMORY else f"-{store}")
    return t.assign(claim_id=t["claim_id"].str.removesuffix(suffix))


def verdict_table(claims: pd.DataFrame) -> pd.DataFrame:
    """One row per claim and store: its verdict and estimate on each runtime (the thesis's
    Node.js first), each other runtime's against Node.js explained as ``ipclab.robustness``
    explains a pair (agree, noise, runs, runtime, not measured), and whether the verdict
    holds on every runtime (``across_runtimes``)."""
    if claims.empty:
        return pd.DataFrame()
    out = []
    for store in dict.fromkeys(claims["store"]):
        mine = claims[claims["store"] == store]
        held = [r for r in RUNTIMES if (mine["runtime"] == r).any()]
        first = held[0]
        base = _side(claims, first, store)
        rows = base[["claim_id", "statement_id", "comparison"]].assign(store=store)
        for r in held:
            side = _side(claims, r, store)
            rows = rows.merge(
                side[["claim_id", "measured_ratio", "ci_low", "ci_high", "verdict"]].rename(
                    columns=lambda c, r=r: c if c == "claim_id" else f"{r}_{c}"
                ),
                on="claim_id", how="left",
            )  # fmt: skip
            if r != first:
                pair = rb.side_by_side(rb.Pair(store, (first, r), base, side), factor="runtime")
                why = pair.set_index("claim_id")["explanation"] if len(pair) else pd.Series()
                rows[f"{r}_against_{first}"] = rows["claim_id"].map(why).fillna(rb.NOT_MEASURED)
        for r in RUNTIMES:
            if f"{r}_verdict" not in rows.columns:
                rows[f"{r}_verdict"] = pd.NA
        rows["across_runtimes"] = [_across(row, held) for _, row in rows.iterrows()]
        out.append(rows)
    return pd.concat(out, ignore_index=True)


def _across(row: pd.Series, held: list[str]) -> str:
    verdicts = [row.get(f"{r}_verdict") for r in RUNTIMES]
    if len(held) < len(RUNTIMES) or any(pd.isna(v) for v in verdicts):
        return MISSING
    if len(set(verdicts)) == 1:
        return NONE_DECIDED if verdicts[0] in rb.UNDECIDED else SAME
    whys = [row.get(f"{r}_against_{held[0]}") for r in held[1:]]
    return DIFFERS if "runtime" in whys else UNDECIDED


def verdict_view(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`verdict_table` as the report shows it: per claim and store, one column per
    runtime (its verdict and estimate a/b [95% interval]), each other runtime against
    Node.js, and whether the verdict holds on every runtime."""
    if table.empty:
        return table
    out = table[["claim_id", "comparison", "store"]].copy()
    for r in RUNTIMES:
        if f"{r}_measured_ratio" not in table.columns:
            out[LABELS[r]] = "not measured"
            continue
        cols = [table[f"{r}_{c}"] for c in ("measured_ratio", "ci_low", "ci_high")]
        est = [stats.interval_text(*x, ".3g", open_ends=True) for x in zip(*cols, strict=True)]
        verdict = table[f"{r}_verdict"].fillna("not measured").astype(str)
        out[LABELS[r]] = [v if e == "-" else f"{v}, {e}" for v, e in zip(verdict, est, strict=True)]
    for c in table.columns:
        if "_against_" in c:
            side, first = c.split("_against_")
            out[f"{LABELS[side]} against {LABELS[first]}"] = table[c]
    return out.assign(across_runtimes=table["across_runtimes"])


def verdict_counts(table: pd.DataFrame) -> pd.DataFrame:
    """Per store: how many claims hold on every runtime and how many depend on it."""
    if table.empty:
        return pd.DataFrame(columns=["store", "across_runtimes", "claims"])
    return (
        table.groupby(["store", "across_runtimes"], sort=False).size().rename("claims")
        .reset_index()
    )  # fmt: skip


@dataclass
class Analysis:
    profile: str
    runs: pd.DataFrame  # one row per run of the three matrices (runtime, store columns)
    cells: pd.DataFrame  # cell_summary by runtime, store, style, users
    relative: pd.DataFrame  # each style over REST within each runtime
    claims: pd.DataFrame  # the thesis's claims, once per runtime and store
    verdicts: pd.DataFrame  # verdict_table
    machine: pd.DataFrame
    sittings: pd.DataFrame  # the anchors against the Python and Go matrices


def analyse(
    python_runs: list[Run],
    go_runs: list[Run],
    node_runs: list[Run],
    anchor_runs: list[Run] | None,
    profile_name: str,
    seed: int = 0,
) -> Analysis:
    """The three matrices (the Python one notebook 01's, the Go one notebook 06's, the
    Node.js one ``experiment``'s) and the anchors (``anchor``'s; None or empty when the
    profile has none)."""
    tables = [
        runs_table(python_runs, perf.profile(profile_name).warmup_s),
        runs_table(go_runs, languages.profile(profile_name).warmup_s),
        runs_table(node_runs, profile(profile_name).warmup_s),
    ]
    runs = pd.concat([t for t in tables if len(t)], ignore_index=True)
    every = [*python_runs, *go_runs, *node_runs]
    claims = judge(annotate(runs, every), {repo_relative(r.path): r.manifest for r in every})
    anchors = runs_table(anchor_runs or [], profile(profile_name).warmup_s)
    return Analysis(
        profile=profile_name,
        runs=runs,
        cells=stats.cell_summary(runs, by=("runtime", "store", "style", "users"), seed=seed),
        relative=relative_to_rest(runs),
        claims=claims,
        verdicts=verdict_table(claims),
        machine=stats.machine_check(runs, by=("runtime", "store", "style", "users")),
        sittings=sittings(runs, anchors),
    )


def relative_to_rest(runs: pd.DataFrame) -> pd.DataFrame:
    """Each style's req/s and mean ms over REST's at the same load, within each runtime and
    store (ratios within one sitting), with the 95% interval of the ratio."""
    rows = []
    for (runtime, store, users), g in runs.groupby(["runtime", "store", "users"], sort=False):
        for style in languages.STYLES:
            for m in METRICS:
                a = g.loc[g["style"] == style, m].dropna().to_numpy(float)
                b = g.loc[g["style"] == "rest", m].dropna().to_numpy(float)
                r = stats.log_ratio_interval([(1, [a]), (-1, [b])])
                rows.append(
                    {"runtime": runtime, "store": store, "users": int(users), "style": style,
                     "metric": m, "ratio": r.estimate, "ci_low": r.low, "ci_high": r.high,
                     "n": min(len(a), len(b))}
                )  # fmt: skip
    return pd.DataFrame(rows)


def sittings(runs: pd.DataFrame, anchors: pd.DataFrame) -> pd.DataFrame:
    """Per runtime of the anchors (Python, Go): ``languages.sittings`` of its anchor runs
    against its matrix."""
    if anchors.empty:
        return pd.DataFrame()
    frames = []
    for runtime in ("python", "go"):
        a = anchors[anchors["runtime"] == runtime]
        s = languages.sittings(runs[runs["runtime"] == runtime], a)
        if len(s):
            frames.append(s.assign(runtime=runtime))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


# --------------------------------------------------------------------------- results


def runtimes_figure(a: Analysis) -> plt.Figure:
    """Req/s (top) and mean response time (bottom) per style and load, one column per
    runtime (the thesis's Node.js first), shared axes per row; the services in memory."""
    memory = a.cells[a.cells["store"] == MEMORY] if len(a.cells) else a.cells
    held = [r for r in RUNTIMES if len(memory) and (memory["runtime"] == r).any()] or ["node"]
    fig, axes = plt.subplots(2, len(held), figsize=(4.5 * len(held), 7.5), sharey="row",
                             squeeze=False)  # fmt: skip
    for col, runtime in enumerate(held):
        cells = memory[memory["runtime"] == runtime].drop(columns=["runtime", "store"])
        for row, m in enumerate(METRICS):
            ax = axes[row][col]
            figs.grouped_bars(cells, m, ax=ax, title=f"{LABELS[runtime]}: {WORDS[m]}")
            if col < len(held) - 1 and ax.get_legend():
                ax.get_legend().remove()
            ax.tick_params(labelleft=True)
    fig.tight_layout()
    return fig


def declared(a: Analysis) -> protocol.Analysis:
    """The core's analysis of ``a``: the per-runtime verdict table first, then the tables
    and the figure."""
    tables = [
        Table(
            "runtime_verdicts",
            verdict_view(a.verdicts),
            "The thesis's load-matrix claims judged on each runtime's matrix (Node.js, the "
            "thesis's runtime, first), per store: each runtime's verdict and estimate (ratio "
            "a/b, 95% interval), each other runtime against Node.js (agree; noise or runs: "
            "the estimates do not differ; runtime: they do; docs/statistics.md section 8), and "
            "whether the verdict holds on every runtime.",
        ),
        Table(
            "runtime_estimates",
            a.verdicts,
            "runtime_verdicts in numbers: each runtime's estimate, interval and verdict.",
            in_report=False,
        ),
        Table(
            "runtime_verdict_counts",
            verdict_counts(a.verdicts),
            "Per store: the claims whose verdict is the same on every runtime, those that "
            "depend on the runtime (the estimates differ) and those that differ only as "
            "noise or for want of runs.",
        ),
        Table(
            "relative_to_rest",
            a.relative,
            "Each style's req/s and mean response time over REST's at the same load, within "
            "each runtime (one sitting each), with the 95% interval of the ratio.",
        ),
        Table(
            "machine_state",
            a.machine,
            "Was the machine comparable across each cell's repetitions, per runtime? Stack "
            "CPU ms per request (slowest over fastest: cost_ratio), other processes' CPU and "
            "steal.",
        ),
    ]
    if not a.sittings.empty:
        tables.append(Table(
            "sittings",
            a.sittings,
            "The Python and Go stacks rerun once per cell in the Node.js matrix's sitting, "
            "against their own matrices: stack CPU per request and req/s, anchor over matrix; "
            "comparable when the cost ratio is within 1.25 either way.",
        ))  # fmt: skip
    tables += [
        Table("runs", a.runs, "Every run (per-run metrics).", in_report=False),
        Table("cells", a.cells, "Per-cell statistics over runs.", in_report=False),
    ]
    figure = Plot(
        "shafabakhsh_runtimes",
        partial(runtimes_figure, a),
        "The product-page matrix per runtime (Node.js, the thesis's own, then Python and "
        "Go): req/s and mean response time per style and load, mean and 95% interval over "
        "runs. The matrices come from different sittings: compare orderings within a panel.",
    )
    return protocol.Analysis(a.claims, tuple(tables), (figure,),
                             views={"verdicts": verdict_view(a.verdicts)})  # fmt: skip
