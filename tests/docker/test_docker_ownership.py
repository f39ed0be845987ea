"""Cleanup removes only what the same harness started; a killed harness's project is removed
by its watchdog within seconds, or by the next start, which names it (issue 13)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import psutil
import pytest

from ipclab import orphans
from ipclab.backends.docker.backend import DockerBackend
from ipclab.backends.docker.images import SERVICES_IMAGE
from ipclab.backends.docker.ownership import (
    DETACHED,
    HARNESS_LABEL,
    PROJECT_LABEL,
    cleanup_own,
    client,
    down,
    leftovers,
    projects,
    sweep_orphans,
)


def mark_of(p: subprocess.Popen[bytes]) -> str:
    return f"{p.pid}:{psutil.Process(p.pid).create_time():.2f}"


@pytest.fixture
def other_harness() -> Iterator[subprocess.Popen[bytes]]:
    """A living process standing for another harness (another `ipclab run`, test session)."""
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        yield p
    finally:
        p.kill()
        p.wait()


def make_project(project: str, mark: str) -> None:
    """A labelled network and a (created, not started) container, as compose would make."""
    c = client()
    labels = {PROJECT_LABEL: project, HARNESS_LABEL: mark}
    net = c.networks.create(project, labels=labels)
    c.containers.create(SERVICES_IMAGE, ["sleep", "60"], labels=labels, network=net.name)


def test_cleanup_and_down_remove_only_what_they_own(
    docker_images: dict[str, str], other_harness: subprocess.Popen[bytes]
) -> None:
    mine, theirs, detached = "ipclab-own-mine-1", "ipclab-own-theirs-1", "ipclab-own-detached-1"
    make_project(mine, orphans.this_harness())
    make_project(theirs, mark_of(other_harness))
    make_project(detached, DETACHED)
    try:
        counts = cleanup_own()
        assert counts["containers"] == 1 and counts["networks"] == 1, counts
        left = projects(client())
        assert mine not in left and theirs in left and detached in left
        # `ipclab down` removes detached stacks, never one a living harness runs.
        assert down("own-detached") == [detached]
        assert down() == []
        assert theirs in projects(client())
        # Once that harness is gone, the next start (or down) sweeps it and says so.
        other_harness.kill()
        other_harness.wait()
        said: list[str] = []
        assert sweep_orphans(say=said.append) == [theirs]
        assert theirs in said[0] and "killed run" in said[0]
        assert leftovers(project=theirs) == {"containers": [], "networks": [], "volumes": []}
    finally:
        for project in (mine, theirs, detached):
            from ipclab.backends.docker.ownership import remove_project

            remove_project(client(), project)


def test_watchdog_removes_the_project_within_seconds_of_its_harness_dying(
    docker_images: dict[str, str], other_harness: subprocess.Popen[bytes]
) -> None:
    project = "ipclab-own-watched-1"
    mark = mark_of(other_harness)
    make_project(project, mark)
    watchdog = subprocess.Popen(
        [sys.executable, "-m", "ipclab.backends.docker.ownership", "watch", mark, project],
        start_new_session=True,
    )
    try:
        time.sleep(2)
        assert project in projects(client()), "the harness lives: nothing removed"
        t0 = time.monotonic()
        other_harness.kill()
        other_harness.wait()
        watchdog.wait(timeout=10)
        took = time.monotonic() - t0
        assert project not in projects(client())
        print(f"watchdog removed the project {took:.1f} s after its harness died")
        assert took < 10
    finally:
        if watchdog.poll() is None:
            watchdog.kill()
            watchdog.wait()


def test_a_stack_started_with_a_delay_gets_the_capabilities_it_needs(
    docker_images: dict[str, str],
) -> None:
    from ipclab.backends import StackOptions
    from ipclab.stacks import resolve

    stack = DockerBackend().start(resolve("shop-rest"), StackOptions(delay_ms=1.0))
    try:
        caps = stack._container("gateway").attrs["HostConfig"]["CapAdd"]
        assert set(caps) >= {"NET_ADMIN", "SYS_NICE"}, caps
        assert stack.netem and stack.netem["measured_delay_ms"] > 0.5, stack.netem
    finally:
        stack.stop()
    assert leftovers(project=stack.project) == {"containers": [], "networks": [], "volumes": []}
