"""The main body's sections, one per published study: its results folders (the committed
references, or a fresh run's when there are none) grouped under it, each with its verdicts
and a link to its full section in the appendices; the headline figures (the first ones of
each notebook's own results, set beside the published); and the tests that matter most
across its results folders, each linking to its claim, figure and runs.

Which study a results folder belongs to is the registry's (:mod:`ipclab.studies`): a
notebook's results folder, its ``reference`` and its ``also_references``; a folder no study
names is a study of its own (its ``study.json``'s title).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ipclab.findings import _reversed as is_reversed
from ipclab.report import html as rh
from ipclab.report.answer import (
    REVERSED,
    Entry,
    claim_anchor,
    counts_sentence,
    evidence_links,
    facts_count,
    study_findings,
    verdict_counts,
)
from ipclab.report.context import Counter
from ipclab.report.figures import figure_html

HEADLINE_FIGURES = 2  # per notebook's own results folder
STUDY_TOP = 8  # tests per study in its section


@dataclass
class Part:
    """One results folder in a study's section: its entry on the first page (claims,
    anchors, folder), its folder and ``study.json``, and whether its figures lead."""

    entry: Entry
    directory: Path
    meta: dict[str, Any]
    lead: bool = False


@dataclass
class Study:
    name: str
    title: str
    parts: list[Part] = field(default_factory=list)

    @property
    def anchor(self) -> str:
        return f"study-{self.name}"


def registry() -> list[tuple[str, str, dict[str, bool]]]:
    """Per study of the registry, in its notebooks' order: name, title, and its results
    folders' names (notebook results and references) -> whether the folder leads (a
    notebook's results or first reference)."""
    from ipclab.studies import all_studies

    out = []
    for s in all_studies().values():
        names: dict[str, bool] = {}
        for nb in s.notebooks:
            names.setdefault(nb.results, True)
            if nb.reference:
                names.setdefault(nb.reference, True)
            for r in nb.also_references:
                names.setdefault(r, False)
        first = min((nb.file for nb in s.notebooks), default=s.name)
        out.append((first, s.name, s.title, names))
    return [(name, title, names) for _, name, title, names in sorted(out)]


def group(parts: Sequence[Part]) -> list[Study]:
    """``parts`` (keyed by their entry's label: a reference folder's or a results folder's
    name) under their studies, in the registry's order; the rest after, one study each."""
    known = registry()
    studies = {name: Study(name, title) for name, title, _ in known}
    rest: dict[str, Study] = {}
    for p in parts:
        owner = next(((n, names[p.entry.label]) for n, _, names in known
                      if p.entry.label in names), None)  # fmt: skip
        if owner is not None:
            p.lead = owner[1]
            studies[owner[0]].parts.append(p)
            continue
        key = str(p.meta.get("study") or p.entry.label)
        title = str(p.meta.get("title") or key).split(" (")[0]
        rest.setdefault(key, Study(key, title)).parts.append(p)
        p.lead = len(rest[key].parts) == 1
    order = {name: list(names) for name, _, names in known}
    for s in studies.values():  # the notebooks' order: the study's own results first
        s.parts.sort(key=lambda p, o=order[s.name]: o.index(p.entry.label))
    return [s for s in [*studies.values(), *rest.values()] if s.parts]


def _folders_table(study: Study) -> str:
    rows = []
    for p in study.parts:
        e = p.entry
        what = rh.esc(str(p.meta.get("title") or e.label))
        if e.claims is not None and "verdict" in e.claims:
            said = counts_sentence(verdict_counts(e.claims), facts_count(e.claims))
        else:
            said = "no claims table"
        rows.append(f'<tr><td class="txt"><a href="#{rh.esc(e.anchor)}">{rh.esc(e.short)}'
                    f'</a></td><td class="txt">{what}</td><td class="txt">{rh.esc(said)}'
                    "</td></tr>")  # fmt: skip
    return _table("folders", ("results", "what", "distinct tests by verdict"), rows)


def _table(cls: str, heads: Sequence[str], rows: Sequence[str]) -> str:
    head = "".join(f"<th>{h}</th>" for h in heads)
    return (
        f'<div class="table-block"><table class="tbl {cls}" style="font-size:7.5pt">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _findings_table(study: Study, site: bool) -> str:
    entries = [p.entry for p in study.parts if p.entry.claims is not None
               and "verdict" in p.entry.claims]  # fmt: skip
    items = study_findings(entries, STUDY_TOP)
    if not items:
        return ('<p class="quiet">No test decided either way: each results folder\'s claims '
                "(in the appendices) say what more runs would take.</p>")  # fmt: skip
    rows = []
    for e, r in items:
        verdict = REVERSED if is_reversed(r) else str(r["verdict"])
        est = rh.fmt_ci(r.get("measured_ratio"), r.get("ci_low"), r.get("ci_high"))
        claim = f'<a href="#{rh.esc(claim_anchor(e.anchor, r["claim_id"]))}">' \
                f'{rh.esc(r["claim_id"])}</a>'  # fmt: skip
        rows.append(f'<tr><td class="txt id">{claim}</td>'
                    f'<td class="txt">{rh.breakable(str(r["comparison"]))}</td>'
                    f'<td class="txt">{rh.esc(est)}</td>{rh.verdict_cell(verdict)}'
                    f'<td class="txt">{rh.esc(e.short)}</td>'
                    f'<td class="txt">{evidence_links(e, r["claim_id"], site)}</td>'
                    "</tr>")  # fmt: skip
    heads = ("claim", "comparison", "a/b [95% CI]", "verdict", "results", "evidence")
    return _table("study-tests", heads, rows)


def study_main_section(index: int, total: int, study: Study, n: Counter) -> str:
    """A study's section of the main body (see the module's docstring)."""
    site = n.site is not None
    out = [f'<section class="study by-study" id="{study.anchor}">'
           f'<h1 class="study-title">{rh.esc(study.title)}</h1>',
           f'<p class="quiet">Study {index} of {total}.</p>',
           f"<p>Rerun as {len(study.parts)} results folder"
           f"{'s' if len(study.parts) != 1 else ''}: each one's figures, tables and every "
           "test are in its section of the appendices (follow its name).</p>",
           _folders_table(study)]  # fmt: skip
    figures = [(p, f) for p in study.parts if p.lead
               for f in (p.meta.get("figures") or [])[:HEADLINE_FIGURES]]  # fmt: skip
    if figures:
        out.append(f'<h2 id="{study.anchor}-figures">Measured beside the published</h2>')
        out += [figure_html(p.directory, f, p.meta.get("figures_dir"), n) for p, f in figures]
    out += [f"<h2>The tests that matter most</h2><p>Reversals first, then the largest "
            f"decided effects (ratio a/b, 95% interval), at most {STUDY_TOP}; each links to "
            "its claim, its results' figures and the runs that decide it.</p>",
            _findings_table(study, site), "</section>"]  # fmt: skip
    return "\n".join(out)


def main_sections(parts: Sequence[Part], n: Counter) -> tuple[list[str], list[Study]]:
    """The main body's study sections, and the studies (for the first page's headings)."""
    studies = group(parts)
    return [study_main_section(i, len(studies), s, n) for i, s in enumerate(studies, 1)], studies


def entries_of(studies: Sequence[Study]) -> list[Entry]:
    """The first page's entries, each under its study's title and anchor."""
    from dataclasses import replace

    return [replace(p.entry, study=s.title, study_anchor=s.anchor)
            for s in studies for p in s.parts
            if p.entry.claims is not None and "verdict" in p.entry.claims]  # fmt: skip
