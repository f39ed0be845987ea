"""Every figure and table a study's seed prints, and where ipclab shows it or why it cannot
(issue 52): the study's ``seed_items.csv`` (item and caption as the seed prints them),
copied into its reference's results as the ``seed_items`` table so the report shows it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ipclab.environment_table import ALIASES

STUDIES = Path(__file__).parent / "studies"
TABLE = "seed_items"
CAPTION = (
    "Every figure and table the study's seed prints (number and caption as printed) and "
    "where this reference shows it (figure:<name> or table:<name> of its results) or why "
    "it cannot."
)


def items(study: str) -> pd.DataFrame | None:
    """The study's seed items, None when the study lists none yet."""
    path = STUDIES / ALIASES.get(study, study.split("_")[0]) / "seed_items.csv"
    return pd.read_csv(path, keep_default_na=False) if path.is_file() else None


def write_reference(results: Any) -> Path | None:
    """The study's seed items into ``results`` (a ``StudyResults``), in the report."""
    table = items(results.study)
    return None if table is None else results.table(table, TABLE, CAPTION)
