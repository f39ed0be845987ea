"""Figures of the kinds Shafabakhsh's study shows, from ipclab's tables.

* :func:`grouped_bars`: one metric per load (x) and style (bars) with CI error bars
  (thesis Figs. 5.1 and 5.2, paper Fig. 3);
* :func:`latency_growth`: a metric over users, one line per style, optionally normalised to
  the lowest load (thesis Fig. 5.3);
* :func:`latency_lines`: mean response time over users, one line per style, optionally a
  percentile beside it (thesis Fig. A.2);
* :func:`timeseries`: per-second throughput or latency from Locust's history (thesis
  Figs. A.3 to A.6);
* :func:`save`: PNG and SVG into ``figures/``.

Inputs are the long table of :func:`ipclab.stats.cell_summary` (``style, users, metric, mean,
ci_low, ci_high``) and, for time series, :func:`history_frame` of a run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from ipclab.plotting import FIGURES_DIR, save
from ipclab.runs import Run

STYLE_ORDER = ("rest", "grpc", "amqp")
STYLE_LABELS = {
    "rest": "REST (HTTP/1.1 + JSON)",
    "grpc": "gRPC (HTTP/2 + Protobuf)",
    "amqp": "RabbitMQ (AMQP)",
}
STYLE_COLORS = {"rest": "#1f77b4", "grpc": "#2ca02c", "amqp": "#d62728"}
METRIC_LABELS = {
    "rps": "Throughput (requests/s)",
    "ok_rps": "Successful throughput (requests/s)",
    "requests": "Requests per run",
    "total_requests": "Requests per run",
    "mean_ms": "Mean response time (ms)",
    "p50_ms": "Median response time (ms)",
    "p95_ms": "95th percentile response time (ms)",
    "p99_ms": "99th percentile response time (ms)",
    "max_ms": "Maximum response time (ms)",
    "failure_rate": "Failed requests (share)",
}
HISTORY_LABELS = {
    "rps": "Throughput (requests/s)",
    "failures_per_s": "Failures (per s)",
    "mean_ms": "Mean response time, cumulative (ms)",
    "median_ms": "Median response time (ms)",
    "p95_ms": "95th percentile response time (ms)",
    "users": "Users",
}


def _styles(present: Sequence[str]) -> list[str]:
    known = [s for s in STYLE_ORDER if s in present]
    return known + sorted(s for s in present if s not in STYLE_ORDER)


def _ax(ax: Axes | None, figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    if ax is not None:
        fig = ax.get_figure()
        assert isinstance(fig, Figure)
        return fig, ax
    fig, new = plt.subplots(figsize=figsize, layout="constrained")
    return fig, new


def _metric_rows(summary: pd.DataFrame, metric: str) -> pd.DataFrame:
    s = summary[summary["metric"] == metric] if "metric" in summary.columns else summary
    if s.empty:
        raise ValueError(f"no rows for metric {metric!r} in the summary")
    return s


def _yerr(rows: pd.DataFrame) -> np.ndarray:
    lo = (rows["mean"] - rows["ci_low"]).to_numpy(dtype=float)
    hi = (rows["ci_high"] - rows["mean"]).to_numpy(dtype=float)
    return np.nan_to_num(np.vstack([lo, hi]), nan=0.0)


def grouped_bars(
    summary: pd.DataFrame,
    metric: str,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    ylabel: str | None = None,
    annotate: bool = False,
) -> Figure:
    """Bars of ``metric`` per users (groups) and style (bars), with the 95% CI as error bars
    (none when a cell has one run, as in the published tables)."""
    s = _metric_rows(summary, metric)
    fig, ax = _ax(ax, (8.5, 4.0))
    loads = sorted(s["users"].unique())
    styles = _styles(list(s["style"].unique()))
    width = 0.8 / max(len(styles), 1)
    x = np.arange(len(loads))
    for i, st in enumerate(styles):
        rows = s[s["style"] == st].set_index("users").reindex(loads)
        pos = x + (i - (len(styles) - 1) / 2) * width
        mean = rows["mean"].to_numpy(dtype=float)
        bars = ax.bar(pos, mean, width, label=STYLE_LABELS.get(st, st), color=STYLE_COLORS.get(st))
        has_ci = np.isfinite(rows["ci_low"].to_numpy(dtype=float))
        if has_ci.any():
            ax.errorbar(
                pos[has_ci],
                mean[has_ci],
                yerr=_yerr(rows.reset_index())[:, has_ci],
                fmt="none",
                ecolor="black",
                capsize=3,
                linewidth=1,
            )
        if annotate:
            ax.bar_label(bars, fmt="%.3g", fontsize=7, padding=2)
    ax.set_xticks(x, [str(u) for u in loads])
    ax.set_xlabel("Concurrent users")
    ax.set_ylabel(ylabel or METRIC_LABELS.get(metric, metric))
    if title:
        ax.set_title(title)
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(axis="y", alpha=0.3)
    return fig


def latency_growth(
    summary: pd.DataFrame,
    metric: str = "mean_ms",
    *,
    normalize: bool = False,
    ax: Axes | None = None,
    title: str | None = None,
    log_y: bool = False,
) -> Figure:
    """``metric`` over users, one line per style with a CI band; with ``normalize`` each
    style is divided by its value at the lowest load (growth factor)."""
    s = _metric_rows(summary, metric)
    fig, ax = _ax(ax, (7.5, 4.0))
    for st in _styles(list(s["style"].unique())):
        rows = s[s["style"] == st].sort_values("users")
        u = rows["users"].to_numpy(dtype=float)
        m = rows["mean"].to_numpy(dtype=float)
        lo = rows["ci_low"].to_numpy(dtype=float)
        hi = rows["ci_high"].to_numpy(dtype=float)
        if normalize:
            base = m[0]
            m, lo, hi = m / base, lo / base, hi / base
        ax.plot(u, m, marker="o", label=STYLE_LABELS.get(st, st), color=STYLE_COLORS.get(st))
        if np.isfinite(lo).any():
            ax.fill_between(u, lo, hi, alpha=0.2, color=STYLE_COLORS.get(st))
    ax.set_xlabel("Concurrent users")
    label = METRIC_LABELS.get(metric, metric)
    ax.set_ylabel(
        f"{label.split(' (')[0]}, relative to the lowest load (x)" if normalize else label
    )
    if log_y:
        ax.set_yscale("log")
    if title:
        ax.set_title(title)
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(alpha=0.3)
    return fig


def _two_and_five(v: float, _: object) -> str:
    """A log axis's minor label at 2 and 5 times a power of ten only."""
    text = f"{v:g}"
    return text if text[0] in "25" else ""


