"""Two sets of runs compared cell by cell, in the manner of ``pyperf compare_to``:
``ipclab compare A B`` (two reference folders, or a reference and a fresh run folder).

A run set is a folder with run directories below it (a ``manifest.json`` at any depth). A
cell is what its runs repeat: a run's folder path below the set with its repetition token
(``-r<n>``) taken out (``shop-grpc-u100-base``, ``delay2ms/acmeair-h2c-u10-base``), so a
reference and a fresh run of the same plan name the same cells on any backend.

Per cell and statistic, each side's estimate with its 95% interval: for load runs the mean
over runs of the throughput (``rps``) and of the mean response time (``mean_ms``) with the
Student-t interval (``ipclab.stats.cells.cell_summary``, docs/statistics.md section 2), for
outage runs the outage's length, for memory runs the peak resident size; for availability
runs MTTF (chi-square interval), MTTR and A (bootstrap over cycles), the cycles pooled over
the cell's runs, start-up failures apart (section 6). Then the ratio B/A with its interval
and whether the two agree: the ratio of the estimates and its interval are
``ipclab.robustness.ratio_of_estimates`` and "agree" is ``ipclab.robustness.estimates_differ``
(the interval holds 1), the rule of the report's agreement tables (section 8). Cells in one
set only are listed, not dropped.

Where both sets hold claims tables of the same study (``results/claims*.csv``), every claim
side by side as the report's robustness section shows it: :func:`compare_claims` is the one
function the report, the rebuild of a reference on a second backend (its
``results/backends.csv``) and this command use.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ipclab import robustness as rb
from ipclab.availability.classify import run_cycles, superseded
from ipclab.availability.estimators import availability_summary
from ipclab.availability.model import STARTUP
from ipclab.runs import Run, read_run
from ipclab.stats.cells import cell_summary
from ipclab.stats.intervals import interval_text
from ipclab.stats.run_table import run_metrics

#: the statistics of a kind of run whose value is one number per run (summary.json's or
#: the per-run table's), each cell's estimate the mean over its runs with its t interval
PER_RUN = {
    "load": ("rps", "mean_ms"),
    "outage": ("outage_s",),
    "memory": ("peak_rss_bytes",),
}
#: a cell of method-1 runs made before the current method (``classify.superseded``)
SUPERSEDED = " (superseded)"
#: the statistics of availability runs: the cell's cycles pooled over its runs
POOLED = ("mttf_s", "mttr_s", "availability")
CELL_COLUMNS = ["cell", "kind", "statistic", "n", "estimate", "ci_low", "ci_high"]
AGREE, DIFFER, NO_INTERVAL = "agree", "differ", "no interval"


class CompareError(ValueError):
    """Input ``ipclab compare`` cannot compare (not a run folder, nothing in common)."""


@dataclass(frozen=True)
class RunSet:
    """A folder of runs: its complete runs, and the study of its claims tables (if any)."""

    path: Path
    runs: tuple[Run, ...]
    study: str | None


def run_set(path: str | Path) -> RunSet:
    """The complete runs below ``path``; a clear error when it is no folder of runs."""
    root = Path(path)
    if not root.is_dir():
        raise CompareError(f"{root} is not a folder")
    runs = tuple(r for r in (read_run(m.parent) for m in sorted(root.rglob("manifest.json")))
                 if r.complete)  # fmt: skip
    if not runs:
        raise CompareError(f"{root} is not a run folder: no complete run (manifest.json) below it")
    return RunSet(root, runs, study_of(root))


def study_of(folder: Path) -> str | None:
    """The study a folder's claims tables judge (``results/study.json``), if it has them."""
    meta = Path(folder) / "results" / "study.json"
    if not meta.is_file():
        return None
    return json.loads(meta.read_text()).get("study") or None


def cell_of(run: Run, root: Path) -> str:
    """The cell a run repeats: its path below ``root`` without its repetition token."""
    folder, _, name = run.path.relative_to(root).as_posix().rpartition("/")
    rep = run.parameters.get("repetition")
    token = rf"-r{int(rep)}" if isinstance(rep, int | float) and rep == rep else r"-r\d+"
    name = re.sub(rf"{token}(?=-|$)", "", name, count=1)
    return f"{folder}/{name}" if folder else name


