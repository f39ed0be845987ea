"""Figures of Johansson's study, published beside measured, from the tables of
:mod:`ipclab.studies.johansson.analysis`.

* :func:`requests_figure`: thesis Figs. 7.1, 7.3, 7.5 (response time of every request);
* :func:`means_figure`: thesis Figs. 7.2, 7.4, 7.6 (mean response time per interface);
* :func:`trend_figure`: mean response time and the GraphQL / REST ratio against rows per
  table (the sweep), the printed ratios beside;
* :func:`cpu_figure`, :func:`saturation_figure`, :func:`serialisation_figure`,
  :func:`sequential_figure`: what the thesis announced or did not run.

Every function returns a matplotlib Figure; :func:`all_figures` names and captions them as
the core's ``Plot``s (``analysis.declared``), which draws and saves each in turn.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

import matplotlib.colors
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ipclab.protocol import Plot
from ipclab.stats import interval_text
from ipclab.studies.johansson import published

STYLES = ("rest", "graphql")
LABELS = {"rest": "REST (GET /api/Databundle/)", "graphql": "GraphQL (POST /api/graphql)"}
SHORT = {"rest": "REST", "graphql": "GraphQL"}
COLORS = {"rest": "#1f77b4", "graphql": "#e10098"}
FORMAT_COLORS = {"xml": "#8c564b", "json": "#1f77b4", "json-std": "#9ecae1",
                 "thrift": "#ff7f0e", "protobuf": "#2ca02c"}  # fmt: skip
TEST_FIGURES = {1: ("7.1", "7.2"), 2: ("7.3", "7.4"), 3: ("7.5", "7.6")}


def _cell(cells: pd.DataFrame, metric: str, **key: object) -> pd.DataFrame:
    sel = cells["metric"] == metric
    for k, v in key.items():
        sel &= cells[k] == v
    return cells[sel]


def requests_figure(
    published_cells: pd.DataFrame, series: pd.DataFrame, test: int, rows: int
) -> Figure:
    """Left: the printed fastest, mean and slowest request per interface (the thesis's only
    numbers for its per-request figure). Right: every measured request of every run (in
    sending order), the first repetition as a line."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [1, 3]})
    pub = published_cells[published_cells["test"] == test].set_index("style")
    for i, s in enumerate(STYLES):
        if s not in pub.index:
            continue
        lo, hi, mean = pub.loc[s, ["min_ms", "max_ms", "mean_ms"]]
        a.vlines(i, lo, hi, color=COLORS[s], lw=6, alpha=0.5)
        a.plot(i, mean, "o", color=COLORS[s], ms=9)
        a.annotate(f"{mean:g}", (i, mean), xytext=(8, 0), textcoords="offset points", va="center")
    a.set_xticks(range(len(STYLES)), [SHORT[s] for s in STYLES])
    a.set_xlim(-0.6, len(STYLES) - 0.4)
    a.set_ylabel("Response time (ms)")
    fig_no = TEST_FIGURES.get(test, ("?", "?"))[0]
    a.set_title(f"Published (thesis Fig. {fig_no}):\nmin-max range and mean as printed")
    for s in STYLES:
        g = series[series["style"] == s]
        if g.empty:
            continue
        first = g[g["repetition"] == g["repetition"].min()]
        b.scatter(g["seq"], g["latency_ms"], s=4, color=COLORS[s], alpha=0.25)
        b.plot(first["seq"], first["latency_ms"], color=COLORS[s], lw=0.9, label=LABELS[s])
        b.axhline(g["latency_ms"].mean(), color=COLORS[s], ls="--", lw=1)
    runs = series["repetition"].nunique() if len(series) else 0
    b.set_title(f"Measured: {rows} rows per table, every request of {runs} run(s)")
    b.set_xlabel("Request number (per interface, interleaved)")
    b.set_ylabel("Response time (ms)")
    b.legend(frameon=False, fontsize=8)
    for ax in (a, b):
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
    fig.tight_layout()
    return fig


