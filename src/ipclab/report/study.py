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
from ipclab.report.files import data_link, read_csv, resolve


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


# tables of the detail (per run, per cell, the machine and plausibility checks, the band
# sensitivity, power): printed in the appendices, not in the study's main section
DETAIL_NAMES = ("band_sensitivity", "plausibility", "machine_state", "power", "littles_law",
                "window_check", "sittings", "runs", "cells", "pairwise_tests", "claims_code",
                "complexity", "recovery_configuration", "formula_mismatch")  # fmt: skip
DETAIL_ROWS = 20  # a longer table is detail too


def is_detail(t: dict[str, Any], directory: Path) -> bool:
    """Whether a study's table belongs in the appendices: by its name, its length, or its
    width (a table that needs a landscape page of its own)."""
    name = str(t.get("name", ""))
    if (
        name in DETAIL_NAMES
        or name.startswith("claims")
        or name.endswith(("_runs", "_cells", "_rounds"))
    ):
        return True
    path = resolve(directory, str(t.get("csv", "")))
    if path is None:
        return False
    try:
        df = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError):
        return False
    return len(df) > DETAIL_ROWS or rh.needs_landscape(df)


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
    """The main body's claims: the tally and one row per distinct test; the findings, the
    full claims table (quotes, p-values, reasons) and the agreement with the reference go
    to the appendices."""
    out = ["<h2>Claims and verdicts</h2>"]
    if claims is None:
        return [*out, '<p class="missing">No claims table in this results folder.</p>']
    out.append(f"<p>{rh.esc(tally_text(claims))}.</p>")
    cap = rh.caption(
        "Table", n.table(), f"Claims of {title}, one row per distinct test: the comparison, "
        "the published and the measured effect (ratio a/b with 95% CI) and the verdict; "
        "each claim's quote, p-value and reason are in the appendix.",
    )  # fmt: skip
    cap += data_link(directory, str(meta.get("claims") or ""), slug, n)
    out.append(rh.tests_table(claims, cap, anchor) if "verdict" in claims else "")
    n.later(lambda: _full_claims_html(title, anchor, claims, reference, n))
    return out


def _full_claims_html(
    title: str, anchor: str, claims: pd.DataFrame, reference: pd.DataFrame | None, n: Counter
) -> str:
    """A study's claims in full, in the appendices: the findings, every claim with its
    quote, p-value, Cliff's delta and reason, and the agreement with the reference."""
    out = [f'<section class="appendix" id="{anchor}-claims">'
           f'<h2 class="appendix-title">Claims in full: {rh.esc(title)}</h2>']  # fmt: skip
    if "verdict" in claims and len(claims):
        out.append(rh.markdown_lines_html(findings_lines(claims, "the claims table below")))
    cap = rh.caption(
        "Table", n.table(), f"Claims of {title}: published statements (source and quote), "
        "the comparison tested, the published and measured effect (ratio a/b with 95% CI; "
        "below it the measured a vs b and runs per side), p-value, Cliff's delta, verdict "
        "and its reason.",
    )  # fmt: skip
    out.append(rh.claims_table(claims, cap))
    if reference is not None and "measured_ratio" in claims:
        out.append(agreement_html(claims, reference, n))
    out.append("</section>")
    return "\n".join(out)


def _detail_section(
    title: str,
    anchor: str,
    directory: Path,
    detail: Sequence[dict[str, Any]],
    hidden: Sequence[dict[str, Any]],
    slug: str,
    n: Counter,
    params: dict[str, Any],
) -> str:
    """A study's appendix: its parameters, its detail tables, and the tables left out of
    the report."""
    tables = _tables_html(directory, detail, slug, n).replace(
        "<h2>Measured against published</h2>", "", 1
    )
    return "\n".join([
        f'<section class="appendix" id="{anchor}-detail">'
        f'<h2 class="appendix-title">Detail: {rh.esc(title)}</h2>',
        "<h3>Parameters</h3>", _parameters_html(params), tables, *_hidden_html(hidden),
        "</section>",
    ])  # fmt: skip


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
        out.append(f'<h2 id="{anchor}-figures">Figures</h2>')
        out += [figure_html(directory, f, meta.get("figures_dir"), n) for f in figures]
    tables = [t for t in meta.get("tables") or [] if t.get("csv") != meta.get("claims")]
    shown = [t for t in tables if in_report(t)]
    main = [t for t in shown if not is_detail(t, directory)]
    out.append(_tables_html(directory, main, slug, n))
    out += _claims_html(directory, meta, title, claims, reference, slug, n, anchor)
    detail = [t for t in shown if t not in main]
    hidden = [t for t in tables if not in_report(t)]
    out.append(f'<p class="quiet">The parameters and the detail (per run and per cell, the '
               f'machine and plausibility checks, band sensitivity) are in <a href="#{anchor}'
               '-detail">the appendix</a>.</p>')  # fmt: skip
    params = meta.get("parameters") or {}
    n.later(lambda: _detail_section(title, anchor, directory, detail, hidden, slug, n, params))
    new_problems = n.problems[problems_before:]
    if new_problems:
        out += ['<h2>Missing</h2><ul class="skipped">'] + [
            f"<li>Missing: {rh.esc(p)}</li>" for p in new_problems
        ] + ["</ul>"]  # fmt: skip
    out.append("</section>")
    return "\n".join(out)
