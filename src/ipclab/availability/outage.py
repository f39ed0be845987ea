"""The outage experiment: class every request issued around a service outage.

Input: one record per request issued by the load generator, with ``t`` (issue time, Unix s),
``t_done`` (completion time, NaN when no answer ever came), ``status`` (0 when no HTTP
answer), ``ok``, optionally ``latency_ms``, ``error`` and, for AMQP, ``duplicates`` (extra
replies delivered for the request's correlation id).

Classes, exclusive and tried in this order:

* ``lost``: no answer at all by the end (``t_done`` missing, or the client gave up waiting:
  status 0 and a timeout error);
* ``duplicated``: answered, and more than one reply was delivered (``duplicates`` > 0);
* ``failed``: answered with an error (HTTP error status, refused or reset connection);
* ``served_late``: answered ok with latency above ``late_ms``;
* ``served``: answered ok in time.

Every request gets exactly one class; the table asserts that the classes sum to the number of
requests issued.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

CLASSES = ("served", "served_late", "failed", "lost", "duplicated")
PHASES = ("before", "during", "after")
TIMEOUT_WORDS = ("timeout", "timed out", "deadline")


def _bool(col: pd.Series) -> pd.Series:
    if col.dtype == bool:
        return col
    return col.astype(str).str.strip().str.lower().isin(("true", "1", "1.0"))


def classify_requests(
    requests: pd.DataFrame,
    t0: float,
    t1: float,
    late_ms: float,
    after_s: float | None = None,
) -> pd.DataFrame:
    """A copy of ``requests`` with ``phase`` (before, during or after [t0, t1] by issue time)
    and ``outcome`` (one of :data:`CLASSES`). With ``after_s`` only requests issued in
    ``[t0, t1 + after_s]`` are kept (the outage window and its tail)."""
    if t1 < t0:
        raise ValueError("t1 must be >= t0")
    df = requests.copy()
    for col in ("t", "status", "ok"):
        if col not in df.columns:
            raise ValueError(f"requests need a {col!r} column")
    if "t_done" not in df.columns:
        if "latency_ms" not in df.columns:
            raise ValueError("requests need 't_done' or 'latency_ms'")
        df["t_done"] = df["t"] + pd.to_numeric(df["latency_ms"], errors="coerce") / 1000.0
    if after_s is not None:
        df = df[(df["t"] >= t0) & (df["t"] <= t1 + after_s)].copy()

    t = pd.to_numeric(df["t"])
    done = pd.to_numeric(df["t_done"], errors="coerce")
    status = pd.to_numeric(df["status"], errors="coerce").fillna(0)
    ok = _bool(df["ok"])
    if "latency_ms" in df.columns:
        latency = pd.to_numeric(df["latency_ms"], errors="coerce").fillna((done - t) * 1000.0)
    else:
        latency = (done - t) * 1000.0
    dup = pd.to_numeric(df.get("duplicates", pd.Series(0, index=df.index)), errors="coerce")
    dup = dup.fillna(0)
    error = df.get("error", pd.Series("", index=df.index)).fillna("").astype(str).str.lower()
    timed_out = error.apply(lambda e: any(w in e for w in TIMEOUT_WORDS))

    lost = done.isna() | ((status == 0) & timed_out)
    duplicated = ~lost & (dup > 0)
    failed = ~lost & ~duplicated & ~ok
    late = ~lost & ~duplicated & ok & (latency > late_ms)
    df["outcome"] = np.select(
        [lost, duplicated, failed, late],
        ["lost", "duplicated", "failed", "served_late"],
        default="served",
    )
    df["phase"] = np.select([t < t0, t <= t1], ["before", "during"], default="after")
    df["latency_ms"] = latency
    return df


def outage_table(classified: pd.DataFrame, by: str | list[str] = "phase") -> pd.DataFrame:
    """Counts per class (every class a column, zeros kept) and ``issued``, one row per group
    of ``by`` (e.g. ``"phase"`` or ``["stack", "phase"]``); grouping by phase alone adds an
    ``all`` row. Asserts that the classes sum to the requests issued in every row and that
    the rows account for every request."""
    keys = [by] if isinstance(by, str) else list(by)
    grouped = classified.groupby([*keys, "outcome"]).size()
    counts = (grouped.unstack("outcome", fill_value=0) if len(grouped) else pd.DataFrame()).reindex(
        columns=list(CLASSES), fill_value=0
    )
    if keys == ["phase"]:
        counts = counts.reindex(list(PHASES), fill_value=0)
    counts["issued"] = classified.groupby(keys).size().reindex(counts.index, fill_value=0)
    counts = counts.astype(int)
    assert int(counts["issued"].sum()) == len(classified), "requests missing from the table"
    if keys == ["phase"]:
        counts.loc["all"] = counts.sum()
    counts.columns.name = None
    total = counts[list(CLASSES)].sum(axis=1)
    assert (total == counts["issued"]).all(), "outage classes do not sum to requests issued"
    return counts
