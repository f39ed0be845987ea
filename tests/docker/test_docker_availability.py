"""The availability study's CI profile (tests/test_availability_runs.py) on the docker backend
(issue 5, must-show 1): method 1, fault injection and the outage experiment, with components
killed and restarted as containers: the outage and the fault injection for the three styles,
method 1 for one (:data:`UNTIL_FAILURE_STACK`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from ipclab.stacks import resolve
from ipclab.studies.shafabakhsh import availability as study

from .local_tests import load_local_tests

_avail = load_local_tests("test_availability_runs.py")

# Method 1 on docker for one style. What docker adds to method 1 is the same code for every
# style: a stack of its own started under the per-container limits, and every component
# restarted as a container (``docker restart``). shop-amqp is the style that also restarts
# the broker, the one container the limits leave out, so its run takes every one of those
# paths; the local module runs method 1 for the three styles. (The other two styles' limited
# stacks and runs took about 45 s of the serial docker group.)
UNTIL_FAILURE_STACK = "shop-amqp"


def _quiet(_: str) -> None:
    pass


@pytest.fixture(scope="module")
def study_run(
    tmp_path_factory: pytest.TempPathFactory, docker_images: dict[str, str]
) -> Iterator[tuple[Path, object]]:
    # method 1 under the full profile's per-container limits, each run on a stack of its own
    # started with them (as the full profile does on docker); the outage and the fault
    # injection on one stack per style, as the quick profile runs them
    profile = replace(_avail.CI, cpus=0.5, memory_mb=256, share_stack=True)
    root = tmp_path_factory.mktemp("availability-docker")
    with _avail.ci_profile(profile):
        shared = study.experiments("ci", "docker", root, ("outage", "fault_injection"))
        shared.run(progress=_quiet)
        limited = study.experiments(
            "ci", "docker", root, ("until_failure",), stacks=(UNTIL_FAILURE_STACK,)
        )
        limited.run(progress=_quiet)
        yield root, study.experiments("ci", "docker", root).load()


def test_every_run_complete_for_every_style(study_run: tuple[Path, object]) -> None:
    """The local test's checks, for the runs made here (method 1: one style)."""
    styles = {m: study.STYLES for m in study.METHODS}
    styles["until_failure"] = (resolve(UNTIL_FAILURE_STACK).style,)
    _avail.assert_complete(study_run[1], styles)


# The study-level tests, re-collected here: they get this module's study_run (docker).
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
