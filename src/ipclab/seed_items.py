"""Every figure and table a study's seed prints, and where ipclab shows it or why it cannot
(issue 52): the study's ``seed_items.csv`` (item and caption as the seed prints them),
copied into its reference's results as the ``seed_items`` table so the report shows it.

``shown`` lists the places, ``; ``-separated: ``figure:<name>`` or ``table:<name>`` of the
reference the table is in (the study's primary reference, :func:`primary`: its
``setup.SEED_REFERENCE``), or
``<folder>/figure:<name>`` of another reference (another runtime or backend, an extension);
``why_not`` says what is not shown (the whole item, or a runtime or configuration the
places lack)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from ipclab.environment_table import parts, study_of

STUDIES = Path(__file__).parent / "studies"
TABLE = "seed_items"
COLUMNS = ["item", "caption", "shown", "why_not"]
CAPTION = (
    "Every figure and table the study's seed prints (number and caption as printed) and "
    "where ipclab shows it (figure:<name> or table:<name> of this reference's results, "
    "<folder>/... of another reference) or why it cannot."
)
_PLACE = re.compile(r"^(?:(?P<folder>[\w.-]+)/)?(?P<kind>figure|table):(?P<name>\w+)$")


class Place(NamedTuple):
    """Where a seed item is shown: a figure or table of a reference's results."""

    folder: str
    kind: str  # "figure" or "table"
    name: str


def places(shown: str, primary: str) -> list[Place]:
    """The places of a ``shown`` cell; ValueError names one that is not a place."""
    out = []
    for part in filter(None, (p.strip() for p in shown.split(";"))):
        m = _PLACE.match(part)
        if m is None:
            raise ValueError(f"not a place: {part!r} (figure:<name>, <folder>/table:<name>)")
        out.append(Place(m["folder"] or primary, m["kind"], m["name"]))
    return out


def primary() -> dict[str, str]:
    """Each study that lists seed items, to the reference whose results its places name by
    default (the study's ``setup.SEED_REFERENCE``)."""
    out = {}
    for study in sorted(set(parts().values())):
        try:
            setup = importlib.import_module(f"ipclab.studies.{study}.setup")
        except ModuleNotFoundError:
            continue
        if getattr(setup, "SEED_REFERENCE", ""):
            out[study] = setup.SEED_REFERENCE
    return out


def items(study: str) -> pd.DataFrame | None:
    """The study's seed items, None when the study lists none yet."""
    path = STUDIES / study_of(study) / "seed_items.csv"
    return pd.read_csv(path, keep_default_na=False) if path.is_file() else None


def write_reference(results: Any) -> Path | None:
    """The study's seed items into ``results`` (a ``StudyResults``), in the report: only in
    the study's own references (an extension's, such as ``availability``, has none)."""
    own = parts().get(results.study, results.study) == results.study
    table = items(results.study) if own else None
    return None if table is None else results.table(table, TABLE, CAPTION)
