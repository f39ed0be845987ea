"""Image recipes: what the docker backends build besides the services image, one
declaration each (``images.py`` builds, pins and checks them all alike).

A recipe names its image (``name``: the key of a build's result, ``broker``, ``go``), the
tag it is built as and the variable that overrides that tag and hands the pinned id to the
compose file (``env``), its Dockerfile and what it is built ``FROM``: a ``python`` or
``rabbitmq`` base (``images.resolve_bases``), or the ``services`` image (by id). Its build
context is the Dockerfile's folder as it is, or, with ``prepare``, a fresh folder holding the
Dockerfile to which ``prepare`` adds what is built on the host (a binary, jars); then
``inputs`` is a digest of those things (their sources and build flags), part of the image's
context hash with the base's id and the Dockerfile, so a change in them makes it stale.

Where the recipes are declared: an infrastructure plugin's image is its ``recipe``
(``ipclab.infrastructure``: the broker's in ``rabbitmq.py``, the database's in
``postgres.py``); the images a runtime's roles run are ``RUNTIME_RECIPES`` here (``runtime``
set: the ``Runtime.name`` whose roles run it). A new services image (another language's
roles) is one more ``ImageRecipe`` in that tuple.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipclab.paths import REPO_ROOT

BASES = ("python", "rabbitmq", "services")  # what a recipe can be built FROM


class RecipeError(RuntimeError):
    """A recipe's host-side build failed (a missing toolchain): its image cannot be made."""


@dataclass(frozen=True)
class ImageRecipe:
    name: str  # the image's key: a build's result (``ensure_images``), a stack's ``images``
    tag: str  # the tag it is built as, unless ``env`` names another
    env: str  # the variable that overrides ``tag`` and gives compose the pinned id
    dockerfile: Path  # its Dockerfile; the folder is its build context unless ``prepare``
    base: str = "python"  # FROM: one of BASES
    network: str | None = None  # the build's network: None the default, "none" offline
    # adds what is built on the host to a fresh context (which holds the Dockerfile)
    prepare: Callable[[Path], None] | None = None
    inputs: Callable[[], str] | None = None  # a digest of what ``prepare`` adds
    runtime: str = ""  # the ``Runtime.name`` whose roles run it ("" for infrastructure)
    label: str = ""  # its ``ipclab.image`` label and build folder; by default the folder's name
    # more to record with each build in the manifest (e.g. the toolchain's versions)
    record: Callable[[], dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        if self.base not in BASES:
            raise ValueError(f"image {self.name}: base {self.base!r} is not one of {BASES}")
        if (self.prepare is None) != (self.inputs is None):
            raise ValueError(f"image {self.name}: give prepare and inputs together, or neither")

    @property
    def image(self) -> str:
        """The tag it is built as: ``env``'s value, else ``tag``."""
        return os.environ.get(self.env) or self.tag

    @property
    def kind(self) -> str:
        return self.label or self.dockerfile.parent.name


# --------------------------------------------------------------------------- the runtimes'

GO_SOURCES = REPO_ROOT / "services" / "go"
NODE_SOURCES = REPO_ROOT / "services" / "node"  # ipclab.nodebuild.NODE_PROJECT
JAVA_SOURCES = REPO_ROOT / "services" / "java"
JAVA_PROJECTS = ("californium", "payload")  # what the Java image holds, built on the host


def _go_binary(dest: Path) -> None:
    """The static Go binary, built on the host."""
    from ipclab import gobuild

    try:
        binary = gobuild.go_binary()
    except gobuild.ToolchainMissing as e:
        raise RecipeError(str(e)) from None
    shutil.copy2(binary, dest / gobuild.BINARY)


def _go_inputs() -> str:
    from ipclab import gobuild

    return gobuild.sources_hash()


def _java_build(dest: Path) -> None:
    """The Californium adapters' jars and the payload services' Quarkus application with
    its launcher, built on the host."""
    from ipclab import javabuild

    try:
        jars = javabuild.classpath()
        launcher = javabuild.payload_launcher()
    except javabuild.ToolchainMissing as e:
        raise RecipeError(str(e)) from None
    shutil.copytree(jars, dest / "californium")
    shutil.copytree(launcher.parent / "quarkus-app", dest / "payload" / "quarkus-app")
    shutil.copy2(launcher, dest / "payload" / launcher.name)


def _java_inputs() -> str:
    from ipclab import javabuild

    sources = [javabuild.sources_hash(JAVA_SOURCES / p) for p in JAVA_PROJECTS]
    return "\n".join([*sources, javabuild.LAUNCHER_TEXT])


def _node_binary() -> Path | None:
    """The host's ``node`` (what the Node.js image carries), its real file."""
    node = shutil.which("node")
    return None if node is None else Path(node).resolve()


def _node_build(dest: Path) -> None:
    """The host's ``node`` and the build ``ipclab.nodebuild`` made on the host (the sources,
    shop.proto and the ``node_modules`` ``npm ci`` installed from the committed lock)."""
    from ipclab import nodebuild

    node = _node_binary()
    if node is None:
        raise RecipeError("no node on PATH")
    try:
        built = nodebuild.build()
    except nodebuild.ToolchainMissing as e:
        raise RecipeError(str(e)) from None
    shutil.copy2(node, dest / "node")
    shutil.copytree(built, dest / "build", symlinks=True)


def _node_inputs() -> str:
    """The build's sources and lock (``nodebuild.sources_hash``) and the node binary's bytes
    (none without one: ``prepare`` then says so)."""
    from ipclab import nodebuild

    node = _node_binary()
    digest = "" if node is None else hashlib.sha256(node.read_bytes()).hexdigest()
    return f"{nodebuild.sources_hash()}\n{digest}"


def _node_record() -> dict[str, Any]:
    from ipclab import nodebuild

    return {"versions": nodebuild.versions()}


GO = ImageRecipe(
    "go", "ipclab-services-go:latest", "IPCLAB_GO_IMAGE", GO_SOURCES / "Dockerfile",
    base="services", network="none", prepare=_go_binary, inputs=_go_inputs, runtime="go",
    label="services-go",
)  # fmt: skip
# the JVM roles' image and the native CoAP adapters' (Californium): a JRE (apt-get, so the
# default network) and the jars
JAVA = ImageRecipe(
    "jvm", "ipclab-services-java:latest", "IPCLAB_JAVA_IMAGE", JAVA_SOURCES / "Dockerfile",
    base="services", prepare=_java_build, inputs=_java_inputs, runtime="jvm",
    label="services-java",
)  # fmt: skip

# the Node.js roles' image: the host's node and npm ci's build, with no network at all
NODE = ImageRecipe(
    "node", "ipclab-services-node:latest", "IPCLAB_NODE_IMAGE", NODE_SOURCES / "Dockerfile",
    base="services", network="none", prepare=_node_build, inputs=_node_inputs, runtime="node",
    label="services-node", record=_node_record,
)  # fmt: skip

RUNTIME_RECIPES: tuple[ImageRecipe, ...] = (GO, JAVA, NODE)

# --------------------------------------------------------------------------- the load's

HARNESS_SOURCES = REPO_ROOT / "src" / "ipclab"
LOAD_PACKAGES = ("locust", "pyarrow")  # what Locust's pods add to the services image
# their wheels by version and sha256, at .ci/requirements.lock's versions (the harness's):
# made by uv, ``bash scripts/python-lock.sh --load``
LOCUST_LOCK = REPO_ROOT / "compose" / "locust" / "requirements.lock"
LOCUST_WHEELS = REPO_ROOT / "build" / "locust-wheels"  # downloaded once per lock


def locked_versions(lock: Path = LOCUST_LOCK) -> dict[str, str]:
    """A uv/pip-compile lock's ``name==version`` lines: canonical name -> version."""
    if not lock.is_file():
        raise RecipeError(f"{lock} is missing: bash scripts/python-lock.sh --load")
    out = {}
    for line in lock.read_text().splitlines():
        if m := re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)", line):
            out[re.sub(r"[-_.]+", "-", m.group(1)).lower()] = m.group(2)
    return out


