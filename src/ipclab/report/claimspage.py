"""The site's claims page and run lists: ``claims.html``, one row per claim of every
committed reference (and of a fresh run), sortable and filtered by study, verdict, runtime
and backend; each row links to its claim in the report, its study's figures and its
reference's runs (``runs/<reference>.html``: the ``ipclab runs`` rows of that reference,
from :mod:`ipclab.runindex`, under its machine, dates and provenance in words). A
navigation bar joins the pages. Nothing is fetched.

The filter reads and writes the URL's fragment (``claims.html#verdict=reversed&backend=docker``);
a row's runtime and backend are its reference's (:func:`ipclab.catalogue.describe`), a
reference of several matching each of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ipclab import catalogue
from ipclab.findings import _reversed as is_reversed
from ipclab.report import claimruns
from ipclab.report import html as rh
from ipclab.report.answer import REVERSED, claim_anchor

CLAIMS_PAGE = "claims.html"
CLAIMS_TABLE_ID = "claims-page"
FILTER_KEYS = ("study", "verdict", "runtime", "backend")
RUN_COLUMNS = ("path", "status", "stack", "backend", "users", "repetition", "started_at",
               "current_code", "rps", "mean_ms")  # fmt: skip


@dataclass(frozen=True)
class Source:
    """One claims table of the site: its study, its section anchor in ``index.html``, its
    claims, and, for a committed reference, its folder (its runs and their backends)."""

    study: str
    label: str
    anchor: str
    claims: pd.DataFrame
    folder: Path | None = None


def nav(here: str, prefix: str = "") -> str:
    """The navigation bar of every page of the site (``prefix``: the way back to its root)."""
    links = [("index.html", "The answer"), ("index.html#appendices", "Appendices"),
             (CLAIMS_PAGE, "All claims")]  # fmt: skip
    items = "".join(
        f'<a href="{prefix}{href}"' + (' aria-current="page"' if href == here else "")
        + f">{rh.esc(text)}</a>"
        for href, text in links
    )  # fmt: skip
    return f'<nav class="site">{items}</nav>'


def runs_page(folder: Path, claims: pd.DataFrame | None = None) -> str:
    """A reference's runs as ``ipclab runs`` lists them (its body), then, per set of cells
    its claims compare, the runs that decide those claims (each claim's anchor
    ``claim-<id>``; :mod:`ipclab.report.claimruns`)."""
    table = claimruns.reference_runs(folder)
    shown = table[[c for c in RUN_COLUMNS if c in table.columns]]
    cap = rh.caption("Table", 1, f"The {len(table)} runs of {folder.name}, as ipclab runs "
                     "lists them: where, what, when, and whether the code that made each is "
                     "the code that would make it now.")  # fmt: skip
    from ipclab.report.reference import machine_and_date, made_by

    results = folder / "results"
    return (f'{nav("", "../")}<h1>Runs of {rh.esc(folder.name)}</h1>'
            f'<p>{rh.esc(catalogue.describe(folder)["title"])}: '
            f"{rh.esc(machine_and_date(results))}.</p>"
            f'<p class="provenance">Provenance: {rh.esc(made_by(results))}.</p>'
            + rh.frame_table(shown, cap).replace("<table ", '<table id="runs" ', 1)
            + _per_claim(folder, claims))  # fmt: skip


PER_CLAIM_COLUMNS = ("path", "status", "started_at", "current_code", "rps", "mean_ms")


def _per_claim(folder: Path, claims: pd.DataFrame | None) -> str:
    """Per set of cells, the runs that decide its claims, each claim's anchor on it."""
    if claims is None or "claim_id" not in claims:
        return ""
    groups: dict[tuple[str, ...], tuple[list[str], pd.DataFrame]] = {}
    for cid, runs in claimruns.decided_by(folder, claims).items():
        key = tuple(runs["path"].astype(str))
        groups.setdefault(key, ([], runs))[0].append(cid)
    if not groups:
        return ""
    out = ['<h2 id="per-claim">Runs per claim</h2><p>The runs that decide each claim: its '
           "two cells matched to the runs above by name, exactly the runs the claim counted "
           "per side. A claim not listed here is decided by runs this match cannot single "
           "out: the table above holds them.</p>"]  # fmt: skip
    by_id = claims.set_index(claims["claim_id"].astype(str))
    for ids, runs in groups.values():
        anchors = "".join(f'<span id="claim-{rh.esc(i)}"></span>' for i in ids)
        cmp = ", ".join(f"{i} ({by_id.loc[i, 'comparison']})" for i in ids[:6])
        more = f" and {len(ids) - 6} more" if len(ids) > 6 else ""
        shown = runs[[c for c in PER_CLAIM_COLUMNS if c in runs.columns]]
        cap = f'<span class="label">{len(runs)} runs</span> decide {rh.esc(cmp)}{more}.'
        out.append(f'<section class="claim-runs">{anchors}{rh.frame_table(shown, cap)}</section>')
    return "\n".join(out)


