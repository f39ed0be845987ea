"""Sentences that state findings, generated from a claims table so they cannot drift from it.

A README (or the report) never states a verdict by hand: it holds a block

    <!-- findings: results/claims.csv -->
    ...generated...
    <!-- /findings -->

whose label is the claims table's path relative to the README's folder, and
:func:`write_findings` fills it from that table: the counts over distinct tests (facts
apart, docs/statistics.md section 5), every decided test with its estimate, interval and
adjusted p-value, the reversals (significant on the other side of the claim) and which
tests stay open. :func:`check_findings` says where a README disagrees with its tables: a
block that is not what the table generates (one verdict word changed by hand is enough),
or a line outside the blocks that names a claim with a verdict word its row does not have.
Measured tables and sentences a study computes go into ``<!-- generated: NAME -->`` blocks
the same way (:func:`fill_blocks`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd

from ipclab.claims import (
    FACT,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    TEST,
    UNDERPOWERED,
    VERDICTS,
    claim_ids,
    tally,
)
from ipclab.claims import distinct_tests as _distinct
from ipclab.stats.intervals import interval_text

BLOCK = re.compile(r"<!-- findings: (?P<label>\S+) -->\n(?P<body>.*?)<!-- /findings -->", re.S)


GENERATED = re.compile(r"<!-- generated: (?P<name>[\w-]+) -->\n.*?<!-- /generated -->", re.S)


class FindingsError(ValueError):
    """A README has no findings (or generated) block for what should fill it."""


def fill_blocks(readme: Path, blocks: Mapping[str, str]) -> None:
    """Replace each ``<!-- generated: NAME -->`` ... ``<!-- /generated -->`` block of
    ``readme`` by ``blocks[NAME]`` (measured tables and sentences a study computes, beside
    the findings blocks); every name of ``blocks`` must have its block."""
    text = readme.read_text()
    missing = set(blocks) - {m.group("name") for m in GENERATED.finditer(text)}
    if missing:
        raise FindingsError(f"{readme}: no block '<!-- generated: {sorted(missing)[0]} -->'")

    def repl(m: re.Match[str]) -> str:
        name = m.group("name")
        if name not in blocks:
            return m.group(0)
        return f"<!-- generated: {name} -->\n{blocks[name].rstrip()}\n<!-- /generated -->"

    new = GENERATED.sub(repl, text)
    if new != text:
        readme.write_text(new)


def _num(x: object) -> str:
    try:
        v = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(x)
    return "nan" if not math.isfinite(v) else f"{v:.3g}"


def _estimate(r: pd.Series) -> str:
    """'1.23 [1.10, 1.38], p = 0.004' (a fact: the value alone)."""
    est = _num(r.get("measured_ratio"))
    if str(r.get("evidence", TEST)) == FACT:
        exact = f"{float(r.get('measured_ratio')):.7g}"  # no interval: every digit it has
        return f"a/b = {exact}, {r['verdict']} (a fact: fixed by construction, no test)"
    if est == "nan":  # no ratio (0 against 0): the two sides
        a, b = _num(r.get("measured_a")), _num(r.get("measured_b"))
        return f"a = {a} against b = {b} (no ratio)"
    ci = interval_text(r.get("measured_ratio"), r.get("ci_low"), r.get("ci_high"), ".3g")
    p = _num(r.get("p_value"))
    return f"a/b = {ci}" + (f", adjusted p = {p}" if p != "nan" else "")


def _line(table: pd.DataFrame, r: pd.Series) -> str:
    word = f" ({r['size_word']})" if str(r.get("size_word", "") or "") not in ("", "nan") else ""
    return f"- {claim_ids(table, r, r['verdict'])}: `{r['comparison']}`{word}: {_estimate(r)}"


def _counts(c: dict[str, int]) -> str:
    return ", ".join(f"{c.get(v, 0)} {v}" for v in VERDICTS)


def _reversed(r: pd.Series) -> bool:
    """Not reproduced because the data say the opposite: significant, on the other side of 1
    than the claimed direction (a direction, interaction or stated ratio)."""
    if r["verdict"] != NOT_REPRODUCED or str(r.get("relation", "")) not in ("<", ">"):
        return False
    est, p = float(r.get("measured_ratio", math.nan)), float(r.get("p_value", math.nan))
    if str(r.get("evidence", TEST)) == FACT:
        p = 0.0  # a fact is certain
    wrong = est < 1 if r["relation"] == ">" else est > 1
    return bool(math.isfinite(est) and p < 0.05 and wrong)


def findings_lines(table: pd.DataFrame, source: str) -> list[str]:
    """The findings of one claims table as Markdown lines (no block markers)."""
    tests, facts = tally(table, TEST), tally(table, FACT)
    d = _distinct(table)
    ev = d["evidence"] if "evidence" in d.columns else pd.Series(TEST, d.index)
    out = [
        f"Generated from `{source}` (`ipclab.findings`; not edited by hand). "
        f"{sum(tests.values())} distinct tests from {len(table)} claim rows: {_counts(tests)}."
        + (f" Facts (fixed by construction, not tested): {sum(facts.values())}: "
           f"{facts.get(REPRODUCED, 0)} as claimed, {facts.get(NOT_REPRODUCED, 0)} not"
           + (f", {facts.get(INCONCLUSIVE, 0)} undecided" if facts.get(INCONCLUSIVE) else "")
           + "." if facts else ""),
    ]  # fmt: skip
    sections = [
        ("Reversals (significant on the other side of the claim)",
         d[d.apply(_reversed, axis=1)] if len(d) else d),
        ("Reproduced", d[(d["verdict"] == REPRODUCED) & (ev == TEST)]),
        ("Not reproduced", d[(d["verdict"] == NOT_REPRODUCED) & (ev == TEST)]),
        ("Facts", d[(ev == FACT)]),
    ]  # fmt: skip
    for title, rows in sections:
        if len(rows):
            out += ["", f"**{title}:**", ""] + [_line(table, r) for _, r in rows.iterrows()]
    low = d[(d["verdict"] == UNDERPOWERED) & (ev == TEST)]
    if len(low):
        out += ["", f"**Underpowered ({_tests(len(low))}; their runs cannot decide them: "
                "more than a cell gets or the budget allows, or by design):**", ""]  # fmt: skip
        out += [
            f"- {claim_ids(table, r, UNDERPOWERED)}: `{r['comparison']}`: {_needs(r)}"
            for _, r in low.iterrows()
        ]
    open_ = d[(d["verdict"] == INCONCLUSIVE) & (ev == TEST)]
    if len(open_):
        ids = "; ".join(claim_ids(table, r, INCONCLUSIVE) for _, r in open_.iterrows())
        out += ["", f"**Inconclusive ({_tests(len(open_))}):** {ids}."]
    return out


def _tests(n: int) -> str:
    return f"{n} test" if n == 1 else f"{n} tests"


def _needs(r: pd.Series) -> str:
    """What an underpowered test would need, as its reason states it."""
    reason = str(r.get("reason", ""))
    return reason.removeprefix("underpowered: ").removeprefix("underpowered ").split(";")[0]


def findings_markdown(table: pd.DataFrame, label: str) -> str:
    """The whole block, markers included."""
    body = "\n".join(findings_lines(table, label))
    return f"<!-- findings: {label} -->\n{body}\n<!-- /findings -->"


def write_findings(readme: Path, table: pd.DataFrame, label: str) -> None:
    """Fill the README's block for ``label`` from ``table`` (the block must exist)."""
    text = readme.read_text()
    blocks = [m for m in BLOCK.finditer(text) if m.group("label") == label]
    if not blocks:
        raise FindingsError(
            f"{readme}: no block '<!-- findings: {label} -->' ... '<!-- /findings -->'"
        )
    m = blocks[0]
    new = text[: m.start()] + findings_markdown(table, label) + text[m.end() :]
    if new != text:
        readme.write_text(new)


