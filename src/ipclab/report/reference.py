"""The committed reference results, leading the report: per reference what the suite found,
on which machine and when, and which code made its runs; then each reference's section."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from ipclab import plausibility, provenance
from ipclab.report import html as rh
from ipclab.report.answer import runs_anchor
from ipclab.report.context import Counter
from ipclab.report.study import study_section, tally_text


def _manifests(results_dir: Path) -> list[Path]:
    """The runs sit beside ``results/`` or, for a study of several experiments, one folder
    deeper (``<experiment>/<run>/manifest.json``)."""
    return sorted(Path(results_dir).parent.rglob("manifest.json"))


def machine_and_date(results_dir: Path) -> str:
    """Where and when a reference result was measured: its runs' host and first/last start."""
    manifests = _manifests(results_dir)
    if not manifests:
        return "machine and date not recorded"
    docs = [json.loads(m.read_text()) for m in manifests]
    env = docs[0].get("environment") or {}
    starts = sorted(str(d.get("started_at", "")) for d in docs if d.get("started_at"))
    cpu = env.get("cpu_model") or env.get("cpu") or "?"
    cores = env.get("cpu_cores_logical") or env.get("cpu_count") or "?"
    when = f"{starts[0][:16]} to {starts[-1][:16]} UTC" if starts else "date not recorded"
    return f"{len(docs)} runs on {cpu} ({cores} cores), {when}"


def made_by(results_dir: Path) -> str:
    """At which revisions a reference's runs were made, and whether their own measuring
    files changed since (``ipclab.provenance``: a reference is read and rebuilt whatever the
    current code)."""
    made = provenance.provenance(json.loads(m.read_text()) for m in _manifests(results_dir))
    return provenance.provenance_text(made, shown=3)


def plausibility_text(results_dir: Path) -> str:
    """What a reference's plausibility table (``results/plausibility.csv``, docs/statistics.md
    section 9) flags: the count, and each flagged cell with why."""
    csv = Path(results_dir) / f"{plausibility.TABLE}.csv"
    if not csv.exists():
        return "plausibility not checked (no plausibility table)"
    table = pd.read_csv(csv)
    bad = table[table["check"] == "flagged"] if "check" in table.columns else table.iloc[:0]
    said = f"plausibility check: {len(bad)} of {len(table)} cells flagged"
    if bad.empty:
        return said
    cells = "; ".join(
        f"{plausibility.cell_name(r)} ({str(r.get('why', '')).split(' [')[0]})"
        for _, r in bad.iterrows()
    )
    return f"{said}: {cells}"


def reference_overview(pairs: Sequence[tuple[Path, dict[str, Any], pd.DataFrame | None]]) -> str:
    """The committed full-profile results: what each found, where and when, and which code
    made its runs (its provenance)."""
    out = ['<section class="study"><h1 class="study-title">Reference results (committed)</h1>',
           "<p>These are the full-profile results committed with the suite "
           "(<code>data/runs/reference/</code>), analysed under docs/statistics.md; a fresh "
           "run's sections are placed beside them.</p><ul>"]  # fmt: skip
    for d, meta, claims in pairs:
        title = str(meta.get("title") or d.name)
        tally_txt = tally_text(claims) if claims is not None else "no claims table"
        out.append(
            f'<li id="{rh.esc(runs_anchor(d.parent))}"><b>{rh.esc(title)}</b>: '
            f"{rh.esc(tally_txt)}. "
            f"{rh.esc(plausibility_text(d))}. "
            f'<span class="quiet">{rh.esc(machine_and_date(d))}. '
            f"Provenance: {rh.esc(made_by(d))}.</span></li>"
        )
    out.append("</ul></section>")
    return "\n".join(out)


def reference_parts(
    pairs: Sequence[tuple[Path, dict[str, Any], pd.DataFrame | None]], n: Counter
) -> list[Callable[[], str]]:
    """Each reference's study section (``R1``, ``R2``, ...), to render when its turn comes
    (in the appendices, numbered in page order)."""
    return [
        partial(study_section, i, d, {**meta, "title": f"Reference: {meta.get('title') or d.name}"},
                claims, [], n, prefix="R")
        for i, (d, meta, claims) in enumerate(pairs, 1)
    ]  # fmt: skip


def reference_studies(
    pairs: Sequence[tuple[Path, dict[str, Any], pd.DataFrame | None]], n: Counter
) -> list[str]:
    """Each reference's study section (``R1``, ``R2``, ...), rendered now."""
    return [part() for part in reference_parts(pairs, n)]


def reference_section(
    pairs: Sequence[tuple[Path, dict[str, Any], pd.DataFrame | None]], n: Counter
) -> str:
    """The overview of the committed results, then each reference's section."""
    return "\n".join([reference_overview(pairs), *reference_studies(pairs, n)])
