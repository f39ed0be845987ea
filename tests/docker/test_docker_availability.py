"""The availability study's CI profile (tests/test_availability_runs.py) on the docker backend
(issue 5, must-show 1): method 1, fault injection and the outage experiment for the three
styles, with components killed and restarted as containers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from .local_tests import load_local_tests

_avail = load_local_tests("test_availability_runs.py")


@pytest.fixture(scope="module")
def study_run(
    tmp_path_factory: pytest.TempPathFactory, docker_images: dict[str, str]
) -> Iterator[tuple[Path, object]]:
    # method 1 under the full profile's per-container limits, each run on a stack of its own
    # started with them (as the full profile does on docker); the outage and the fault
    # injection on one stack per style, as the quick profile runs them
    profile = replace(_avail.CI, cpus=0.5, memory_mb=256, share_stack=True)
    with _avail.ci_profile(profile):
        yield _avail.run_study("docker", tmp_path_factory.mktemp("availability-docker"))


# The study-level tests, re-collected here: they get this module's study_run (docker).
test_every_run_complete_for_every_style = _avail.test_every_run_complete_for_every_style
test_fault_injection_cycles = _avail.test_fault_injection_cycles
test_until_failure_runs_and_restarts = _avail.test_until_failure_runs_and_restarts
test_outage_table_accounts_for_every_request = _avail.test_outage_table_accounts_for_every_request
test_analysis_and_results = _avail.test_analysis_and_results


def test_runs_are_docker_runs(study_run: tuple[Path, object]) -> None:
    _, runs = study_run
    for r in runs.all():  # type: ignore[attr-defined]
        assert r.manifest["backend"] == "docker", r.path
        # the limited runs (method 1) had stacks of their own; the others shared one per style
        limited = r.parameters["method"] == "until_failure"
        assert bool(r.parameters.get("shared_stack")) is not limited, r.path