_CLAIM_ID = re.compile(r"\b([A-Z]\d{2}[a-z]?\d*)\b")
_WORDS = re.compile(r"\b(not reproduced|reproduced|underpowered|inconclusive)\b", re.I)


def check_findings(readme: Path, tables: dict[str, pd.DataFrame] | None = None) -> list[str]:
    """Where a README disagrees with its claims tables (empty when it agrees). ``tables``:
    label -> claims table; by default each block's label read from beside the README."""
    text = readme.read_text()
    problems = []
    labels = [m.group("label") for m in BLOCK.finditer(text)]
    tables = tables or {lab: pd.read_csv(readme.parent / lab) for lab in labels}
    for m in BLOCK.finditer(text):
        lab = m.group("label")
        want = findings_markdown(tables[lab], lab)
        if m.group(0) != want:
            problems.append(f"{readme}: the findings block of {lab} is not what the table says")
    outside = BLOCK.sub("", text)
    verdicts = _verdicts_by_id(tables.values())
    for line in outside.splitlines():
        said = {w.lower() for w in _WORDS.findall(line)}
        ids = [i for i in _CLAIM_ID.findall(line) if i in verdicts]
        if len(said) == 1 and len(ids) == 1:
            have = verdicts[ids[0]]
            if have not in said:
                problems.append(f"{readme}: '{line.strip()[:80]}' says {said.pop()}, "
                                f"the table says {ids[0]} is {have}")  # fmt: skip
    return problems


def _verdicts_by_id(tables: Iterable[pd.DataFrame]) -> dict[str, str]:
    out: dict[str, str] = {}
    for t in tables:
        if "claim_id" in t.columns:
            out.update(zip(t["claim_id"].astype(str), t["verdict"].astype(str), strict=True))
    return out
