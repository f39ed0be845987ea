"""Whether a verdict is a property of the style or of the way it was measured: the same
claims measured two ways (two backends, or two languages), set side by side.

Per claim, both sides' estimates (the claims table's ratio a/b with its interval) and
verdicts, whether the verdicts agree, and the ratio of the two estimates (side b over side
a) with its interval; per table, the share of claims whose verdict agrees. A disagreement
is explained from the numbers, never by hand: where the ratio of the estimates does not
differ from 1, ``runs`` if one side could not decide (inconclusive or underpowered: it lacked
the runs) and ``noise`` if both decided, each its own way (one side's interval crosses a
threshold the other's does not); ``not measured``
where one side has no estimate, and ``backend`` (or the side's factor) where the ratio of
the estimates leaves 1: a real difference between the two ways of measuring.

The interval of the ratio combines the two sides' intervals on the log scale: each side's
standard error is its interval's log width over twice the normal quantile (wider than the
t interval's own when the side had few runs, so the combined interval errs wide), and the
two sides are independent runs (docs/statistics.md section 8). Only claims tested on
measurements count (``evidence`` test); a fact fixed by construction agrees by
construction and is left out.

The pairs come from the committed references: two references of the same study whose runs
were made on different backends (:func:`backend_pairs`), and, within one claims table,
claims stated once per level of a factor (``<id>-<level>`` for two levels, e.g. a language:
:func:`factor_pairs`).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as sps

from ipclab.claims import INCONCLUSIVE, UNDERPOWERED
from ipclab.stats.intervals import interval_text

AGREE = "agree"
NOISE = "noise"
RUNS = "runs"
NOT_MEASURED = "not measured"
UNDECIDED = (INCONCLUSIVE, UNDERPOWERED)
#: each side's columns in a side-by-side table
_PER_SIDE = ("measured_ratio", "ci_low", "ci_high", "n_a", "verdict", "plausibility")
_COLUMNS = ["claim_id", "comparison", "measured_ratio", "ci_low", "ci_high", "verdict", "n_a",
            "plausibility"]  # fmt: skip


@dataclass(frozen=True)
class Pair:
    """Two claims tables of the same claims, measured two ways (``labels``: a, b)."""

    title: str
    labels: tuple[str, str]
    a: pd.DataFrame
    b: pd.DataFrame


def claims_tables(results_dir: Path) -> pd.DataFrame:
    """Every claims table of a results folder (``claims*.csv``), one frame with the table's
    name in ``table``; tests on measurements only."""
    frames = []
    for f in sorted(Path(results_dir).glob("claims*.csv")):
        if f.stem == "claims_code":  # ipclab's own code, the same on every backend (a fact)
            continue
        t = pd.read_csv(f)
        if "evidence" in t.columns:
            t = t[t["evidence"].fillna("test") == "test"]
        frames.append(t.assign(table=f.stem))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _log_se(low: float, high: float, confidence: float) -> float:
    """A side's standard error on the log scale, from its interval (NaN when it has none)."""
    if not (low > 0 and high > 0 and np.isfinite(low) and np.isfinite(high)):
        return math.nan
    return math.log(high / low) / (2 * float(sps.norm.ppf(0.5 + confidence / 2)))


def ratio_of_estimates(
    a: float, a_low: float, a_high: float, b: float, b_low: float, b_high: float,
    confidence: float = 0.95,
) -> tuple[float, float, float]:  # fmt: skip
    """``b / a`` and its interval from the two sides' intervals (log scale, independent)."""
    if not (a > 0 and b > 0 and np.isfinite(a) and np.isfinite(b)):
        return math.nan, math.nan, math.nan
    est = b / a
    se = math.hypot(_log_se(a_low, a_high, confidence), _log_se(b_low, b_high, confidence))
    if not np.isfinite(se):
        return est, math.nan, math.nan
    q = float(sps.norm.ppf(0.5 + confidence / 2))
    return est, est * math.exp(-q * se), est * math.exp(q * se)


