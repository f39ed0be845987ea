"""The services image's supply chain without docker (issue 28 item 8): the committed wheel
lock covers the image and is what the build checks and installs (a wheel whose hash differs is
refused, on the host and by pip in the image), the Dockerfiles record their Debian packages,
and an image tag is used only while it still names the build the harness recorded."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from ipclab.backends.docker import contexts, images, pins, wheellock
from ipclab.backends.docker.imagebasics import ImageError
from ipclab.backends.docker.wheellock import Locked
from ipclab.paths import REPO_ROOT


def make_wheel(directory: Path, body: str) -> Path:
    wheel = directory / "tiny_pkg-1.0-py3-none-any.whl"
    info = "tiny_pkg-1.0.dist-info"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("tiny_pkg/__init__.py", body)
        z.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: tiny-pkg\nVersion: 1.0\n")
        z.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        z.writestr(f"{info}/RECORD", "")
    return wheel


def pip_install(wheels: Path, requirements: Path, target: Path) -> subprocess.CompletedProcess[str]:
    """What services/Dockerfile runs: offline, from the wheels, --require-hashes on the lock."""
    return subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-index", "--find-links", str(wheels),
         "--require-hashes", "--disable-pip-version-check", "--target", str(target),
         "-r", str(requirements)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def tiny_lock(tmp_path: Path) -> tuple[Path, Path, dict[str, Locked]]:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    wheel = make_wheel(wheels, "VALUE = 1\n")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    lock = tmp_path / "requirements.lock"
    lock.write_text(wheellock.lock_text([Locked("tiny-pkg", "", "1.0", digest, ())]))
    return wheels, lock, wheellock.read_lock(lock)


def test_a_wheel_whose_hash_differs_from_the_lock_is_refused_on_the_host(tmp_path: Path) -> None:
    wheels, _, lock = tiny_lock(tmp_path)
    assert set(wheellock.verify_wheels(wheels, lock)) == {"tiny-pkg"}
    make_wheel(wheels, "VALUE = 2  # changed in the cache\n")
    with pytest.raises(ImageError, match=r"tiny-pkg==1.0: tiny_pkg-1.0-py3-none-any.whl does not"):
        wheellock.verify_wheels(wheels, lock)
    (wheels / "tiny_pkg-1.0-py3-none-any.whl").unlink()
    with pytest.raises(ImageError, match="tiny-pkg==1.0: no file"):
        wheellock.verify_wheels(wheels, lock)


def test_a_wheel_whose_hash_differs_from_the_lock_is_refused_by_pip_in_the_image(
    tmp_path: Path,
) -> None:
    wheels, lock_path, _ = tiny_lock(tmp_path)
    ok = pip_install(wheels, lock_path, tmp_path / "ok")
    assert ok.returncode == 0, ok.stderr
    make_wheel(wheels, "VALUE = 2  # changed in the cache\n")
    bad = pip_install(wheels, lock_path, tmp_path / "bad")
    assert bad.returncode != 0
    assert "do not match the hashes" in bad.stderr.lower(), bad.stderr[-2000:]


def test_the_lock_reads_back_what_was_written_and_refuses_other_lines(tmp_path: Path) -> None:
    entries = [
        Locked("uvicorn", "[standard]", "0.54.0", "a" * 64, ("click", "h11")),
        Locked("aiocoap", "", "0.4.17", "b" * 64, ()),
    ]
    path = tmp_path / "lock"
    path.write_text(wheellock.lock_text(entries))
    assert wheellock.read_lock(path) == {e.name: e for e in entries}
    path.write_text(path.read_text() + "numpy>=1\n")
    with pytest.raises(ImageError, match="not a lock line: 'numpy>=1'"):
        wheellock.read_lock(path)


def _direct_requirements() -> dict[str, set[str]]:
    """The services' direct requirements (pyproject minus the harness-only ones): name -> extras."""
    out = {}
    for req in wheellock.service_requirements():
        m = re.match(r"([A-Za-z0-9_.\-]+)(?:\[([^\]]*)\])?", req)
        assert m
        out[wheellock._canonical(m.group(1))] = set(filter(None, (m.group(2) or "").split(",")))
    return out