def latency_lines(
    summary: pd.DataFrame,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    tail: str | None = None,
) -> Figure:
    """Mean response time over users, one line per style with its 95% CI band (none for
    single runs), log scale; ``tail`` (e.g. ``p95_ms``) adds that metric's mean over runs
    as a dashed line of the same colour."""
    fig = latency_growth(summary, "mean_ms", ax=ax, title=title, log_y=True)
    ax = fig.axes[0] if ax is None else ax
    if tail is not None:
        s = _metric_rows(summary, tail)
        for st in _styles(list(s["style"].unique())):
            rows = s[s["style"] == st].sort_values("users")
            label = f"{STYLE_LABELS.get(st, st)}, p95"
            color = STYLE_COLORS.get(st)
            ax.plot(rows["users"], rows["mean"], "--", marker=".", color=color, label=label)
        ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_ylabel("Response time (ms), log scale")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(_two_and_five))
    ax.set_xticks(sorted(summary["users"].unique()))
    return fig


def history_frame(run: Run, name: str = "Aggregated") -> pd.DataFrame:
    """Locust's per-second history of a run (the ``name`` rows; ``Aggregated`` by default)
    as ``t_s`` (seconds since the first row), ``users``, ``rps``, ``failures_per_s``,
    ``mean_ms`` (Locust's cumulative average), ``median_ms``, ``p95_ms``."""
    h = run.history()
    if h.empty:
        return pd.DataFrame(
            columns=["t_s", "users", "rps", "failures_per_s", "mean_ms", "median_ms", "p95_ms"]
        )
    if "Name" in h.columns:
        h = h[h["Name"] == name]
    t = pd.to_numeric(h["Timestamp"], errors="coerce")

    def col(c: str) -> pd.Series:
        return (
            pd.to_numeric(h[c], errors="coerce")
            if c in h.columns
            else pd.Series(np.nan, index=h.index)
        )

    return pd.DataFrame(
        {
            "t_s": t - t.min(),
            "users": col("User Count"),
            "rps": col("Requests/s"),
            "failures_per_s": col("Failures/s"),
            "mean_ms": col("Total Average Response Time"),
            "median_ms": col("50%"),
            "p95_ms": col("95%"),
        }
    ).reset_index(drop=True)


def timeseries(
    histories: Mapping[str, pd.DataFrame],
    column: str = "rps",
    *,
    ax: Axes | None = None,
    title: str | None = None,
    warmup_s: float | None = None,
) -> Figure:
    """One line per labelled history (e.g. ``{"rest": history_frame(run), ...}``) of
    ``column`` over time; ``warmup_s`` shades the discarded warm-up."""
    fig, ax = _ax(ax, (8.5, 3.5))
    for label, h in histories.items():
        ax.plot(
            h["t_s"],
            h[column],
            label=STYLE_LABELS.get(label, label),
            color=STYLE_COLORS.get(label),
            linewidth=1.2,
        )
    if warmup_s:
        ax.axvspan(0, warmup_s, color="grey", alpha=0.15, label="warm-up (discarded)")
    ax.set_xlabel("Time since start (s)")
    ax.set_ylabel(HISTORY_LABELS.get(column, column))
    if title:
        ax.set_title(title)
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(alpha=0.3)
    return fig


__all__ = ["FIGURES_DIR", "save"]
