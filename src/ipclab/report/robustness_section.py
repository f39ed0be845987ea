"""The report's robustness section: whether the committed references' verdicts hold when
the same claims are measured another way, on another backend or in another language
(:mod:`ipclab.robustness`). Every sentence is counted from the tables it introduces."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ipclab import robustness as rb
from ipclab.compare import compare_claims
from ipclab.report import html as rh
from ipclab.report.context import Counter


def _shown(table: pd.DataFrame, labels: tuple[str, str]) -> pd.DataFrame:
    la, lb = labels

    def est(side: str) -> pd.Series:
        return table.apply(
            lambda r: rh.fmt_ci(r[f"{side}_measured_ratio"], r[f"{side}_ci_low"],
                                r[f"{side}_ci_high"]), axis=1)  # fmt: skip

    ratio = table.apply(
        lambda r: rh.fmt_ci(r[f"{lb}_over_{la}"], r["ratio_low"], r["ratio_high"]), axis=1
    )

    def verdict(side: str) -> pd.Series:  # a verdict resting on a flagged cell says so
        v = table[f"{side}_verdict"].astype(str)
        flag = table.get(f"{side}_plausibility", pd.Series("", index=table.index))
        flagged = flag.astype(str).where(flag.notna(), "").str.startswith("flagged")
        return v.where(~flagged, v + " (cell flagged by the plausibility check)")

    out = pd.DataFrame({"claim": table["claim_id"], "comparison": table["comparison"]})
    if "table" in table.columns and table["table"].nunique() > 1:
        out.insert(0, "table", table["table"])
    return out.assign(**{
        f"{la} a/b": est(la), f"{la} verdict": verdict(la),
        f"{lb} a/b": est(lb), f"{lb} verdict": verdict(lb),
        f"{lb}/{la}": ratio, "verdicts": table["explanation"],
    })  # fmt: skip


def _sentence(table: pd.DataFrame, title: str, labels: tuple[str, str], factor: str) -> str:
    return f"<p>{rh.esc(rb.agreement_sentence(table, title, labels, factor))}</p>"


def _table_html(
    table: pd.DataFrame, title: str, labels: tuple[str, str], factor: str, n: Counter
) -> str:
    if table.empty:
        return ""
    la, lb = labels
    cap = rh.caption("Table", n.table(), f"{title}: each claim's estimate (ratio a/b, "
                     f"95% interval) and verdict on {la} and on {lb}, the ratio of the two "
                     f"estimates ({lb}/{la}) and what explains a disagreement.")  # fmt: skip
    return _sentence(table, title, labels, factor) + rh.frame_table(_shown(table, labels), cap)


def _written(results_dir: Path) -> list[tuple[str, pd.DataFrame, tuple[str, str], str]]:
    """The agreement tables a study wrote itself (``*_agreement.csv``: ``side_by_side``'s
    columns, e.g. a study's claims on each of two adapter sets): title, table, labels, factor."""
    out = []
    for csv in sorted(results_dir.glob("*_agreement.csv")):
        t = pd.read_csv(csv)
        sides = [c.removesuffix("_verdict") for c in t.columns if c.endswith("_verdict")]
        if len(sides) != 2 or "explanation" not in t.columns:
            continue
        factor = csv.stem.removesuffix("_agreement").replace("_", " ")
        title = f"{results_dir.parent.name}: {factor}"
        out.append((title, t, (sides[0], sides[1]), factor))
    return out


def pairs(reference_root: Path) -> list[tuple[str, pd.DataFrame, tuple[str, str], str]]:
    """Every side-by-side table of the committed references: backends, then a factor's
    levels within one reference, then the agreement tables studies wrote (title, table,
    labels, factor)."""
    root = Path(reference_root)
    found = [(f.parent, f.parent.parent.name) for f in sorted(root.glob("*/results/study.json"))]
    factors = [p for d, name in found if (p := rb.factor_pairs(rb.claims_tables(d), name))]
    # across backends: the claims as ``ipclab compare`` sets them side by side
    compared = [compare_claims(a, b, labels) for labels, a, b in rb.backend_folders(root)]
    out = [(c.title, c.table, c.labels, "backend") for c in compared if c is not None]
    out += [(p.title, rb.side_by_side(p, factor="factor"), p.labels, "factor") for p in factors]
    return out + [w for d, _ in found for w in _written(d)]


def robustness_section(reference_root: Path, n: Counter) -> str:
    """Backends, then factors within one reference (e.g. languages, adapter sets); empty
    when the committed references hold neither."""
    tables = pairs(reference_root)
    if not tables:
        return ""
    out = [
        '<section class="study"><h1 class="study-title">Robustness</h1>',
        "<p>Whether a verdict is a property of the style or of the way it was measured: the "
        "committed references' claims measured on two backends, and claims stated once per "
        "level of a factor, side by side (docs/statistics.md section 8).</p>",
    ]
    backends = [t for t in tables if t[3] == "backend"]
    if backends:
        out.append("<h2>Across backends</h2>")
        out += [_table_html(t, title, labels, factor, n) for title, t, labels, factor in backends]
    others = [t for t in tables if t[3] != "backend"]
    if others:
        out.append("<h2>Across a factor's levels</h2>")
        out += [_table_html(t, title, labels, factor, n) for title, t, labels, factor in others]
    out.append("</section>")
    return "\n".join(out)
