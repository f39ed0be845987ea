"""ipclab plan (ipclab.decide) over the committed references: every undecided test with a
published ratio becomes a need whose cells its part can make; the plan is printed and
written before anything runs."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from ipclab import decide
from ipclab.paths import REPO_ROOT
from ipclab.planner import describe

REFERENCE = REPO_ROOT / "data" / "runs" / "reference"


@cache
def sources(study: str) -> tuple[decide.Source, ...]:
    """A study's sources over the committed references, found once for this module: finding
    them analyses each reference (Nyfløtt's about 40 s), and no test here changes one."""
    return tuple(decide.sources(REFERENCE, [study]))


def test_reference_names_give_profile_and_backend() -> None:
    assert decide.reference_parameters("nyflott-full-docker") == ("full", "docker")
    assert decide.reference_parameters("shafabakhsh-go-full-local") == ("full", "local")
    with pytest.raises(ValueError, match="<name>-<profile>-<backend>"):
        decide.reference_parameters("reference")
    assert decide.parse_budget("3h") == 3 and decide.parse_budget("90m") == 1.5
    with pytest.raises(ValueError, match="give hours"):
        decide.parse_budget("soon")


@pytest.mark.parametrize("study", ["shafabakhsh", "johansson", "nyflott", "buono"])
def test_every_undecided_test_becomes_a_need_its_part_can_make(study: str) -> None:
    found = sources(study)
    assert found, study
    for source in found:
        for need in source.needs:
            assert all(c.startswith(f"{source.results}:") for c in need.cells), need
            assert need.have >= 2 and need.run_hours > 0
    plan = decide.make_plan(found, 3.0)
    assert plan.hours <= 3.0
    text = describe(plan)
    assert text.startswith("plan:")


def test_the_plan_is_written_before_it_runs(tmp_path: Path) -> None:
    found = sources("johansson")
    plan = decide.make_plan(found, 24.0)
    order = decide.write_plan(plan, tmp_path / "plan.json")
    assert decide.read_plan(tmp_path / "plan.json") == order
    assert len(order) == plan.runs


def test_an_added_run_is_made_with_the_load_its_reference_recorded() -> None:
    """Nyfløtt's reference ran a 30 s window after a 30 s warm-up, not the profile's 10 min
    after 2.5 min: a planned run joins it under the recorded load (``as_recorded``)."""
    from ipclab.experiments import as_recorded

    (source,) = sources("nyflott")
    for e in source.plan:
        assert (e.duration_s, e.warmup_s) == (750, 150)  # the profile's
        recorded = as_recorded(e)
        assert (recorded.duration_s, recorded.warmup_s) == (60, 30), e.name
        assert recorded.cells() == e.cells() and recorded.directory == e.directory