def test_the_committed_lock_covers_every_package_the_image_needs() -> None:
    lock = wheellock.read_lock()
    direct = _direct_requirements()
    assert direct.keys() <= lock.keys(), f"unlocked: {sorted(direct.keys() - lock.keys())}"
    for name, extras in direct.items():  # an extra the image needs is locked with it
        assert extras <= set(lock[name].extras.strip("[]").split(",")) - {""}, name
    # the closure of their dependencies, as each wheel declares them for the container
    reached, todo = set(), list(direct)
    while todo:
        name = todo.pop()
        if name in reached:
            continue
        assert name in lock, f"{name} is needed in the image but not locked"
        reached.add(name)
        todo += lock[name].requires
    assert reached == set(lock), f"locked but needed by nothing: {sorted(set(lock) - reached)}"


# The container's interpreter and platform, for evaluating a wheel's dependency markers.
CONTAINER_MARKERS = {
    "python_version": wheellock.WHEEL_PYTHON,
    "python_full_version": f"{wheellock.WHEEL_PYTHON}.2",  # Debian 12's
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "os_name": "posix",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
}


def _needed_in_container(requires_dist: list[str], extras: set[str]) -> tuple[str, ...]:
    """The canonical names of the Requires-Dist entries that apply in the container."""
    from packaging.requirements import Requirement

    out = set()
    for line in requires_dist:
        r = Requirement(line)
        if r.marker is None or any(
            r.marker.evaluate({**CONTAINER_MARKERS, "extra": e}) for e in ["", *sorted(extras)]
        ):
            out.add(wheellock._canonical(r.name))
    return tuple(sorted(out))


def test_the_locks_dependency_lists_are_the_wheels_own() -> None:
    """`# requires:` is what each package's metadata says for the container, checked against
    the host's copy of every locked version the host also runs (most or all of them)."""
    checked = 0
    for name, entry in wheellock.read_lock().items():
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        if dist.version != entry.version:
            continue
        extras = set(entry.extras.strip("[]").split(",")) - {""}
        needed = _needed_in_container(dist.requires or [], extras)
        assert needed == entry.requires, name
        checked += 1
    if not checked:  # a fresh install got newer versions of everything: nothing to compare
        pytest.skip("the host runs none of the locked versions (images status: lock.drift)")


UV_OUTPUT = """\
aiohttp==3.14.5           # via -c constraints.txt, -r requirements.in
Aiormq==7.2.4             # via aio-pika, -c constraints.txt
aio-pika==10.2.1          # via -r requirements.in
httptools==0.9.0          # via uvicorn
uvicorn==0.54.0           # via -r requirements.in
yarl==1.25.1              # via aio-pika, aiohttp, aiormq, -c constraints.txt
"""


