"""The thesis's figures rebuilt from measurements, each file named by its figure number.

The thesis prints numbers only in Tables 2 and 3: :func:`table2_figure` and
:func:`table3_figure` draw them beside the measured cells (every adapter set, 95% t
intervals). Figs. 10-23 print none, so they show measured values only and say so in their
titles; each is drawn once per adapter set measured (the python set under the plain name, the
native set under ``<name>_native``), and :func:`adapters_figure` sets the two side by side:

* Fig. 10: response time per test case, 9 series (protocol x delay), mean and SD;
* Figs. 11-14: bytes and packets sent and received per service host; Figs. 20-23: the
  gateway host's; each as run totals over the measured window (as the thesis's) and per
  request;
* Fig. 15: CPU per host (the load generator left out, as the thesis's), mean and SD;
* Fig. 16: CoAP at 0 ms, the requests with 80 < RT < 200 ms over time;
* Fig. 19: extreme requests against major GC events, and the share of extremes that
  coincide with a GC against chance.

``all_figures(analysis)`` returns ``name -> (figure, caption)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.colors
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ipclab.studies.nyflott import extremes, published, tables
from ipclab.studies.nyflott.hosts import THESIS_HOSTS

STYLES = published.STYLES  # http1, h2c, coap
NAMES = {"http1": "HTTP/1.1", "h2c": "h2c", "coap": "CoAP"}
COLORS = {"http1": "#1f77b4", "h2c": "#ff7f0e", "coap": "#2ca02c"}
HATCH = {"python": "", "native": "//"}
PRIMARY = "python"
MEASURED_ONLY = "measured only; the thesis prints no numbers"
SERVICE_HOSTS = tuple(h for h in THESIS_HOSTS if h != "gateway")
COUNTER_TITLES = {
    "tx_bytes": ("Fig. 11", "Fig. 20", "bytes sent"),
    "rx_bytes": ("Fig. 12", "Fig. 21", "bytes received"),
    "tx_packets": ("Fig. 13", "Fig. 22", "packets sent"),
    "rx_packets": ("Fig. 14", "Fig. 23", "packets received"),
}


def shade(style: str, delay: float, delays: Sequence[float]) -> tuple[float, float, float]:
    """The protocol's colour, darker for a longer delay."""
    base = np.array(matplotlib.colors.to_rgb(COLORS.get(style, "#777777")))
    ds = sorted(delays)
    k = ds.index(delay) / max(len(ds) - 1, 1) if delay in ds else 0.0
    return tuple(np.clip(base * (1.15 - 0.55 * k) + 0.1 * (1 - k), 0, 1))  # type: ignore[return-value]


def _series(df: pd.DataFrame) -> list[tuple[str, float]]:
    """(style, delay) pairs present, in the thesis's legend order (protocol, then delay)."""
    have = {(s, float(d)) for s, d in zip(df["style"], df["delay_ms"], strict=True)}
    return [(s, d) for s in STYLES for d in sorted({d for _, d in have}) if (s, d) in have]