def estimates_differ(ratio: tuple[float, float, float]) -> bool | None:
    """Whether two estimates differ: their ratio's interval (:func:`ratio_of_estimates`)
    leaves 1; None where the ratio has no interval (a side with no estimate or interval)."""
    est, low, high = ratio
    if not (np.isfinite(est) and np.isfinite(low) and np.isfinite(high)):
        return None
    return not low <= 1 <= high


def explain(verdict_a: str, verdict_b: str, ratio: tuple[float, float, float], factor: str) -> str:
    """Why two verdicts of one claim agree or part (the module's words)."""
    if verdict_a == verdict_b:
        return AGREE
    if not np.isfinite(ratio[0]):
        return NOT_MEASURED
    if estimates_differ(ratio) is False:  # the estimates do not differ
        return RUNS if verdict_a in UNDECIDED or verdict_b in UNDECIDED else NOISE
    return factor


def side_by_side(pair: Pair, factor: str = "backend", confidence: float = 0.95) -> pd.DataFrame:
    """One row per claim in both tables: each side's estimate, interval, runs and verdict,
    whether the verdicts agree, the ratio b/a with its interval, and the explanation."""
    la, lb = pair.labels
    keys = ["table", "claim_id"] if "table" in pair.a.columns else ["claim_id"]
    cols = [*keys, *(c for c in _COLUMNS if c not in keys and c in pair.a.columns
                     and (c == "comparison" or c in pair.b.columns))]  # fmt: skip
    m = pair.a[cols].merge(pair.b[[c for c in cols if c != "comparison"]], on=keys,
                           suffixes=(f"_{la}", f"_{lb}"))  # fmt: skip
    rows = []
    for _, r in m.iterrows():
        sides = [[float(r[f"{c}_{x}"]) for c in ("measured_ratio", "ci_low", "ci_high")]
                 for x in (la, lb)]  # fmt: skip
        ratio = ratio_of_estimates(*sides[0], *sides[1], confidence=confidence)
        va, vb = str(r[f"verdict_{la}"]), str(r[f"verdict_{lb}"])
        rows.append(
            {
                **{k: r[k] for k in keys},
                "comparison": r["comparison"],
                **{
                    f"{x}_{c}": r[f"{c}_{x}"]
                    for x in (la, lb)
                    for c in _PER_SIDE
                    if f"{c}_{x}" in r
                },  # fmt: skip
                "agree": va == vb,
                f"{lb}_over_{la}": ratio[0],
                "ratio_low": ratio[1],
                "ratio_high": ratio[2],
                "explanation": explain(va, vb, ratio, factor),
            }
        )
    return pd.DataFrame(rows)


def agreement_share(table: pd.DataFrame) -> tuple[int, int]:
    """(claims whose verdicts agree, claims in both)."""
    if table.empty:
        return 0, 0
    return int(table["agree"].sum()), len(table)


def agreement_sentence(
    table: pd.DataFrame, title: str, labels: tuple[str, str], factor: str
) -> str:
    """The agreement counted in a sentence: all claims, the claims decided on at least one
    side, and the disagreements by what explains them."""
    la, lb = labels
    agree, n = agreement_share(table)
    undecided = table[f"{la}_verdict"].isin(UNDECIDED) & table[f"{lb}_verdict"].isin(UNDECIDED)
    d_agree, d_n = agreement_share(table[~undecided])
    why = Counter(table.loc[~table["agree"].astype(bool), "explanation"])
    parts = ", ".join(f"{k} {v}" for k, v in sorted(why.items())) or "none"
    share = f" ({agree / n:.0%})" if n else ""
    return (
        f"{title}, {la} against {lb}: the verdicts agree on {agree} of {n} claims{share}, "
        f"and on {d_agree} of {d_n} claims decided on at least one side. The disagreements, "
        f"by what explains them: {parts} ({factor}: the ratio of the estimates leaves 1; "
        f"runs: it does not, and one side could not decide; noise: it does not, and both "
        f"sides decided, each its own way; not measured: one side has no estimate)."
    )


