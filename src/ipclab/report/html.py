"""HTML pieces of the report: number formatting, tables sized to fit the page, claims tables.

Tables are never cut off: each table's width is estimated from its longest cells, and its
font shrinks until it fits a portrait A4 text column; a table too wide even at the smallest
font goes on a landscape page of its own. Long text wraps; numbers never do.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ipclab.stats.intervals import interval_text

PORTRAIT_PT = 516.0  # A4 portrait minus 14 mm margins each side
LANDSCAPE_PT = 762.0  # A4 landscape minus 14 mm margins each side
MAX_FONT_PT = 9.0
MIN_FONT_PT = 6.5  # below this a portrait table goes landscape
FLOOR_FONT_PT = 5.5  # smallest font used anywhere
CHAR_EM = 0.56  # mean glyph width of DejaVu Sans Condensed, in em
CELL_PAD_PT = 6.0
TEXT_WRAP_CHARS = 26  # a text column wraps at about this many characters

VERDICT_CLASSES = {
    "reproduced": "v-ok",
    "not reproduced": "v-bad",
    "reversed": "v-bad",
    "underpowered": "v-low",
    "inconclusive": "v-unk",
}

_NUM = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf)"
_CI_RE = re.compile(rf"^\s*({_NUM})\s*\[\s*({_NUM})\s*,\s*({_NUM})\s*\]\s*$")


def esc(x: object) -> str:
    return html.escape(str(x), quote=True)


def is_missing(x: object) -> bool:
    if x is None:
        return True
    if isinstance(x, float | np.floating):
        return not math.isfinite(float(x))
    return bool(isinstance(x, str) and x.strip().lower() in ("", "nan", "none"))


def fmt_num(x: object) -> str:
    """A number for people: 3 significant digits, thousands separated, no exponent unless tiny."""
    if is_missing(x):
        return "–"
    if isinstance(x, bool | np.bool_):
        return "yes" if x else "no"
    if isinstance(x, int | np.integer):
        return f"{int(x):,}"
    try:
        v = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(x)
    if v == 0:
        return "0"
    if v.is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    if abs(v) >= 1000 or abs(float(f"{v:.3g}")) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 1e-3:
        return f"{v:.3g}"
    return f"{v:.2e}"


def fmt_p(x: object) -> str:
    """A p-value: 0.012, 0.400, <0.001."""
    if is_missing(x):
        return "–"
    try:
        v = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(x)
    return "<0.001" if v < 0.001 else f"{v:.3f}"


def fmt_ci(estimate: object, low: object, high: object) -> str:
    """``1.23 [1.10, 1.40]``; ``2 (no CI)`` without an interval; the estimate alone when the
    interval is a point (a deterministic measure)."""
    return interval_text(
        estimate, low, high, fmt_num, missing="–", no_interval=" (no CI)", point=True
    )


def fmt_text(x: object) -> str:
    """A text cell; ``x [a, b]`` strings (intervals written as text) get reformatted."""
    if is_missing(x):
        return "–"
    s = str(x)
    m = _CI_RE.match(s)
    if m:
        est, low, high = (float(g) for g in m.groups())
        return fmt_ci(est, low, high)
    if s in ("True", "False"):
        return "yes" if s == "True" else "no"
    return s


def is_p_column(name: str) -> bool:
    parts = name.lower().split("_")
    return "p" in parts or name.lower() in ("pvalue", "p-value")


_HEADER_WORDS = {"s": "(s)", "ms": "(ms)", "ci": "CI", "rt": "RT", "loc": "LOC", "rps": "req/s"}


def pretty_header(name: str) -> str:
    words = [_HEADER_WORDS.get(w.lower(), w) for w in str(name).split("_") if w]
    return " ".join(words) if words else str(name)


def format_frame(df: pd.DataFrame) -> tuple[list[str], list[list[str]], list[bool]]:
    """Headers, formatted cells and, per column, whether it holds text (wraps) or numbers."""
    headers = [pretty_header(c) for c in df.columns]
    cols: list[list[str]] = []
    text: list[bool] = []
    for name in df.columns:
        s = df[name]
        if pd.api.types.is_bool_dtype(s):
            cols.append([fmt_num(v) for v in s])
            text.append(True)
        elif pd.api.types.is_numeric_dtype(s):
            f = fmt_p if is_p_column(str(name)) else fmt_num
            cols.append([f(v) for v in s])
            text.append(False)
        else:
            cols.append([fmt_text(v) for v in s])
            text.append(True)
    rows = [list(r) for r in zip(*cols, strict=True)] if cols else []
    return headers, rows, text


def column_chars(header: str, cells: Iterable[str], text: bool) -> float:
    head = max((len(w) for w in header.split()), default=1)
    longest = max((len(c) for c in cells), default=0)
    body = min(longest, TEXT_WRAP_CHARS) if text else longest
    return float(max(head, body, 1))


def fit_font(chars: float, ncols: int, width_pt: float) -> float:
    """The font size (pt) at which ``chars`` characters over ``ncols`` cells fit ``width_pt``."""
    room = width_pt - CELL_PAD_PT * ncols
    if room <= 0 or chars <= 0:
        return FLOOR_FONT_PT
    return min(MAX_FONT_PT, room / (CHAR_EM * chars))


def layout(widths_chars: Sequence[float]) -> tuple[float, bool]:
    """Font size and whether the table needs a landscape page."""
    chars, n = float(sum(widths_chars)), len(widths_chars)
    size = fit_font(chars, n, PORTRAIT_PT)
    if size >= MIN_FONT_PT:
        return round(size, 2), False
    return round(max(FLOOR_FONT_PT, fit_font(chars, n, LANDSCAPE_PT)), 2), True


def caption(kind: str, number: int, text: str) -> str:
    return f'<span class="label">{kind} {number}.</span> {esc(text)}'


def wrap_table(
    inner: str,
    cap: str,
    size: float,
    landscape: bool,
    extra_class: str = "",
    heading: str = "",
    table_id: str = "",
) -> str:
    """A table with its caption; ``heading`` (HTML) goes right before it, on the same page."""
    cls = f"tbl {extra_class}".strip()
    ident = f' id="{esc(table_id)}"' if table_id else ""
    table = (
        f'{heading}<div class="table-block"><p class="tcap">{cap}</p>'
        f'<table{ident} class="{cls}" style="font-size:{size}pt">{inner}</table></div>'
    )
    return f'<section class="landscape">{table}</section>' if landscape else table


def cell_class(text: bool) -> str:
    return "txt" if text else "num"


def long_class(cell: str) -> str:
    """Cells with a word longer than a text column may break anywhere (paths, ids)."""
    return " long" if max((len(w) for w in cell.split()), default=0) > TEXT_WRAP_CHARS else ""


def frame_table(df: pd.DataFrame, cap: str, heading: str = "") -> str:
    """A results CSV as an HTML table that fits the page."""
    headers, rows, text = format_frame(df)
    widths = [column_chars(h, (r[i] for r in rows), text[i]) for i, h in enumerate(headers)]
    size, landscape = layout(widths)
    classes = [cell_class(t) for t in text]
    head = "".join(f'<th class="{classes[i]}">{esc(h)}</th>' for i, h in enumerate(headers))
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="{classes[i]}{long_class(c) if text[i] else ""}">{esc(c)}</td>'
            for i, c in enumerate(r)
        )
        + "</tr>"
        for r in rows
    )
    if not rows:
        body = f'<tr><td colspan="{max(len(headers), 1)}" class="txt">(no rows)</td></tr>'
    inner = f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
    return wrap_table(inner, cap, size, landscape, heading=heading)


def verdict_cell(v: object) -> str:
    s = "–" if is_missing(v) else str(v)
    return f'<td class="verdict {VERDICT_CLASSES.get(s, "v-other")}">{esc(s)}</td>'


def _get(row: pd.Series, key: str) -> Any:
    return row[key] if key in row.index else None


def published_text(row: pd.Series) -> str:
    value, unit = _get(row, "published_value"), _get(row, "published_unit")
    ratio = _get(row, "published_ratio")
    r = "" if is_missing(ratio) else f"ratio {fmt_num(ratio)}"
    if is_missing(value):
        return r or "–"
    out = fmt_text(value) if isinstance(value, str) else fmt_num(value)
    if not is_missing(unit):
        out += f" {unit}"
    return f"{out} ({r})" if r else out


def breakable(text: str) -> str:
    """Escaped text with break opportunities after ``@``, ``+`` and ``,`` (long comparisons)."""
    out = esc(text)
    for ch in ("@", "+", ","):
        out = out.replace(ch, f"{ch}<wbr>")
    return out


def measured_html(row: pd.Series) -> str:
    est = _get(row, "measured_ratio")
    if is_missing(est):
        main = fmt_text(_get(row, "measured"))
    else:
        main = fmt_ci(est, _get(row, "ci_low"), _get(row, "ci_high"))
    a, b = _get(row, "measured_a"), _get(row, "measured_b")
    detail = ""
    if not is_missing(a) and not is_missing(b):
        na, nb = _get(row, "n_a"), _get(row, "n_b")
        n = f"; n = {fmt_num(na)}, {fmt_num(nb)}" if not is_missing(na) else ""
        check = _get(row, "machine_check")
        if not is_missing(check) and str(check):  # whether the cells' runs pass it
            n += "; machine check " + ("passed" if check == "pass" else str(check))
        plausible = _get(row, "plausibility")  # docs/statistics.md section 9
        if not is_missing(plausible) and str(plausible):
            n += "; plausibility " + ("passed" if plausible == "pass" else "flagged")
        detail = f'<div class="sub">{esc(fmt_num(a))} vs {esc(fmt_num(b))}{esc(n)}</div>'
    return f"{esc(main)}{detail}"


def delta_text(row: pd.Series) -> str:
    return fmt_ci(_get(row, "cliffs_delta"), _get(row, "cliffs_low"), _get(row, "cliffs_high"))


def reason_html(row: pd.Series) -> str:
    reason = _get(row, "reason")
    out = "" if is_missing(reason) else esc(reason)
    note = _get(row, "note")
    if not is_missing(note):
        out += f'<div class="sub note">Note: {esc(note)}</div>'
    plausible = _get(row, "plausibility")  # the verdict stands, on a cell that fails the check
    if not is_missing(plausible) and str(plausible).startswith("flagged"):
        out += f'<div class="sub note">Plausibility check: {esc(plausible)}</div>'
    return out or "–"


CLAIM_COLUMNS = (
    ("claim", "c-id"),
    ("comparison", "c-cmp"),
    ("published", "c-pub"),
    ("measured [95% CI]", "c-meas"),
    ("p", "c-p"),
    ("Cliff's δ", "c-d"),
    ("verdict", "c-v"),
    ("reason", "c-why"),
)


def _claim_row(row: pd.Series, with_source: bool, section: str = "") -> str:
    """One claim's row; with ``section`` (its study's anchor) the row has the id the first
    page links to (``claim-<section>-<claim id>``)."""
    source = f'<div class="sub">{esc(_get(row, "source"))}</div>' if with_source else ""
    ident = f' id="claim-{esc(section)}-{esc(_get(row, "claim_id"))}"' if section else ""
    return (
        f"<tr{ident}>"
        f'<td class="txt id">{esc(_get(row, "claim_id"))}{source}</td>'
        f'<td class="txt">{breakable(fmt_text(_get(row, "comparison")))}</td>'
        f'<td class="txt">{esc(published_text(row))}</td>'
        f'<td class="txt">{measured_html(row)}</td>'
        f'<td class="num">{esc(fmt_p(_get(row, "p_value")))}</td>'
        f'<td class="txt">{esc(delta_text(row))}</td>'
        f"{verdict_cell(_get(row, 'verdict'))}"
        f'<td class="txt">{reason_html(row)}</td>'
        "</tr>"
    )


def claims_table(claims: pd.DataFrame, cap: str, section: str = "") -> str:
    """Claims with their verdicts, grouped under each published statement (source + quote);
    ``section``: the study's anchor, which gives each row its id."""
    colgroup = "".join(f'<col class="{c}">' for _, c in CLAIM_COLUMNS)
    head = "".join(f"<th>{esc(h)}</th>" for h, _ in CLAIM_COLUMNS)
    grouped = "quote" in claims.columns
    key = "statement_id" if "statement_id" in claims.columns else "claim_id"
    parts: list[str] = []
    if grouped and len(claims):
        for sid, g in claims.groupby(key, sort=False):
            first = g.iloc[0]
            src = _get(first, "source")
            quote = _get(first, "quote")
            label = f"<b>{esc(sid)}</b>"
            if not is_missing(src):
                label += f" · {esc(src)}"
            if not is_missing(quote):
                label += f" — <q>{esc(quote)}</q>"
            parts.append(
                f'<tbody class="stmt"><tr class="quote"><td colspan="{len(CLAIM_COLUMNS)}">'
                f"{label}</td></tr>"
                + "".join(_claim_row(r, False, section) for _, r in g.iterrows())
                + "</tbody>"
            )
    else:
        rows = "".join(
            _claim_row(r, "source" in claims.columns, section) for _, r in claims.iterrows()
        )
        parts.append(f"<tbody>{rows or '<tr><td colspan=8>(no claims)</td></tr>'}</tbody>")
    inner = f"<colgroup>{colgroup}</colgroup><thead><tr>{head}</tr></thead>{''.join(parts)}"
    return wrap_table(inner, cap, 6.8, False, "claims")