def _err(mean: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    lo = np.where(np.isfinite(low), mean - low, 0.0)
    hi = np.where(np.isfinite(high), high - mean, 0.0)
    return np.nan_to_num(np.array([lo, hi]))


def _clustered(
    ax: Axes,
    cells: pd.DataFrame,
    groups: Sequence[str],
    group_col: str,
    value: str,
    err: str | None = None,
    ci: bool = False,
) -> None:
    """Clustered bars: one cluster per ``groups`` value, one bar per (protocol, delay)
    series; whiskers: ``err`` (an SD column) or, with ``ci``, the 95% interval."""
    series = _series(cells)
    delays = sorted({d for _, d in series})
    width = 0.8 / max(len(series), 1)
    x = np.arange(len(groups))
    for i, (style, delay) in enumerate(series):
        c = cells[(cells["style"] == style) & (cells["delay_ms"].astype(float) == delay)]
        c = c.set_index(group_col).reindex(list(groups))
        m = c[value].to_numpy(float)
        if ci:
            e = _err(m, c[f"{value}_low"].to_numpy(float), c[f"{value}_high"].to_numpy(float))
        elif err is not None:  # mean - SD below 0 (a skewed time): the whisker stops at 0
            sd = np.nan_to_num(c[err].to_numpy(float))
            e = np.vstack([np.minimum(sd, np.nan_to_num(m)), sd])
        else:
            e = None
        ax.bar(x + (i - (len(series) - 1) / 2) * width, m, width, yerr=e, capsize=1.5,
               color=shade(style, delay, delays), edgecolor="black", linewidth=0.3,
               error_kw={"elinewidth": 0.6}, label=f"{NAMES[style]} {delay:g} ms")  # fmt: skip
    ax.set_xticks(x, list(groups))
    ax.grid(axis="y", alpha=0.3)


def _legend_below(fig: Figure, ax: Axes, ncol: int = 6) -> None:
    """The legend of ``ax`` under the figure's axes, where it covers no bar."""
    handles, labels = ax.get_legend_handles_labels()
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.legend(handles, labels, loc="lower center", ncol=ncol, frameon=False, fontsize=8)


# --------------------------------------------------------------------------- Tables 2, 3


def _beside_published(ax: Axes, cells: pd.DataFrame, metric: str, pub: str, ylabel: str) -> None:
    """Per delay a cluster of protocols; per protocol a bar per adapter set (95% t
    interval) and the thesis's value as a black line across the protocol's bars."""
    delays = sorted({float(d) for d in cells["delay_ms"]})
    sets = [s for s in ("python", "native") if (cells["adapters"] == s).any()]
    slot = 0.8 / len(STYLES)
    bar = slot / max(len(sets), 1)
    labelled: set[str] = set()
    for gi, delay in enumerate(delays):
        for si, style in enumerate(STYLES):
            left = gi + (si - (len(STYLES) - 1) / 2) * slot - slot / 2
            c = cells[(cells["style"] == style) & (cells["delay_ms"].astype(float) == delay)]
            for k, adapters in enumerate(sets):
                r = c[c["adapters"] == adapters]
                if r.empty:
                    continue
                m = float(r[metric].iloc[0])
                e = _err(np.array([m]), r[f"{metric}_low"].to_numpy(float),
                         r[f"{metric}_high"].to_numpy(float))  # fmt: skip
                label = f"{NAMES[style]}, {adapters} adapters"
                ax.bar(left + (k + 0.5) * bar, m, bar, yerr=e, capsize=2, color=COLORS[style],
                       hatch=HATCH[adapters], edgecolor="black", linewidth=0.4,
                       label=None if label in labelled else label)  # fmt: skip
                labelled.add(label)
            p = float(c[pub].iloc[0]) if len(c) and pub in c else np.nan
            if np.isfinite(p):
                label = "thesis (printed)"
                ax.hlines(p, left, left + slot * 0.95, color="black", linewidth=2.2,
                          label=None if label in labelled else label)  # fmt: skip
                labelled.add(label)
    ax.set_xticks(range(len(delays)), [f"{d:g} ms" for d in delays])
    ax.set_xlabel("added delay per host")
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)


def table2_figure(t2: pd.DataFrame) -> Figure:
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    _beside_published(axes[0], t2, "mean_ms", "published_mean_ms", "mean response time (ms)")
    _beside_published(axes[1], t2, "rps", "published_rps", "requests/s")
    axes[0].set_title("Table 2: mean response time, thesis beside measured")
    axes[1].set_title("Table 2: throughput (thesis: requests / 600 s)")
    _legend_below(fig, axes[0])
    return fig


def table3_figure(t3: pd.DataFrame) -> Figure:
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for ax, m, label in zip(
        axes, tables.TABLE3_METRICS, ("bytes per request", "packets per request",
                                      "bytes per packet"), strict=True,
    ):  # fmt: skip
        _beside_published(ax, t3, m, f"published_{m}", label)
        ax.set_title(f"Table 3: {label}")
    _legend_below(fig, axes[0])
    return fig


# --------------------------------------------------------------------------- Figs. 10-15


def fig10(cases: pd.DataFrame, adapters: str = PRIMARY) -> Figure:
    c = cases[cases["adapters"] == adapters]
    order = [t for t in tables.TEST_CASES if t in set(c["test_case"])]
    fig, ax = plt.subplots(figsize=(13, 4.5))
    _clustered(ax, c, order, "test_case", "mean_ms", err="sd_ms")
    ax.set_ylabel("response time (ms): mean, whiskers SD (stopped at 0)")
    ax.set_title(f"Fig. 10: response time per test case, {adapters} adapters ({MEASURED_ONLY} "
                 "per test case)")  # fmt: skip
    ax.tick_params(axis="x", labelsize=8)
    _legend_below(fig, ax, ncol=9)
    return fig


