"""A study's results folder: tables (CSV), figures (in figures/), captions, deviations.

``study.json`` lists every figure and table with its caption, the deviations from the
original setup and anything skipped; the report is built from these folders alone.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from ipclab import plotting
from ipclab.atomic import write_json_atomic
from ipclab.claims import band_sensitivity
from ipclab.paths import from_repo, repo_relative
from ipclab.runs import utcnow

# what a claim about ipclab's own code has to show (no interval, p-value or band)
CODE_COLUMNS = ("claim_id", "source", "quote", "comparison", "measured_a", "measured_b",
                "measured_ratio", "verdict", "reason", "note")  # fmt: skip


@dataclass
class StudyResults:
    directory: Path
    study: str
    title: str
    parameters: dict[str, Any] = field(default_factory=dict)
    deviations: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    figures: list[dict[str, str]] = field(default_factory=list)
    tables: list[dict[str, str]] = field(default_factory=list)
    claims: str | None = None
    figures_dir: Path = plotting.FIGURES_DIR

    def __post_init__(self) -> None:
        self.directory = from_repo(self.directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.figures_dir = from_repo(self.figures_dir)

    def figure(self, fig: Figure, name: str, caption: str) -> list[Path]:
        paths = plotting.save(fig, name, self.figures_dir)
        png = next(p for p in paths if p.suffix == ".png")
        self.figures = [f for f in self.figures if f["name"] != name]
        self.figures.append({"name": name, "png": repo_relative(png), "caption": caption})
        self.save()
        return paths

    def table(self, df: pd.DataFrame, name: str, caption: str, in_report: bool = True) -> Path:
        path = self.directory / f"{name}.csv"
        df.to_csv(path, index=False)
        self.tables = [t for t in self.tables if t["name"] != name]
        self.tables.append(
            {"name": name, "csv": path.name, "caption": caption, "in_report": str(in_report)}
        )
        self.save()
        return path

    def claims_table(self, df: pd.DataFrame) -> Path:
        """The claims about the system under test (``claims.csv``, what the report counts),
        and apart from them those about ipclab's own code (``claims_code.csv``, the
        ``compare`` claims: evidence about this repository, not about the thesis's system)."""
        code = df["test"] == "compare" if "test" in df.columns else pd.Series(False, df.index)
        if code.any():
            shown = [c for c in CODE_COLUMNS if c in df.columns]
            self.table(
                df.loc[code, shown],
                "claims_code",
                "Claims about code size, judged on ipclab's own code (not on the thesis's "
                "system): a separate question from the claims about performance.",
            )
        path = self.table(df[~code], "claims", "Published claims and computed verdicts", False)
        self.claims = path.name
        bands = band_sensitivity(df[~code])
        if not bands.empty:
            self.table(
                bands,
                "band_sensitivity",
                "Band sensitivity: every verdict that hangs on a size word (equal, differ, "
                "slight, considerable), at its standard band (docs/statistics.md section 4) "
                "and again at +-5%, +-10% and +-20%; band_decides marks the verdicts a "
                "different band would change.",
            )
        self.save()
        return path

    def save(self) -> None:
        d = asdict(self)
        d["directory"] = repo_relative(self.directory)
        d["figures_dir"] = repo_relative(self.figures_dir)
        d["updated_at"] = utcnow()
        write_json_atomic(self.directory / "study.json", d)


def read_results(directory: Path) -> dict[str, Any]:
    return dict(json.loads((Path(directory) / "study.json").read_text()))