def all_claims_table(claims: pd.DataFrame, cap: str, table_id: str = "") -> str:
    """One compact row per claim of every study (``study`` column first); each row names
    its study and verdict in ``data-`` attributes, which the site's filter reads."""
    head = "".join(
        f"<th>{h}</th>"
        for h in ("study", "claim", "source", "comparison", "measured [95% CI]", "p", "verdict")
    )
    rows = []
    for _, r in claims.iterrows():
        est = _get(r, "measured_ratio")
        meas = (
            fmt_text(_get(r, "measured"))
            if is_missing(est)
            else fmt_ci(est, _get(r, "ci_low"), _get(r, "ci_high"))
        )
        verdict = "–" if is_missing(_get(r, "verdict")) else str(_get(r, "verdict"))
        rows.append(
            f'<tr data-study="{esc(_get(r, "study"))}" data-verdict="{esc(verdict)}">'
            f'<td class="txt">{esc(_get(r, "study"))}</td>'
            f'<td class="txt id">{esc(_get(r, "claim_id"))}</td>'
            f'<td class="txt">{esc(fmt_text(_get(r, "source")))}</td>'
            f'<td class="txt">{breakable(fmt_text(_get(r, "comparison")))}</td>'
            f'<td class="txt">{esc(meas)}</td>'
            f'<td class="num">{esc(fmt_p(_get(r, "p_value")))}</td>'
            f"{verdict_cell(_get(r, 'verdict'))}"
            "</tr>"
        )
    inner = f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody>"
    return wrap_table(inner, cap, 7.0, False, "allclaims", table_id=table_id)


