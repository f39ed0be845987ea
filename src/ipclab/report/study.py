"""One study's section of the report: title, parameters, deviations, skipped items,
figures, tables, claims with verdicts and, when there is one, the committed reference's
claims beside them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ipclab.claims import FACT, NOT_REPRODUCED, REPRODUCED, VERDICTS, tally
from ipclab.findings import findings_lines
from ipclab.paths import repo_relative
from ipclab.report import html as rh
from ipclab.report.agreement import agreement_html
from ipclab.report.context import Counter
from ipclab.report.figures import figure_html
from ipclab.report.files import data_link, read_csv


def tally_text(claims: pd.DataFrame) -> str:
    """'N distinct tests (a reproduced, b not reproduced, c inconclusive), from M claims'."""
    if "verdict" not in claims:
        return "no verdicts"
    c, f = tally(claims), tally(claims, FACT)
    n = sum(c.values())
    parts = ", ".join(f"{c.get(v, 0)} {v}" for v in VERDICTS)
    facts = (
        f"; and {sum(f.values())} facts fixed by construction ({f.get(REPRODUCED, 0)} as "
        f"claimed, {f.get(NOT_REPRODUCED, 0)} not)"
        if f
        else ""
    )
    return f"{n} distinct tests ({parts}){facts}, from {len(claims)} claims"


def in_report(t: dict[str, Any]) -> bool:
    return str(t.get("in_report", True)).strip().lower() not in ("false", "0", "no")


def bullets(items: Sequence[str], prefix: str = "") -> str:
    lis = "".join(f"<li>{prefix}{rh.esc(i)}</li>" for i in items)
    return f"<ul>{lis}</ul>"


def section_id(prefix: str, index: int) -> str:
    """The anchor of a study's section (``study-1``, ``study-r1``), linked from the title."""
    return f"study-{prefix.lower()}{index}"


def _parameters_html(params: dict[str, Any]) -> str:
    if not params:
        return '<p class="quiet">None recorded in the results folder.</p>'
    items = [
        (k, v if isinstance(v, str | int | float | bool) or v is None else json.dumps(v))
        for k, v in params.items()
    ]
    return rh.kv_table(items, "kv params")


def _head(title: str, anchor: str, label: str, directory: Path, meta: dict[str, Any]) -> list[str]:
    deviations = meta.get("deviations") or []
    updated = f", updated {rh.esc(meta['updated_at'])}" if meta.get("updated_at") else ""
    return [
        f'<section class="study" id="{anchor}">'
        f'<h1 class="study-title">{label}. {rh.esc(title)}</h1>',
        f'<p class="quiet">Results folder <code>{rh.esc(repo_relative(directory))}</code>'
        f"{updated}.</p>",
        "<h2>Parameters</h2>",
        _parameters_html(meta.get("parameters") or {}),
        "<h2>Deviations from the original setup</h2>",
        bullets(deviations) if deviations else '<p class="quiet">None recorded.</p>',
    ]


def _skipped_html(skipped: Sequence[str]) -> list[str]:
    if not skipped:
        return []
    failed = any(x.startswith("FAILED") for x in skipped)
    items = [f"<li>{rh.esc(s)}</li>" for s in skipped]
    return [f"<h2>Skipped{' and failed' if failed else ''}</h2>", '<ul class="skipped">', *items,
            "</ul>"]  # fmt: skip


def _tables_html(directory: Path, shown: Sequence[dict[str, Any]], slug: str, n: Counter) -> str:
    out = []
    heading = "<h2>Measured against published</h2>" if shown else ""
    for t in shown:
        df = read_csv(directory, t.get("csv", ""), f"table {t.get('name')}", n)
        if df is not None:
            cap = rh.caption("Table", n.table(), t.get("caption", t.get("name", "")))
            cap += data_link(directory, t.get("csv", ""), slug, n)
            if df.columns.empty:  # written with no rows (e.g. power with one repetition)
                out.append(f'{heading}<p class="quiet">{cap}: no rows in this run.</p>')
            else:
                out.append(rh.frame_table(df, cap, heading))
            heading = ""
    out.append(heading)  # when no table could be read: the heading, then the Missing list
    return "\n".join(out)


def _claims_html(
    directory: Path,
    meta: dict[str, Any],
    title: str,
    claims: pd.DataFrame | None,
    reference: pd.DataFrame | None,
    slug: str,
    n: Counter,
    anchor: str = "",
) -> list[str]:
    out = ["<h2>Claims and verdicts</h2>"]
    if claims is None:
        return [*out, '<p class="missing">No claims table in this results folder.</p>']
    out.append(f"<p>{rh.esc(tally_text(claims))}.</p>")
    if "verdict" in claims and len(claims):
        out.append(rh.markdown_lines_html(findings_lines(claims, "the claims table below")))
    cap = rh.caption(
        "Table", n.table(), f"Claims of {title}: published statements (source and quote), "
        "the comparison tested, the published and measured effect (ratio a/b with 95% CI; "
        "below it the measured a vs b and runs per side), p-value, Cliff's delta, verdict "
        "and its reason.",
    )  # fmt: skip
    cap += data_link(directory, str(meta.get("claims") or ""), slug, n)
    out.append(rh.claims_table(claims, cap, anchor))
    if reference is not None and "measured_ratio" in claims:
        out.append(agreement_html(claims, reference, n))
    return out


def _hidden_html(hidden: Sequence[dict[str, Any]]) -> list[str]:
    if not hidden:
        return []
    listed = "; ".join(
        f"<code>{rh.esc(t.get('csv'))}</code> ({rh.esc(t.get('caption', ''))})" for t in hidden
    )
    return ['<p class="quiet">Also in the results folder, not printed: ', f"{listed}.</p>"]


def study_section(
    index: int,
    directory: Path,
    meta: dict[str, Any],
    claims: pd.DataFrame | None,
    not_run: Sequence[str],
    n: Counter,
    prefix: str = "",
    reference: pd.DataFrame | None = None,
) -> str:
    """One study: title, parameters, deviations, skipped items, figures, tables, claims, and
    beside the committed reference's claims (``reference``) when there is one.

    ``not_run``: lines about this study's notebook from the run log (skipped or failed)."""
    title = meta.get("title") or meta.get("study") or directory.name
    anchor = section_id(prefix, index)
    slug = anchor.removeprefix("study-")
    problems_before = len(n.problems)
    out = _head(title, anchor, f"{prefix}{index}", directory, meta)
    out += _skipped_html([*(f"Skipped: {s}" for s in meta.get("skipped") or []), *not_run])
    figures = meta.get("figures") or []
    if figures:
        out.append("<h2>Figures</h2>")
        out += [figure_html(directory, f, meta.get("figures_dir"), n) for f in figures]
    tables = [t for t in meta.get("tables") or [] if t.get("csv") != meta.get("claims")]
    out.append(_tables_html(directory, [t for t in tables if in_report(t)], slug, n))
    out += _claims_html(directory, meta, title, claims, reference, slug, n, anchor)
    out += _hidden_html([t for t in tables if not in_report(t)])
    new_problems = n.problems[problems_before:]
    if new_problems:
        out += ['<h2>Missing</h2><ul class="skipped">'] + [
            f"<li>Missing: {rh.esc(p)}</li>" for p in new_problems
        ] + ["</ul>"]  # fmt: skip
    out.append("</section>")
    return "\n".join(out)
