"""The reference READMEs' measured parts, generated from the analysis so that no number or
verdict in them is typed by hand.

A README holds marked blocks (``<!-- generated: NAME -->`` ... ``<!-- /generated -->``)
that :func:`ipclab.findings.fill_blocks` replaces with the text the study computes here
(tables of cells, the machine check, the headline); the verdicts themselves are in the
findings blocks that :func:`ipclab.findings.write_findings` fills from the claims tables.
"""

from __future__ import annotations

import pandas as pd

LABELS = {"rest": "REST", "grpc": "gRPC", "amqp": "AMQP"}


def span(values: pd.Series, digits: int) -> str:
    """'a-b' of the finite values (one value alone when they agree)."""
    x = pd.to_numeric(values, errors="coerce").dropna()
    if x.empty:
        return "-"
    lo, hi = f"{x.min():.{digits}f}", f"{x.max():.{digits}f}"
    return lo if lo == hi else f"{lo}-{hi}"


def machine_markdown(machine: pd.DataFrame, what: str) -> str:
    """The machine check as a table and a sentence counting the cells past the limit."""
    lines = [
        "| style | users | CPU ms per request (min-max) | ratio | other CPU max % | comparable |",
        "|---|---|---|---|---|---|",
    ]
    for _, r in machine.iterrows():
        why = f" ({r['why']})" if isinstance(r.get("why"), str) and r["why"] else ""
        lines.append(
            f"| {LABELS.get(r['style'], r['style'])} | {int(r['users'])} | "
            f"{r['cpu_ms_per_request_min']:.2f}-{r['cpu_ms_per_request_max']:.2f} | "
            f"{r['cost_ratio']:.2f} | {r['other_cpu_percent_max']:.0f} | {r['comparable']}{why} |"
        )
    off = machine[machine["comparable"].astype(str) == "False"]
    lines += [
        "",
        f"{len(off)} of {len(machine)} cells of {what} are not comparable across their runs by "
        f"the machine check (the reason beside each); stack CPU per request, slowest run over "
        f"fastest: {span(machine['cost_ratio'], 2)}.",
    ]
    return "\n".join(lines)


def sitting_markdown(runs: pd.DataFrame, counted: str | None = None) -> str:
    """When the runs were made (run starts, per day) and how busy the rest of the machine
    was; ``counted`` words the number of runs (default: 'N runs')."""
    starts = sorted(str(t) for t in runs["started_at"].dropna())
    if not starts:
        return "No run recorded its start."
    days: dict[str, list[str]] = {}
    for t in starts:
        days.setdefault(t[:10], []).append(t[11:16])
    when = " and ".join(
        f"{d}, {ts[0]}" + (f"-{ts[-1]}" if ts[-1] != ts[0] else "") for d, ts in days.items()
    )
    other = pd.to_numeric(runs.get("other_cpu_percent"), errors="coerce")
    busy = f"{other.max():.0f} %" if other.notna().any() else "not recorded"
    return (
        f"{counted or f'{len(runs)} runs'}, {when} UTC (run starts); other processes' CPU "
        f"during a run at most {busy}."
    )