def _per_run(run: Run) -> dict[str, Any]:
    kind = str(run.manifest.get("kind"))
    summary = run.summary
    if kind == "load":  # the warm-up the run left out of its summary, left out of its requests
        profile = run.parameters.get("profile") or {}
        warmup = summary.get("warmup_s") or profile.get("warmup_s") or 0.0
        m = run_metrics(run, warmup_s=float(warmup))
        return {s: m.get(s) for s in PER_RUN[kind]}
    return {s: summary.get(s) for s in PER_RUN.get(kind, ())}


def _pooled(cell: str, runs: list[Run]) -> list[dict[str, Any]]:
    cycles = [c for r in runs for c in run_cycles(r)]
    s = availability_summary([c for c in cycles if c.kind != STARTUP])
    return [
        {"cell": cell, "kind": "availability", "statistic": name, "n": len(runs),
         "estimate": e.value, "ci_low": e.lower, "ci_high": e.upper}
        for name, e in zip(POOLED, (s.mttf, s.mttr, s.availability), strict=True)
    ]  # fmt: skip


def cell_statistics(runs: RunSet) -> pd.DataFrame:
    """One row per cell and statistic (:data:`CELL_COLUMNS`); a cell of a kind with no
    statistic here gets one row with no statistic, so it is still listed."""
    by_cell: dict[tuple[str, str], list[Run]] = {}
    for r in runs.runs:  # a superseded method-1 run is a cell of its own, never pooled
        cell = cell_of(r, runs.path) + (SUPERSEDED if superseded(r.parameters) else "")
        by_cell.setdefault((cell, str(r.manifest.get("kind"))), []).append(r)
    rows: list[dict[str, Any]] = []
    per_run = []
    for (cell, kind), group in sorted(by_cell.items()):
        if kind == "availability":
            rows += _pooled(cell, group)
        elif kind in PER_RUN:
            per_run += [{"cell": cell, "kind": kind, **_per_run(r)} for r in group]
        else:
            rows.append({"cell": cell, "kind": kind, "n": len(group)})
    if per_run:
        frame = pd.DataFrame(per_run)
        for kind, stats in PER_RUN.items():
            part = frame[frame["kind"] == kind]
            if len(part):
                s = cell_summary(part, [m for m in stats if m in part], by=("cell", "kind"))
                rows += s.rename(columns={"metric": "statistic", "mean": "estimate"}).to_dict(
                    "records"
                )
    out = pd.DataFrame(rows).reindex(columns=CELL_COLUMNS)
    return out.sort_values(["cell", "statistic"], na_position="first").reset_index(drop=True)


def _number(x: Any) -> float:
    return float(x) if x is not None and pd.notna(x) else math.nan


def agreement_word(ratio: tuple[float, float, float]) -> str:
    """``agree`` where the ratio's interval holds 1, ``differ`` where it leaves it, ``no
    interval`` where one side has no estimate or no interval (section 8's rule)."""
    differ = rb.estimates_differ(ratio)
    return NO_INTERVAL if differ is None else (DIFFER if differ else AGREE)


COMPARED_COLUMNS = ["cell", "kind", "statistic", "n_a", "a", "a_low", "a_high", "n_b", "b",
                    "b_low", "b_high", "b_over_a", "ratio_low", "ratio_high", "agree"]  # fmt: skip
#: why a cell is not compared: in one side only, or of a kind with no statistic here
ONLY_A, ONLY_B, NO_STATISTIC = "A", "B", "both"


def _compared(r: pd.Series) -> dict[str, Any]:
    sides = [[_number(r[f"{c}_{x}"]) for c in ("estimate", "ci_low", "ci_high")]
             for x in ("a", "b")]  # fmt: skip
    ratio = rb.ratio_of_estimates(*sides[0], *sides[1])
    return dict(zip(COMPARED_COLUMNS, [
        r["cell"], r["kind"], r["statistic"], r["n_a"], *sides[0], r["n_b"], *sides[1],
        *ratio, agreement_word(ratio)], strict=True))  # fmt: skip