def means_figure(
    published_cells: pd.DataFrame, cells: pd.DataFrame, ratio: pd.Series | None, test: int,
    rows: int,
) -> Figure:  # fmt: skip
    """Left: the printed mean per interface. Right: the measured mean over runs with its 95%
    t interval, and the GraphQL / REST ratio of the means with its interval."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.8))
    pub = published_cells[published_cells["test"] == test].set_index("style")
    x = np.arange(len(STYLES))
    a.bar(x, [pub.loc[s, "mean_ms"] for s in STYLES], color=[COLORS[s] for s in STYLES])
    g, r = pub.loc["graphql", "mean_ms"], pub.loc["rest", "mean_ms"]
    a.set_title(f"Published (thesis Fig. {TEST_FIGURES[test][1]}):\nGraphQL/REST = {g / r:.2f}")
    means, err = [], []
    for s in STYLES:
        c = _cell(cells, "mean_ms", rows=rows, style=s, sequential=False)
        m = float(c["mean"].iloc[0]) if len(c) else np.nan
        lo, hi = (float(c["ci_low"].iloc[0]), float(c["ci_high"].iloc[0])) if len(c) else (m, m)
        means.append(m)
        err.append((m - lo, hi - m) if np.isfinite(lo) else (0.0, 0.0))
    b.bar(x, means, color=[COLORS[s] for s in STYLES], yerr=np.array(err).T, capsize=6)
    title = f"Measured ({rows} rows per table)"
    if ratio is not None and np.isfinite(ratio.get("ratio", np.nan)):
        ci = interval_text(ratio["ratio"], ratio.get("ci_low"), ratio.get("ci_high"), ".2f")
        title += f":\nGraphQL/REST = {ci}"
    b.set_title(title)
    for ax in (a, b):
        ax.set_xticks(x, [SHORT[s] for s in STYLES])
        ax.set_ylabel("Mean response time (ms)")
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def trend_figure(
    cells: pd.DataFrame,
    ratios: pd.DataFrame,
    published: pd.DataFrame,
    thesis_ratios: pd.DataFrame | None = None,
) -> Figure:
    """Left: mean client time (solid) and the gateway's own time (dashed) against rows per
    table, with 95% intervals. Right: GraphQL / REST of the mean client time with its
    interval, the thesis test's measured ratios (its pause) and the thesis's printed ratios
    (tests 1-3; test 1 at 5 rows)."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.2))
    conc = cells[~cells["sequential"].astype(bool)]
    for s in STYLES:
        for metric, ls in (("mean_ms", "-"), ("server_ms", "--")):
            c = _cell(conc, metric, style=s).sort_values("rows")
            if c.empty:
                continue
            what = "client" if metric == "mean_ms" else "gateway (Server-Timing)"
            a.plot(
                c["rows"], c["mean"], ls, marker="o", color=COLORS[s], label=f"{SHORT[s]}, {what}"
            )
            if c["ci_low"].notna().any():
                a.fill_between(c["rows"], c["ci_low"], c["ci_high"], color=COLORS[s], alpha=0.15)
    a.set_xscale("log")
    a.set_xlabel("Rows per table")
    a.set_ylabel("Mean time per request (ms)")
    a.set_title("Mean time against data size (one client)")
    a.legend(frameon=False, fontsize=8)
    r = ratios[(ratios["metric"] == "mean_ms") & ~ratios["sequential"].astype(bool)]
    r = r.sort_values("rows")
    if len(r):
        b.plot(r["rows"], r["ratio"], "o-", color="k", label="measured GraphQL / REST")
        if r["ci_low"].notna().any():
            b.fill_between(r["rows"], r["ci_low"], r["ci_high"], color="grey", alpha=0.25)
    if thesis_ratios is not None and len(thesis_ratios):
        t = thesis_ratios[
            (thesis_ratios["metric"] == "mean_ms") & ~thesis_ratios["sequential"].astype(bool)
        ].sort_values("rows")
        err = np.nan_to_num(np.array([t["ratio"] - t["ci_low"], t["ci_high"] - t["ratio"]]))
        b.errorbar(t["rows"], t["ratio"], yerr=err, fmt="D", mfc="white", color="k", capsize=3,
                   label="measured, thesis test")  # fmt: skip
    b.plot(published["rows"], published["ratio"], "s", color=COLORS["graphql"], ms=8,
           label="thesis (printed means; test 1 at 5 rows)")  # fmt: skip
    for _, p in published.iterrows():
        b.annotate(f"{p['ratio']:.2f}x", (p["rows"], p["ratio"]), xytext=(6, 4),
                   textcoords="offset points", fontsize=8)  # fmt: skip
    b.axhline(1, color="grey", lw=0.8)
    b.set_xscale("log")
    b.set_xlabel("Rows per table")
    b.set_ylabel("GraphQL / REST, mean response time")
    b.set_title("The ratio against data size")
    b.legend(frameon=False, fontsize=8)
    for ax in (a, b):
        ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig


def _bars(ax: Axes, cells: pd.DataFrame, metric: str, keys: Sequence[int], key: str) -> None:
    w = 0.38
    x = np.arange(len(keys))
    for i, s in enumerate(STYLES):
        vals, err = [], []
        for k in keys:
            c = _cell(cells, metric, style=s, **{key: k})
            m = float(c["mean"].mean()) if len(c) else np.nan
            lo = float(c["ci_low"].iloc[0]) if len(c) else np.nan
            hi = float(c["ci_high"].iloc[0]) if len(c) else np.nan
            vals.append(m)
            err.append((m - lo, hi - m) if np.isfinite(lo) and np.isfinite(hi) else (0, 0))
        ax.bar(x + (i - 0.5) * w, vals, w, color=COLORS[s], label=SHORT[s],
               yerr=np.array(err).T, capsize=3)  # fmt: skip
    ax.set_xticks(x, [str(k) for k in keys])
    ax.grid(axis="y", alpha=0.3)


