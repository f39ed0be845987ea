"""Published numbers of Nyfløtt 2017, read from ``data/published/``.

Four CSV files (described in ``data/published/README.md``), numbers exactly as printed:

* ``nyflott2017_requests.csv``: Table 2 "Summary of the requests." (p. 52): one row per
  protocol and added delay: requests in the 600 s window, mean, max, min and population SD
  of the response time (ms);
* ``nyflott2017_network.csv``: Table 3 "Overview of packet count and transferred bytes per
  request." (p. 56): bytes, packets and bytes per packet per request;
* ``nyflott2017_heap.csv``: Fig. 18, the heap dump's classes of the Californium HTTP
  gateway (p. 59);
* ``nyflott2017_claims.csv``: every comparison of chapters 4 and 5 in the generic claims
  format (:mod:`ipclab.published`); its ``a_users``, ``b_users``, ``from_users`` and
  ``to_users`` hold the **added delay in ms** (0, 2, 5): the thesis runs 10 users throughout.

Pages are those the thesis's List of Tables gives. Loaders validate columns, types and
allowed values and raise :class:`PublishedDataError` naming the file and line.
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

REQUESTS_CSV = DATA_DIR / "nyflott2017_requests.csv"
NETWORK_CSV = DATA_DIR / "nyflott2017_network.csv"
CLAIMS_CSV = DATA_DIR / "nyflott2017_claims.csv"
HEAP_CSV = DATA_DIR / "nyflott2017_heap.csv"

STYLES = ("http1", "h2c", "coap")
#: the claims' cells: the protocols, and the Californium fix's two logging configurations
#: (claim N33a, ``verdicts.FIX_STYLES``)
CLAIM_STYLES = (*STYLES, "californium-thesis", "californium-fixed")
DELAYS_MS = (0, 2, 5)
#: The protocol names the thesis prints, mapped to ipclab's style names.
PROTOCOL_STYLE = {"http1.1": "http1", "h2c": "h2c", "coap": "coap"}

__all__ = [
    "PublishedDataError", "claims", "load_claims", "load_heap", "load_network", "load_requests",
]  # fmt: skip

_KEYS = ("document", "table", "page", "protocol", "style", "delay_ms")


def _table(p: Path, numbers: dict[str, type]) -> pd.DataFrame:
    cols = (*_KEYS, *numbers, "note")
    df = read_table(p, cols)
    check_choice(df, p, "document", DOCUMENTS)
    check_choice(df, p, "style", STYLES)
    for i, (proto, style) in enumerate(zip(df["protocol"], df["style"], strict=True)):
        if PROTOCOL_STYLE.get(proto) != style:
            raise row_error(p, i, f"protocol {proto!r} does not map to style {style!r}")
    out = df.loc[:, list(cols)].copy()
    out["page"] = parse_numbers(df, p, "page", int, positive=True)
    out["delay_ms"] = parse_numbers(df, p, "delay_ms", int)
    for i, d in enumerate(out["delay_ms"]):
        if d not in DELAYS_MS:
            raise row_error(p, i, f"delay_ms={d} not one of {DELAYS_MS}")
    for col, kind in numbers.items():
        out[col] = parse_numbers(df, p, col, kind, positive=True)
    dup = out.duplicated(["document", "style", "delay_ms"])
    if dup.any():
        raise row_error(
            p, int(dup.to_numpy().nonzero()[0][0]), "duplicate (document, style, delay)"
        )
    return out


def load_requests(path: str | Path | None = None) -> pd.DataFrame:
    """Table 2: ``document, table, page, protocol, style, delay_ms, duration_s, users,
    requests, mean_ms, max_ms, min_ms, sd_ms, note``."""
    p = Path(path) if path is not None else REQUESTS_CSV
    numbers = {
        "duration_s": float,
        "users": int,
        "requests": int,
        "mean_ms": float,
        "max_ms": float,
        "min_ms": float,
        "sd_ms": float,
    }
    out = _table(p, numbers)
    for i, r in enumerate(out.itertuples()):
        if not r.min_ms <= r.mean_ms <= r.max_ms:
            raise row_error(p, i, "mean_ms is not between min_ms and max_ms")
    return out


def load_network(path: str | Path | None = None) -> pd.DataFrame:
    """Table 3: ``document, table, page, protocol, style, delay_ms, bytes_per_request,
    packets_per_request, bytes_per_packet, note``."""
    p = Path(path) if path is not None else NETWORK_CSV
    numbers = {"bytes_per_request": float, "packets_per_request": float, "bytes_per_packet": float}
    return _table(p, numbers)


def load_heap(path: str | Path | None = None) -> pd.DataFrame:
    """Fig. 18, the heap dump's classes (``nyflott2017_heap.csv``), numbers as printed."""
    p = Path(path) if path is not None else HEAP_CSV
    numbers = {"instances": int, "instances_pct": float, "bytes": int, "bytes_pct": float}
    cols = ("document", "figure", "page", "class", *numbers, "note")
    df = read_table(p, cols)
    check_choice(df, p, "document", DOCUMENTS)
    out = df.loc[:, list(cols)].copy()
    out["page"] = parse_numbers(df, p, "page", int, positive=True)
    for col, kind in numbers.items():
        out[col] = parse_numbers(df, p, col, kind, positive=True)
    return out


def load_claims(path: str | Path | None = None) -> pd.DataFrame:
    """The study's claims CSV as a DataFrame, validated (``ipclab.published.load_claims``);
    every load column holds a delay of :data:`DELAYS_MS`."""
    p = Path(path) if path is not None else CLAIMS_CSV
    out = core.load_claims(p, CLAIM_STYLES)
    _check_delays(p, core.claims(p, CLAIM_STYLES))
    return out


def claims(path: str | Path | None = None, scope: str | Sequence[str] | None = None) -> list[Claim]:
    """The study's claims as typed :class:`Claim` objects (loads are delays in ms),
    optionally only those of ``scope``."""
    p = Path(path) if path is not None else CLAIMS_CSV
    out = core.claims(p, CLAIM_STYLES)
    _check_delays(p, out)
    if scope is not None:
        wanted = (scope,) if isinstance(scope, str) else tuple(scope)
        out = [c for c in out if c.scope in wanted]
    return out


def _check_delays(p: Path, cl: Sequence[Claim]) -> None:
    for i, c in enumerate(cl):
        loads = (*c.a_users, *c.b_users, c.from_users, c.to_users)
        bad = [d for d in loads if d is not None and d not in DELAYS_MS]
        if bad:
            raise row_error(p, i, f"delay {bad[0]} ms not one of {DELAYS_MS}")