def compare_cells(a: pd.DataFrame, b: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The statistics of the cells in both (:data:`COMPARED_COLUMNS`: each side's estimate,
    interval and runs, the ratio B/A with its interval, ``agree``), and the cells not
    compared (``side``: in A only, in B only, or in both with no statistic for its kind)."""
    keys = ["cell", "kind"]
    m = a.merge(b, on=[*keys, "statistic"], suffixes=("_a", "_b"))
    compared = pd.DataFrame([_compared(r) for _, r in m[m["statistic"].notna()].iterrows()],
                            columns=COMPARED_COLUMNS)  # fmt: skip
    compared[["n_a", "n_b"]] = compared[["n_a", "n_b"]].astype("Int64")
    runs = {side: t.groupby(keys)["n"].max() for side, t in (("A", a), ("B", b))}
    cells = a[keys].drop_duplicates().merge(b[keys].drop_duplicates(), on=keys, how="outer",
                                            indicator="where")  # fmt: skip
    done = set(zip(compared["cell"], compared["kind"], strict=True))
    only = []
    for r in cells.sort_values(keys).itertuples():
        side = {"left_only": ONLY_A, "right_only": ONLY_B}.get(str(r.where), NO_STATISTIC)
        if side == NO_STATISTIC and (r.cell, r.kind) in done:
            continue
        n = runs["B" if side == ONLY_B else "A"].get((r.cell, r.kind))
        only.append({"side": side, "cell": r.cell, "kind": r.kind,
                     "runs": int(n) if n is not None and n == n else 0})  # fmt: skip
    return compared, pd.DataFrame(only, columns=["side", "cell", "kind", "runs"])


@dataclass(frozen=True)
class ClaimsComparison:
    """Every claim of two folders' claims tables side by side (``rb.side_by_side``)."""

    title: str
    labels: tuple[str, str]
    table: pd.DataFrame


def labels(a: Path, b: Path) -> tuple[str, str]:
    """The two sides' names: their backends where they differ (``local``, ``docker``), else
    their folders' names where those differ, else ``A`` and ``B``."""
    backends = (rb.backend_of(a), rb.backend_of(b))
    if all(backends) and backends[0] != backends[1]:
        return str(backends[0]), str(backends[1])
    if a.name != b.name:
        return a.name, b.name
    return "A", "B"


def compare_claims(
    a: str | Path, b: str | Path, side_labels: tuple[str, str] | None = None
) -> ClaimsComparison | None:
    """Every claim of two reference (or results-holding) folders side by side with the
    report's rule (:func:`ipclab.robustness.side_by_side`); None when either folder has no
    claims tables or they judge different studies. The report's robustness section and the
    rebuild's ``backends.csv`` are made by this function."""
    a, b = Path(a), Path(b)
    study = study_of(a)
    if study is None or study != study_of(b):
        return None
    la, lb = side_labels or labels(a, b)
    pair = rb.Pair(f"{study} ({a.name} and {b.name})", (la, lb),
                   rb.claims_tables(a / "results"), rb.claims_tables(b / "results"))  # fmt: skip
    if pair.a.empty or pair.b.empty:
        return None
    return ClaimsComparison(pair.title, pair.labels, rb.side_by_side(pair, factor="backend"))


@dataclass(frozen=True)
class Comparison:
    """``ipclab compare A B``: the cells in both, the cells in one only, and the claims."""

    a: RunSet
    b: RunSet
    cells: pd.DataFrame
    only: pd.DataFrame
    claims: ClaimsComparison | None

    @property
    def claims_note(self) -> str:
        """Why the claims were not compared (empty when they were)."""
        if self.claims is not None:
            return ""
        sa, sb = self.a.study, self.b.study
        if sa is None or sb is None:
            missing = " and ".join(str(s.path) for s in (self.a, self.b) if s.study is None)
            return f"claims not compared: no claims tables (results/study.json) in {missing}"
        if sa != sb:
            return f"claims not compared: {self.a.path} judges {sa}, {self.b.path} judges {sb}"
        return "claims not compared: no claims tested on measurements on one side"


def compare(a: str | Path, b: str | Path) -> Comparison:
    """Two run sets compared (:class:`Comparison`); :class:`CompareError` when either is no
    run folder or they have no cell in common."""
    sa, sb = run_set(a), run_set(b)
    ca, cb = cell_statistics(sa), cell_statistics(sb)
    cells, only = compare_cells(ca, cb)
    if (only["side"] != NO_STATISTIC).all() and cells.empty:
        raise CompareError(
            f"{sa.path} and {sb.path} have no cell in common ({ca['cell'].nunique()} and "
            f"{cb['cell'].nunique()} cells, e.g. {ca['cell'].iloc[0]} and {cb['cell'].iloc[0]})"
        )
    return Comparison(sa, sb, cells, only, compare_claims(sa.path, sb.path))


def cells_shown(c: Comparison) -> pd.DataFrame:
    """The cells' table as text columns (the command's table and its Markdown)."""
    t = c.cells
    return pd.DataFrame({
        "cell": t["cell"], "statistic": t["statistic"],
        "A": [interval_text(*x) for x in zip(t["a"], t["a_low"], t["a_high"], strict=True)],
        "n A": t["n_a"].astype("Int64"),
        "B": [interval_text(*x) for x in zip(t["b"], t["b_low"], t["b_high"], strict=True)],
        "n B": t["n_b"].astype("Int64"),
        "B/A": [interval_text(*x)
                for x in zip(t["b_over_a"], t["ratio_low"], t["ratio_high"], strict=True)],
        "agree": t["agree"],
    })  # fmt: skip


def tally(c: Comparison) -> str:
    """The cells' agreement counted in a sentence."""
    n = len(c.cells)
    counts = c.cells["agree"].value_counts()
    parts = ", ".join(f"{counts.get(w, 0)} {w}" for w in (AGREE, DIFFER, NO_INTERVAL))
    cells = c.cells["cell"].nunique()
    only = ", ".join(f"{(c.only['side'] == s).sum()} in {s} only" for s in (ONLY_A, ONLY_B))
    return f"{n} statistics of {cells} cells in both: {parts}; {only}."


def _heading(c: Comparison) -> list[str]:
    la, lb = labels(c.a.path, c.b.path)
    return [
        f"A: {c.a.path} ({la}, {len(c.a.runs)} runs)",
        f"B: {c.b.path} ({lb}, {len(c.b.runs)} runs)",
        "Per cell: each side's estimate [95% interval], runs, B/A [95% interval]; agree: "
        "the interval of B/A holds 1 (docs/statistics.md section 8).",
    ]


def _only_lines(c: Comparison) -> list[str]:
    out = []
    for side, words in ((ONLY_A, "Only in A"), (ONLY_B, "Only in B"),
                        (NO_STATISTIC, "In both, no statistic for its kind")):  # fmt: skip
        part = c.only[c.only["side"] == side]
        if len(part):
            cells = ", ".join(f"{r.cell} ({r.kind}, {r.runs} runs)" for r in part.itertuples())
            out.append(f"{words}: {cells}")
    return out


def _claims_sentence(c: Comparison) -> str:
    if c.claims is None:
        return c.claims_note
    cl = c.claims
    return rb.agreement_sentence(cl.table, cl.title, cl.labels, "backend")


def text(c: Comparison) -> str:
    """The readable report ``ipclab compare`` prints."""
    out = [*_heading(c), "", cells_shown(c).to_string(index=False), "", tally(c)]
    out += _only_lines(c)
    out += ["", "Claims: " + _claims_sentence(c)]
    if c.claims is not None:
        out += ["", rb.agreement_text(c.claims.table, c.claims.labels).to_string(index=False)]
    return "\n".join(out) + "\n"


def _markdown_table(frame: pd.DataFrame) -> list[str]:
    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    for row in frame.astype(str).itertuples(index=False):
        lines.append("| " + " | ".join(v.replace("|", "\\|") for v in row) + " |")
    return lines


def markdown(c: Comparison) -> str:
    """The same as Markdown: the cells' table, the cells in one side only, and the claims
    as the report's README block writes them (``robustness.agreement_markdown``)."""
    out = [f"- {line}" for line in _heading(c)[:2]] + ["", _heading(c)[2], ""]
    out += [*_markdown_table(cells_shown(c)), "", tally(c)]
    out += ["", *(f"- {line}" for line in _only_lines(c))] if len(c.only) else []
    out += ["", "## Claims", ""]
    if c.claims is None:
        out.append(c.claims_note)
    else:
        cl = c.claims
        out.append(rb.agreement_markdown(cl.table, cl.title, cl.labels, "backend"))
    return "\n".join(out) + "\n"


def write_csv(c: Comparison, path: Path) -> list[Path]:
    """The cells (``side`` compared; a cell not compared has its ``side``, A, B or both, its
    ``runs`` and no numbers) to ``path``, and the claims side by side to ``<path
    stem>_claims.csv`` when they were compared."""
    path = Path(path)
    cells = pd.concat([c.cells.assign(side="compared"), c.only], ignore_index=True)
    cells.to_csv(path, index=False)
    written = [path]
    if c.claims is not None:
        claims = path.with_name(f"{path.stem}_claims.csv")
        c.claims.table.to_csv(claims, index=False)
        written.append(claims)
    return written