def agreement_markdown(
    table: pd.DataFrame, title: str, labels: tuple[str, str], factor: str
) -> str:
    """:func:`side_by_side`'s table as Markdown (a README's generated block), after its
    :func:`agreement_sentence`."""
    shown = agreement_text(table, labels)
    lines = ["| " + " | ".join(shown.columns) + " |", "|" + "---|" * len(shown.columns)]
    for row in shown.itertuples(index=False):
        cells = [f"`{c}`" if i == 1 else str(c) for i, c in enumerate(row)]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join([agreement_sentence(table, title, labels, factor), "", *lines])


def agreement_text(table: pd.DataFrame, labels: tuple[str, str]) -> pd.DataFrame:
    """:func:`side_by_side`'s table as text columns: claim, comparison, each side's
    estimate [interval] and verdict, the ratio of the estimates and what explains a
    disagreement (the README block's and ``ipclab compare``'s columns)."""
    la, lb = labels

    def ci(*columns: str) -> list[str]:
        return [interval_text(*x, ".3g") for x in zip(*(table[c] for c in columns), strict=True)]

    def est(side: str) -> list[str]:
        return ci(f"{side}_measured_ratio", f"{side}_ci_low", f"{side}_ci_high")

    return pd.DataFrame({
        "claim": table["claim_id"].astype(str), "comparison": table["comparison"].astype(str),
        f"{la} a/b": est(la), f"{la} verdict": table[f"{la}_verdict"].astype(str),
        f"{lb} a/b": est(lb), f"{lb} verdict": table[f"{lb}_verdict"].astype(str),
        f"{lb}/{la}": ci(f"{lb}_over_{la}", "ratio_low", "ratio_high"),
        "verdicts": table["explanation"].astype(str),
    })  # fmt: skip


def backend_of(reference: Path) -> str | None:
    """The backend a reference's runs were made on (its first run's manifest)."""
    for m in sorted(reference.rglob("manifest.json")):
        backend = json.loads(m.read_text()).get("backend")
        if backend:
            return str(backend)
    return None


def backend_folders(reference_root: Path) -> list[tuple[tuple[str, str], Path, Path]]:
    """Per study with committed references on two backends, the two backends (``local``
    first when there is one) and the two reference folders."""
    by_study: dict[str, dict[str, Path]] = {}
    for meta in sorted(Path(reference_root).glob("*/results/study.json")):
        study = json.loads(meta.read_text()).get("study")
        backend = backend_of(meta.parent.parent)
        if study and backend:
            by_study.setdefault(str(study), {}).setdefault(backend, meta.parent.parent)
    out = []
    for _study, found in sorted(by_study.items()):
        if len(found) < 2:
            continue
        la, lb = sorted(found, key=lambda b: (b != "local", b))[:2]
        out.append(((la, lb), found[la], found[lb]))
    return out


def backend_pairs(reference_root: Path) -> list[Pair]:
    """Per study with committed references on two backends, the two references' claims
    tables (:func:`backend_folders`), titled ``<study> (<reference a> and <reference b>)``
    (``ipclab.compare.compare_claims`` sets them side by side for the report)."""
    pairs = []
    for (la, lb), a, b in backend_folders(reference_root):
        study = json.loads((a / "results" / "study.json").read_text())["study"]
        title = f"{study} ({a.name} and {b.name})"
        pairs.append(Pair(title, (la, lb), claims_tables(a / "results"),
                          claims_tables(b / "results")))  # fmt: skip
    return pairs


def factor_pairs(claims: pd.DataFrame, title: str) -> Pair | None:
    """The claims of one table stated once per level of a two-level factor (ids
    ``<stem>-<level>``, the same statement), as a pair over the stems; None when the table
    has no such claims."""
    if claims.empty:
        return None
    split = claims["claim_id"].astype(str).str.rsplit("-", n=1, expand=True)
    if split.shape[1] < 2:
        return None
    stem, level = split[0], split[1]
    levels = list(dict.fromkeys(level[level.notna() & level.str.isalpha()]))  # table order
    if len(levels) != 2:
        return None
    sides = []
    for lv in levels:
        rows = level == lv
        t = claims[rows].assign(claim_id=stem[rows])
        t["comparison"] = t["comparison"].astype(str).str.replace(f"-{lv}", "", regex=False)
        sides.append(t)
    return Pair(title, (levels[0], levels[1]), sides[0], sides[1])
