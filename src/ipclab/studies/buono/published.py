"""Published numbers, reported cells and claims of Buono & Petrovic 2021, read from
``data/published/`` (described in its README).

Three CSV files:

* ``buono2021_results.csv``: every number the thesis prints about its experiment (the grid of
  Table 3, the counts in the figure captions, the procedure, the percentages and times of the
  abstract and section 6.1, the 400 MB limit and the 43320KB blob, and the byte-level
  examples of Figs. 12 and 14), one row each, exactly as printed, with its grid coordinates
  (structure, method, count, gzip, cache, format; empty where the thesis does not say),
  its sentence and a ``flags`` column naming what is wrong or unsure about it;
* ``buono2021_grid.csv``: the cells the thesis reports, one row per figure and cell, with the
  coordinates its caption or text prints, those ipclab inferred (``inferred``) and the
  outcome the text gives;
* ``buono2021_claims.csv``: every claim of chapters 5-7 (and the abstract) that compares
  things ipclab measures, in the generic claims format of :mod:`ipclab.published`. A style
  is a cell of the grid without its count, ``{format}-{structure}-{method}-{compression}-
  {cache}`` (:func:`style`), and ``a_users``/``b_users``/``from_users``/``to_users`` hold the
  **data generation count** (the thesis's requests come one at a time).

:func:`printed_checks` recomputes the checks that the printed numbers allow (the thesis's own
example records against its percentages, its blob against its record size, its abstract
against its body) and says where they disagree; the ``flags`` of the results say the same.

Every loader validates columns, types and allowed values and raises
:class:`PublishedDataError` naming the file, the row and the problem.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from ipclab_services.domains.payload import codec
from ipclab_services.proto import payments_pb2, users_pb2

from ipclab import published as core
from ipclab.published import (
    DATA_DIR,
    DOCUMENTS,
    Claim,
    PublishedDataError,
    check_choice,
    read_table,
    row_error,
)

RESULTS_CSV = DATA_DIR / "buono2021_results.csv"
GRID_CSV = DATA_DIR / "buono2021_grid.csv"
CLAIMS_CSV = DATA_DIR / "buono2021_claims.csv"

FORMATS = ("json", "protobuf")
STRUCTURES = ("flat", "nested")
METHODS = ("get", "post")
COMPRESSIONS = ("raw", "gzip")
CACHES = ("nocache", "cache")


def style(
    format: str,
    structure: str,
    method: str = "get",
    compression: str = "raw",
    cache: str = "nocache",
) -> str:
    """A claim's style: one cell of the thesis's grid without its count,
    e.g. ``protobuf-nested-post-gzip-nocache``."""
    parts = (format, structure, method, compression, cache)
    for value, allowed in zip(
        parts, (FORMATS, STRUCTURES, METHODS, COMPRESSIONS, CACHES), strict=True
    ):
        if value not in allowed:
            raise ValueError(f"{value!r} is not one of {', '.join(allowed)}")
    return "-".join(parts)


@dataclass(frozen=True)
class StyleCell:
    """The grid coordinates a style names (the count is the claim's ``users``)."""

    format: str
    structure: str
    method: str
    compression: str
    cache: str


def parse_style(label: str) -> StyleCell:
    """The coordinates of a style made by :func:`style`; ValueError for anything else."""
    parts = label.split("-")
    if len(parts) != 5:
        raise ValueError(f"style {label!r} is not format-structure-method-compression-cache")
    style(*parts)  # validates
    return StyleCell(*parts)


#: every style a claim may name
STYLES = tuple(style(*p) for p in product(FORMATS, STRUCTURES, METHODS, COMPRESSIONS, CACHES))
#: the per-run measures the claims compare (an experiment's per-run table provides them)
METRICS = {
    "response_ms": "the client's mean response time over a run's requests",
    "server_ms": "the data service's mean time per request (the sum of its Server-Timing: "
    "(de)serialisation plus gzip or gunzip where the style says gzip)",
    "codec_ms": "the data service's mean (de)serialisation time alone (Server-Timing's ser "
    "of a GET, deser of a POST; no gzip or gunzip)",
    "codec_pb_json": "per run, Protobuf's codec_ms over JSON's in the same run and cell (on "
    "the Protobuf row): how much of JSON's (de)serialisation time Protobuf takes",
    "body_bytes": "bytes of the body on the wire (after gzip where the style says gzip); "
    "fixed by construction (seeded data): a fact",
    "peak_rss_mb": "the data service's peak resident memory during the run",
    "transient_rss_mb": "the data service's peak resident memory during the run minus its "
    "resident memory before the request (the memory the request takes)",
    "heap_committed_mb": "the data service's peak committed heap (MiB), from its JVM's own GC "
    "log (heap.csv): what the JVM took from the system for its heap; a Python process has "
    "none (its rows stay inconclusive there)",
    "oom_killed": "1 when the data service was killed for memory during the run (by the "
    "kernel at the limit, or on the JVM by its own full heap), else 0",
}
#: the metrics whose values are fixed by construction (the same in every run): facts
FACTS = ("body_bytes",)

QUANTITIES = (
    "request_count",
    "max_generation_count",
    "generation_count",
    "requests_per_cell",
    "warmup_requests",
    "gzip_max_input",
    "nesting_depth",
    "response_time_reduction_ms",
    "response_time_reduction_pct",
    "processing_time_reduction_pct",
    "processing_time_reduction_ms",
    "size_reduction_pct",
    "failed_value_plotted",
    "memory_limit_mb",
    "payload_kb",
    "payload_bytes",
    "varint_value",
)
#: what can be wrong or unsure about a printed number
FLAGS = (
    "inconsistent",  # contradicts another statement of the thesis
    "check_disagrees",  # a check recomputed from the thesis's printed examples disagrees
    "ambiguous",  # what it compares (cell, base, series) is not printed
    "inferred",  # a grid coordinate of the row is ipclab's inference, not printed
    "bound",  # printed as a bound ("less than", "up to")
    "miscited",  # its sentence cites the wrong section or figure
    "typo",  # printed with a typing error ("Up to to")
)
_COORDS = {
    "structure": ("", *STRUCTURES),
    "method": ("", "GET", "POST"),
    "gzip": ("", "on", "off"),
    "cache": ("", "on", "off"),
    "format": ("", *FORMATS),
}
RESULT_COLUMNS = (
    "document", "section", "page", "figure", "table", "structure", "method", "count", "gzip",
    "cache", "format", "quantity", "printed", "value", "unit", "flags", "quote", "note",
)  # fmt: skip
GRID_COLUMNS = (
    "figure", "section", "page", "caption", "structure", "method", "count", "gzip", "cache",
    "format", "measures", "inferred", "outcome", "note",
)  # fmt: skip
GRID_MEASURES = ("response_ms", "server_ms", "body_bytes", "header_bytes", "peak_rss_mb",
                 "alloc_peak_mb", "oom_killed")  # fmt: skip
_WORDS = {"an initial pre-request": "1", "the value 0": "0"}

__all__ = ["Claim", "PublishedDataError"]


def _digits(printed: str) -> str:
    text = _WORDS.get(printed, printed)
    return re.sub(r"[^\d.]", "", text.replace(" ", ""))


def _count(p: Path, i: int, raw: str) -> int | None:
    if raw == "":
        return None
    try:
        v = int(raw)
    except ValueError:
        raise row_error(p, i, f"count={raw!r} is not an integer") from None
    if v <= 0:
        raise row_error(p, i, f"count={raw!r} must be positive")
    return v


def _pages(df: pd.DataFrame, p: Path) -> None:
    for i, v in enumerate(df["page"]):
        if not re.fullmatch(r"\d+(-\d+)?", v):
            raise row_error(p, i, f"page={v!r} is not a page or a page range like 36-37")


def load_results(path: str | Path | None = None) -> pd.DataFrame:
    """One row per printed number: ``value`` (float), ``count`` (Int64, empty where the
    thesis gives none), ``flags`` as a tuple; the rest as printed."""
    p = Path(path) if path is not None else RESULTS_CSV
    df = read_table(p, RESULT_COLUMNS)
    check_choice(df, p, "document", DOCUMENTS)
    check_choice(df, p, "quantity", QUANTITIES)
    for col, allowed in _COORDS.items():
        check_choice(df, p, col, allowed)
    _pages(df, p)
    out = df.loc[:, list(RESULT_COLUMNS)].copy()
    values, counts, flags = [], [], []
    for i, r in enumerate(df.to_dict("records")):
        f = tuple(x for x in r["flags"].split(";") if x)
        bad = [x for x in f if x not in FLAGS]
        if bad:
            raise row_error(p, i, f"flags {bad} not among {', '.join(FLAGS)}")
        flags.append(f)
        counts.append(_count(p, i, r["count"]))
        try:
            v = float(r["value"])
        except ValueError:
            raise row_error(p, i, f"value={r['value']!r} is not a number") from None
        digits = _digits(r["printed"])
        want = r["value"].rstrip("0").rstrip(".") if "." in r["value"] else r["value"]
        if not r["printed"] or want not in digits:
            raise row_error(p, i, f"value {r['value']!r} is not what is printed ({r['printed']!r})")
        if r["printed"] not in r["quote"] and r["printed"] not in _WORDS:
            raise row_error(p, i, f"printed {r['printed']!r} is not in its quote")
        values.append(v)
    out["value"] = pd.Series(values, index=df.index, dtype=float)
    out["count"] = pd.Series(counts, index=df.index, dtype="Int64")
    out["flags"] = flags
    return out


def load_grid(path: str | Path | None = None) -> pd.DataFrame:
    """The reported cells: one row per figure, cell and format; ``count`` Int64 (empty
    where not printed nor inferred), ``measures`` and ``inferred`` as tuples."""
    p = Path(path) if path is not None else GRID_CSV
    df = read_table(p, GRID_COLUMNS)
    for col, allowed in _COORDS.items():
        check_choice(df, p, col, allowed)
    _pages(df, p)
    out = df.loc[:, list(GRID_COLUMNS)].copy()
    counts, measures, inferred = [], [], []
    for i, r in enumerate(df.to_dict("records")):
        counts.append(_count(p, i, r["count"]))
        m = tuple(x for x in r["measures"].split(";") if x)
        if not m or any(x not in GRID_MEASURES for x in m):
            raise row_error(
                p, i, f"measures={r['measures']!r} not among {', '.join(GRID_MEASURES)}"
            )
        measures.append(m)
        inf = tuple(x for x in r["inferred"].split(";") if x)
        if any(x not in ("structure", "method", "count", "gzip", "cache") for x in inf):
            raise row_error(p, i, f"inferred={r['inferred']!r} names no grid coordinate")
        inferred.append(inf)
        if r["format"] == "":
            raise row_error(p, i, "a reported cell needs its format")
    out["count"] = pd.Series(counts, index=df.index, dtype="Int64")
    out["measures"] = measures
    out["inferred"] = inferred
    key = ["figure", "structure", "method", "count", "gzip", "cache", "format"]
    dup = out.astype({"count": str}).duplicated(key)
    if dup.any():
        raise row_error(p, int(np.flatnonzero(dup.to_numpy())[0]), "duplicate cell")
    return out


def _check_metrics(p: Path) -> None:
    df = pd.read_csv(p, dtype=str, keep_default_na=False)
    for i, m in enumerate(df["metric"]):
        if m not in METRICS:
            raise row_error(p, i, f"metric={m!r} not one of {', '.join(METRICS)}")


def load_claims(path: str | Path | None = None) -> pd.DataFrame:
    """The study's claims CSV as a DataFrame, validated (``ipclab.published.load_claims``,
    and the metric among :data:`METRICS`)."""
    p = Path(path) if path is not None else CLAIMS_CSV
    out = core.load_claims(p, STYLES)
    _check_metrics(p)
    return out


def claims(path: str | Path | None = None, scope: str | Sequence[str] | None = None) -> list[Claim]:
    """The study's claims as typed :class:`Claim` objects, optionally only those of ``scope``
    (``performance``: times, memory, OOM; ``serialisation``: body bytes)."""
    p = Path(path) if path is not None else CLAIMS_CSV
    out = core.claims(p, STYLES, scope)
    _check_metrics(p)
    return out


# --------------------------------------------------------------------------- printed checks

#: the thesis's Fig. 21, its example user (printed as a JSON extract)
FIG21_USER: dict[str, Any] = {
    "uid": "beb1beb2-f69b-4f74-9c3f-83e3a8271739",
    "email": "coleman.balistreri@yahoo.com",
    "username": "vidal.hammes",
    "profilePictureURL": "https://s3.amazonaws.com/uifaces/faces/twitter/mandalareopens/128.jpg",
    "age": 0,
}
#: the thesis's Fig. 23, two Items of the nested structure (printed as a JSON extract)
FIG23_ITEMS: tuple[dict[str, Any], ...] = (
    {"name": "Small Rubber Watch", "sku": "5b3d21ea-73ca-43ef-84a0-d234064b1fff",
     "price": 83.82, "currency": "USD", "quantity": 19},
    {"name": "Rustic Copper Knife", "sku": "0ab4188c-abe8-43cf-b928-3f3e32cc7aae",
     "price": 98.56, "currency": "RUB", "quantity": 4},
)  # fmt: skip
#: the thesis's Fig. 14, "Byte sequence (33 bytes)", as printed
FIG14_HEX = (
    "0a 06 4d 61 72 74 69 6e 10 b9 0a 1a 0b 64 61 79 64 72 65 61 "
    "6d 69 6e 67 1a 07 68 61 63 6b 69 6e 67"
)
#: the thesis's Fig. 12, 300 in LEB128, as printed
FIG12_BITS = "1010 1100 0000 0010"
#: how close a record-level reduction must be to a printed one (percentage points)
POINTS = 1.0
#: how close the blob's bytes per user must be to the example user's (strings vary)
RELATIVE = 0.10


def leb128(n: int) -> bytes:
    """``n`` (non-negative) as a protobuf varint."""
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def unleb128(data: bytes) -> int:
    """The non-negative integer a protobuf varint holds (the whole of ``data``)."""
    n = 0
    for i, b in enumerate(data):
        n |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            if i != len(data) - 1:
                raise ValueError("bytes after the varint's last byte")
            return n
    raise ValueError("a varint whose last byte has its high bit set")


def _bytes_of_bits(bits: str) -> list[str]:
    """``"1010 1100 0000 0010"`` as bytes of eight bits each."""
    flat = bits.replace(" ", "")
    if len(flat) % 8 or set(flat) - {"0", "1"}:
        raise ValueError(f"{bits!r} is not whole bytes of bits")
    return [flat[i : i + 8] for i in range(0, len(flat), 8)]


def element_sizes() -> dict[str, int]:
    """Bytes of the thesis's example records as list elements: the Fig. 21 user in
    ``Users`` (protobuf: the record plus its tag and length) and in the ``users`` array of
    compact JSON (the record plus a comma); each Fig. 23 Item alone, compact and indented."""
    user = users_pb2.User(**FIG21_USER).SerializeToString()
    listed = users_pb2.Users(users=[users_pb2.User(**FIG21_USER)]).SerializeToString()
    out = {
        "user_protobuf": len(user),
        "user_protobuf_element": len(listed),
        "user_json": len(codec.encode_json(FIG21_USER, "json")),
    }
    out["user_json_element"] = out["user_json"] + 1  # the comma between elements
    for k, item in enumerate(FIG23_ITEMS, 1):
        out[f"item{k}_protobuf"] = len(payments_pb2.Item(**item).SerializeToString())
        out[f"item{k}_json"] = len(codec.encode_json(item, "json"))
        out[f"item{k}_json_indented"] = len(json.dumps(item, indent=2))
    return out


def _pct(json_bytes: float, pb_bytes: float) -> float:
    return 100.0 * (json_bytes - pb_bytes) / json_bytes


def _one(res: pd.DataFrame, section: str, quantity: str, printed: str) -> pd.Series:
    hit = res[
        (res["section"] == section) & (res["quantity"] == quantity) & (res["printed"] == printed)
    ]
    if len(hit) != 1:
        raise PublishedDataError(f"expected one {section} {quantity} {printed!r} row")
    return hit.iloc[0]


@dataclass(frozen=True)
class Check:
    """One check the printed numbers allow: a printed value against one derived from other
    printed numbers; ``flag`` is what the results' rows in ``rows`` (``(section, printed)``
    pairs) carry when it fails."""

    check: str
    printed: float
    derived: float
    agrees: bool
    flag: str
    rows: tuple[tuple[str, str], ...]
    note: str


def printed_checks(path: str | Path | None = None) -> pd.DataFrame:
    """The checks the printed numbers allow, recomputed (one row per :class:`Check`): the
    thesis's example records against its percentages and its blob (``check_disagrees``
    where they fail), and statements against each other (``inconsistent``)."""
    res = load_results(path)
    checks = [
        *_example_record_checks(res, element_sizes()),
        *_statement_checks(res),
        *_printed_encoding_checks(res),
        *_table3_checks(res),
    ]
    return pd.DataFrame([vars(c) for c in checks])


def _nested_reductions(res: pd.DataFrame) -> pd.DataFrame:
    """Every printed size reduction of the nested structure."""
    return res[(res["quantity"] == "size_reduction_pct") & (res["structure"] == "nested")]


def _example_record_checks(res: pd.DataFrame, e: dict[str, int]) -> list[Check]:
    """The printed size reductions and the 43320KB blob against the sizes of the thesis's
    own example records (Fig. 21's user, Fig. 23's items) encoded here."""
    worst = _one(res, "6.1", "size_reduction_pct", "25.80%")["value"]
    flat = _pct(e["user_json_element"], e["user_protobuf_element"])
    flat_check = Check(
        check="flat worst case against the Fig. 21 user",
        printed=worst,
        derived=round(flat, 2),
        agrees=abs(flat - worst) <= POINTS,
        flag="check_disagrees",
        rows=(("6.1", "25.80%"),),
        note=f"{e['user_protobuf_element']} B of protobuf against {e['user_json_element']} B"
        f" of compact JSON per list element; agree within {POINTS} point",
    )

    blob = _one(res, "6.1", "payload_kb", "43320KB")
    count = int(blob["count"])
    example_kb = e["user_protobuf_element"] * count / 1000
    blob_check = Check(
        check="43320KB against as many Fig. 21 users",
        printed=blob["value"],
        derived=example_kb,
        agrees=abs(blob["value"] / example_kb - 1) <= RELATIVE,
        flag="check_disagrees",
        rows=(("6.1", "43320KB"),),
        note=f"{blob['value']:.0f} KB / {count} users = {blob['value'] * 1000 / count:.1f} B"
        f" per user (KB = 1000 B; {blob['value'] * 1024 / count:.1f} B if KiB) against"
        f" {e['user_protobuf_element']} B per element; agree within {RELATIVE:.0%} (user"
        " strings vary in length)",
    )

    nested = _nested_reductions(res)
    items = [
        _pct(e[f"item{k}_{layout}"], e[f"item{k}_protobuf"])
        for k in (1, 2)
        for layout in ("json", "json_indented")
    ]
    nested_check = Check(
        check="nested worst case against the Fig. 23 items",
        printed=float(nested["value"].min()),
        derived=round(max(items), 2),
        agrees=max(items) >= float(nested["value"].min()) - POINTS,
        flag="check_disagrees",
        rows=tuple(zip(nested["section"], nested["printed"], strict=True)),
        note="the printed Items' best reduction, compact or 2-space indented JSON; the rest"
        " of a Payment is not printed (no proof of error)",
    )
    return [flat_check, blob_check, nested_check]


def _statement_checks(res: pd.DataFrame) -> list[Check]:
    """Printed statements against each other: the abstract against section 6.1, and the
    flat worst case against the sentence before it (Fig. 29)."""
    abstract = _one(res, "Abstract", "size_reduction_pct", "72.28%")["value"]
    nested = _nested_reductions(res)
    body = float(nested.loc[nested["section"] == "6.1", "value"].max())
    resp = _one(res, "6.1", "response_time_reduction_pct", "8.13%")["value"]
    ab = _one(res, "Abstract", "processing_time_reduction_pct", "25.1%")["value"]
    worst = _one(res, "6.1", "size_reduction_pct", "25.80%")["value"]
    return [
        Check(
            check="the abstract's 72.28% against section 6.1's nested best case",
            printed=abstract,
            derived=body,
            agrees=abstract == body,
            flag="inconsistent",
            rows=(("Abstract", "72.28%"),),
            note="the same number",
        ),
        Check(
            check="the abstract's 25.1% 'response time' against section 6.1's response time",
            printed=ab,
            derived=resp,
            agrees=ab == resp,
            flag="inconsistent",
            rows=(("Abstract", "25.1%"),),
            note="§6.1 gives 8.13% for the GET response time and 25.1% for the POST Request"
            " Processing Time",
        ),
        Check(
            check="the flat worst case against the exception of Fig. 29",
            printed=worst,
            derived=0.0,
            agrees=False,
            flag="inconsistent",
            rows=(("6.1", "25.80%"),),
            note="a worst case of 25.80% smaller, while the sentence before says Protobuf was not"
            " smaller at all for very small objects (Fig. 29, flat)",
        ),
    ]


def _printed_encoding_checks(res: pd.DataFrame) -> list[Check]:
    """The background chapter's printed encodings read back: Fig. 14's hex sequence against
    its stated size, Fig. 12's bits against the varint they encode."""
    size = _one(res, "2.4.4", "payload_bytes", "33 bytes")["value"]
    n_hex = len(FIG14_HEX.split())
    v = int(_one(res, "2.4.3", "varint_value", "300")["value"])
    decoded = unleb128(bytes(int(b, 2) for b in _bytes_of_bits(FIG12_BITS)))
    return [
        Check(
            check="Fig. 14: 33 bytes against the printed sequence",
            printed=size,
            derived=n_hex,
            agrees=size == n_hex,
            flag="check_disagrees",
            rows=(("2.4.4", "33 bytes"),),
            note="bytes in the printed hex sequence",
        ),
        Check(
            check="Fig. 12: 300 against the printed bits",
            printed=v,
            derived=decoded,
            agrees=decoded == v,
            flag="check_disagrees",
            rows=(("2.4.3", "300"),),
            note=f"the printed bits {FIG12_BITS} read as LEB128",
        ),
    ]


def _table3_checks(res: pd.DataFrame) -> list[Check]:
    """Table 3's largest generation count of each structure against the largest count a
    caption or Appendix 3 names."""
    checks = []
    for structure in STRUCTURES:
        top = _one_max(res, structure)
        named = res[(res["quantity"] == "generation_count") & (res["structure"] == structure)]
        biggest = float(named["value"].max())
        checks.append(
            Check(
                check=f"Table 3's largest {structure} count against the captions",
                printed=top["value"],
                derived=biggest,
                agrees=top["value"] == biggest,
                flag="inconsistent",
                rows=(("4.4", top["printed"]),),
                note="the largest count a caption or Appendix 3 names",
            )
        )
    return checks


def _one_max(res: pd.DataFrame, structure: str) -> pd.Series:
    hit = res[(res["quantity"] == "max_generation_count") & (res["structure"] == structure)]
    if len(hit) != 1:
        raise PublishedDataError(f"expected one Table 3 maximum for {structure}")
    return hit.iloc[0]