def verdict_counts(claims: pd.DataFrame, verdicts: Sequence[str]) -> pd.DataFrame:
    """Claims per study and verdict, with a total row and column."""
    known = list(verdicts) + sorted(
        {str(v) for v in claims.get("verdict", pd.Series(dtype=str))} - set(verdicts)
    )
    rows = []
    for study, g in claims.groupby("study", sort=False):
        counts = g["verdict"].astype(str).value_counts()
        rows.append({"study": study, **{v: int(counts.get(v, 0)) for v in known}})
    df = pd.DataFrame(rows, columns=["study", *known])
    total = {"study": "all studies", **{v: int(df[v].sum()) for v in known}}
    df = pd.concat([df, pd.DataFrame([total])], ignore_index=True)
    df["claims"] = df[known].sum(axis=1).astype(int)
    return df


def counts_table(counts: pd.DataFrame, cap: str) -> str:
    head = "".join(
        f'<th class="{VERDICT_CLASSES.get(str(c), "")}">{esc(c)}</th>' for c in counts.columns
    )
    body = ""
    for i, (_, r) in enumerate(counts.iterrows()):
        cls = ' class="total"' if i == len(counts) - 1 else ""
        cells = f'<td class="txt">{esc(r.iloc[0])}</td>' + "".join(
            f'<td class="num">{esc(fmt_num(v))}</td>' for v in r.iloc[1:]
        )
        body += f"<tr{cls}>{cells}</tr>"
    return wrap_table(
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody>", cap, 9.0, False, "counts"
    )