def _host_panels(cells: pd.DataFrame, hosts: Sequence[str], per_request: bool,
                 gateway: bool, adapters: str = PRIMARY) -> Figure:  # fmt: skip
    c = cells[(cells["adapters"] == adapters) & cells["host"].isin(hosts)]
    fig, axes = plt.subplots(2, 2, figsize=(12 if not gateway else 9, 7.5))
    for ax, (counter, (f_svc, f_gw, what)) in zip(axes.flat, COUNTER_TITLES.items(), strict=True):
        col = f"{counter}_per_request" if per_request else counter
        _clustered(ax, c, hosts, "host", col, ci=True)
        ax.set_title(
            f"{f_gw if gateway else f_svc}: {what}"
            + (" per request" if per_request else " (measured window)"),
            fontsize=10,
        )
        unit = "bytes" if "bytes" in counter else "packets"
        ax.set_ylabel(f"{unit} per request" if per_request else unit)
    where = "the gateway host" if gateway else "each service host"
    fig.suptitle(f"{where.capitalize()}, {adapters} adapters ({MEASURED_ONLY}); whiskers: 95% "
                 "interval over runs", fontsize=10)  # fmt: skip
    _legend_below(fig, axes[0][0], ncol=9 if not gateway else 5)
    return fig


def fig15(cells: pd.DataFrame, adapters: str = PRIMARY) -> Figure:
    c = cells[(cells["adapters"] == adapters) & cells["host"].isin(THESIS_HOSTS)]
    fig, ax = plt.subplots(figsize=(12, 4.3))
    _clustered(ax, c, THESIS_HOSTS, "host", "cpu_mean", err="cpu_sd")
    ax.set_ylabel("CPU % (100 = one core): mean, whiskers SD")
    ax.set_title(f"Fig. 15: CPU per host, the roles of a host summed, {adapters} adapters "
                 f"({MEASURED_ONLY}; load generator left out)")  # fmt: skip
    _legend_below(fig, ax, ncol=9)
    return fig


# --------------------------------------------------------------------------- Figs. 16, 19


def _coap_zero(runs: pd.DataFrame, adapters: str = PRIMARY) -> pd.DataFrame:
    r = runs[(runs["adapters"] == adapters) & (runs["style"] == "coap")]
    return r[r["delay_ms"].astype(float) == 0.0]


