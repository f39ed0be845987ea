"""The generated blocks of an availability reference's README (``ipclab.findings.fill_blocks``):
tables and sentences computed from the analysis, so that none is written by hand."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ipclab import claims as claims_mod
from ipclab.stats.intervals import interval_text
from ipclab.studies.shafabakhsh import figures as figs
from ipclab.studies.shafabakhsh.availability import beside, until_failure
from ipclab.studies.shafabakhsh.availability.analysis import (
    Analysis,
    configuration_share,
    readable,
)
from ipclab.studies.shafabakhsh.availability.profiles import METHOD_NAMES, AvailabilityRuns


def markdown(df: pd.DataFrame, digits: int = 2) -> str:
    """A plain Markdown table (numbers rounded to ``digits``; NaN and None as '-')."""

    def cell(v: Any) -> str:
        if v is None or (isinstance(v, float) and not math.isfinite(v)):
            return "-"
        if isinstance(v, float | np.floating):
            return f"{float(v):,.{digits}f}"
        return str(v).replace("|", "\\|")

    head = "| " + " | ".join(map(str, df.columns)) + " |"
    rule = "|" + "---|" * len(df.columns)
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def _label(style: str) -> str:
    return figs.STYLE_LABELS.get(style, style).split(" (")[0]


def fault_injection_markdown(a: Analysis) -> str:
    """Method 2 per style: cycles pooled over its runs (the intervals describe those cycles;
    the claims compare styles over runs, one value per run)."""
    if a.fault_injection.empty:
        return "No fault-injection runs."
    t = readable(a.fault_injection).drop(columns=["users", "notes"])
    t.insert(1, "runs", a.fault_injection["runs"].to_numpy())
    t["style"] = t["style"].map(_label)
    return markdown(t)


def until_failure_markdown(a: Analysis) -> str:
    """Method 1 per style and load: its runs' cycles pooled (a run that outlived the cap is
    a censored up time: MTTF then has a one-sided lower bound), beside the published MTTF at
    200 users (the paper's Fig. 4 gives the other loads in its figure only)."""
    none = until_failure.cells_without_current_runs(a.until_failure_runs)
    said = (
        f"\n\nNo run of the current method (the users' failed requests, users spawned on a "
        f"ramp) in {', '.join(none)}: their runs are superseded, listed in "
        "`until_failure_runs` and never judged."
        if none else ""
    )  # fmt: skip
    if a.until_failure.empty:
        return ("No until-failure runs." if not none else "No until-failure run yet.") + said
    t = readable(a.until_failure).drop(columns=["notes"], errors="ignore")
    t.insert(2, "runs", a.until_failure["runs"].to_numpy())
    t["style"] = t["style"].map(_label)
    return markdown(t) + said


def outage_markdown(a: Analysis) -> str:
    """The outage experiment in sentences per style: requests issued while the service was
    down, and how they ended."""
    o = a.outage
    if o.empty:
        return "No outage runs."
    during = o[o["phase"] == "during"]
    after = o[o["phase"] == "after"]
    parts = []
    for r in during.itertuples():
        aft = after[after["style"] == r.style]
        failed_after = int(aft["failed"].sum() + aft["lost"].sum()) if len(aft) else 0
        parts.append(
            f"{_label(r.style)}: {int(r.issued):,} requests issued during the outage over "
            f"{int(r.runs)} runs, {int(r.failed):,} failed, {int(r.lost):,} lost, "
            f"{int(r.served_late):,} served late, {int(r.served):,} served in time, "
            f"{int(r.duplicated):,} duplicated; {failed_after:,} failed or lost after the restart"
        )
    return "; ".join(parts) + "."


def recovery_markdown(a: Analysis) -> str:
    """Recovery decomposed, and how much of each style's MTTR is client configuration."""
    if a.recovery.empty:
        return "No run recorded its recovery's parts."
    t = a.recovery.copy()
    t["style"] = t["style"].map(_label)
    text = markdown(t)
    share = configuration_share(a.recovery)
    share = share[share["kind"] == "service"] if len(share) else share
    if len(share):  # the faults of a service: most of the cycles (the others are a handful)
        said = [
            f"{_label(r.style)} {r.default_s:.2f} s at the defaults ({r.cycles_default:.0f} "
            f"cycles), {r.tuned_s:.2f} s tuned ({r.cycles_tuned:.0f} cycles): "
            f"{r.configuration_share:.0%} of it configuration"
            for r in share.itertuples()
            if np.isfinite(r.default_s) and np.isfinite(r.tuned_s)
        ]
        text += (
            "\n\nRestart to recovery after a service was killed, at each client library's "
            "default reconnect settings and tuned (one run per style, on the first default "
            "run's schedule): " + "; ".join(said) + ". A share near 0 (or below) is no "
            "configuration effect: the tuned run's few cycles vary as much."
        )
    return text


def recovery_backends_markdown(a: Analysis) -> str:
    """The recovery decomposition beside the other backends' references (``beside``): per
    style and part, each backend's mean over runs [95% t interval] (runs), and how often
    a component was killed again on the reference's own backend (the last column)."""
    t = a.recovery_backends
    if t.empty:
        return "No other backend's reference to set beside this one."
    backends = [c[: -len("_s")] for c in t.columns if c.endswith("_s") and c != "part"]
    shown = pd.DataFrame({"style": t["style"].map(_label), "part": t["part"]})
    for b in backends:
        shown[b] = [
            "-" if not r[f"{b}_runs"] else
            f"{interval_text(r[f'{b}_s'], r[f'{b}_lo'], r[f'{b}_hi'], '.2f')} ({r[f'{b}_runs']})"
            for _, r in t.iterrows()
        ]  # fmt: skip
    text = markdown(shown)
    return text + "\n\n" + beside.again_sentence(t, backends[-1], _label) + (
        " The kubelet holds a container restarted again within 10 minutes back (10 s, then "
        "20 s): that back-off is part of the Kubernetes MTTR, kept as the cluster behaves."
        if backends[-1] == "kubernetes" else ""
    )  # fmt: skip


def power_markdown(a: Analysis, runs: AvailabilityRuns) -> str:
    """Runs per cell each planned test needs against the runs made, and the machine hours
    the reference's runs took (from their manifests)."""
    made = runs.all() + runs.tuned
    hours = claims_mod.run_hours([r.manifest for r in made]) * len(made)
    text = f"{len(made)} runs, {hours:.2f} machine-hours (their manifests' wall times)."
    if a.power.empty:
        return text
    cols = ["family", "claim_id", "comparison", "runs_per_cell", "runs_needed", "alpha"]
    p = a.power[cols + ["hours_more"] if "hours_more" in a.power else cols]
    p = p.assign(
        runs_per_cell=p["runs_per_cell"].astype("Int64").astype(str),
        runs_needed=[f"{v:,.0f}" if pd.notna(v) else "more than 1,000" for v in p["runs_needed"]],
        alpha=[f"{v:.2g}" for v in p["alpha"]],
    )
    if "hours_more" in p:  # the missing runs, each cell priced at its own runs' wall time
        p = p.assign(hours_more=[f"{v:,.1f}" if np.isfinite(v) else "-" for v in p["hours_more"]])
    head = {
        "runs_per_cell": "runs made per cell", "runs_needed": "runs needed per cell",
        "hours_more": "more machine-hours (each cell at its own runs' mean wall time)",
    }  # fmt: skip
    return markdown(p.rename(columns=head)) + "\n\n" + text


def readme_blocks(a: Analysis, runs: AvailabilityRuns) -> dict[str, str]:
    """The README's generated blocks: name -> Markdown."""
    return {
        "until-failure": until_failure_markdown(a),
        "fault-injection": fault_injection_markdown(a),
        "outage": outage_markdown(a),
        "recovery": recovery_markdown(a),
        "recovery-backends": recovery_backends_markdown(a),
        "power": power_markdown(a, runs),
    }


#: the skeleton's sections: (heading, generated block, the methods that fill it; none: any)
_SECTIONS = (
    ("Fault injection", "fault-injection", ("fault_injection",)),
    ("Recovery, decomposed", "recovery", ()),
    ("Recovery beside local and compose", "recovery-backends", ("fault_injection",)),
    ("Method 1 (until failure)", "until-failure", ("until_failure",)),
    ("Runs needed and made", "power", ()),
)


def skeleton(backend: str, methods: Sequence[str], claims: Sequence[str]) -> str:
    """A README for a reference folder that has none (the rebuild writes it once, then
    only fills its blocks): a heading saying what it holds, an empty generated block per
    section its ``methods`` fill and a findings block per claims table written
    (``claims``: their names in ``results/``). What the sitting was is written beside them
    by hand."""
    held = " and ".join(METHOD_NAMES.get(m, m) for m in methods)
    lines = [
        f"# Availability, full profile, {backend} backend: {held}",
        "",
        f"`ipclab.studies.shafabakhsh.availability`, profile `full`, backend `{backend}` (git "
        "revision and run key in each `manifest.json`; the pods' resources, nodes and QoS in "
        "its `stack_info`). Every table below is generated from the runs by "
        "`python -m ipclab.studies.shafabakhsh.reference`; `results/` holds the tables and "
        "claims, the figures are in "
        f"`figures/reference/availability-full-{backend}/`.",
    ]
    for heading, block, needs in _SECTIONS:
        if needs and not set(needs) & set(methods):
            continue
        lines += ["", f"## {heading}", "", f"<!-- generated: {block} -->", "<!-- /generated -->"]
    lines += ["", "## What was found", ""]
    for name in claims:
        lines += [f"<!-- findings: results/{name} -->", "<!-- /findings -->", ""]
    lines.append(
        "Deviations (the cluster, the pods' resources, the kubelet's restarts and back-off, "
        "the outage experiment not run) are listed in `results/study.json` and the report."
        if backend == "kubernetes"
        else "Deviations are listed in `results/study.json` and the report."
    )
    return "\n".join(lines) + "\n"
