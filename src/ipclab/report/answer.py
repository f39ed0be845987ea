"""The report's first page, the answer: per results folder a verdict chart over its distinct
tests (reproduced, reversed, not reproduced, underpowered, inconclusive; facts apart), per
study the findings that matter most (reversals, then the largest decided effects, each with
its interval and a link to its claim row), and a chart of whether the verdicts agree across
backends, runtimes and TLS (the pairs of :mod:`ipclab.report.robustness_section`).

Everything on it is counted from the claims tables it links to (:func:`verdict_counts`,
:func:`key_findings`); the charts are inline SVG, so the PDF and the site show the same page
with nothing fetched.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ipclab import robustness as rb
from ipclab.claims import (
    FACT,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    TEST,
    UNDERPOWERED,
    distinct_tests,
    tally,
)
from ipclab.findings import _reversed as is_reversed
from ipclab.report import html as rh

REVERSED = "reversed"
CATEGORIES = (REPRODUCED, REVERSED, NOT_REPRODUCED, UNDERPOWERED, INCONCLUSIVE)
COLORS = {
    REPRODUCED: "#2e7d32",
    REVERSED: "#8a1c1c",
    NOT_REPRODUCED: "#e57373",
    UNDERPOWERED: "#f9a825",
    INCONCLUSIVE: "#9e9e9e",
}
# what explains a disagreement across two ways of measuring (ipclab.robustness.explain)
AGREEMENT = ("agree", "noise", "one side undecided", "differs", "not measured")
AGREEMENT_COLORS = dict(zip(AGREEMENT, ("#2e7d32", "#90a4ae", "#bdbdbd", "#8a1c1c", "#eeeeee"),
                            strict=True))  # fmt: skip
ANSWER_ID = "answer"
TOP = 5  # findings per study


@dataclass(frozen=True)
class Entry:
    """One claims table on the first page: its title, study, section anchor, claims and
    short label (the results folder's name); ``folder``: a committed reference's folder
    (its runs), ``figures``: whether its section has figures, ``study_anchor``: its study's
    section in the main body."""

    title: str
    study: str
    anchor: str
    claims: pd.DataFrame
    label: str = ""
    folder: Path | None = None
    figures: bool = True
    study_anchor: str = ""

    @property
    def short(self) -> str:
        return self.label or self.title


def runs_anchor(folder: Path) -> str:
    """The id of a reference's runs in the PDF (its entry in the appendix of references)."""
    return f"runs-{folder.name}"


def evidence_links(e: Entry, claim_id: object, site: bool) -> str:
    """A claim's figure and runs: its results' figures, and on the site the runs that decide
    it (``runs/<reference>.html#claim-<id>``, the whole list when they cannot be singled
    out), in the PDF its reference's runs in the appendix."""
    from ipclab.report.claimruns import claim_runs

    fig = f"#{e.anchor}-figures" if e.figures else f"#{e.anchor}"
    out = f'<a class="figure" href="{rh.esc(fig)}">figure</a>'
    if e.folder is None:
        return out
    href = f"#{runs_anchor(e.folder)}"
    if site:
        rows = e.claims[e.claims["claim_id"].astype(str) == str(claim_id)]
        one = len(rows) and claim_runs(e.folder, rows.iloc[0]) is not None
        href = f"runs/{e.folder.name}.html" + (f"#claim-{claim_id}" if one else "")
    return f'{out} · <a class="runs" href="{rh.esc(href)}">runs</a>'


def claim_anchor(section: str, claim_id: object) -> str:
    """The id of a claim's row in its study's claims table (``claim-study-r3-T01a``)."""
    return f"claim-{section}-{claim_id}"


def _tests(claims: pd.DataFrame) -> pd.DataFrame:
    d = distinct_tests(claims)
    if d.empty or "verdict" not in d.columns:
        return d.iloc[:0]
    if "evidence" in d.columns:
        d = d[d["evidence"].fillna(TEST).replace("", TEST) == TEST]
    return d


def verdict_counts(claims: pd.DataFrame) -> dict[str, int]:
    """Distinct tests per category: ``reversed`` are the not reproduced ones significant on
    the other side of the claim (:func:`ipclab.findings._reversed`); facts are left out."""
    d = _tests(claims)
    rev = int(d.apply(is_reversed, axis=1).sum()) if len(d) else 0
    c = {v: int((d["verdict"] == v).sum()) for v in CATEGORIES if v != REVERSED} if len(d) else {}
    out = {v: c.get(v, 0) for v in CATEGORIES}
    out[REVERSED] = rev
    out[NOT_REPRODUCED] = out[NOT_REPRODUCED] - rev
    return out


def facts_count(claims: pd.DataFrame) -> int:
    return sum(tally(claims, FACT).values()) if "verdict" in claims else 0


def counts_sentence(counts: dict[str, int], facts: int) -> str:
    n = sum(counts.values())
    parts = ", ".join(f"{counts[v]} {v}" for v in CATEGORIES)
    return f"{n} tests: {parts}" + (f"; {facts} facts apart" if facts else "")


def _log_size(r: pd.Series) -> float:
    try:
        v = float(r.get("measured_ratio"))
    except (TypeError, ValueError):
        return -1.0
    return abs(math.log(v)) if math.isfinite(v) and v > 0 else -1.0


def key_findings(claims: pd.DataFrame, top: int = TOP) -> pd.DataFrame:
    """The tests that matter most: reversals, then the decided tests (reproduced or not),
    each group by the size of its effect (|log ratio|), at most ``top``."""
    d = _tests(claims)
    if d.empty:
        return d
    d = d.assign(_size=d.apply(_log_size, axis=1), _rev=d.apply(is_reversed, axis=1))
    d = d[d["_size"] >= 0]
    decided = d["verdict"].isin([REPRODUCED, NOT_REPRODUCED])
    ranked = pd.concat([d[d["_rev"]].sort_values("_size", ascending=False),
                        d[~d["_rev"] & decided].sort_values("_size", ascending=False)])  # fmt: skip
    return ranked.head(top).drop(columns=["_size", "_rev"])


def finding_text(r: pd.Series) -> str:
    """'T01a: rps: grpc@50 > rest@50: a/b = 0.593 [0.537, 0.654], reversed'."""
    verdict = REVERSED if is_reversed(r) else str(r["verdict"])
    est = rh.fmt_ci(r.get("measured_ratio"), r.get("ci_low"), r.get("ci_high"))
    return f"{r['claim_id']}: {r['comparison']}: a/b = {est}, {verdict}"


def bar_chart(rows: Sequence[tuple[str, dict[str, int]]], keys: Sequence[str],
              colors: dict[str, str], chart_id: str) -> str:  # fmt: skip
    """Horizontal stacked bars, one per row (label, counts per key), with a legend; inline
    SVG, every count written on its segment and in the bar's title."""
    label_w, bar_w, row_h, top = 250, 440, 16, 18
    most = max((sum(c.values()) for _, c in rows), default=0) or 1
    out = [f'<svg class="chart" id="{chart_id}" xmlns="http://www.w3.org/2000/svg" '
           f'viewBox="0 0 {label_w + bar_w + 10} {top + row_h * len(rows) + 4}" '
           'font-family="DejaVu Sans, sans-serif" font-size="9">']  # fmt: skip
    x = label_w
    for k in keys:
        out.append(f'<rect x="{x}" y="2" width="9" height="9" fill="{colors[k]}"/>'
                   f'<text x="{x + 12}" y="10">{rh.esc(k)}</text>')  # fmt: skip
        x += 14 + 6 * len(k) + 8
    for i, (label, counts) in enumerate(rows):
        y = top + i * row_h
        title = f"{label}: " + ", ".join(f"{counts.get(k, 0)} {k}" for k in keys)
        out.append(f'<g class="bar"><title>{rh.esc(title)}</title>'
                   f'<text x="{label_w - 4}" y="{y + 11}" text-anchor="end">'
                   f"{rh.esc(label[:48])}</text>")  # fmt: skip
        x = float(label_w)
        for k in keys:
            n = counts.get(k, 0)
            if not n:
                continue
            w = bar_w * n / most
            out.append(f'<rect x="{x:.1f}" y="{y + 2}" width="{w:.1f}" height="{row_h - 4}" '
                       f'fill="{colors[k]}"/>')  # fmt: skip
            if w >= 10:
                ink = "#000" if k in ("not measured", UNDERPOWERED) else "#fff"
                out.append(f'<text x="{x + w / 2:.1f}" y="{y + 11}" text-anchor="middle" '
                           f'fill="{ink}">{n}</text>')  # fmt: skip
            x += w
        out.append("</g>")
    out.append("</svg>")
    return "".join(out)


def agreement_counts(table: pd.DataFrame, factor: str) -> dict[str, int]:
    """A side-by-side table's claims per what explains them (:func:`rb.explain`)."""
    words = {rb.AGREE: "agree", rb.NOISE: "noise", rb.RUNS: "one side undecided",
             rb.NOT_MEASURED: "not measured", factor: "differs"}  # fmt: skip
    out = dict.fromkeys(AGREEMENT, 0)
    for e in table.get("explanation", pd.Series(dtype=str)).astype(str):
        out[words.get(e, "differs")] += 1
    return out


def agreement_rows(reference_root: Path | None) -> list[tuple[str, dict[str, int]]]:
    """Per pair of ways of measuring (backends, a factor's levels, a study's own agreement
    tables: :func:`ipclab.report.robustness_section.pairs`), its claims per explanation."""
    if reference_root is None:
        return []
    from ipclab.report.robustness_section import pairs

    return [(f"{title.split(' (')[0]}: {la} vs {lb}", agreement_counts(t, factor))
            for title, t, (la, lb), factor in pairs(reference_root) if not t.empty]  # fmt: skip


def study_findings(entries: Sequence[Entry], top: int = TOP) -> list[tuple[Entry, pd.Series]]:
    """The findings that matter most across a study's claims tables: reversals, then the
    largest decided effects, a claim id once, at most ``top``."""
    items: list[tuple[Entry, pd.Series]] = []
    seen: set[str] = set()
    for e in entries:
        for _, r in key_findings(e.claims, top).iterrows():
            if str(r["claim_id"]) not in seen:
                seen.add(str(r["claim_id"]))
                items.append((e, r))
    return sorted(items, key=lambda x: (not is_reversed(x[1]), -_log_size(x[1])))[:top]


def _findings_html(entries: Sequence[Entry], site: bool) -> str:
    out = []
    for study in dict.fromkeys(e.study for e in entries):
        mine = [e for e in entries if e.study == study]
        items = study_findings(mine)
        name = rh.esc(study.split(" (")[0])
        if mine[0].study_anchor:
            name = f'<a href="#{rh.esc(mine[0].study_anchor)}">{name}</a>'
        if not items:
            out.append(f'<div class="study-findings"><h3>{name}</h3><p class="quiet">'
                       "No test decided either way: see its claims for what more runs "
                       "would take.</p></div>")  # fmt: skip
            continue
        lis = "".join(
            f'<li class="finding v-{"rev" if is_reversed(r) else rh.esc(r["verdict"])[:3]}">'
            f'<a href="#{rh.esc(claim_anchor(e.anchor, r["claim_id"]))}">'
            f"{rh.breakable(finding_text(r))}</a>"
            f' <span class="evidence">{evidence_links(e, r["claim_id"], site)}</span>'
            f' <span class="quiet">({rh.esc(e.short)})</span></li>'
            for e, r in items
        )
        out.append(f'<div class="study-findings"><h3>{name}</h3>'
                   f'<ul class="key-findings">{lis}</ul></div>')  # fmt: skip
    return "".join(out)


def answer_section(
    entries: Sequence[Entry], reference_root: Path | None, site: bool = False, status: str = ""
) -> str:
    """The first page: the verdict chart, the findings that matter most (each linking to
    its claim row, figure and runs; ``site``: the site's run pages), the agreement;
    ``status``: the notebooks that did not run, when some did not."""
    shown = [e for e in entries if "verdict" in e.claims]
    rows = [(e.short, verdict_counts(e.claims)) for e in shown]
    sentences = "".join(
        f'<li><a href="#{rh.esc(e.anchor)}">{rh.esc(e.short)}</a>: '
        f"{rh.esc(counts_sentence(c, facts_count(e.claims)))}</li>"
        for e, (_, c) in zip(shown, rows, strict=True)
    )
    out = [f'<section class="answer" id="{ANSWER_ID}">'
           '<p class="kicker">ipclab</p><h1 class="title">The answer</h1>',
           "<p>Which published findings hold, per results folder: its distinct tests by "
           "verdict (reversed: not reproduced, significant on the other side of the claim; "
           "facts fixed by construction apart, docs/statistics.md section 5).</p>",
           bar_chart(rows, CATEGORIES, COLORS, "verdict-chart"),
           f'<ul class="counts quiet">{sentences}</ul>',
           status,
           "<h2>What matters most</h2><p>Per study, the reversals and the largest decided "
           "effects (ratio a/b with its 95% interval); each links to its claim, its figure "
           "and the runs that decide it.</p>",
           _findings_html(shown, site)]  # fmt: skip
    agreement = agreement_rows(reference_root)
    if agreement:
        out += ["<h2>Does the verdict depend on how it was measured?</h2><p>The same claims "
                "on two backends, runtimes or with TLS: per pair, the claims whose verdicts "
                "agree, and why the others part (docs/statistics.md section 8).</p>",
                bar_chart(agreement, AGREEMENT, AGREEMENT_COLORS, "agreement-chart")]  # fmt: skip
    out.append("</section>")
    return "\n".join(out)
