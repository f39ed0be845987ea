"""Runs last in tests/docker: nothing of the project is left, and cleanup_all() removes
whatever carries the label (issue 3, must-show 4)."""

from __future__ import annotations

from ipclab.backends.docker.backend import PROJECT_LABEL, cleanup_all, client, leftovers
from ipclab.backends.docker.images import SERVICES_IMAGE


def test_nothing_left_after_the_docker_tests() -> None:
    assert leftovers() == {"containers": [], "networks": [], "volumes": []}


def test_cleanup_all_removes_labelled_containers_networks_volumes(
    docker_images: dict[str, str],
) -> None:
    c = client()
    labels = {PROJECT_LABEL: "test-cleanup"}
    net = c.networks.create("ipclab-test-cleanup", labels=labels)
    vol = c.volumes.create("ipclab-test-cleanup", labels=labels)
    c.containers.create(
        SERVICES_IMAGE,
        ["sleep", "60"],
        labels=labels,
        network=net.name,
        volumes={vol.name: {"bind": "/data", "mode": "rw"}},
    )
    left = leftovers()
    assert left["containers"] and left["networks"] and left["volumes"]
    counts = cleanup_all()
    assert counts == {"containers": 1, "networks": 1, "volumes": 1}
    assert leftovers() == {"containers": [], "networks": [], "volumes": []}
