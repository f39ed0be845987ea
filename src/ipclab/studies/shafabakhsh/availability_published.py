"""Shafabakhsh's table 5.4 side by side with A = MTTF / (MTTF + MTTR) from its own numbers.

The thesis prints MTTF ~430/~290/~275 s and MTTR ~29/~21/~19 s for RabbitMQ/gRPC/REST at
200 users, and availabilities 0.95/0.93/0.93. The formula gives 430/459 = 0.937,
290/311 = 0.932 and 275/294 = 0.935. :func:`compare_published_availability` computes A from
the printed inputs, the range A can take when each input is only known to its printed step
(the table's "~"), the MTTR the printed A would need, and flags the mismatch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from ipclab.studies.shafabakhsh import published

_ALIASES = {
    "method": ("method", "ipc", "ipc_method", "style", "stack"),
    "users": ("users", "virtual_users", "vus"),
    "mttf_s": ("mttf_s", "mttf"),
    "mttr_s": ("mttr_s", "mttr"),
    "printed_a": ("printed_a", "availability", "availability_printed", "a"),
}


def _pick(row: Mapping[str, Any], key: str) -> Any:
    for name in _ALIASES[key]:
        if name in row and row[name] is not None and not pd.isna(row[name]):
            return row[name]
    return None


def compare_published_availability(
    rows: Iterable[Mapping[str, Any]],
    printed_decimals: int = 2,
    input_step_s: float = 1.0,
) -> pd.DataFrame:
    """One row per published line: ``method``, ``users``, ``mttf_s``, ``mttr_s``,
    ``printed_a`` (column names as in :data:`_ALIASES`), plus

    * ``computed_a`` = MTTF / (MTTF + MTTR) and ``computed_a_rounded`` to the printed digits;
    * ``a_min``, ``a_max``: A over inputs within +-``input_step_s``/2 of the printed values;
    * ``difference`` = printed - computed; ``implied_mttr_s``: the MTTR the printed A needs
      given the printed MTTF;
    * ``matches_rounded``: the printed A is the computed one rounded to the printed digits;
    * ``consistent``: some inputs within the printing step give the printed A (to its
      digits); ``mismatch`` = not ``consistent`` (no rounding of the inputs gives the printed
      A; a printed A that only differs from the rounded computed one is not a mismatch).
    """
    half_a = 0.5 * 10.0 ** (-printed_decimals)
    half_in = 0.5 * input_step_s
    out = []
    for row in rows:
        mttf, mttr = float(_pick(row, "mttf_s")), float(_pick(row, "mttr_s"))
        printed = _pick(row, "printed_a")
        a = mttf / (mttf + mttr)
        a_min = (mttf - half_in) / (mttf - half_in + mttr + half_in)
        a_max = (mttf + half_in) / (mttf + half_in + mttr - half_in)
        rec: dict[str, Any] = {
            "method": _pick(row, "method"),
            "style": row.get("style"),
            "users": _pick(row, "users"),
            "mttf_s": mttf,
            "mttr_s": mttr,
            "printed_a": printed,
            "computed_a": a,
            "computed_a_rounded": round(a, printed_decimals),
            "a_min": a_min,
            "a_max": a_max,
        }
        if printed is not None:
            p = float(printed)
            rec["difference"] = p - a
            rec["implied_mttr_s"] = mttf * (1.0 - p) / p
            rec["matches_rounded"] = abs(round(a, printed_decimals) - p) < 1e-9
            rec["consistent"] = a_max >= p - half_a and a_min < p + half_a
            rec["mismatch"] = not rec["consistent"]
        out.append(rec)
    return pd.DataFrame(out)


def load_published_availability(path: str | Path | None = None) -> list[dict[str, Any]] | None:
    """The published availability rows (``data/published/shafabakhsh2020_availability.csv``,
    validated by :func:`published.load_availability`), or those of ``path``; None when the
    file does not exist."""
    csv = Path(path) if path is not None else published.AVAILABILITY_CSV
    if not csv.exists():
        return None
    return published.load_availability(csv).to_dict("records")
