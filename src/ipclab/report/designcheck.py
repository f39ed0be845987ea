"""The design check in the report (docs/statistics.md section 3): every distinct test of the
committed references whose planned runs cannot pass its Holm level whatever they measure
(its exact test's smallest p at those runs against its level), and how many runs per cell
could; the same rows ``ipclab plan`` prints (:func:`ipclab.planner.design_rows`)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ipclab.planner import design_rows
from ipclab.report import html as rh
from ipclab.report.context import Counter


def design_table(reference_root: Path) -> pd.DataFrame:
    """One row per test its runs cannot pass, over every committed reference's claims
    tables (``<root>/<reference>/results/claims*.csv``)."""
    rows = []
    for csv in sorted(Path(reference_root).glob("*/results/claims*.csv")):
        name = csv.parents[1].name + ("" if csv.stem == "claims" else f" ({csv.stem})")
        rows += design_rows(name, pd.read_csv(csv))
    return pd.DataFrame(rows)


def _shown(t: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({
        "reference": t["reference"], "claims": t["claims"], "comparison": t["comparison"],
        "test": t["p_method"],
        "runs": [f"{a} + {b}" for a, b in zip(t["n_a"], t["n_b"], strict=True)],
        "smallest p": t["floor"].map(lambda v: f"{v:.2g}"),
        "Holm level": t["level"].map(lambda v: f"{v:.2g}"),
        "runs per cell that could": t["runs_that_could"].map(
            lambda v: "-" if v is None or pd.isna(v) else f"{int(v)}"),
        "verdict": t["verdict"],
    })  # fmt: skip


def design_section(reference_root: Path, n: Counter) -> str:
    """The appendix section; a sentence alone when every test's runs can pass."""
    t = design_table(reference_root)
    head = ('<section class="study"><h1 class="study-title">Design check</h1>'
            "<p>Before any run: whether a test's planned runs can pass its Holm level at all "
            "(docs/statistics.md section 3). An exact test's smallest p at its runs that is not "
            "below its level cannot pass whatever the runs measure: such a test is "
            "<em>underpowered</em> by design, with the runs per cell that could.</p>")  # fmt: skip
    if t.empty:
        return head + "<p>Every test's runs can pass its Holm level.</p></section>"
    cap = rh.caption("Table", n.table(), f"The {len(t)} tests of the committed references whose "
                     "runs cannot pass their Holm level, whatever they measure (the same rows "
                     "as ipclab plan's design check).")  # fmt: skip
    return head + rh.frame_table(_shown(t), cap) + "</section>"
