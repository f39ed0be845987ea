"""One factor's two levels compared per style and load: the means of each level and the
ratio treated / baseline of every metric with its log-ratio interval (the runs are the
unit). TLS against the clear (``encryption``) and Kubernetes against compose
(``orchestrators``) are both this table."""

from __future__ import annotations

import pandas as pd

from ipclab.stats import interval_text, log_ratio_interval
from ipclab.studies.shafabakhsh import figures as figs
from ipclab.studies.shafabakhsh.readme import LABELS


def ratio_column(treated: str, baseline: str) -> str:
    return f"{treated}_over_{baseline}"


def ratio_table(
    runs: pd.DataFrame,
    metrics: tuple[str, ...],
    treated: str,
    baseline: str,
    factor: str = "variant",
) -> pd.DataFrame:
    """Per style, load and metric: the mean over the ``baseline`` and ``treated`` runs (the
    levels of column ``factor``) and treated / baseline with its log-ratio interval."""
    rows = []
    for (style, users), g in runs.groupby(["style", "users"]):
        for metric in metrics:
            if metric not in g:
                continue
            a = g.loc[g[factor] == treated, metric].dropna().to_numpy(float)
            b = g.loc[g[factor] == baseline, metric].dropna().to_numpy(float)
            if not len(a) or not len(b):
                continue
            r = log_ratio_interval([(1, [a]), (-1, [b])])
            rows.append(
                {
                    "style": style, "users": int(users), "metric": metric,
                    "runs": min(len(a), len(b)),
                    baseline: float(b.mean()), treated: float(a.mean()),
                    ratio_column(treated, baseline): r.estimate, "low": r.low, "high": r.high,
                }
            )  # fmt: skip
    return pd.DataFrame(rows)


def ratios_markdown(ratios: pd.DataFrame, metrics: tuple[str, ...], column: str) -> str:
    """The ratio per style and load, one column per metric, with 95% intervals."""
    labels = {**figs.METRIC_LABELS, "stack_cpu_ms_per_request": "Stack CPU per request (ms)"}
    head = " | ".join(labels.get(m, m) for m in metrics)
    lines = [f"| style | users | runs | {head} |", "|---|---|---|" + "---|" * len(metrics)]
    for (style, users), g in ratios.groupby(["style", "users"], sort=False):
        by = g.set_index("metric")
        cells = [
            interval_text(*(by.at[m, c] for c in (column, "low", "high")), ".3f")
            if m in by.index
            else "-"
            for m in metrics
        ]
        runs = int(g["runs"].min())
        lines.append(f"| {LABELS.get(style, style)} | {users} | {runs} | {' | '.join(cells)} |")
    return "\n".join(lines)