def cpu_figure(sweep_cells: pd.DataFrame, saturation_cells: pd.DataFrame) -> Figure:
    """The CPU test the thesis announced: gateway CPU per request, one client (the sweep)
    and at the highest closed-loop load (saturation), mean over runs with 95% intervals."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 3.8))
    conc = sweep_cells[~sweep_cells["sequential"].astype(bool)] if len(sweep_cells) else sweep_cells
    if len(conc):
        _bars(a, conc, "gateway_cpu_ms", sorted(conc["rows"].unique()), "rows")
    a.set_title("One client (the sweep): gateway CPU per request")
    a.set_xlabel("Rows per table")
    a.set_ylabel("CPU ms per request")
    a.legend(frameon=False)
    if len(saturation_cells):
        top = saturation_cells[saturation_cells["users"] == saturation_cells["users"].max()]
        _bars(b, top, "gateway_cpu_ms", sorted(top["rows"].unique()), "rows")
        b.set_title(f"Saturation ({int(top['users'].max())} users): gateway CPU per request")
    b.set_xlabel("Rows per table")
    b.set_ylabel("CPU ms per request")
    fig.tight_layout()
    return fig


def saturation_figure(cells: pd.DataFrame) -> Figure:
    """Closed-loop users without think time: throughput and mean response time against
    users, per data size (REST solid, GraphQL dashed), with 95% intervals."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.2))
    sizes = sorted(cells["rows"].unique()) if len(cells) else []
    shades = dict(zip(sizes, np.linspace(1.0, 0.45, max(len(sizes), 1)), strict=False))
    for ax, metric, label in ((a, "rps", "Throughput (requests/s)"),
                              (b, "mean_ms", "Mean response time (ms)")):  # fmt: skip
        for rows in sizes:
            for s, ls in (("rest", "-"), ("graphql", "--")):
                c = _cell(cells, metric, rows=rows, style=s).sort_values("users")
                if c.empty:
                    continue
                color = tuple(np.array(matplotlib.colors.to_rgb(COLORS[s])) * shades[rows])
                ax.errorbar(
                    c["users"], c["mean"],
                    yerr=[c["mean"] - c["ci_low"].fillna(c["mean"]),
                          c["ci_high"].fillna(c["mean"]) - c["mean"]],
                    fmt=ls, marker="o", color=color, capsize=3,
                    label=f"{SHORT[s]}, {rows} rows",
                )  # fmt: skip
        ax.set_xlabel("Closed-loop users (no think time)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
    a.legend(frameon=False, fontsize=7, ncol=2)
    a.set_title("Throughput at saturation")
    b.set_title("Response time at saturation")
    fig.tight_layout()
    return fig


def serialisation_figure(cells: pd.DataFrame) -> Figure:
    """Thesis Tables 5.1 and 5.2 measured: bytes, encode and decode time per format on the
    test 2 and test 3 bundles (mean over rounds, 95% t intervals)."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    order = [f for f in ("xml", "json", "json-std", "thrift", "protobuf")
             if f in set(cells["style"])]  # fmt: skip
    sizes = sorted(cells["rows"].unique())
    w = 0.8 / max(len(order), 1)
    for ax, metric, label in zip(
        axes, ("bytes", "encode_us", "decode_us"),
        ("Bytes (Table 5.1)", "Encode µs per op (Table 5.2)", "Decode µs per op"), strict=True,
    ):  # fmt: skip
        for i, f in enumerate(order):
            vals, err = [], []
            for n in sizes:
                c = _cell(cells, metric, style=f, rows=n)
                m = float(c["mean"].iloc[0]) if len(c) else np.nan
                lo, hi = (c["ci_low"].iloc[0], c["ci_high"].iloc[0]) if len(c) else (m, m)
                vals.append(m)
                err.append((m - lo, hi - m) if np.isfinite(lo) and np.isfinite(hi) else (0, 0))
            ax.bar(np.arange(len(sizes)) + (i - (len(order) - 1) / 2) * w, vals, w, label=f,
                   color=FORMAT_COLORS.get(f), yerr=np.array(err).T, capsize=2)  # fmt: skip
        ax.set_xticks(range(len(sizes)), [f"{n} rows" for n in sizes])
        ax.set_title(label)
        ax.grid(axis="y", alpha=0.3)
        if metric != "bytes":
            ax.set_yscale("log")
    axes[0].legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig


def sequential_figure(effect: pd.DataFrame) -> Figure:
    """The sensitivity factor: sequential over concurrent service calls, per interface and
    size (client time and the gateway's own time), with 95% intervals."""
    fig, ax = plt.subplots(figsize=(7, 3.6))
    rows = sorted(effect["rows"].unique()) if len(effect) else []
    x = np.arange(len(rows))
    k = 0
    for s in STYLES:
        for metric, hatch in (("mean_ms", ""), ("server_ms", "//")):
            e = effect[(effect["style"] == s) & (effect["metric"] == metric)].set_index("rows")
            vals = [float(e.loc[r, "ratio"]) if r in e.index else np.nan for r in rows]
            lo = [float(e.loc[r, "ci_low"]) if r in e.index else np.nan for r in rows]
            hi = [float(e.loc[r, "ci_high"]) if r in e.index else np.nan for r in rows]
            err = np.nan_to_num(np.array([np.subtract(vals, lo), np.subtract(hi, vals)]))
            what = "client" if metric == "mean_ms" else "gateway"
            ax.bar(x + (k - 1.5) * 0.2, vals, 0.2, color=COLORS[s], hatch=hatch, alpha=0.85,
                   yerr=err, capsize=3, label=f"{SHORT[s]}, {what}")  # fmt: skip
            k += 1
    ax.axhline(1, color="grey", lw=0.8)
    ax.set_xticks(x, [f"{r} rows" for r in rows])
    ax.set_ylabel("Sequential / concurrent")
    ax.set_title("Gateways calling the four services one after another")
    ax.legend(frameon=False, fontsize=7, ncol=2)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def all_figures(a: Any) -> Iterator[Plot]:
    """Every figure of an ``analysis.Analysis`` with its name and caption, each drawn when
    it is written (the core saves each before the next is drawn)."""
    pub_cells = published.published_cells()
    tests = {int(r): int(t) for t, r in zip(pub_cells["test"], pub_cells["rows"], strict=True)}
    for rows, series in sorted(a.series.items()):
        test = tests.get(rows)
        if test is None or series.empty:
            continue
        f_req, f_mean = TEST_FIGURES[test]
        yield Plot(
            f"johansson_fig{f_req.replace('.', '_')}_test{test}_requests",
            partial(requests_figure, pub_cells, series, test, rows),
            f"Test {test} ({rows} rows per table; thesis Fig. {f_req}): the response time of "
            "every request, published (printed min, mean, max) and measured (every run; the "
            "first as a line, dashed: the mean).",
        )
        r = a.thesis_ratios
        hit = r[(r["rows"] == rows) & (r["metric"] == "mean_ms") & ~r["sequential"].astype(bool)]
        yield Plot(
            f"johansson_fig{f_mean.replace('.', '_')}_test{test}_means",
            partial(means_figure, pub_cells, a.thesis_cells, hit.iloc[0] if len(hit) else None,
                    test, rows),
            f"Test {test} ({rows} rows per table; thesis Fig. {f_mean}): mean response time "
            "per interface, published and measured (95% t interval over runs).",
        )  # fmt: skip
    if len(a.sweep):
        yield Plot(
            "johansson_trend",
            partial(
                trend_figure,
                a.sweep_cells,
                a.sweep_ratios,
                published.published_ratios(),
                a.thesis_ratios,
            ),
            "Mean time per request and the GraphQL / REST ratio against rows per table (the "
            "sweep; bands: 95% intervals), the thesis test's ratios (diamonds) and the "
            "thesis's ratios of its printed means (squares).",
        )
    if len(a.sweep) or len(a.saturation):
        yield Plot(
            "johansson_cpu",
            partial(cpu_figure, a.sweep_cells, a.saturation_cells),
            "The CPU test the thesis announced and did not report: gateway CPU per request, "
            "one client and at saturation (95% intervals).",
        )
    if len(a.saturation):
        yield Plot(
            "johansson_saturation",
            partial(saturation_figure, a.saturation_cells),
            "Saturation curves: throughput and mean response time against closed-loop users "
            "without think time, per size (REST solid, GraphQL dashed).",
        )
    if len(a.sequential):
        yield Plot(
            "johansson_sequential",
            partial(sequential_figure, a.sequential),
            "Sensitivity: sequential over concurrent service calls in the gateways.",
        )
    if len(a.serialisation_cells):
        yield Plot(
            "johansson_serialisation",
            partial(serialisation_figure, a.serialisation_cells),
            "Serialisation formats on the test 2 and 3 bundles (thesis Tables 5.1, 5.2): "
            "bytes, encode and decode time per operation (95% t intervals over rounds).",
        )
