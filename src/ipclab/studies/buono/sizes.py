"""Payload sizes without a network: compact JSON against protobuf, raw and gzip, for the
flat and nested structures, beside the reductions the study reports.

The study's numbers and which of its cases each row faces (reduction = (JSON - protobuf) /
JSON): flat raw against 25.80 % (its worst case, Fig. 30, flat up to 300,000 elements,
compression not stated); flat gzip at a low count against 58.2 % (its best flat case,
Fig. 29, count 5, "only compressed with Gzip", which reads as protobuf+gzip against
JSON+gzip, as protobuf+gzip against raw JSON, or as protobuf against gzipped JSON: all three
are given); nested against 64.54 %
(worst) to 72.28 % (best) (Fig. 31 by context, counts 5 to 650, compression not stated).

The study does not say whether its JSON was compact or indented; the indented size (the
standard library's ``indent=2``) is given beside the compact one, which is the measured
format.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable

import pandas as pd
from ipclab_services.domains.payload import codec, data

COUNTS = (5, 50, 650, 10_000)
GZIP_LEVEL = 6

COLUMNS = [
    "structure", "count",
    "json_bytes", "protobuf_bytes", "reduction_pct",
    "json_gzip_bytes", "protobuf_gzip_bytes", "gzip_reduction_pct",
    "protobuf_gzip_vs_json_raw_pct", "protobuf_raw_vs_json_gzip_pct",
    "pretty_json_bytes", "pretty_reduction_pct", "thesis",
]  # fmt: skip


def thesis_case(structure: str, count: int) -> str:
    """The study's reduction this row faces (raw; gzip)."""
    if structure == "nested":
        return "64.54-72.28 % (Fig. 31, nested 5-650; compression not stated)"
    if count <= 50:
        return "raw 25.80 % worst (Fig. 30); gzip 58.2 % best (Fig. 29, flat 5, gzip)"
    return "25.80 % worst (Fig. 30, flat up to 300,000; compression not stated)"


def _pct(json_bytes: int, pb_bytes: int) -> float:
    return round(100.0 * (json_bytes - pb_bytes) / json_bytes, 2)


def _gz(b: bytes, level: int) -> int:
    return len(gzip.compress(b, compresslevel=level, mtime=0))


def size_table(
    counts: Iterable[int] = COUNTS,
    structures: Iterable[data.Structure] = data.STRUCTURES,
    level: int = GZIP_LEVEL,
    seed: int = data.DEFAULT_SEED,
) -> pd.DataFrame:
    """One row per (structure, count), in that order: bytes of compact JSON and of protobuf,
    raw and gzip at ``level`` (mtime 0, so the bytes are reproducible), indented JSON, and
    the reductions in percent."""
    rows = []
    for structure in structures:
        for count in counts:
            ds = data.dataset(structure, count, seed)
            j, p = codec.encode_json(ds.document), codec.encode_protobuf(ds.message)
            jz, pz = _gz(j, level), _gz(p, level)
            pretty = json.dumps(ds.document, indent=2).encode()
            rows.append(
                [structure, count, len(j), len(p), _pct(len(j), len(p)), jz, pz, _pct(jz, pz),
                 _pct(len(j), pz), _pct(jz, len(p)), len(pretty), _pct(len(pretty), len(p)),
                 thesis_case(structure, count)]
            )  # fmt: skip
    return pd.DataFrame(rows, columns=COLUMNS)


if __name__ == "__main__":
    import sys

    counts = tuple(int(c) for c in sys.argv[1:]) or COUNTS
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(size_table(counts).drop(columns="thesis").to_string(index=False))
