"""The main body's sections per study and the runs that decide a claim: every committed
reference grouped under one of the registry's studies, one section each; a claim's cells
matched to run folders by name only when the match is exactly the runs the claim counted."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from ipclab.paths import REPO_ROOT
from ipclab.report import claimruns
from ipclab.report.answer import Entry
from ipclab.report.bystudy import Part, group, registry
from ipclab.studies import all_studies
from tests.test_report_answer import references

BASE = "data/runs/reference/ref"


@pytest.mark.parametrize(
    ("comparison", "want"),
    [("rps: grpc@50 > rest@50", [("grpc", "50"), ("rest", "50")]),
     ("rps growth 0->1: rest@50 < grpc@50", [("rest", "50"), ("grpc", "50")]),
     ("sd_ms: coap@0 > h2c@0", [("coap", "0"), ("h2c", "0")]),
     ("server_ms: protobuf-nested-post-gzip-nocache@650 < json-nested-post-gzip-nocache@650",
      [("protobuf-nested-post-gzip-nocache", "650"), ("json-nested-post-gzip-nocache", "650")]),
     ("lines: rest > grpc", [])],
)  # fmt: skip
def test_a_comparison_names_its_cells(comparison: str, want: list[tuple[str, str]]) -> None:
    assert claimruns.cells(comparison) == want


@pytest.mark.parametrize(
    ("run", "cell", "inside"),
    [("shop-grpc-u50-base-r1", ("grpc", "50"), True),
     ("shop-grpc-u50-base-r1", ("rest", "50"), False),
     ("shop-grpc-u50-base-r1", ("grpc", "1"), False),  # r1 is the repetition, not a level
     ("shop-grpc-u100-base-r50", ("grpc", "50"), False),
     ("delay0ms/acmeair-coap-u10-base-r3", ("coap", "0"), True),
     ("delay2ms/acmeair-coap-u10-base-r3", ("coap", "0"), False),
     ("thesis/bundle-rest+bundle-graphql-u1-rows5-r2", ("graphql", "5"), True),
     ("thesis/bundle-rest+bundle-graphql-u1-rows50-r2", ("graphql", "5"), False)],
)  # fmt: skip
def test_a_run_is_in_a_cell_by_the_words_of_its_name(
    run: str, cell: tuple[str, str], inside: bool
) -> None:
    assert claimruns.in_cell(claimruns.words(f"{BASE}/{run}", BASE), *cell) is inside


def test_a_claim_whose_cells_match_other_runs_than_it_counted_gets_no_list() -> None:
    folder = REPO_ROOT / "data/runs/reference/shafabakhsh-full-local"
    if not folder.is_dir():
        pytest.skip("no committed reference")
    claims = pd.read_csv(folder / "results" / "claims.csv")
    row = claims[claims["comparison"].str.contains("@", regex=False)].iloc[0].copy()
    runs = claimruns.claim_runs(folder, row)
    assert runs is not None, row["comparison"]
    assert len(runs) == len(set(runs["path"])) <= int(row["n_a"]) + int(row["n_b"])
    row["n_a"] = int(row["n_a"]) + 1  # one run more than the names give: no list
    assert claimruns.claim_runs(folder, row) is None
    none = row.copy()
    none[["comparison", "n_a", "n_b"]] = ["rps: grpc@7 > rest@7", 0, 0]
    assert claimruns.claim_runs(folder, none) is None  # no runs either side: nothing listed


def _part(label: str, meta: dict[str, object]) -> Part:
    entry = Entry(str(meta.get("title", label)), label, "study-x", pd.DataFrame(), label)
    return Part(entry, Path("."), dict(meta))


def test_every_committed_reference_is_grouped_under_its_study() -> None:
    refs = references()
    if not refs:
        pytest.skip("no committed references")
    named = {name for _, _, names in registry() for name in names}
    parts = [_part(d.parent.name, {"study": "x", "title": d.parent.name}) for d in refs.values()]
    studies = group(parts)
    assert {d.parent.name for d in refs.values()} <= named
    assert [s.title for s in studies] == [
        s.title for s in sorted(all_studies().values(), key=lambda s: min(nb.file for nb in
                                                                          s.notebooks))
    ]  # fmt: skip
    assert sum(len(s.parts) for s in studies) == len(refs)
    assert all(sum(p.lead for p in s.parts) >= 1 for s in studies)


def test_a_folder_no_study_names_is_a_study_of_its_own() -> None:
    studies = group([_part("mine", {"study": "mine", "title": "Mine (quick)"})])
    assert [(s.name, s.title, len(s.parts)) for s in studies] == [("mine", "Mine", 1)]
    assert studies[0].parts[0].lead
