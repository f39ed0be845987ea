"""Figures: paper figure 4 beside the measured A, MTTF and MTTR per method, the outage timeline."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ipclab.availability.outage import CLASSES
from ipclab.runs import Run
from ipclab.studies.shafabakhsh import figures as figs
from ipclab.studies.shafabakhsh.availability.analysis import Analysis, _run_info, classified_outage
from ipclab.studies.shafabakhsh.availability.profiles import STYLES


def _err(v: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    lo = np.where(np.isfinite(lo), lo, v)
    hi = np.where(np.isfinite(hi), hi, v)
    return np.vstack([np.clip(v - lo, 0, None), np.clip(hi - v, 0, None)])


def _col(df: pd.DataFrame, style: str, col: str) -> float:
    hit = df[df["style"] == style] if len(df) else df
    if not len(hit) or col not in hit.columns or hit.iloc[0][col] is None:
        return float("nan")
    return float(pd.to_numeric(hit.iloc[0][col], errors="coerce"))


def figure_availability(a: Analysis) -> plt.Figure:
    """Paper figure 4 beside the measured A: published printed and recomputed A (left);
    measured A with its interval, fault injection and until failure (right)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2))
    x = np.arange(len(STYLES))
    f = a.formula
    printed = [_col(f, s, "printed_a") for s in STYLES]
    formula = [_col(f, s, "computed_a") for s in STYLES]
    left.bar(x - 0.2, printed, 0.4, label="printed (table 5.4)", color="grey")
    left.bar(x + 0.2, formula, 0.4, label="MTTF/(MTTF+MTTR) of its own numbers", color="black")
    left.set_ylim(0.9, 0.96)
    left.set_title("Published, 200 users (thesis table 5.4 / paper fig. 4)")
    for i, (label, df) in enumerate(
        (("fault injection", a.fault_injection), ("until failure", a.until_failure))
    ):
        m1_users = df[df["users"] == df["users"].min()] if len(df) else df
        v = np.array([_col(m1_users, s, "availability") for s in STYLES])
        lo = np.array([_col(m1_users, s, "availability_lo") for s in STYLES])
        hi = np.array([_col(m1_users, s, "availability_hi") for s in STYLES])
        pos = x + (i - 0.5) * 0.4
        right.bar(
            pos,
            np.nan_to_num(v),
            0.4,
            label=label,
            color=[figs.STYLE_COLORS[s] for s in STYLES],
            alpha=1.0 if i == 0 else 0.45,
            edgecolor="black",
        )
        ok = np.isfinite(v)
        if ok.any():
            right.errorbar(
                pos[ok], v[ok], yerr=_err(v, lo, hi)[:, ok], fmt="none", ecolor="black", capsize=3
            )
        for j in np.flatnonzero(~ok):
            right.text(
                pos[j],
                0.02,
                "censored" if len(df) else "not run",
                rotation=90,
                ha="center",
                va="bottom",
                fontsize=8,
            )
    right.set_ylim(0, 1.05)
    right.set_title("Measured A with 95% interval (dark: fault injection; light: until failure)")
    for ax in (left, right):
        ax.set_xticks(x, [figs.STYLE_LABELS[s] for s in STYLES], fontsize=8)
        ax.set_ylabel("Availability A")
        ax.grid(axis="y", alpha=0.3)
    left.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig


def figure_mttf_mttr(a: Analysis) -> plt.Figure:
    """MTTF and MTTR per style: published (thesis table 5.4), fault injection and until
    failure, with intervals; a censored MTTF is drawn as its lower bound, hatched."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    x = np.arange(len(STYLES))
    groups = (
        ("published", None),
        ("fault injection", a.fault_injection),
        ("until failure", a.until_failure),
    )
    for ax, metric, pub_col in zip(axes, ("mttf_s", "mttr_s"), ("mttf_s", "mttr_s"), strict=True):
        for i, (label, df) in enumerate(groups):
            pos = x + (i - 1) * 0.27
            if df is None:
                v = np.array([_col(a.formula, s, pub_col) for s in STYLES])
                ax.bar(pos, v, 0.27, color="grey", label=label)
                continue
            d = df[df["users"] == df["users"].min()] if len(df) else df
            v = np.array([_col(d, s, metric) for s in STYLES])
            lo = np.array([_col(d, s, f"{metric}_lo") for s in STYLES])
            hi = np.array([_col(d, s, f"{metric}_hi") for s in STYLES])
            colors = [figs.STYLE_COLORS[s] for s in STYLES]
            ax.bar(
                pos,
                np.nan_to_num(v),
                0.27,
                color=colors,
                alpha=1.0 if i == 1 else 0.45,
                edgecolor="black",
                label=label,
            )
            ok = np.isfinite(v)
            if ok.any():
                ax.errorbar(
                    pos[ok],
                    v[ok],
                    yerr=_err(v, lo, hi)[:, ok],
                    fmt="none",
                    ecolor="black",
                    capsize=3,
                )
            if metric == "mttf_s":
                cens = ~ok & np.isfinite(lo)
                ax.bar(
                    pos[cens],
                    lo[cens],
                    0.27,
                    color="none",
                    edgecolor="black",
                    hatch="//",
                    label=f"{label}: censored (lower bound)" if cens.any() else None,
                )
        ax.set_xticks(x, [figs.STYLE_LABELS[s] for s in STYLES], fontsize=8)
        ax.set_ylabel("seconds")
        ax.set_yscale("log")
        ax.set_title("MTTF" if metric == "mttf_s" else "MTTR (failure onset to recovery)")
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(frameon=False, fontsize=7)
    fig.tight_layout()
    return fig


OUTCOME_COLORS = {
    "served": "#2ca02c",
    "served_late": "#ff7f0e",
    "failed": "#d62728",
    "lost": "#7f7f7f",
    "duplicated": "#9467bd",
}


def figure_outage_timeline(outage_runs: list[Run]) -> plt.Figure:
    """Requests per second by outcome, by issue time, one panel per style (first
    repetition); the outage window shaded."""
    first = {}
    for r in outage_runs:
        info = _run_info(r)
        if info["repetition"] == 1:
            first[info["style"]] = r
    styles = [s for s in STYLES if s in first]
    fig, axes = plt.subplots(
        len(styles) or 1, 1, figsize=(10, 2.4 * max(len(styles), 1)), sharex=True, squeeze=False
    )
    for ax, style in zip(axes[:, 0], styles, strict=False):
        r = first[style]
        df = classified_outage(r)
        t0 = float(r.summary["t_outage_start"])
        t1 = float(r.summary["t_outage_end"])
        sec = np.floor(df["t"] - t0).astype(int)
        counts = pd.crosstab(sec, df["outcome"]).reindex(columns=list(CLASSES), fill_value=0)
        bottom = np.zeros(len(counts))
        for cls in CLASSES:
            ax.bar(
                counts.index,
                counts[cls],
                1.0,
                bottom=bottom,
                color=OUTCOME_COLORS[cls],
                label=cls.replace("_", " "),
                align="edge",
            )
            bottom += counts[cls].to_numpy()
        ax.axvspan(0, t1 - t0, color="black", alpha=0.1)
        ax.set_ylabel("requests/s")
        ax.set_title(
            f"{figs.STYLE_LABELS[style]}: {r.parameters['plan']['role']} stopped "
            f"for {t1 - t0:.0f} s (shaded)",
            fontsize=9,
        )
    axes[-1, 0].set_xlabel("issue time, s from the outage start")
    axes[0, 0].legend(frameon=False, fontsize=8, ncol=5, loc="upper left")
    fig.tight_layout()
    return fig


def figure_mttf_by_load(a: Analysis) -> plt.Figure:
    """Paper figure 4's loads: method 1's MTTF per style at every load it ran (95% interval;
    a cell without a failure as its one-sided lower bound, an upward triangle), beside the
    published MTTF at 200 users (stars; the paper's 300- and 400-user values are shown only
    in its figure, without numbers)."""
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    m1 = a.until_failure
    loads = sorted({200, 300, 400} | (set(m1["users"].astype(int)) if len(m1) else set()))
    for k, style in enumerate(STYLES):
        color = figs.STYLE_COLORS[style]
        rows = m1[m1["style"] == style] if len(m1) else m1
        dx = (k - 1) * 6.0
        for _, r in rows.iterrows():
            u = float(r["users"]) + dx
            if r.get("failures", 0) and pd.notna(r.get("mttf_s")):
                v = float(r["mttf_s"])
                err = _err(np.array([v]), np.array([r["mttf_s_lo"]]), np.array([r["mttf_s_hi"]]))
                ax.errorbar([u], [v], yerr=err, fmt="o", color=color, capsize=3)
            else:  # censored: MTTF > the bound
                bound = float(pd.to_numeric(r.get("mttf_s_lo"), errors="coerce"))
                ax.plot([u], [bound], marker="^", color=color, linestyle="none")
        published = _col(a.formula, style, "mttf_s")
        star = {"marker": "*", "markersize": 12, "markeredgecolor": "black", "linestyle": "none"}
        ax.plot([200 + dx], [published], color=color, label=figs.STYLE_LABELS[style], **star)
    if not len(m1):
        ax.text(0.5, 0.5, "no run of the current method 1 yet", transform=ax.transAxes,
                ha="center", va="center", fontsize=10, color="0.35")  # fmt: skip
    ax.set_xticks(loads)
    ax.set_xlim(min(loads) - 40, max(loads) + 40)
    ax.set_xlabel("users")
    ax.set_ylabel("MTTF (s)")
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.set_title("MTTF by load: measured (dots, 95% CI; triangles: no failure, lower bound), "
                 "published (stars)", fontsize=9)  # fmt: skip
    ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig
