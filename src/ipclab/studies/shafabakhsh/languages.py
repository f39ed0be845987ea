"""The language factor of the Shafabakhsh experiment (issue 18): the same matrix on the Go
stacks, so that an ordering of IPC styles can be told apart from one language's libraries.

What a notebook calls: ``experiment`` (the Go matrix), ``analyse`` (the Go cells beside the
Python ones, the pairwise tests within each language, the cross-language claims) and
``declared`` (them as the core's analysis, which writes them). The Python side is the
performance matrix of ``performance`` (in the reference, ``shafabakhsh-full-local``); the
two are separate experiments, usually run in separate sittings, so the claims compare
*orderings within a language* (which a slower or faster VM does not change) and never pool
absolute figures across them unless the machine check says the sittings are comparable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

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
from ipclab.stacks import resolve
from ipclab.stats.plausibility_runs import annotate
from ipclab.studies.shafabakhsh import figures as figs
from ipclab.studies.shafabakhsh import performance as perf
from ipclab.studies.shafabakhsh.readme import machine_markdown, span
from ipclab.studies.shafabakhsh.stacks import COMPARED, IN_GO

LANGUAGES = {"python": tuple(s.name for s in COMPARED), "go": tuple(s.name for s in IN_GO)}
STYLES = ("rest", "grpc", "amqp")


@dataclass(frozen=True)
class GoProfile:
    users: tuple[int, ...]
    repetitions: int
    duration_s: float  # per run, warm-up included
    warmup_s: float
    # the Python stacks once per cell at this window, in the Go matrix's sitting, to tell
    # whether the Python matrix's (another sitting's) absolute figures hold on this machine
    anchor_repetitions: int = 0
    share_stacks: bool = False  # as the Python matrix's profile (Experiment.share_stacks)


PROFILES = {
    # the Python matrix's quick window (4 s a cell, 2 s measured after the spawn's 2 s) and
    # shared stacks (performance.PROFILES["quick"])
    "quick": GoProfile(
        users=(50, 100, 200), repetitions=1, duration_s=4, warmup_s=2, share_stacks=True
    ),
    # the Python matrix's loads, repetitions, warm-up and order; 60 s measured instead of
    # 180 s, so that the 45 runs fit one quiet sitting (what the shorter window changes in
    # the Python runs themselves: ``window_check``, the results' window_check table)
    "full": GoProfile(
        users=(50, 100, 200), repetitions=5, duration_s=70, warmup_s=10, anchor_repetitions=1
    ),
}

DEVIATIONS = [
    "The Go matrix measures 60 s per cell after the 10 s warm-up, not the Python matrix's "
    "180 s, so that its 45 runs fit one quiet sitting; the loads, repetitions, order rule "
    "and analysis are the Python matrix's.",
    "The Go and Python matrices ran in different sittings: absolute figures are set side by "
    "side for reading, the claims compare each language's ordering of the styles, measured "
    "within one sitting.",
    *perf.CLIENT_DEVIATIONS,
    perf.DEADLINE_DEVIATION,
]


def profile(name: str) -> GoProfile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; choose {', '.join(PROFILES)}") from None


def _matrix(
    name: str, language: str, repetitions: int, profile_name: str, backend: str, root: Path,
    options: StackOptions | None,
) -> Experiment:  # fmt: skip
    return matrix(name, LANGUAGES[language], repetitions, profile(profile_name), profile_name,
                  backend, root, options)  # fmt: skip


def matrix(
    name: str, stacks: Sequence[str], repetitions: int, p: Any, profile_name: str,
    backend: str, root: Path, options: StackOptions | None,
) -> Experiment:  # fmt: skip
    """A runtime's performance matrix: ``stacks`` at the profile ``p``'s loads, window and
    stack sharing (a Go or a Node.js profile alike), ``repetitions`` per cell."""
    return Experiment(
        name=f"{name}-{profile_name}-{backend}",
        stacks=list(stacks),
        users=p.users,
        repetitions=repetitions,
        duration_s=p.duration_s,
        warmup_s=p.warmup_s,
        backend=backend,
        root=from_repo(root),
        options=options or StackOptions(),
        share_stacks=p.share_stacks,
    )


def experiment(
    profile_name: str,
    backend: str = "local",
    root: Path = DEFAULT_ROOT,
    options: StackOptions | None = None,
) -> Experiment:
    """The performance matrix on the Go stacks (same knobs and order seed as Python's)."""
    reps = profile(profile_name).repetitions
    return _matrix("shafabakhsh-go", "go", reps, profile_name, backend, root, options)


def anchor(
    profile_name: str,
    backend: str = "local",
    root: Path = DEFAULT_ROOT,
    options: StackOptions | None = None,
) -> Experiment | None:
    """The Python stacks at the Go matrix's window in the Go matrix's sitting (None in a
    profile whose Python and Go matrices run in one sitting anyway)."""
    reps = profile(profile_name).anchor_repetitions
    if not reps:
        return None
    return _matrix("shafabakhsh-anchor", "python", reps, profile_name, backend, root, options)


# --------------------------------------------------------------------------- analysis

METRICS = ("rps", "mean_ms")
_WORDS = {"rps": "throughput", "mean_ms": "mean response time"}
# the better side of each metric: higher throughput, lower latency
_BETTER = {"rps": ">", "mean_ms": "<"}


def language_of(stack: str) -> str:
    for lang, stacks in LANGUAGES.items():
        if stack in stacks:
            return lang
    raise ValueError(f"{stack!r} is not a stack of the language factor")


def runs_table(runs: list[Run], warmup_s: float) -> pd.DataFrame:
    """Per-run metrics with a ``language`` column (stats.runs_table's, one row per run)."""
    df = stats.runs_table(runs, warmup_s=warmup_s)
    if df.empty:
        return df.assign(language=pd.Series(dtype=str))
    return df.assign(language=[language_of(s) for s in df["stack"]])


def _tagged(df: pd.DataFrame) -> pd.DataFrame:
    """Style names that carry the language (``rest-go``), so one claims table spans both."""
    return df.assign(style=df["style"] + "-" + df["language"])


ANCHOR_SOURCE = "the Python anchor runs of the Go sitting"
HELD_OUT_SOURCE = "the Python matrix's first repetition, held out"


def split_python(
    python: pd.DataFrame, anchor: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """The Python runs that define the claimed ordering, the Python runs that test it (never
    the same runs: a part judged on the runs it was read off would pass by construction), and
    the definers in words. With an anchor (Python in the Go sitting), the anchor defines and
    the whole Python matrix tests; without one, the matrix's first repetition defines and the
    other repetitions test."""
    if not anchor.empty:
        return anchor, python, ANCHOR_SOURCE
    if python.empty:
        return python, python, HELD_OUT_SOURCE
    first = python["repetition"] == python["repetition"].min()
    return python[first], python[~first], HELD_OUT_SOURCE


def ordering_claims(defining: pd.DataFrame, source: str = "Python measured") -> list[Claim]:
    """ "The ordering of the styles is the same in Go as in Python", one statement per load
    and metric: for every pair of styles, the better side in ``defining`` (the order of its
    means; ``source`` names those runs in the quote), claimed for Python and for Go. Judge
    the claims on runs that did not define them (``split_python``): Python's part is then
    reproduced when other Python runs order the pair the same way, significantly; Go's when
    Go does."""
    out: list[Claim] = []
    for metric in METRICS:
        for users in sorted(defining["users"].dropna().unique().astype(int)):
            g = defining[defining["users"] == users]
            means = g.groupby("style")[metric].mean()
            ranked = sorted(
                (s for s in STYLES if s in means.index),
                key=lambda s: float(means[s]),
                reverse=_BETTER[metric] == ">",
            )
            order = " > ".join(_LABELS[s] for s in ranked)
            first = "best" if metric == "rps" else "fastest"
            sid = f"L-{metric}-{users}"
            quote = (
                f"The ordering of the styles by {_WORDS[metric]} at {users} users is the same in "
                f"Go as in Python ({source}, {first} first: {order})"
            )
            for i, a in enumerate(ranked):
                for b in ranked[i + 1 :]:
                    for lang in LANGUAGES:
                        out.append(
                            Claim(
                                claim_id=f"{sid}-{a}-{b}-{lang}",
                                statement_id=sid,
                                document="issue 18",
                                section="language factor",
                                page="-",
                                quote=quote,
                                scope="performance",
                                metric=metric,
                                test="direction",
                                relation=_BETTER[metric],
                                a_style=f"{a}-{lang}",
                                a_users=(users,),
                                b_style=f"{b}-{lang}",
                                b_users=(users,),
                                from_users=None,
                                to_users=None,
                                published_value="",
                                published_unit="",
                                table_value="",
                                published_ratio=None,
                                band_low=None,
                                band_high=None,
                                note=f"{lang}: {_LABELS[a]} {_BETTER[metric]} {_LABELS[b]}",
                            )
                        )
    return out


_LABELS = {"rest": "REST", "grpc": "gRPC", "amqp": "AMQP"}


@dataclass
class Analysis:
    profile: str
    runs: pd.DataFrame  # one row per run, both languages (``language`` column)
    cells: pd.DataFrame  # cell_summary by language, style, users (long format)
    comparisons: pd.DataFrame  # pairwise tests within each language, Holm over the table
    side_by_side: pd.DataFrame  # per style and load: Python and Go, and Go / Python
    relative: pd.DataFrame  # each style over REST within its language, with its interval
    claims: pd.DataFrame
    statements: pd.DataFrame
    machine: pd.DataFrame  # per language and cell: comparable repetitions?
    sittings: pd.DataFrame  # the anchor: Python in the Go sitting against the Python matrix
    window: pd.DataFrame  # per Python run: the Go matrix's window against its own
    roles: pd.DataFrame  # which runs define the claimed ordering and which test it


def analyse(
    python_runs: list[Run],
    go_runs: list[Run],
    anchor_runs: list[Run] | None,
    profile_name: str,
    seed: int = 0,
) -> Analysis:
    """``python_runs``: the Python performance matrix (``performance.experiments``'s first),
    ``go_runs``: ``experiment``'s, ``anchor_runs``: ``anchor``'s (None or empty when the
    profile has none)."""
    p = profile(profile_name)
    py = runs_table(python_runs, warmup_s=perf.profile(profile_name).warmup_s)
    go = runs_table(go_runs, warmup_s=p.warmup_s)
    runs = pd.concat([py, go], ignore_index=True)
    keys = ("language", "style", "users")
    cells = stats.cell_summary(runs, by=keys, seed=seed)
    comparisons = pd.concat(
        [
            stats.compare_styles(
                runs[runs["language"] == lang], m, by=("users",), styles=STYLES, seed=seed
            ).assign(language=lang)
            for lang in LANGUAGES
            for m in METRICS
        ],
        ignore_index=True,
    )
    comparisons["p_holm"] = stats.holm(comparisons["p"])
    anchor = runs_table(anchor_runs or [], warmup_s=p.warmup_s)
    defining, testing, source = split_python(py, anchor)
    tested = pd.concat([testing, go], ignore_index=True)
    every = [*python_runs, *go_runs, *(anchor_runs or [])]
    claims = claims_mod.evaluate_claims(
        _tagged(annotate(tested, every)), ordering_claims(defining, source), family=FAMILY
    )
    return Analysis(
        profile=profile_name,
        runs=runs,
        cells=cells,
        comparisons=comparisons,
        side_by_side=side_by_side(runs, anchor),
        relative=relative_to_rest(runs),
        claims=claims,
        statements=claims_mod.statement_verdicts(claims),
        machine=stats.machine_check(runs, by=keys),
        sittings=sittings(py, anchor),
        window=window_check(
            python_runs, perf.profile(profile_name).warmup_s, p.duration_s - p.warmup_s
        ),
        roles=roles(defining, testing, go, source),
    )


#: The Holm family of the language factor's claims (one experiment, docs/statistics.md §3).
FAMILY = "language factor"


def roles(defining: pd.DataFrame, testing: pd.DataFrame, go: pd.DataFrame, source: str
          ) -> pd.DataFrame:  # fmt: skip
    """Which runs define the claimed ordering and which test it, with their counts (the
    defining runs test nothing)."""
    rows = [
        ("defines the claimed ordering", source, defining),
        ("tests the Python parts", "the Python runs that did not define it", testing),
        ("tests the Go parts", "the Go matrix", go),
    ]
    return pd.DataFrame(
        [
            {"role": role, "runs_of": what, "runs": len(df),
             "runs_per_cell": _per_cell(df), "experiments": ", ".join(_experiments(df))}
            for role, what, df in rows
        ]
    )  # fmt: skip


def _per_cell(df: pd.DataFrame) -> str:
    if df.empty:
        return "0"
    n = df.groupby(["style", "users"]).size()
    return f"{n.min()}" if n.min() == n.max() else f"{n.min()}-{n.max()}"


def _experiments(df: pd.DataFrame) -> list[str]:
    col = df["experiment"] if "experiment" in df.columns else pd.Series(dtype=str)
    return sorted(str(x) for x in col.dropna().unique())


def _values(df: pd.DataFrame, lang: str, style: str, users: int, metric: str) -> np.ndarray:
    sel = (df["language"] == lang) & (df["style"] == style) & (df["users"] == users)
    x = pd.to_numeric(df.loc[sel, metric], errors="coerce").to_numpy(dtype=float)
    return x[np.isfinite(x)]


def _mean_ci(x: np.ndarray) -> tuple[float, float, float]:
    ci = stats.t_interval(x)
    return ci.estimate, ci.low, ci.high


def side_by_side(runs: pd.DataFrame, anchor: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per style and load: req/s and mean ms in each language (mean, 95% t interval over
    runs) and Go / Python (the delta-method interval of the ratio of means; the two
    languages' runs may come from different sittings: see ``sittings``). With an ``anchor``
    (Python's stacks run in the Go sitting), also its value and Go over it: the same
    sitting, but a point estimate (one run per cell)."""
    anchor = anchor if anchor is not None else pd.DataFrame()
    rows = []
    for users in sorted(runs["users"].dropna().unique().astype(int)):
        for style in STYLES:
            row: dict[str, Any] = {"style": style, "users": users}
            for m in METRICS:
                for lang in LANGUAGES:
                    x = _values(runs, lang, style, users, m)
                    est, lo, hi = _mean_ci(x) if len(x) else (np.nan,) * 3
                    row.update({f"{lang}_{m}": est, f"{lang}_{m}_low": lo, f"{lang}_{m}_high": hi})
                    row[f"{lang}_runs"] = len(x)
                r = stats.log_ratio_interval(
                    [(1, [_values(runs, "go", style, users, m)]),
                     (-1, [_values(runs, "python", style, users, m)])]
                )  # fmt: skip
                row.update({f"go_over_python_{m}": r.estimate,
                            f"go_over_python_{m}_low": r.low,
                            f"go_over_python_{m}_high": r.high})  # fmt: skip
                if not anchor.empty:
                    same = anchor[(anchor["style"] == style) & (anchor["users"] == users)]
                    v = float(pd.to_numeric(same[m], errors="coerce").mean())
                    row[f"anchor_{m}"] = v
                    row[f"go_over_anchor_{m}"] = row[f"go_{m}"] / v if v else np.nan
            rows.append(row)
    return pd.DataFrame(rows)


def relative_to_rest(runs: pd.DataFrame) -> pd.DataFrame:
    """Each style's req/s and mean ms over REST's at the same load, within each language:
    ratios measured within one sitting, which a faster or slower machine moves far less
    than absolute figures."""
    rows = []
    for lang in LANGUAGES:
        for users in sorted(runs["users"].dropna().unique().astype(int)):
            for style in STYLES:
                for m in METRICS:
                    a = _values(runs, lang, style, users, m)
                    b = _values(runs, lang, "rest", users, m)
                    r = stats.log_ratio_interval([(1, [a]), (-1, [b])])
                    rows.append(
                        {"language": lang, "users": users, "style": style, "metric": m,
                         "ratio": r.estimate, "ci_low": r.low, "ci_high": r.high,
                         "n": min(len(a), len(b))}
                    )  # fmt: skip
    return pd.DataFrame(rows)


def sittings(python: pd.DataFrame, anchor: pd.DataFrame, limits: stats.MachineLimits | None = None
             ) -> pd.DataFrame:  # fmt: skip
    """Python's stacks run again in the Go sitting (the anchor) against the Python matrix:
    per cell, the stack CPU per request (the machine check's measure of what a request costs
    on the machine) and req/s of the anchor over the matrix's mean. ``comparable`` when the
    cost ratio stays within the machine check's limit both ways: then the two sittings' absolute
    figures may be set against each other."""
    lim = limits or stats.MachineLimits()
    if anchor.empty:
        return pd.DataFrame()
    rows = []
    for (style, users), g in anchor.groupby(["style", "users"], sort=True):
        ref = python[(python["style"] == style) & (python["users"] == users)]
        cost_ref = pd.to_numeric(ref["stack_cpu_ms_per_request"], errors="coerce").mean()
        cost = pd.to_numeric(g["stack_cpu_ms_per_request"], errors="coerce").mean()
        ratio = float(cost / cost_ref) if cost_ref and np.isfinite(cost_ref) else np.nan
        rps_ref = _mean_ci(pd.to_numeric(ref["rps"], errors="coerce").dropna().to_numpy())
        rps = float(pd.to_numeric(g["rps"], errors="coerce").mean())
        ok = bool(np.isfinite(ratio) and 1 / lim.max_cost_ratio <= ratio <= lim.max_cost_ratio)
        rows.append(
            {
                "style": style,
                "users": int(users),
                "anchor_runs": len(g),
                "cpu_ms_per_request_matrix": cost_ref,
                "cpu_ms_per_request_anchor": cost,
                "cost_ratio": ratio,
                "rps_matrix": rps_ref[0],
                "rps_matrix_low": rps_ref[1],
                "rps_matrix_high": rps_ref[2],
                "rps_anchor": rps,
                "rps_ratio": rps / rps_ref[0] if rps_ref[0] else np.nan,
                "comparable": ok,
            }
        )
    return pd.DataFrame(rows)


def _cumulative(run: Run) -> pd.DataFrame:
    """Locust's per-second history of a run, its ``Aggregated`` rows: ``t`` (Unix s, whole
    seconds), ``n`` (requests completed so far) and ``total_ms`` (their summed response
    time: Locust's running mean times ``n``)."""
    h = run.history()
    if h.empty or "Total Request Count" not in h.columns:
        return pd.DataFrame(columns=["t", "n", "total_ms"])
    h = h[h["Name"] == "Aggregated"] if "Name" in h.columns else h
    n = pd.to_numeric(h["Total Request Count"], errors="coerce")
    mean = pd.to_numeric(h["Total Average Response Time"], errors="coerce")
    out = pd.DataFrame({"t": pd.to_numeric(h["Timestamp"], errors="coerce"), "n": n,
                        "total_ms": n * mean})  # fmt: skip
    return out.dropna().sort_values("t").reset_index(drop=True)


def window_check(runs: list[Run], warmup_s: float, window_s: float) -> pd.DataFrame:
    """What measuring ``window_s`` instead of the whole run changes, in runs that measured
    longer (the Python matrix, for the Go matrix's 60 s): per run, req/s and mean response
    time over the first ``window_s`` after the warm-up (``*_window``) and from the warm-up to
    the run's end (``*_whole``, the window the Python analysis uses), and window over whole
    (``*_ratio``). From Locust's per-second history (cumulative count and mean), so the edges
    fall on whole seconds; ``rps_summary`` is the run's summary (its request records) over
    the whole window, a check of the history's. Runs no longer than the window are left out."""
    rows = []
    for run in runs:
        c = _cumulative(run)
        if not run.complete or c.empty:
            continue
        start = float(c["t"].iloc[0]) + warmup_s

        def at(when: float, c: pd.DataFrame = c) -> pd.Series:
            return c[c["t"] <= when].iloc[-1]  # the last row at or before ``when``

        a, b, z = at(start), at(start + window_s), c.iloc[-1]
        if float(z["t"] - a["t"]) <= window_s or b["n"] <= a["n"]:
            continue
        row: dict[str, Any] = {
            "style": resolve(str(run.manifest["stack"])).style,
            "users": int(run.parameters["users"]),
            "repetition": int(run.parameters.get("repetition", 0)), "run": run.path.name,
            "window_s": float(b["t"] - a["t"]), "whole_s": float(z["t"] - a["t"]),
        }  # fmt: skip
        for part, end in (("window", b), ("whole", z)):
            row[f"rps_{part}"] = float(end["n"] - a["n"]) / float(end["t"] - a["t"])
            row[f"mean_ms_{part}"] = float(end["total_ms"] - a["total_ms"]) / float(
                end["n"] - a["n"]
            )
        row["rps_ratio"] = row["rps_window"] / row["rps_whole"]
        row["mean_ms_ratio"] = row["mean_ms_window"] / row["mean_ms_whole"]
        row["rps_summary"] = run.summary.get("rps")
        row["mean_ms_summary"] = (run.summary.get("latency_ms") or {}).get("mean")
        rows.append(row)
    return pd.DataFrame(rows)


def window_summary(check: pd.DataFrame) -> pd.DataFrame:
    """``window_check``'s ratios in a few numbers, per metric: over the runs (mean, median,
    range, how many within 1 % and 5 %) and over the cells' means (their range)."""
    rows = []
    if check.empty:
        return pd.DataFrame()
    cells = check.groupby(["style", "users"])[["rps_ratio", "mean_ms_ratio"]].mean()
    for metric in METRICS:
        r = check[f"{metric}_ratio"].to_numpy(dtype=float)
        rows.append(
            {"metric": metric, "runs": len(r), "mean": float(r.mean()),
             "median": float(np.median(r)), "min": float(r.min()), "max": float(r.max()),
             "within_1pct": int((np.abs(r - 1) <= 0.01).sum()),
             "within_5pct": int((np.abs(r - 1) <= 0.05).sum()),
             "cells": len(cells), "cell_mean_min": float(cells[f"{metric}_ratio"].min()),
             "cell_mean_max": float(cells[f"{metric}_ratio"].max())}
        )  # fmt: skip
    return pd.DataFrame(rows)


def window_markdown(a: Analysis) -> str:
    """The window check as one paragraph (reference README and closing note), from the
    analysis, never typed."""
    s = window_summary(a.window)
    if s.empty:
        return ""
    r, m = s.set_index("metric").loc["rps"], s.set_index("metric").loc["mean_ms"]
    w = a.window
    check = float((w["rps_whole"] / w["rps_summary"] - 1).abs().max())
    moved = max(abs(x[k] - 1) for x in (r, m) for k in ("cell_mean_min", "cell_mean_max"))
    rel = a.relative
    grpc = rel[(rel["language"] == "go") & (rel["style"] == "grpc") & (rel["metric"] == "rps")]
    grpc = grpc["ratio"].to_numpy(dtype=float)
    return (
        f"What the shorter window changes, measured in the {int(r['runs'])} Python matrix runs "
        f"(`results/window_check.csv`, from Locust's per-second history, whose whole-window "
        f"req/s is within {check * 100:.1f} % of the runs' summaries): req/s over their "
        f"first {w['window_s'].median():.0f} s after the warm-up, over req/s from the warm-up "
        f"to the end ({w['whole_s'].min():.0f}-{w['whole_s'].max():.0f} s), is "
        f"{r['mean']:.3f} on average (median {r['median']:.3f}, runs {r['min']:.2f}-"
        f"{r['max']:.2f}; {int(r['within_5pct'])} of {int(r['runs'])} runs within 5 %, "
        f"{int(r['within_1pct'])} within 1 %), and {r['cell_mean_min']:.3f}-"
        f"{r['cell_mean_max']:.3f} for a cell's mean over its runs. Mean response time: "
        f"{m['mean']:.3f} on average (median {m['median']:.3f}, runs {m['min']:.2f}-"
        f"{m['max']:.2f}; {int(m['within_5pct'])} within 5 %), cells {m['cell_mean_min']:.3f}-"
        f"{m['cell_mean_max']:.3f}. So a cell's mean moves by at most {moved * 100:.1f} % with the "
        f"shorter window, against Go's gRPC over REST of {grpc.min():.2f}-{grpc.max():.2f}x "
        f"req/s."
    )


# --------------------------------------------------------------------------- results


def _cells_of(a: Analysis, lang: str) -> pd.DataFrame:
    c = a.cells[a.cells["language"] == lang]
    return c.drop(columns="language")


def languages_figure(a: Analysis) -> plt.Figure:
    """Req/s (top) and mean response time (bottom) per style and load: Python (left) and
    Go (right), on shared axes, mean with its 95% interval over runs."""
    fig, axes = plt.subplots(2, 2, figsize=(12, 7.5), sharey="row")
    for col, lang in enumerate(LANGUAGES):
        cells = _cells_of(a, lang)
        for row, m in enumerate(METRICS):
            ax = axes[row][col]
            figs.grouped_bars(cells, m, ax=ax, title=f"{lang.capitalize()}: {_WORDS[m]}")
            if col == 0 and ax.get_legend():
                ax.get_legend().remove()
            ax.tick_params(labelleft=True)
    fig.tight_layout()
    return fig


def relative_figure(a: Analysis) -> plt.Figure:
    """gRPC and AMQP over REST at each load, within each language (95% intervals)."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    loads = sorted(a.relative["users"].unique())
    x = np.arange(len(loads))
    bars = [(s, lang) for s in ("grpc", "amqp") for lang in LANGUAGES]
    width = 0.8 / len(bars)
    for ax, m in zip(axes, METRICS, strict=True):
        for i, (style, lang) in enumerate(bars):
            r = (
                a.relative[
                    (a.relative["language"] == lang)
                    & (a.relative["style"] == style)
                    & (a.relative["metric"] == m)
                ]
                .set_index("users")
                .reindex(loads)
            )
            pos = x + (i - (len(bars) - 1) / 2) * width
            est = r["ratio"].to_numpy(dtype=float)
            ax.bar(pos, est, width, color=figs.STYLE_COLORS[style],
                   alpha=1.0 if lang == "go" else 0.45,
                   label=f"{_LABELS[style]} / REST, {lang.capitalize()}")  # fmt: skip
            lo, hi = r["ci_low"].to_numpy(dtype=float), r["ci_high"].to_numpy(dtype=float)
            ok = np.isfinite(lo) & np.isfinite(hi)
            if ok.any():
                ax.errorbar(pos[ok], est[ok], yerr=[est[ok] - lo[ok], hi[ok] - est[ok]],
                            fmt="none", ecolor="black", capsize=3, linewidth=1)  # fmt: skip
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(x, [str(u) for u in loads])
        ax.set_xlabel("Concurrent users")
        ax.set_ylabel(f"{_WORDS[m]} over REST's (same language)")
        ax.set_title(f"{_WORDS[m].capitalize()}: each style over REST")
        ax.grid(axis="y", alpha=0.3)
    axes[1].legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def declared(a: Analysis) -> protocol.Analysis:
    """The core's analysis of ``a``: tables, claims and figures of the language factor, the
    README's blocks, and what the notebook shows beside them (``views``: the tables as
    Markdown, the statements' verdicts, the sittings' check)."""
    return protocol.Analysis(
        a.claims,
        _tables(a),
        (
            Plot(
                "shafabakhsh_languages",
                partial(languages_figure, a),
                "The same product-page matrix in Python (left) and Go (right): req/s and mean "
                "response time per style and load, mean and 95% interval over runs. The two "
                "matrices may come from different sittings (see the sittings table): compare "
                "the orderings within a panel, and the panels' heights with that table in "
                "mind.",
            ),
            Plot(
                "shafabakhsh_languages_relative",
                partial(relative_figure, a),
                "gRPC and AMQP over REST at each load, within each language (Python pale, Go "
                "solid): above 1 on the left and below 1 on the right is better than REST.",
            ),
        ),
        readme=partial(readme_blocks, a),
        views={"tables": markdown_tables(a), "statements": a.statements, "sittings": a.sittings},
    )


_PAIRWISE_COLUMNS = ("language", "metric", "users", "a", "b", "n_a", "n_b", "mean_a", "mean_b",
                     "ratio", "ratio_low", "ratio_high", "p", "p_holm")  # fmt: skip


def _tables(a: Analysis) -> tuple[Table, ...]:
    tables = [
        Table(
            "languages_side_by_side",
            a.side_by_side,
            "Per style and load: req/s and mean response time (ms) in Python and in Go, mean "
            "and 95% t interval over runs, and Go over Python with its 95% interval (the two "
            "matrices may come from different sittings: see the sittings table).",
        ),
        Table(
            "relative_to_rest",
            a.relative,
            "Each style's req/s and mean response time over REST's at the same load, within "
            "each language (one sitting each), with the 95% interval of the ratio.",
        ),
        Table(
            "pairwise_tests",
            a.comparisons[list(_PAIRWISE_COLUMNS)],
            "Pairwise tests between styles at each load within each language (per-run "
            "values): the ratio of means with its 95% interval, the primary p-value (Welch's "
            "t) and the same Holm-adjusted over the table.",
        ),
    ]
    if not a.sittings.empty:  # a profile with an anchor
        tables.append(Table(
            "sittings",
            a.sittings,
            "The Python stacks rerun once per cell in the Go matrix's sitting, against the "
            "Python matrix: stack CPU per request (what a request costs on the machine) and "
            "req/s, anchor over matrix; comparable when the cost ratio is within 1.25 either "
            "way.",
        ))  # fmt: skip
    if not a.window.empty:
        tables.append(Table(
            "window_check",
            a.window,
            "The Go matrix measures 60 s per cell, the Python matrix 180 s: per Python matrix "
            "run, req/s and mean response time over its first 60 s after the warm-up "
            "(window) and over the whole measured window (whole), and window over whole "
            "(Locust's per-second history; rps_summary and mean_ms_summary: the run's "
            "summary over the whole window, from its request records, a check).",
        ))  # fmt: skip
    return (
        *tables,
        Table(
            "machine_state",
            a.machine,
            "Was the machine comparable across each cell's repetitions, per language? Stack "
            "CPU ms per request (slowest over fastest: cost_ratio), other processes' CPU and "
            "steal.",
        ),
        Table(
            "ordering_roles",
            a.roles,
            "Which runs define the ordering the claims state (the order of their means) and "
            "which test it: no run does both, so no part is reproduced by construction.",
        ),
        Table("runs", a.runs, "Every run (per-run metrics).", in_report=False),
        Table("cells", a.cells, "Per-cell statistics over runs.", in_report=False),
    )


def markdown_tables(a: Analysis) -> str:
    """The side-by-side table and the ordering verdicts as Markdown (reference README and
    closing note), from the analysis, never typed."""

    def ci(row: pd.Series, key: str, digits: int) -> str:
        return stats.interval_text(row[key], row[f"{key}_low"], row[f"{key}_high"], f".{digits}f")

    anchored = "go_over_anchor_rps" in a.side_by_side.columns
    extra = " Go / Python same sitting req/s |" if anchored else ""
    lines = [
        "| style | users | Python req/s | Go req/s | Go / Python req/s |" + extra
        + " Python mean ms | Go mean ms | Go / Python mean |",
        "|---|---|---|---|---|" + ("---|" if anchored else "") + "---|---|---|",
    ]  # fmt: skip
    for _, r in a.side_by_side.iterrows():
        same = f" {r['go_over_anchor_rps']:.2f} |" if anchored else ""
        lines.append(
            f"| {_LABELS[r['style']]} | {r['users']} | {ci(r, 'python_rps', 0)} | "
            f"{ci(r, 'go_rps', 0)} | {ci(r, 'go_over_python_rps', 2)} |{same} "
            f"{ci(r, 'python_mean_ms', 1)} | {ci(r, 'go_mean_ms', 1)} | "
            f"{ci(r, 'go_over_python_mean_ms', 2)} |"
        )
    lines += ["", "| statement | parts | reproduced | not reproduced | inconclusive | verdict |",
              "|---|---|---|---|---|---|"]  # fmt: skip
    for _, s in a.statements.iterrows():
        lines.append(
            f"| {s['quote']} | {s['parts']} | {s['reproduced']} | {s['not reproduced']} | "
            f"{s['inconclusive']} | **{s['verdict']}** |"
        )
    return "\n".join(lines)


# --------------------------------------------------------------------------- README parts


def roles_markdown(a: Analysis) -> str:
    """Which runs define the claimed ordering, which test it, and how many tests that makes
    (from the analysis, never typed)."""
    r = a.roles.set_index("role")
    d = claims_mod.distinct_tests(a.claims)
    py = int(d["comparison"].str.contains("-python").sum()) if len(d) else 0
    go = len(d) - py

    def runs(role: str) -> str:
        x = r.loc[role]
        return f"{x['runs']} runs ({x['runs_per_cell']} per cell; `{x['experiments']}`)"

    return (
        f"The ordering each statement claims is the order of the means of "
        f"{r.loc['defines the claimed ordering', 'runs_of']}: "
        f"{runs('defines the claimed ordering')}. Those runs test nothing. The Python parts "
        f"({py} distinct tests) are judged on {runs('tests the Python parts')}, the Go parts "
        f"({go}) on {runs('tests the Go parts')}. So each of the {len(d)} tests could have come "
        f"out either way; none is reproduced by construction."
    )


def relative_markdown(a: Analysis) -> str:
    """Each style's req/s over REST's within each language, as a table."""
    rel = a.relative[a.relative["metric"] == "rps"]
    lines = ["| language | users | gRPC / REST req/s | AMQP / REST req/s |", "|---|---|---|---|"]
    for (lang, users), g in rel.groupby(["language", "users"], sort=False):
        cells = []
        for style in ("grpc", "amqp"):
            x = g[g["style"] == style].iloc[0]
            cells.append(stats.interval_text(x["ratio"], x["ci_low"], x["ci_high"], ".2f"))
        lines.append(f"| {lang} | {users} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


def sittings_markdown(a: Analysis) -> str:
    """The anchor against the Python matrix, per cell, and what it says in a sentence."""
    s = a.sittings
    if s.empty:
        return "No anchor in this profile: the two matrices' sittings are not compared."
    lines = [
        "| style | users | CPU ms per request, Python matrix (mean) | anchor | anchor / matrix "
        "| req/s matrix | anchor | comparable |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in s.itertuples():
        lines.append(
            f"| {_LABELS[r.style]} | {r.users} | {r.cpu_ms_per_request_matrix:.2f} | "
            f"{r.cpu_ms_per_request_anchor:.2f} | {r.cost_ratio:.2f} | {r.rps_matrix:.0f} | "
            f"{r.rps_anchor:.0f} | {r.comparable} |"
        )
    ok = int(s["comparable"].astype(bool).sum())
    same = a.side_by_side.set_index("style")
    gaps = "; ".join(
        f"{_LABELS[st]} {span(same.loc[[st], 'go_over_anchor_rps'], 1)}x"
        for st in STYLES
        if "go_over_anchor_rps" in same.columns and st in same.index
    )
    lines += [
        "",
        f"The anchor's stack CPU per request is {span(s['cost_ratio'], 2)} times the Python "
        f"matrix's; {ok} of {len(s)} cells are within the machine check's limit of "
        f"{stats.MachineLimits().max_cost_ratio:g}x either way. Where they are not, the Go / "
        f"Python ratios across sittings carry the change of machine; Go's req/s over the "
        f"anchor's, in one sitting (one anchor run per cell, no interval): {gaps}.",
    ]
    return "\n".join(lines)


def readme_blocks(a: Analysis) -> dict[str, str]:
    """The generated blocks of the reference README (``ipclab.findings.fill_blocks``)."""
    return {
        "tables": markdown_tables(a),
        "roles": roles_markdown(a),
        "relative": relative_markdown(a),
        "sittings": sittings_markdown(a),
        "window": window_markdown(a),
        "machine": machine_markdown(a.machine[a.machine["language"] == "go"], "the Go matrix"),
    }
