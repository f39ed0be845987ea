"""Counting verdicts: distinct tests, claim ids per row, tallies, the verdict per
statement and the band-sensitivity table."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ipclab.claims.rules import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    SENSITIVITY,
    TEST,
    VERDICTS,
)


def distinct_tests(table: pd.DataFrame) -> pd.DataFrame:
    """One row per distinct test of a claims table (docs/statistics.md section 5): claims with
    the same test key, kind and size word count once."""
    if table.empty:
        return table
    return table.drop_duplicates(_test_columns(table))


def _test_columns(table: pd.DataFrame) -> list[str]:
    """The columns that name a distinct test (a table without test keys: each row one)."""
    if "test_key" not in table.columns:
        return ["claim_id"]
    return ["test_key"] + [c for c in ("test", "magnitude") if c in table.columns]


def _key_text(v: Any) -> str:
    return "" if pd.isna(v) else str(v)


def claim_ids(table: pd.DataFrame, row: pd.Series, verdict: str | None = None) -> str:
    """The claim rows (ids) of one distinct test, e.g. 'T01a, P01a': the rows of ``table``
    with ``row``'s test key, kind and size word (and ``verdict``, when given)."""
    cols = _test_columns(table)
    want = tuple(_key_text(row[c]) for c in cols)
    keys = zip(*(table[c].tolist() for c in cols), strict=True)
    verdicts = table["verdict"].tolist() if verdict is not None else [None] * len(table)
    ids = (
        str(i)
        for i, k, v in zip(table["claim_id"].tolist(), keys, verdicts, strict=True)
        if tuple(_key_text(x) for x in k) == want and (verdict is None or v == verdict)
    )
    return ", ".join(dict.fromkeys(ids))


def tally(table: pd.DataFrame, evidence: str = TEST) -> dict[str, int]:
    """Verdicts counted over distinct tests of one kind of evidence: ``test`` (measured,
    the default), ``fact`` (fixed by construction, counted apart) or ``code``. A table
    written before the ``evidence`` column counts every row as a test."""
    d = distinct_tests(table)
    if "evidence" in d.columns:
        d = d[d["evidence"].fillna(TEST).replace("", TEST) == evidence]
    elif evidence != TEST:
        return {}
    if d.empty:
        return {}
    return {str(k): int(v) for k, v in d["verdict"].value_counts().items()}


def statement_verdicts(table: pd.DataFrame) -> pd.DataFrame:
    """One row per published statement: ``reproduced`` when every part is, ``not
    reproduced`` when any part is not, otherwise ``inconclusive``; with the parts' counts."""
    out = []
    for sid, g in table.groupby("statement_id", sort=False):
        counts = g["verdict"].value_counts()
        if (g["verdict"] == REPRODUCED).all():
            v = REPRODUCED
        elif (g["verdict"] == NOT_REPRODUCED).any():
            v = NOT_REPRODUCED
        else:
            v = INCONCLUSIVE
        out.append(
            {
                "statement_id": sid,
                "source": g["source"].iloc[0],
                "quote": g["quote"].iloc[0],
                "parts": len(g),
                **{k: int(counts.get(k, 0)) for k in VERDICTS},
                "verdict": v,
            }
        )
    return pd.DataFrame(out)


def band_sensitivity(table: pd.DataFrame) -> pd.DataFrame:
    """The band-sensitivity table (docs/statistics.md section 4): one row per distinct test
    whose verdict hangs on a size word (equal, differ, slight, considerable) judged on the
    standard band, with its verdict again at +-5, 10 and 20%, and whether any differs."""
    cols = [f"verdict_{round(x * 100)}pct" for x in SENSITIVITY]
    if table.empty or any(c not in table.columns for c in cols):
        return pd.DataFrame()
    d = distinct_tests(table)
    d = d[d[cols[0]].fillna("").astype(str) != ""]
    out = pd.DataFrame(
        {
            "claims": [claim_ids(table, r) for _, r in d.iterrows()],
            "comparison": d["comparison"],
            "size_word": d["size_word"],
            "measured": d["measured"],
            "band": d["band"],
            "verdict": d["verdict"],
            **{c.replace("verdict_", "at_"): d[c] for c in cols},
        }
    )
    out["band_decides"] = [
        any(r[c.replace("verdict_", "at_")] != r["verdict"] for c in cols)
        for _, r in out.iterrows()
    ]
    return out.reset_index(drop=True)
