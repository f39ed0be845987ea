"""The environment table of a reference (issue 52) is built from its runs' manifests."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ipclab import environment_table
from ipclab.results import StudyResults
from ipclab.studies.johansson import setup

ENV = {"python": "3.11.7", "cpu_model": "AMD EPYC", "os": "Linux-a",
       "libraries": repr({"grpcio": "1.85.3"})}  # fmt: skip


def _run(folder: Path, name: str, **env: str) -> None:
    (folder / name).mkdir(parents=True)
    manifest = {"stack": "s", "stack_spec": {"domain": "shop", "runtime": "go"},
                "environment": repr({**ENV, **env})}  # fmt: skip
    (folder / name / "manifest.json").write_text(json.dumps(manifest))


def test_a_differing_field_shows_every_value_with_its_count(tmp_path: Path) -> None:
    ref = tmp_path / "ref"
    _run(ref, "a")
    _run(ref, "b")
    _run(ref, "c", os="Linux-b")
    results = StudyResults(ref / "results", "johansson", "t", figures_dir=tmp_path / "f")
    out = environment_table.write_reference(results)
    table = pd.read_csv(out)
    rows = {(r.field, r.value): r.runs for r in table.itertuples()}
    assert rows[("os", "Linux-a")] == 2 and rows[("os", "Linux-b")] == 1
    assert rows[("library grpcio", "1.85.3")] == 3
    assert rows[("stack s", "runtime go")] == 3
    published = table[table["source"] != environment_table.MEASURED]
    assert [tuple(r) for r in published[["field", "value", "source"]].itertuples(index=False)] \
        == setup.PUBLISHED_ENVIRONMENT  # fmt: skip
    assert any(t["name"] == "environment" for t in results.tables)


def test_every_study_prints_its_published_set_up() -> None:
    for study in ("buono", "johansson", "nyflott", "shafabakhsh", "availability", "tls"):
        assert len(environment_table.published(study)), study
    assert environment_table.published("nosuch").empty