def test_the_lock_is_uvs_resolution_with_its_dependency_graph_turned_around(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """uv resolves; its `# via` annotations (who needs a package) become each package's
    `# requires:` (what it needs in the image), and uv is asked for the container's platform,
    wheels only, under the constraints given."""
    uv = tmp_path / "uv"
    args = tmp_path / "args"
    (tmp_path / "out").write_text(UV_OUTPUT)
    uv.write_text(f'#!/bin/sh\necho "$@" > {args}\ncat {tmp_path / "out"}\n')
    uv.chmod(0o755)
    monkeypatch.setenv("UV", str(uv))
    got = wheellock.resolve(["aiohttp", "uvicorn[standard]", "aio-pika"], "aiohttp==3.14.5\n")
    assert got == {
        "aiohttp": ("3.14.5", ("yarl",)),
        "aiormq": ("7.2.4", ("yarl",)),
        "aio-pika": ("10.2.1", ("aiormq", "yarl")),
        "httptools": ("0.9.0", ()),
        "uvicorn": ("0.54.0", ("httptools",)),
        "yarl": ("1.25.1", ()),
    }
    called = args.read_text()
    assert "--python-platform x86_64-manylinux_2_28" in called
    assert "--only-binary :all:" in called and "--python-version 3.11" in called
    monkeypatch.setenv("UV", "")
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    with pytest.raises(ImageError, match="uv is missing: pip install uv"):
        wheellock.resolve(["aiohttp"], "")


def test_a_lock_without_a_direct_requirement_stops_the_build() -> None:
    lock = {k: v for k, v in wheellock.read_lock().items() if k != "aiohttp"}
    with pytest.raises(ImageError, match=r"requirements.lock lacks aiohttp"):
        wheellock.check_lock_covers_requirements(lock)


def test_the_image_installs_the_lock_with_hashes_and_records_its_debian_packages() -> None:
    services = (REPO_ROOT / "services" / "Dockerfile").read_text()
    assert "--require-hashes -r /tmp/requirements.lock" in services
    assert "COPY requirements.lock " in services
    for dockerfile in ("services/Dockerfile", "compose/broker/Dockerfile"):
        text = (REPO_ROOT / dockerfile).read_text()
        one_line = re.sub(r"\s*\\\n\s*", " ", text)
        assert f"{pins.DPKG_QUERY} > {pins.APT_RECORD}" in one_line, dockerfile


# ------------------------------------------------------------------------------- pins


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    """A fake engine: tag -> image id, labels from a dict; the manifest in a temp dir."""
    tags: dict[str, str] = {}
    monkeypatch.setattr(pins, "MANIFEST", tmp_path / "images.json")
    monkeypatch.setattr(images, "BUILD_DIR", tmp_path)  # its build lock: not a real build's
    for module in (images, pins, contexts):  # each module's look-up, where it is used
        monkeypatch.setattr(
            module,
            "image_id_of",
            lambda name: name if name.startswith("sha256:") else tags.get(name),
        )
    monkeypatch.setattr(pins, "image_label", lambda name, key: "h1" if name in tags else None)
    return tags


def test_a_tag_is_used_by_the_id_it_was_built_as_and_refused_once_it_names_another(
    engine: dict[str, str],
) -> None:
    engine["ipclab-services:latest"] = "sha256:" + "1" * 64
    with pytest.raises(ImageError, match="no build of it is recorded"):
        images.pinned("ipclab-services:latest")
    images.record_image(
        "ipclab-services:latest", {"id": "sha256:" + "1" * 64, "context_hash": "h1"}
    )
    assert images.pinned("ipclab-services:latest") == "sha256:" + "1" * 64
    assert pins.stale("ipclab-services:latest", "h1") is None
    engine["ipclab-services:latest"] = "sha256:" + "2" * 64  # re-tagged, or built by another
    with pytest.raises(
        ImageError, match=r"now names sha256:2+, not sha256:1+, the image the harness built"
    ):
        images.pinned("ipclab-services:latest")
    assert "now names" in (pins.stale("ipclab-services:latest", "h1") or "")
    assert json.loads(pins.MANIFEST.read_text())["ipclab-services:latest"]["id"].endswith("1")


def test_ensure_images_rebuilds_a_tag_that_now_names_another_image(
    engine: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    base, old, new = ("sha256:" + c * 64 for c in "abc")
    engine[images.LOCAL_BASE] = base
    images.record_image(images.LOCAL_BASE, {"id": base})
    monkeypatch.setattr(images, "local_base_current", lambda tag=images.LOCAL_BASE: True)
    monkeypatch.setattr(images, "services_context_hash", lambda b: "h1")
    engine[images.SERVICES_IMAGE] = new  # the tag moved away from the recorded build
    images.record_image(images.SERVICES_IMAGE, {"id": old, "context_hash": "h1"})
    built = []

    def build(b: str, tag: str = images.SERVICES_IMAGE, network_mode: str | None = "auto") -> str:
        built.append(b)
        engine[tag] = old
        images.record_image(tag, {"id": old, "context_hash": "h1"})
        return tag

    monkeypatch.setattr(images, "build_services_image", build)
    assert images.ensure_images(base="local") == {"services": old}
    assert built == [images.LOCAL_BASE]
    assert images.ensure_images(base="local") == {"services": old}
    assert built == [images.LOCAL_BASE]  # pinned and current: not built again
    engine[images.SERVICES_IMAGE] = new
    with pytest.raises(ImageError, match="now names"):  # a stack started without building
        images.pinned_images("python")


def test_a_container_that_reads_an_image_is_this_harness_s_to_sweep(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The short-lived container that reads an image's package record carries a project
    and this harness's mark: killed between create and remove, the harness leaves it to
    the next start's orphan sweep (three unlabelled ones were found left over)."""
    from ipclab import orphans
    from ipclab.backends.docker.ownership import HARNESS_LABEL, PROJECT_LABEL

    made: list[dict[str, object]] = []

    class Container:
        def get_archive(self, path: str) -> object:
            raise RuntimeError("stop here")

        def remove(self, force: bool) -> None: ...

    class Containers:
        def create(self, image: str, **kw: object) -> Container:
            made.append(kw)
            return Container()

    class Client:
        containers = Containers()

    monkeypatch.setattr(pins, "docker_client", lambda: Client())
    with pytest.raises(RuntimeError, match="stop here"):
        pins.apt_packages("some-image")
    labels = made[0]["labels"]
    assert isinstance(labels, dict)
    assert labels[HARNESS_LABEL] == orphans.this_harness()
    assert str(labels[PROJECT_LABEL]).startswith("ipclab-image-read-")
