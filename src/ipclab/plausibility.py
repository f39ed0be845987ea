"""The plausibility check of the committed references (docs/statistics.md section 9): each
reference's table (``results/plausibility.csv``, written by every rebuild beside the machine
check and shown in the report), and the cells it flags across references.

``python -m ipclab.plausibility`` lists every flagged cell of ``data/runs/reference`` with its
numbers (``--all`` prints every cell).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ipclab.paths import from_repo
from ipclab.runs import Run
from ipclab.stats.plausibility import LIMITS, PlausibilityLimits
from ipclab.stats.plausibility_runs import check_runs, folder_runs

TABLE = "plausibility"
ROOT = Path("data/runs/reference")

#: the cell's keys a table names only when they vary
CONSTANT_KEYS = ("experiment", "method", "variant", "think_time_s", "delay_ms")
#: the rounding of the table's numbers
DIGITS = {"p50_ms": 2, "explained_ms": 2, "path_delay_ms": 2, "latency_ratio": 3,
          "little_error_min": 4, "little_error_max": 4}  # fmt: skip
#: what the report shows: the verdict first, then the cell, the numbers and why
SHOWN = ("check", "experiment", "method", "stack", "variant", "users", "think_time_s",
         "delay_ms", "runs", "p50_ms", "explained_ms", "explained_by", "path_delay_ms",
         "latency_ratio", "runs_above", "little_error_min", "little_error_max", "failures",
         "failures_without_evidence", "failures_at_startup", "why")  # fmt: skip


def check_text(value: Any) -> str:
    """``flagged``, ``pass`` or ``unchecked`` from a cell's ``plausible``."""
    if value is None or value != value:
        return "unchecked"
    return "pass" if bool(value) else "flagged"


def table_of(check: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A reference's table for a reader: the cells a rule applied to, a ``check`` column
    first (``flagged`` or ``pass``), the cell keys that vary, the columns that hold a
    value; and the keys every cell shares (named in the caption instead)."""
    if check.empty:
        return check, {}
    out = check.assign(check=check["plausible"].map(check_text))
    out = out[out["check"] != "unchecked"]
    shared = {k: out[k].iloc[0] for k in CONSTANT_KEYS
              if k in out.columns and len(out) and out[k].nunique(dropna=False) == 1}  # fmt: skip
    cols = [c for c in SHOWN if c in out.columns and c not in shared]
    out = out[cols].round({k: v for k, v in DIGITS.items() if k in cols})
    keep = [c for c in out.columns if c in ("check", "stack", "users")
            or out[c].map(lambda v: v is not None and v == v and v != "").any()]  # fmt: skip
    return out[keep].reset_index(drop=True), shared


def caption(table: pd.DataFrame, shared: dict[str, Any], limits: PlausibilityLimits) -> str:
    """The table's caption: what each rule compares, its limits, the count flagged."""
    n_flag = int((table["check"] == "flagged").sum()) if len(table) else 0
    common = ", ".join(f"{k} {v}" for k, v in shared.items() if v not in ("", None))
    return (
        f"Plausibility check per cell (docs/statistics.md section 9), beside the machine "
        f"check: {n_flag} of {len(table)} cells flagged. Latency: the median over runs of "
        f"each run's median response (p50_ms) against what its CPU and added delay explain "
        f"at its load (explained_ms: mean value analysis of the closed loop on the machine's "
        f"cores and on each process's own, the larger; path_delay_ms: the delay its requests' "
        f"paths hold), flagged above {limits.latency_factor:g}x + "
        f"{limits.latency_slack_ms:g} ms (a stall: requests wait on something that is "
        f"neither CPU nor network). Little's law: X (R + Z) / N - 1 over the analysed window "
        f"(N: Locust's users there), within +{limits.little_tolerance:.0%} and "
        f"-{limits.little_tolerance:.0%} minus the load generator's busy share. Failures: "
        f"those with no injected fault and no failed request in Locust's per-second counts "
        f"after the previous recovery, and those before the load was up (the ramp's end "
        f"plus one of the detector's windows)." + (f" Every cell: {common}." if common else "")
    )


def write(results: Any, runs: Iterable[Run], limits: PlausibilityLimits = LIMITS) -> Path | None:
    """The plausibility table of ``runs`` into ``results`` (a ``StudyResults``), in the
    report; None when no rule applies to any of them."""
    check = check_runs(list(runs), None, limits)
    table, shared = table_of(check)
    if table.empty:
        return None
    return results.table(table, TABLE, caption(table, shared, limits))


def write_reference(results: Any, *folders: Path) -> Path | None:
    """:func:`write` over every complete run under the results' reference folder and any
    further ``folders`` whose runs the reference analyses too."""
    runs = [r for d in (results.directory.parent, *folders) if Path(d).is_dir()
            for r in folder_runs(Path(d))]  # fmt: skip
    return write(results, runs)


def references_check(root: Path = ROOT, limits: PlausibilityLimits = LIMITS) -> pd.DataFrame:
    """Every cell of every reference folder under ``root``, each folder's own runs, with a
    ``reference`` column first."""
    parts = []
    for d in sorted(p for p in from_repo(root).iterdir() if p.is_dir()):
        c = check_runs(folder_runs(d), d, limits)
        if len(c):
            parts.append(c.assign(reference=d.name))
    if not parts:
        return pd.DataFrame()
    out = pd.concat(parts, ignore_index=True)
    return out[["reference", *(c for c in out.columns if c != "reference")]]


def _text(value: Any) -> str:
    """A key as text: blank for None, NaN (a blank read back from a CSV) or ""."""
    return "" if value is None or value != value else str(value)


def cell_name(row: pd.Series) -> str:
    """A cell in words: reference, experiment, method, stack, users, think time, delay."""
    ref, exp = _text(row.get("reference")), _text(row.get("experiment"))
    bits = [ref, exp if exp != ref else "", _text(row.get("method")),
            _text(row.get("stack")), _text(row.get("variant"))]  # fmt: skip
    users = row.get("users")
    if users == users and users is not None:
        bits.append(f"{int(users)} users")
    think, delay = row.get("think_time_s"), row.get("delay_ms")
    if think and think == think:
        bits.append(f"think {think:g} s")
    if delay and delay == delay:
        bits.append(f"{delay:g} ms delay")
    return ", ".join(b for b in bits if b)


def flagged_lines(check: pd.DataFrame) -> list[str]:
    """One line per flagged cell: its name and why."""
    bad = check[check["plausible"].map(check_text) == "flagged"] if len(check) else check
    return [f"- {cell_name(r)}: {r['why']}" for _, r in bad.iterrows()]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("--root", type=Path, default=ROOT)
    p.add_argument("--all", action="store_true", help="print every cell, not the flagged")
    a = p.parse_args(argv)
    check = references_check(a.root)
    if a.all:
        print(check.to_string())
        return 0
    lines = flagged_lines(check)
    print(f"{len(lines)} of {len(check)} cells flagged:" if len(check) else "no cells")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