def runs_href(folder: Path | None, claim_id: object, decided: dict[str, pd.DataFrame]) -> str:
    """The site's link to the runs of a claim: its own list when its runs are matched
    (``runs/<reference>.html#claim-<id>``), else the reference's run list."""
    if folder is None:
        return ""
    page = f"runs/{folder.name}.html"
    return f"{page}#claim-{claim_id}" if str(claim_id) in decided else page


def _row(s: Source, r: pd.Series, runtime: str, backend: str, runs: str) -> str:
    """One claim's row; ``runs``: the link to its runs (empty: none on the site)."""
    verdict = REVERSED if is_reversed(r) else str(r.get("verdict"))
    est = rh.fmt_ci(r.get("measured_ratio"), r.get("ci_low"), r.get("ci_high"))
    cid = str(r["claim_id"])
    claim = f'<a href="index.html#{rh.esc(claim_anchor(s.anchor, cid))}">{rh.esc(cid)}</a>'
    evidence = f'<a class="figure" href="index.html#{rh.esc(s.anchor)}-figures">figures</a>'
    if runs:
        evidence += f' · <a class="runs" href="{rh.esc(runs)}">runs</a>'
    data = " ".join(f'data-{k}="{rh.esc(v)}"' for k, v in
                    (("study", s.study), ("verdict", verdict), ("runtime", runtime),
                     ("backend", backend), ("claim", claim_anchor(s.anchor, cid))))  # fmt: skip
    return (
        f"<tr {data}><td>{rh.esc(s.study)}</td><td>{rh.esc(s.label)}</td><td>{claim}</td>"
        f'<td class="txt">{rh.breakable(str(r.get("comparison")))}</td>'
        f"<td>{rh.esc(est)}</td>{rh.verdict_cell(verdict)}<td>{rh.esc(runtime)}</td>"
        f"<td>{rh.esc(backend)}</td><td>{evidence}</td></tr>"
    )


def claims_page(sources: Sequence[Source], run_pages: dict[Path, str]) -> str:
    """The body of ``claims.html``: every claim of every source, with its evidence."""
    rows = []
    for s in sources:
        info = catalogue.describe(s.folder) if s.folder is not None else {}
        runtime, backend = str(info.get("runtimes", "")), str(info.get("backends", ""))
        listed = s.folder is not None and s.folder in run_pages
        decided = claimruns.decided_by(s.folder, s.claims) if listed and s.folder else {}
        rows += [_row(s, r, runtime, backend,
                      runs_href(s.folder, r["claim_id"], decided) if listed else "")
                 for _, r in s.claims.iterrows()]  # fmt: skip
    head = "".join(f"<th>{h}</th>" for h in ("study", "results", "claim", "comparison",
                                             "a/b [95% CI]", "verdict", "runtime", "backend",
                                             "evidence"))  # fmt: skip
    return (
        f"{nav(CLAIMS_PAGE)}<h1>All claims</h1><p>Every claim of the committed references "
        "(and of this run): click a heading to sort, choose to filter; each claim links to "
        "its row in the report, its study's figures and its runs.</p>"
        f'<div class="table-block"><table id="{CLAIMS_TABLE_ID}" class="tbl">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


SORT_SCRIPT = """
(() => {
  const table = document.getElementById("__TABLE__");
  if (!table) return;
  const body = table.tBodies[0];
  [...table.tHead.rows[0].cells].forEach((th, i) => {
    th.style.cursor = "pointer";
    th.addEventListener("click", () => {
      const up = th.dataset.sort !== "up";
      th.dataset.sort = up ? "up" : "down";
      const key = (r) => r.cells[i].textContent.trim();
      const rows = [...body.rows].sort((a, b) => {
        const x = parseFloat(key(a)), y = parseFloat(key(b));
        const c = isNaN(x) || isNaN(y) ? key(a).localeCompare(key(b)) : x - y;
        return up ? c : -c;
      });
      body.append(...rows);
    });
  });
})();
"""
