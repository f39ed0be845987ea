"""What a study outside the repository uses of the core (issue 49): the published-data
loader's public helpers, ``claim()`` (a claim declared in code with the CSV's defaults),
the typed :class:`~ipclab.protocol.Analysis` written by the core, and the core's ``write``
and ``extend`` that the four studies' adapters no longer repeat."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

import pandas as pd
import pytest

from ipclab import protocol, published
from ipclab.experiments import Experiment
from ipclab.paths import REPO_ROOT
from ipclab.protocol import Analysis, DeclaredPart, Parameters, Plan, Plot, Runs, Table
from ipclab.published import Claim, PublishedDataError, claim

H1 = {
    "claim_id": "H1",
    "statement_id": "H1",
    "document": "hypothesis",
    "quote": "h2c is faster.",
    "scope": "performance",
    "metric": "mean_ms",
    "test": "direction",
    "relation": "<",
    "a_style": "h2c",
    "a_users": (10,),
    "b_style": "rest",
    "b_users": (10,),
}


def test_a_claim_declared_in_code_takes_the_csv_defaults() -> None:
    c = claim(**H1)
    assert isinstance(c, Claim)
    assert (c.a_users, c.b_users, c.band_low, c.from_users, c.page) == (
        (10,),
        (10,),
        None,
        None,
        "",
    )
    assert c.source == "the study's own hypothesis (no publication)"
    assert c.describe() == "mean_ms: h2c@10 < rest@10"


def test_a_declared_claim_is_checked_as_a_csv_row_is() -> None:
    with pytest.raises(PublishedDataError, match="relation '>'"):
        claim(**{**H1, "test": "equal", "relation": ">"})
    with pytest.raises(PublishedDataError, match="a_style='h2c' not one of rest"):
        claim(styles=("rest",), **H1)
    with pytest.raises(PublishedDataError, match="a hypothesis has no page"):
        claim(**{**H1, "page": "3"})
    with pytest.raises(TypeError, match="unknown field"):
        claim(**H1, colour="red")


def test_no_study_imports_a_private_name_of_the_published_loader() -> None:
    for f in (REPO_ROOT / "src" / "ipclab" / "studies").rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "ipclab.published":
                private = [a.name for a in node.names if a.name.startswith("_")]
                assert not private, f"{f}: {private}"
    assert all(
        callable(getattr(published, n))
        for n in ("read_table", "check_choice", "parse_numbers", "row_error", "claims", "claim")
    )


class _Part(DeclaredPart):
    DEVIATIONS = ("declared",)

    def declare(self, params: Parameters) -> Plan:
        root = params.runs_root
        return {n: Experiment(n, stacks=("shop-rest",), users=(1,), root=root) for n in ("a", "b")}

    def analyse(self, runs: Runs, params: Parameters) -> Analysis:
        claims = pd.DataFrame({"claim_id": ["H1"], "verdict": ["undecided"]})
        table = Table("runs", pd.DataFrame({"n": [len(v) for v in runs.values()]}), "Runs")
        return Analysis(claims, tables=(table,), deviations=("shown",), views={"x": 1})


def test_the_core_writes_a_declared_part_s_analysis(tmp_path: Path) -> None:
    part = _Part("toyresults", "A title")
    params = part.parameters(runs_root=tmp_path / "runs", results_dir=tmp_path / "results")
    plan = part.experiments(params)
    assert "a: 1 runs of 30 s" in part.describe(plan)
    runs = part.load(plan)
    assert runs == {"a": [], "b": []}
    analysis = part.analyse(runs, params)
    results = part.write(analysis, params)
    assert results.deviations == ["declared", "shown"]
    assert [t["name"] for t in results.tables] == ["runs", "claims"]
    assert list(pd.read_csv(tmp_path / "results" / "runs.csv")["n"]) == [0, 0]
    assert analysis["runs"] is analysis.tables[0].frame
    assert part.views(analysis) == {"x": 1}


def test_the_core_extends_the_experiment_a_cell_id_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[tuple[str, str, int]] = []

    def fake(e: Experiment, cell: str, rep: int, progress: object) -> None:
        made.append((e.name, cell, rep))

    monkeypatch.setattr("ipclab.experiments.extend_cell", fake)
    part = _Part("toyresults", "A title")
    plan = part.experiments(part.parameters(runs_root=tmp_path))
    part.extend(plan, [("toyresults:b:shop-rest@1", 3), ("toyresults:a:shop-rest@1", 4)], print)
    assert made == [("b", "shop-rest@1", 3), ("a", "shop-rest@1", 4)]

    class One(_Part):
        def extended(self, plan: Plan) -> Experiment | Mapping[str, Experiment]:
            return plan["a"]

    made.clear()
    One("r", "t").extend(plan, [("r:shop-rest@1", 2)], print)
    assert made == [("a", "shop-rest@1", 2)]
    assert protocol.StudyPart.write is not DeclaredPart.write


def test_several_declared_experiments_run_interleaved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    order: list[tuple[str, int]] = []

    def run_cell(self: Experiment, cell: object, label: str, progress: object, *_: object) -> str:
        order.append((self.name, cell.repetition))  # type: ignore[attr-defined]
        return f"{self.name}-{cell.repetition}"  # type: ignore[attr-defined]

    monkeypatch.setattr(Experiment, "run_cell", run_cell)

    class Three(_Part):
        def declare(self, params: Parameters) -> Plan:
            return {
                n: Experiment(n, ("shop-rest",), (1,), repetitions=3, root=params.runs_root)
                for n in ("a", "b")
            }

    part = Three("r", "t")
    runs = part.run(part.experiments(part.parameters(runs_root=tmp_path)))
    assert runs == {"a": ["a-1", "a-2", "a-3"], "b": ["b-1", "b-2", "b-3"]}
    assert sorted(order) == [(n, r) for n in "ab" for r in (1, 2, 3)]
    # each repetition of both before the next, in one shuffled order
    assert [rep for _, rep in order] == [1, 1, 2, 2, 3, 3] and order != sorted(order)

    class OneByOne(Three):
        INTERLEAVED = False  # in the order declared, each experiment's cells together

    order.clear()
    runs = OneByOne("r", "t").run(part.experiments(part.parameters(runs_root=tmp_path)))
    assert [name for name, _ in order] == ["a"] * 3 + ["b"] * 3
    assert sorted(runs["a"]) == ["a-1", "a-2", "a-3"]


def test_the_claims_go_where_the_part_places_them_and_figures_are_drawn_when_written(
    tmp_path: Path,
) -> None:
    from matplotlib.figure import Figure

    drawn: list[str] = []

    def draw() -> Figure:
        drawn.append("late")
        fig = Figure()
        fig.subplots().plot([0, 1])
        return fig

    def readme() -> dict[str, str]:
        raise AssertionError("no README beside the results: its blocks are not made")

    claims = pd.DataFrame({"claim_id": ["H1"], "verdict": ["undecided"]})
    tables = tuple(Table(n, pd.DataFrame({"n": [1]}), n) for n in ("a", "b", "c"))
    analysis = Analysis(
        claims, tables, (Plot("late", draw, "drawn when written"),), readme=readme,
        claims_before="c",
    )  # fmt: skip
    assert drawn == []
    part = _Part("placed", "A title")
    params = part.parameters(results_dir=tmp_path / "results", figures_dir=tmp_path / "figs")
    results = part.write(analysis, params)
    assert [t["name"] for t in results.tables] == ["a", "b", "claims", "c"]
    assert drawn == ["late"] and [f["name"] for f in results.figures] == ["late"]
    # nothing judged (a frame without columns): no claims table
    unjudged = part.write(Analysis(pd.DataFrame(), tables), part.parameters(
        results_dir=tmp_path / "unjudged", figures_dir=tmp_path / "figs"))  # fmt: skip
    assert [t["name"] for t in unjudged.tables] == ["a", "b", "c"] and unjudged.claims is None