def _inline_rst(text: str) -> str:
    out = esc(text)
    out = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", out)
    out = re.sub(r":[a-z]+:`~?([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"``(.+?)``", r"<code>\1</code>", out)


def rst_to_html(text: str) -> str:
    """The little reStructuredText of a docstring: paragraphs, ``*`` lists, ``code``, bold."""
    parts = []
    for block in re.split(r"\n\s*\n", text.strip()):
        lines = [ln.strip() for ln in block.splitlines()]
        if lines and lines[0].startswith("* "):
            items: list[str] = []
            for ln in lines:
                if ln.startswith("* "):
                    items.append(ln[2:])
                else:
                    items[-1] += f" {ln}"
            lis = "".join(f"<li>{_inline_rst(i.strip())}</li>" for i in items)
            parts.append(f"<ul>{lis}</ul>")
        else:
            parts.append(f"<p>{_inline_rst(' '.join(lines))}</p>")
    return "".join(parts)


def kv_table(items: Sequence[tuple[str, object]], cls: str = "kv") -> str:
    rows = "".join(
        f'<tr><th scope="row">{esc(k)}</th><td>{esc(fmt_text(v))}</td></tr>' for k, v in items
    )
    return f'<table class="{cls}"><tbody>{rows}</tbody></table>'


def inline_md(text: str) -> str:
    out = esc(text)
    out = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", out)
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", out)


def markdown_lines_html(lines: Sequence[str]) -> str:
    """The little Markdown of generated findings (``ipclab.findings``): paragraphs, ``- ``
    lists, ``code`` and bold."""
    parts: list[str] = []
    items: list[str] = []
    for ln in [*lines, ""]:
        if ln.startswith("- "):
            items.append(f"<li>{inline_md(ln[2:])}</li>")
            continue
        if items:
            parts.append(f'<ul class="findings">{"".join(items)}</ul>')
            items = []
        if ln.strip():
            parts.append(f'<p class="findings">{inline_md(ln)}</p>')
    return "".join(parts)


def tests_table(claims: pd.DataFrame, cap: str, section: str = "") -> str:
    """One compact row per distinct test of a claims table (the claims that share it named
    together): comparison, published, measured [95% CI], verdict. With ``section`` (the
    study's anchor) each row has the id the first page links to, ``claim-<section>-<id>``
    of the test's first claim."""
    from ipclab.claims import FACT, claim_ids, distinct_tests

    head = "".join(f"<th>{h}</th>" for h in ("claims", "comparison", "published",
                                             "measured [95% CI]", "verdict"))  # fmt: skip
    rows = []
    for _, r in distinct_tests(claims).iterrows():
        ident = f' id="claim-{esc(section)}-{esc(r["claim_id"])}"' if section else ""
        meas = measured_html(r).split('<div class="sub">')[0]
        verdict = "–" if is_missing(_get(r, "verdict")) else str(_get(r, "verdict"))
        fact = str(_get(r, "evidence")) == FACT
        cell = verdict_cell(verdict).replace(f">{esc(verdict)}<", f">fact: {esc(verdict)}<") \
            if fact else verdict_cell(verdict)  # fmt: skip
        ids = claim_ids(claims, r)
        more = "".join(  # the test's other claims: anchors in its row, for their links
            f'<span id="claim-{esc(section)}-{esc(i)}"></span>'
            for i in ids.split(", ")[1:] if section
        )  # fmt: skip
        rows.append(
            f"<tr{ident}>"
            f'<td class="txt id">{more}{esc(ids)}</td>'
            f'<td class="txt">{breakable(fmt_text(_get(r, "comparison")))}</td>'
            f'<td class="txt">{esc(published_text(r))}</td>'
            f'<td class="txt">{meas}</td>{cell}</tr>'
        )
    inner = f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody>"
    return wrap_table(inner, cap, 6.8, False, "tests")


def needs_landscape(df: pd.DataFrame) -> bool:
    """Whether :func:`frame_table` would print ``df`` on a landscape page of its own."""
    headers, rows, text = format_frame(df)
    widths = [column_chars(h, (r[i] for r in rows), text[i]) for i, h in enumerate(headers)]
    return layout(widths)[1]
