"""The Node.js roles' image (``ipclab-services-node``): the services image, the host's ``node``
and the build :mod:`ipclab.nodebuild` made on the host (sources, ``shop.proto``, the
``node_modules`` ``npm ci`` installed from the committed lock), built with no network, as the
Go image carries the Go binary built on the host (``services/node/Dockerfile``).

    python -m ipclab.backends.docker.nodeimage  # build it if missing or stale; print its id

Kept apart from :mod:`ipclab.backends.docker.images`, which names it (``NODE_IMAGE``,
``RUNTIME_IMAGES``), keeps ``services/node`` out of the services image
(``NOT_IN_SERVICES_IMAGE``, as the Go sources) and calls :func:`ensure_node_image` for a stack
of the ``node`` runtime.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

from ipclab import nodebuild
from ipclab.backends.docker import images

DOCKERFILE = nodebuild.NODE_PROJECT / "Dockerfile"


def _node() -> Path:
    node = shutil.which("node")
    if node is None:
        raise images.ImageError(f"cannot build {images.NODE_IMAGE}: no node on PATH")
    return Path(node).resolve()


def node_context_hash(services_id: str) -> str:
    """The Node.js image's: the services image it is built on (by id), the build's sources
    and lock (``nodebuild.sources_hash``), the node binary's bytes and its Dockerfile."""
    node = hashlib.sha256(_node().read_bytes()).hexdigest()
    text = f"{services_id}\n{nodebuild.sources_hash()}\n{node}\n{DOCKERFILE.read_text()}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def prepare_node_context(dest: Path | None = None) -> Path:
    """The image's context: its Dockerfile, ``node`` and the host's build (``build/``)."""
    try:
        built = nodebuild.build()
    except nodebuild.ToolchainMissing as e:
        raise images.ImageError(f"cannot build {images.NODE_IMAGE}: {e}") from None
    dest = images._fresh_context(dest or images.BUILD_DIR / "services-node", DOCKERFILE)
    shutil.copy2(_node(), dest / "node")
    shutil.copytree(built, dest / "build", symlinks=True)
    return dest


def build_node_image(services: str = images.SERVICES_IMAGE, tag: str = images.NODE_IMAGE) -> str:
    """The image on the services image ``services`` (by id), with no network."""
    with images._build_lock():
        ctx = prepare_node_context()
        base_id = images._base_id(services)
        context_hash = node_context_hash(base_id)
        labels = {images.LABEL_HASH: context_hash, "ipclab.image": "services-node"}
        image_id = images._build(ctx, tag, base_id, labels, "Dockerfile", network_mode="none")
        images._pin_build(tag, image_id, context_hash, services, versions=nodebuild.versions())
    return tag


def ensure_node_image() -> str:
    """The image's id, built first when missing or stale (on the current services image)."""
    with images._build_lock():
        why = images._stale(
            images.NODE_IMAGE, node_context_hash(images.pinned(images.SERVICES_IMAGE))
        )
        if why:
            images.log(f"{images.NODE_IMAGE}: {why}")
            build_node_image(images.SERVICES_IMAGE)
        return images.pinned(images.NODE_IMAGE)


if __name__ == "__main__":
    try:
        images.ensure_images(broker=False)
        print(ensure_node_image())
    except images.ImageError as e:
        sys.exit(f"ipclab images: {e}")
