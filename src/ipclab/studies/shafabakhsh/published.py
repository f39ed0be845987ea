"""Published numbers and claims of Shafabakhsh 2020, read from ``data/published/``.

Three CSV files (described in ``data/published/README.md``):

* ``shafabakhsh2020_performance.csv``: thesis Tables 5.1-5.3 (one row per method and load);
* ``shafabakhsh2020_availability.csv``: thesis Table 5.4;
* ``shafabakhsh2020_claims.csv``: every claim of thesis chapter 5 (and its conclusion) and
  paper sections 4-6, one row per testable comparison, with a machine-readable test spec.

Every loader validates columns, types and allowed values and raises
:class:`PublishedDataError` naming the file, the row and the problem.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ipclab import published as core
from ipclab.published import (
    DATA_DIR,
    DOCUMENTS,
    Claim,
    PublishedDataError,
    check_choice,
    parse_numbers,
    read_table,
    row_error,
)

PERFORMANCE_CSV = DATA_DIR / "shafabakhsh2020_performance.csv"
AVAILABILITY_CSV = DATA_DIR / "shafabakhsh2020_availability.csv"
CLAIMS_CSV = DATA_DIR / "shafabakhsh2020_claims.csv"

STYLES = ("rest", "grpc", "amqp")
#: The style names the documents print, mapped to ipclab's style names.
METHOD_STYLE = {"rest api": "rest", "grpc": "grpc", "rabbitmq": "amqp"}

__all__ = ["Claim", "PublishedDataError"]


def _method_styles(df: pd.DataFrame, path: Path) -> None:
    for i, (m, s) in enumerate(zip(df["method"], df["style"], strict=True)):
        if METHOD_STYLE.get(m.strip().lower()) != s:
            raise row_error(path, i, f"method {m!r} does not map to style {s!r}")


_TABLE_KEYS = ("document", "table", "page", "method", "style", "users")


def _table(p: Path, numbers: dict[str, type], extra: tuple[str, ...] = ()) -> pd.DataFrame:
    """A thesis table: the key columns (document, table, page, method, style, users),
    ``numbers`` (column -> int or float, each positive) and ``extra`` text columns, then
    ``note``; validated, numbers parsed."""
    cols = (*_TABLE_KEYS, *numbers, *extra, "note")
    df = read_table(p, cols)
    check_choice(df, p, "document", DOCUMENTS)
    check_choice(df, p, "style", STYLES)
    _method_styles(df, p)
    out = df.loc[:, list(cols)].copy()
    for col, kind in {"page": int, "users": int, **numbers}.items():
        out[col] = parse_numbers(df, p, col, kind, positive=True)
    return out


def load_performance(path: str | Path | None = None) -> pd.DataFrame:
    """Thesis Tables 5.1-5.3: ``document, table, page, method, style, users, duration_s,
    mean_rt_s, total_requests, note`` (numbers exactly as printed)."""
    p = Path(path) if path is not None else PERFORMANCE_CSV
    out = _table(p, {"duration_s": float, "mean_rt_s": float, "total_requests": int})
    dup = out.duplicated(["document", "style", "users"])
    if dup.any():
        raise row_error(
            p, int(dup.to_numpy().nonzero()[0][0]), "duplicate (document, style, users)"
        )
    return out


def load_availability(path: str | Path | None = None) -> pd.DataFrame:
    """Thesis Table 5.4: ``document, table, page, method, style, users, mttf_s, mttr_s,
    availability, approximate, note``; ``approximate`` is True where the table prints "~"."""
    p = Path(path) if path is not None else AVAILABILITY_CSV
    out = _table(
        p, {"mttf_s": float, "mttr_s": float, "availability": float}, extra=("approximate",)
    )
    check_choice(out, p, "approximate", ("true", "false"))
    for i, a in enumerate(out["availability"]):
        if a > 1:
            raise row_error(p, i, f"availability={a} is above 1")
    out["approximate"] = out["approximate"] == "true"
    return out


def load_claims(path: str | Path | None = None) -> pd.DataFrame:
    """The study's claims CSV as a DataFrame, validated (``ipclab.published.load_claims``)."""
    return core.load_claims(path if path is not None else CLAIMS_CSV, STYLES)


def claims(path: str | Path | None = None, scope: str | Sequence[str] | None = None) -> list[Claim]:
    """The study's claims as typed :class:`Claim` objects, optionally only those of ``scope``."""
    return core.claims(path if path is not None else CLAIMS_CSV, STYLES, scope)


def published_cells() -> pd.DataFrame:
    """The performance tables in the shape :func:`ipclab.stats.detect_saturation` reads:
    ``style, users, rps, mean_ms, total_requests`` (rps = total / duration, derived)."""
    perf = load_performance()
    return pd.DataFrame(
        {
            "style": perf["style"],
            "users": perf["users"].astype(int),
            "rps": perf["total_requests"].astype(float) / perf["duration_s"].astype(float),
            "mean_ms": perf["mean_rt_s"].astype(float) * 1000.0,
            "total_requests": perf["total_requests"].astype(int),
        }
    )