def fig16(slow: pd.DataFrame, runs: pd.DataFrame, adapters: str = PRIMARY) -> Figure | None:
    zero = _coap_zero(runs, adapters)
    if zero.empty:
        return None
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.2), gridspec_kw={"width_ratios": [2.2, 1]})
    s = slow[slow["run"].isin(set(zero["run"]))] if len(slow) else slow
    reps = sorted(zero["repetition"].dropna().unique())
    cmap = plt.get_cmap("viridis", max(len(reps), 1))
    for i, (_, r) in enumerate(zero.sort_values("repetition").iterrows()):
        p = s[s["run"] == r["run"]] if len(s) else s
        label = f"repetition {r['repetition']}: {len(p)} requests"
        a.scatter(p["t_rel"] if len(p) else [], p["latency_ms"] if len(p) else [], s=6,
                  color=cmap(i), label=label)  # fmt: skip
    lo, hi = tables.SLOW_RANGE_MS
    a.set_ylim(lo, hi)
    a.set_xlabel("s since the measured window began")
    a.set_ylabel("response time (ms)")
    a.set_title(f"Fig. 16: CoAP at 0 ms, {adapters} adapters, requests with {lo:g} < RT < "
                f"{hi:g} ms ({MEASURED_ONLY})", fontsize=10)  # fmt: skip
    a.legend(frameon=False, fontsize=7)
    a.grid(alpha=0.3)
    rows = runs[runs["adapters"] == adapters]
    series = _series(rows)
    delays = sorted({d for _, d in series})
    for i, (style, delay) in enumerate(series):
        v = rows[(rows["style"] == style) & (rows["delay_ms"].astype(float) == delay)]
        m = float(v["slow_per_1000"].mean())
        b.bar(i, m, color=shade(style, delay, delays), edgecolor="black", linewidth=0.3)
        b.scatter(np.full(len(v), i), v["slow_per_1000"], s=8, color="black", zorder=3)
    b.set_xticks(range(len(series)), [f"{NAMES[s]}\n{d:g} ms" for s, d in series], fontsize=7)
    b.set_ylabel("requests per 1000 in (80, 200) ms")
    b.set_title("per cell: mean over runs (dots: runs)", fontsize=10)
    b.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def fig19(gc_runs: pd.DataFrame, ext: pd.DataFrame, gcs: pd.DataFrame, runs: pd.DataFrame,
          cells: pd.DataFrame) -> Figure | None:  # fmt: skip
    if gc_runs.empty:
        return None
    fig, (a, b) = plt.subplots(1, 2, figsize=(14, 4.6), gridspec_kw={"width_ratios": [2, 1.2]})
    zero = _coap_zero(runs)
    pick = gc_runs[gc_runs["run"].isin(set(zero["run"]))] if len(zero) else gc_runs
    if pick.empty:
        pick = gc_runs
    run = str(pick.sort_values(["extremes", "run"], ascending=[False, True])["run"].iloc[0])
    e = ext[ext["run"] == run] if len(ext) else ext
    g = gcs[gcs["run"] == run] if len(gcs) else gcs
    roles = sorted(set(g["role"])) if len(g) else []
    cmap = plt.get_cmap("tab10")
    for i, role in enumerate(roles):
        gr = g[g["role"] == role]
        for k, (_, ev) in enumerate(gr.iterrows()):
            a.axvspan(ev["t_rel"], ev["t_rel"] + ev["ms"] / 1000.0, color=cmap(i % 10),
                      alpha=0.35, label=f"major GC: {role}" if k == 0 else None)  # fmt: skip
            a.axvline(ev["t_rel"], color=cmap(i % 10), linewidth=0.6, alpha=0.8)
    if len(e):
        hit = e["gc_role"].fillna("").astype(str) != ""
        a.scatter(e.loc[hit, "t_rel"], e.loc[hit, "latency_ms"], s=36, color="black",
                  edgecolors="white", marker="o", label="extreme, overlaps a GC",
                  zorder=5)  # fmt: skip
        a.scatter(e.loc[~hit, "t_rel"], e.loc[~hit, "latency_ms"], s=44, color="red",
                  marker="x", label="extreme, no GC", zorder=5)  # fmt: skip
    if len(e):
        a.set_ylim(0, float(e["latency_ms"].max()) * 1.15)
    r = gc_runs[gc_runs["run"] == run].iloc[0]
    ident = runs[runs["run"] == run]
    what = (f"{NAMES.get(ident['style'].iloc[0], '?')} {float(ident['delay_ms'].iloc[0]):g} ms, "
            f"{ident['adapters'].iloc[0]} adapters" if len(ident) else run)  # fmt: skip
    a.set_title(f"Fig. 19: extremes (>= {r['threshold_ms']:.1f} ms, the run's slowest 0.021%) "
                f"and major GCs; one run: {what}", fontsize=9)  # fmt: skip
    a.set_xlabel("s since the measured window began")
    a.set_ylabel("response time (ms)")
    a.legend(frameon=True, framealpha=0.85, fontsize=7, loc="best")
    a.grid(alpha=0.3)
    c = cells[cells["adapters"] == PRIMARY] if len(cells) else cells
    series = _series(c) if len(c) else []
    delays = sorted({d for _, d in series})
    for i, (style, delay) in enumerate(series):
        row = c[(c["style"] == style) & (c["delay_ms"].astype(float) == delay)].iloc[0]
        f = np.array([row["fraction"]])
        b.bar(i - 0.2, f, 0.38, color=shade(style, delay, delays), edgecolor="black",
              linewidth=0.3, yerr=_err(f, np.array([row["fraction_low"]]),
                                       np.array([row["fraction_high"]])), capsize=2,
              label="extremes with a GC" if i == 0 else None)  # fmt: skip
        base = np.array([row["baseline_fraction"]])
        b.bar(i + 0.2, base, 0.38, color="lightgrey", edgecolor="black", linewidth=0.3,
              yerr=_err(base, np.array([row["baseline_low"]]), np.array([row["baseline_high"]])),
              capsize=2, label="other requests with a GC (chance)" if i == 0 else None)  # fmt: skip
    th = extremes.THESIS
    b.axhline(th["with_gc"] / th["extremes"], color="black", linestyle="--", linewidth=1,
              label=f"thesis: {th['with_gc']} of {th['extremes']}")  # fmt: skip
    b.set_xticks(range(len(series)), [f"{NAMES[s]}\n{d:g} ms" for s, d in series], fontsize=7)
    b.set_ylim(0, 1.05)
    b.set_ylabel("share overlapping a major GC")
    b.set_title("per cell, python adapters: mean over runs, 95% interval", fontsize=9)
    b.legend(frameon=False, fontsize=7, loc="center right")
    b.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def adapters_figure(effect: pd.DataFrame) -> Figure:
    metrics = [m for m in ("mean_ms", "rps", "bytes_per_request", "cpu_gateway_percent")
               if m in set(effect["metric"])]  # fmt: skip
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.6 * len(metrics), 3.8), squeeze=False)
    for ax, metric in zip(axes[0], metrics, strict=True):
        e = effect[effect["metric"] == metric].reset_index(drop=True)
        delays = sorted({float(d) for d in e["delay_ms"]})
        x = np.arange(len(e))
        r = e["ratio"].to_numpy(float)
        ax.bar(x, r, color=[shade(s, float(d), delays) for s, d in zip(e["style"], e["delay_ms"],
                                                                       strict=True)],
               yerr=_err(r, e["ci_low"].to_numpy(float), e["ci_high"].to_numpy(float)),
               capsize=3, edgecolor="black", linewidth=0.3)  # fmt: skip
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(x, [f"{NAMES[s]}\n{float(d):g} ms" for s, d in zip(e["style"], e["delay_ms"],
                                                                          strict=True)],
                      fontsize=7)  # fmt: skip
        ax.set_title(metric, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("native / python (95% interval)")
    fig.suptitle("What the adapters change: nginx (HTTP/1.1) and nghttpx (h2c) over the python "
                 "adapters", fontsize=10)  # fmt: skip
    fig.tight_layout()
    return fig


ADAPTER_SETS = ("python", "native")
ADAPTER_NAMES = {
    "python": "python adapters",
    "native": "native adapters (nginx, nghttpx, Californium: the thesis's set)",
}


def _per_adapter_figures(a: Any, adapters: str, net: bool) -> dict[str, tuple[Figure, str]]:
    """Figs. 10-15 and 20-23 for one adapter set; the python set keeps the plain names, every
    other set's names end in ``_<set>``."""
    out: dict[str, tuple[Figure, str]] = {}
    tag_set = "" if adapters == PRIMARY else f"_{adapters}"
    who = ADAPTER_NAMES.get(adapters, f"{adapters} adapters")
    if len(a.cases) and (a.cases["adapters"] == adapters).any():
        out[f"nyflott_fig10{tag_set}"] = (fig10(a.cases, adapters), (
            f"Fig. 10 rebuilt: response time per test case, 9 series (protocol x delay), "
            f"{who}; bars: mean over runs of each run's mean, whiskers: the mean "
            "within-run SD (the thesis's error bars; the lower one stops at 0 where the SD "
            "exceeds the mean). The thesis prints no per-test-case "
            "numbers."))  # fmt: skip
    hosts_ok = len(a.hosts) and (a.hosts["adapters"] == adapters).any()
    if hosts_ok and net:
        for per_request in (False, True):
            tag = "_per_request" if per_request else ""
            what = "per request" if per_request else "run totals over the measured window"
            out[f"nyflott_fig11_14{tag}{tag_set}"] = (_host_panels(
                a.hosts, SERVICE_HOSTS, per_request, False, adapters), (
                f"Figs. 11-14 rebuilt: bytes and packets sent and received by each service "
                f"host (the service and its ingress adapter), {what}, {who}, mean "
                "over runs with 95% t intervals. Measured only (the thesis prints no "
                "numbers)."))  # fmt: skip
            out[f"nyflott_fig20_23{tag}{tag_set}"] = (_host_panels(
                a.hosts, ("gateway",), per_request, True, adapters), (
                f"Figs. 20-23 rebuilt: the gateway host (gateway and egress adapter; the "
                f"thesis's nginx1), {what}, {who}, mean over runs with 95% t "
                "intervals. Measured only."))  # fmt: skip
    if hosts_ok and a.hosts.loc[a.hosts["adapters"] == adapters, "cpu_mean"].notna().any():
        out[f"nyflott_fig15{tag_set}"] = (fig15(a.hosts, adapters), (
            f"Fig. 15 rebuilt: CPU per host (its roles summed; 100 = one core), {who}; "
            "bars: mean over runs, whiskers: the mean within-run SD of the 1 Hz "
            "samples (the thesis's error bars). The load generator's host is in the hosts "
            "table. Measured only."))  # fmt: skip
    f16 = fig16(a.slow, a.runs, adapters) if len(a.runs) else None
    if f16 is not None:
        coap = "aiocoap" if adapters == PRIMARY else "Californium"
        out[f"nyflott_fig16{tag_set}"] = (f16, (
            f"Fig. 16 rebuilt: CoAP at 0 ms ({who}: {coap}), every request with a response "
            "time in (80, 200) ms against its time in the measured window, per repetition; "
            "right: such requests per 1000 in every cell. Measured only."))  # fmt: skip
    return out


def all_figures(a: Any) -> dict[str, tuple[Figure, str]]:
    """Every figure the analysis has data for, with its caption."""
    out: dict[str, tuple[Figure, str]] = {}
    primary = a.runs[a.runs["adapters"] == PRIMARY] if len(a.runs) else a.runs
    if len(a.table2):
        out["nyflott_table2"] = (table2_figure(a.table2), (
            "Table 2 beside the thesis's: mean response time and throughput per protocol and "
            "added delay; bars: each adapter set measured (mean over runs, 95% t interval; "
            "hatched: native), black lines: the thesis's printed values."))  # fmt: skip
    net = len(primary) and primary["bytes_per_request"].notna().any()
    if net and len(a.table3):
        out["nyflott_table3"] = (table3_figure(a.table3), (
            "Table 3 beside the thesis's: bytes, packets and bytes per packet per request "
            "(sent and received, summed over the gateway and the four service hosts); bars "
            "measured with 95% t intervals, black lines the thesis's values."))  # fmt: skip
    for adapters in ADAPTER_SETS:
        runs = a.runs[a.runs["adapters"] == adapters] if len(a.runs) else a.runs
        has_net = bool(len(runs) and runs["bytes_per_request"].notna().any())
        out.update(_per_adapter_figures(a, adapters, has_net))
    f19 = fig19(a.gc_runs, a.extremes, a.gc_events, a.runs, a.gc) if len(a.gc) else None
    if f19 is not None:
        out["nyflott_fig19"] = (f19, (
            "Fig. 19 rebuilt: left, one run's extreme requests (its slowest 0.021%, the "
            "thesis's share) against the major GCs of every role (shaded: the pause); right, "
            "per cell the share of extremes that overlap a GC beside the share of the other "
            "requests that do (chance), and the thesis's 52 of 53."))  # fmt: skip
    if a.profile:  # the profiling testbed (profiling.py)
        from ipclab.studies.nyflott import profiling

        out["nyflott_fig9_flame"] = (profiling.flame_figure(a.profile["flame"], config="fixed"), (
            "Fig. 9: a flame graph of the Californium CoAP gateway (flight's ingress adapter) "
            "under the study's load, Californium 3.11's logging (fixed): JFR's stack samples, "
            "x the share of samples, y the stack's depth; frames under 0.5% left out; Fig. 9's "
            "hotspot (a message's toString for log text) outlined in blue."))  # fmt: skip
        out["nyflott_fig17_heap"] = (profiling.heap_figure(a.profile["heap"]), (
            "Fig. 17: the Californium HTTP gateway's (egress adapter's) heap size and used "
            "heap, garbage included, before and after every collection (JFR)."))  # fmt: skip
    if a.thesis_profile:  # the same testbed with the thesis's logging (profiling --config)
        from ipclab.studies.nyflott import profiling

        out["nyflott_fig9_flame_thesis"] = (profiling.flame_figure(
            a.thesis_profile["flame"], config="thesis"), (
            "Fig. 9 in the thesis's configuration: the same CoAP gateway with every message's "
            "log text built by concatenation before the logger drops it (Listing 4.1), the "
            "StringBuilder.append / String.valueOf frames the thesis profiled; its share "
            "with an interval in fig9_hotspot."))  # fmt: skip
    if len(a.adapters):
        out["nyflott_adapters"] = (adapters_figure(a.adapters), (
            "What the adapters change: native (nginx, nghttpx, Californium) over python, per "
            "protocol and delay, ratio of the means over runs with its 95% log-ratio "
            "interval."))  # fmt: skip
    return out