def locust_requirements() -> list[str]:
    """The load image's packages at their locked versions (the harness's Locust)."""
    versions = locked_versions()
    missing = [name for name in LOAD_PACKAGES if name not in versions]
    if missing:
        raise RecipeError(f"{LOCUST_LOCK} lacks {', '.join(missing)}: regenerate it")
    return [f"{name}=={versions[name]}" for name in LOAD_PACKAGES]


def _harness_files() -> list[Path]:
    return sorted(
        p for p in HARNESS_SOURCES.rglob("*.py") if "__pycache__" not in p.parts and p.is_file()
    )


def download_locked_wheels(lock: Path, dest: Path) -> list[Path]:
    """The lock's wheels for the image in ``dest`` (a folder per lock: downloaded once), by
    pip in hash-checking mode: a file whose sha256 is none of the lock's is refused and
    nothing is kept; pip's words are the error."""
    from ipclab.backends.docker.wheellock import pip_download_args

    cache = dest / hashlib.sha256(lock.read_bytes()).hexdigest()[:16]
    if not (cache / "complete").exists():
        shutil.rmtree(cache, ignore_errors=True)
        cache.mkdir(parents=True)
        done = subprocess.run(
            pip_download_args(["--require-hashes", "-r", str(lock)], cache),
            capture_output=True, text=True,
        )  # fmt: skip
        if done.returncode != 0:
            shutil.rmtree(cache, ignore_errors=True)
            raise RecipeError(
                f"downloading the wheels of {lock} failed (pip --require-hashes):\n"
                + done.stderr.strip()[-2000:]
            )
        (cache / "complete").write_text("")
    return sorted(cache.glob("*.whl"))


def _locust_build(dest: Path) -> None:
    """The locked wheels of Locust and pyarrow and their dependencies (``LOCUST_LOCK``), the
    lock the image installs them by, and the harness's sources."""
    (dest / "wheels").mkdir()
    for wheel in download_locked_wheels(LOCUST_LOCK, LOCUST_WHEELS):
        shutil.copy2(wheel, dest / "wheels" / wheel.name)
    shutil.copy2(LOCUST_LOCK, dest / "requirements.lock")
    for source in _harness_files():
        target = dest / "ipclab" / source.relative_to(HARNESS_SOURCES)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def _locust_inputs() -> str:
    """The lock and the harness's sources (the user modules, the recorder)."""
    digest = hashlib.sha256()
    for source in _harness_files():
        digest.update(str(source.relative_to(HARNESS_SOURCES)).encode() + b"\0")
        digest.update(source.read_bytes())
    return "\n".join([LOCUST_LOCK.read_text(), digest.hexdigest()])


# Locust's master and workers as pods (the kubernetes backend): no network in the build
LOCUST = ImageRecipe(
    "locust", "ipclab-locust:latest", "IPCLAB_LOCUST_IMAGE", REPO_ROOT / "compose" / "locust" /
    "Dockerfile", base="services", network="none", prepare=_locust_build, inputs=_locust_inputs,
    label="locust",
)  # fmt: skip
