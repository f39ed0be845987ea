"""Images: the local base (debootstrap + docker import), and the services image installed from
wheels downloaded on the host, built with no network at all."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from ipclab.backends.docker import images, pins, wheellock
from ipclab.backends.docker.backend import PROJECT_LABEL, client
from ipclab.infrastructure.rabbitmq import IMAGE as BROKER


def run_in(image: str, *cmd: str) -> str:
    out = client().containers.run(
        image, list(cmd), remove=True, network_mode="none", labels={PROJECT_LABEL: "test-images"}
    )
    return out.decode().strip()


def test_local_base_has_python_311_and_network_tools() -> None:
    if not images.image_exists(images.LOCAL_BASE):
        if os.geteuid() != 0 or shutil.which("debootstrap") is None:
            pytest.skip("no local base, and debootstrap needs root")
        images.build_base_image()
    script = (
        "python3 -c 'import sys, venv; print(sys.version_info[:2])'; "
        "command -v tc; command -v iptables"
    )
    out = run_in(images.LOCAL_BASE, "sh", "-c", script)
    assert "(3, 11)" in out and "/tc" in out and "/iptables" in out, out


def test_services_image_builds_offline_from_the_local_base(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    if not images.image_exists(images.LOCAL_BASE):
        pytest.skip("no local base (see the test above)")
    monkeypatch.setattr(pins, "MANIFEST", tmp_path / "images.json")  # not the real pins
    tag = "ipclab-services:offline-test"
    try:
        images.build_services_image(images.LOCAL_BASE, tag=tag, network_mode="none")
        entry = images.read_manifest()[tag]
        assert images.pinned(tag) == entry["id"]
        assert entry["base_id"] == client().images.get(images.LOCAL_BASE).id
        assert entry["wheel_lock_sha256"] == wheellock.sha256_file(wheellock.LOCK)
        out = run_in(
            tag,
            "python",
            "-c",
            "import ipclab_services.serve, aiohttp, grpc, aio_pika, orjson, uvloop; "
            "import sys; print(sys.version_info[:2])",
        )
        assert out.endswith("(3, 11)"), out
    finally:
        client().images.remove(tag, force=True, noprune=False)


def test_ensure_images_is_up_to_date_after_build(docker_images: dict[str, str]) -> None:
    assert images.image_exists(docker_images["services"])
    assert images.image_exists(docker_images["broker"])
    assert images.status()["up_to_date"]


def test_stacks_get_pinned_ids_and_a_run_records_each_images_debian_packages(
    docker_images: dict[str, str],
) -> None:
    expected = {"services": {"iptables", "nginx", "nghttp2-proxy"}, "broker": {"iptables"}}
    for role, tag in (("services", images.SERVICES_IMAGE), ("broker", BROKER.image)):
        image_id = docker_images[role]
        assert image_id.startswith("sha256:") and image_id == images.pinned(tag)
        record = pins.image_record(image_id)  # what stack_info.images holds
        assert record["tag"] == tag and record["id"] == image_id
        packages = record["apt_packages"]
        assert packages == pins.apt_packages(image_id)  # the image's own record
        dpkg = run_in(image_id, "sh", "-c", pins.DPKG_QUERY)
        assert packages == dpkg.split(), role  # the packages installed in it, exactly
        assert expected[role] <= {p.split("=")[0] for p in packages}, role


def test_a_tag_moved_off_its_recorded_build_is_refused(
    docker_images: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(pins, "MANIFEST", tmp_path / "images.json")
    c = client()
    tag = "ipclab-pin-test:moved"
    c.images.get(docker_images["services"]).tag(tag)
    try:
        images.record_image(tag, {"id": docker_images["services"]})
        assert images.pinned(tag) == docker_images["services"]
        c.images.get(docker_images["broker"]).tag(tag)  # the tag now names another image
        with pytest.raises(images.ImageError, match=f"now names {docker_images['broker']}"):
            images.pinned(tag)
    finally:
        c.images.remove(tag, noprune=True)


def test_go_image_runs_the_hosts_static_binary_unprivileged(docker_images: dict[str, str]) -> None:
    from ipclab import gobuild

    if "go" not in docker_images:
        pytest.skip(f"no Go image: {gobuild.toolchain_missing()}")
    image = docker_images["go"]
    assert images.status()["go_up_to_date"]
    binary = f"/opt/ipclab/bin/{gobuild.BINARY}"
    out = run_in(image, "sh", "-c", f"id -u; sha256sum {binary}; echo $IPCLAB_FIXTURE")
    uid, digest, fixture = out.splitlines()
    assert uid == "10001"
    assert digest.split()[0] == wheellock.sha256_file(gobuild.go_binary())  # the local backend's
    assert fixture.startswith("/tmp/")


def test_node_image_runs_the_hosts_build_and_node_unprivileged(
    docker_images: dict[str, str],
) -> None:
    """The Node.js image holds the very build the local backend runs (``npm ci`` from the lock
    on the host) and the host's node; nothing is installed in it."""
    from ipclab import nodebuild

    if "node" not in docker_images:
        pytest.skip(f"no Node.js image: {nodebuild.toolchain_missing()}")
    built = nodebuild.build()
    lock = "/opt/ipclab/node/app/node_modules/.package-lock.json"
    out = run_in(docker_images["node"], "sh", "-c", f"id -u; node --version; sha256sum {lock}")
    uid, version, digest = out.splitlines()
    assert uid == "10001"
    assert version == f"v{nodebuild.node_version()}"
    assert digest.split()[0] == wheellock.sha256_file(built / "app/node_modules/.package-lock.json")
