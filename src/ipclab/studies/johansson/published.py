"""Published numbers and claims of Johansson 2017, read from ``data/published/``.

Two CSV files (described in ``data/published/README.md``):

* ``johansson2017_results.csv``: every number printed in thesis sections 7.1-7.3 (tests 1-3),
  one row each, exactly as printed, with its sentence, and a ``flags`` column naming what is
  wrong with it (``unit_omitted``, ``inconsistent``, ``coarse``, ``missing``);
* ``johansson2017_claims.csv``: every claim of chapters 7 and 8 (and the serialisation
  rankings of section 5.2 they rest on), one row per testable comparison, in the generic
  claims format of :mod:`ipclab.published`. The thesis varies the data size, not the load
  (one user throughout), so ``a_users``/``b_users``/``from_users``/``to_users`` hold **rows
  per table**; test 1's row count is not printed and is compared at 5 rows.

Every loader validates columns, types and allowed values and raises
:class:`PublishedDataError` naming the file, the row and the problem.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

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

RESULTS_CSV = DATA_DIR / "johansson2017_results.csv"
CLAIMS_CSV = DATA_DIR / "johansson2017_claims.csv"

#: the styles a claim may compare: the two gateways, and the serialisation formats
STYLES = ("rest", "graphql", "xml", "json", "thrift", "protobuf")
INTERFACE_STYLE = {"REST": "rest", "GraphQL": "graphql", "": ""}
QUANTITIES = (
    "requests",
    "pause_s",
    "rows",
    "min_ms",
    "max_ms",
    "mean_ms",
    "percent_slower",
    "pp_increase",
)
FLAGS = ("unit_omitted", "inconsistent", "coarse", "missing")
#: test 1's row count is not printed ("a fairly small amount of data"); ipclab uses 5
TEST1_ROWS = 5
RESULT_COLUMNS = (
    "document", "section", "page", "figure", "test", "rows_per_table", "interface", "style",
    "quantity", "printed", "value", "unit", "flags", "quote", "note",
)  # fmt: skip

__all__ = ["Claim", "PublishedDataError"]


def load_results(path: str | Path | None = None) -> pd.DataFrame:
    """Thesis sections 7.1-7.3, one row per printed number: ``value`` (float; empty only
    where ``flags`` says ``missing``), ``test`` (int), ``rows_per_table`` (Int64, empty for
    test 1), ``flags`` as a tuple; the rest as printed."""
    p = Path(path) if path is not None else RESULTS_CSV
    df = read_table(p, RESULT_COLUMNS)
    check_choice(df, p, "document", DOCUMENTS)
    check_choice(df, p, "quantity", QUANTITIES)
    check_choice(df, p, "interface", tuple(INTERFACE_STYLE))
    out = df.loc[:, list(RESULT_COLUMNS)].copy()
    values, tests, rows, flags = [], [], [], []
    for i, r in enumerate(df.to_dict("records")):
        if INTERFACE_STYLE[r["interface"]] != r["style"]:
            raise row_error(
                p, i, f"interface {r['interface']!r} does not map to style {r['style']!r}"
            )
        f = tuple(x for x in r["flags"].split(";") if x)
        bad = [x for x in f if x not in FLAGS]
        if bad:
            raise row_error(p, i, f"flags {bad} not among {', '.join(FLAGS)}")
        flags.append(f)
        try:
            tests.append(int(r["test"]))
            rows.append(int(r["rows_per_table"]) if r["rows_per_table"] else None)
        except ValueError:
            raise row_error(p, i, "test and rows_per_table must be integers") from None
        if r["value"] == "":
            if "missing" not in f:
                raise row_error(p, i, "value is empty but flags do not say missing")
            values.append(np.nan)
            continue
        try:
            values.append(float(r["value"]))
        except ValueError:
            raise row_error(p, i, f"value={r['value']!r} is not a number") from None
        if not r["printed"] or r["value"].rstrip("0").rstrip(".") not in r["printed"].replace(
            " ", ""
        ).replace("asecond", "1"):
            raise row_error(p, i, f"value {r['value']!r} is not what is printed ({r['printed']!r})")
    out["value"] = pd.Series(values, index=df.index, dtype=float)
    out["test"] = pd.Series(tests, index=df.index, dtype=int)
    out["rows_per_table"] = pd.Series(rows, index=df.index, dtype="Int64")
    out["flags"] = flags
    key = out[out["style"] != ""].duplicated(["test", "style", "quantity"])
    if key.any():
        raise row_error(
            p, int(np.flatnonzero(key.to_numpy())[0]), "duplicate (test, style, quantity)"
        )
    return out


def published_cells(path: str | Path | None = None) -> pd.DataFrame:
    """Per test and interface: ``test, rows, style, min_ms, max_ms, mean_ms`` as printed
    (``rows`` = 5 for test 1, see :data:`TEST1_ROWS`)."""
    res = load_results(path)
    per = res[res["quantity"].isin(("min_ms", "max_ms", "mean_ms"))]
    wide = per.pivot_table(index=["test", "style"], columns="quantity", values="value")
    wide = wide.reset_index()
    wide.columns.name = None
    sizes = {1: TEST1_ROWS, **_rows_by_test(res)}
    wide.insert(1, "rows", wide["test"].map(sizes).astype(int))
    return wide[["test", "rows", "style", "min_ms", "max_ms", "mean_ms"]]


def _rows_by_test(res: pd.DataFrame) -> dict[int, int]:
    r = res[(res["quantity"] == "rows") & res["value"].notna()]
    return {int(t): int(v) for t, v in zip(r["test"], r["value"], strict=True)}


def published_ratios(path: str | Path | None = None) -> pd.DataFrame:
    """Per test: GraphQL / REST of the printed means, both readings of "% slower" and the
    printed percentage (tests 2 and 3 print G / R, test 1 (G - R) / R)."""
    res = load_results(path)
    cells = published_cells(path)
    out = []
    for test, g in cells.groupby("test"):
        m = g.set_index("style")["mean_ms"]
        ratio = float(m["graphql"] / m["rest"])
        printed = res[(res["test"] == test) & (res["quantity"] == "percent_slower")]
        out.append(
            {
                "test": int(test),
                "rows": int(g["rows"].iloc[0]),
                "rest_mean_ms": float(m["rest"]),
                "graphql_mean_ms": float(m["graphql"]),
                "ratio": ratio,
                "g_over_r_percent": 100 * ratio,
                "slower_percent": 100 * (ratio - 1),
                "printed_percent": float(printed["value"].iloc[0]) if len(printed) else np.nan,
                "printed_as": printed["printed"].iloc[0] if len(printed) else "",
            }
        )
    return pd.DataFrame(out)


def load_claims(path: str | Path | None = None) -> pd.DataFrame:
    """The study's claims CSV as a DataFrame, validated (``ipclab.published.load_claims``)."""
    return core.load_claims(path if path is not None else CLAIMS_CSV, STYLES)


def claims(path: str | Path | None = None, scope: str | Sequence[str] | None = None) -> list[Claim]:
    """The study's claims as typed :class:`Claim` objects, optionally only those of ``scope``
    (``performance``: the gateways; ``serialisation``: the micro-benchmark)."""
    return core.claims(path if path is not None else CLAIMS_CSV, STYLES, scope)
