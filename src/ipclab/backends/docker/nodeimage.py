"""The Node.js roles' image (``ipclab-services-node``): the services image, the host's ``node``
and the build :mod:`ipclab.nodebuild` made on the host (sources, ``shop.proto``, the
``node_modules`` ``npm ci`` installed from the committed lock), built with no network, as the
Go image carries the Go binary built on the host (``services/node/Dockerfile``).

Kept apart from :mod:`ipclab.backends.docker.images`, which names it (``NODE_IMAGE``,
``RUNTIME_IMAGES``), keeps ``services/node`` out of the services image
(``NOT_IN_SERVICES_IMAGE``, as the Go sources) and, for a stack of the ``node`` runtime, calls
:func:`ensure_node_image` with itself (``images``: its build, pin and staleness helpers), so
this module imports it not.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

from ipclab import nodebuild

DOCKERFILE = nodebuild.NODE_PROJECT / "Dockerfile"


def _node(images: Any) -> Path:
    node = shutil.which("node")
    if node is None:
        raise images.ImageError(f"cannot build {images.NODE_IMAGE}: no node on PATH")
    return Path(node).resolve()


def node_context_hash(images: Any, services_id: str) -> str:
    """The Node.js image's: the services image it is built on (by id), the build's sources
    and lock (``nodebuild.sources_hash``), the node binary's bytes and its Dockerfile."""
    node = hashlib.sha256(_node(images).read_bytes()).hexdigest()
    text = f"{services_id}\n{nodebuild.sources_hash()}\n{node}\n{DOCKERFILE.read_text()}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def prepare_node_context(images: Any, dest: Path | None = None) -> Path:
    """The image's context: its Dockerfile, ``node`` and the host's build (``build/``)."""
    try:
        built = nodebuild.build()
    except nodebuild.ToolchainMissing as e:
        raise images.ImageError(f"cannot build {images.NODE_IMAGE}: {e}") from None
    dest = images._fresh_context(dest or images.BUILD_DIR / "services-node", DOCKERFILE)
    shutil.copy2(_node(images), dest / "node")
    shutil.copytree(built, dest / "build", symlinks=True)
    return dest


def build_node_image(images: Any) -> str:
    """The image on the services image (by id), with no network; pinned with the versions."""
    services, tag = images.SERVICES_IMAGE, images.NODE_IMAGE
    with images._build_lock():
        ctx = prepare_node_context(images)
        base_id = images._base_id(services)
        context_hash = node_context_hash(images, base_id)
        labels = {images.LABEL_HASH: context_hash, "ipclab.image": "services-node"}
        image_id = images._build(ctx, tag, base_id, labels, "Dockerfile", network_mode="none")
        images._pin_build(tag, image_id, context_hash, services, versions=nodebuild.versions())
    return str(tag)


def ensure_node_image(images: Any) -> str:
    """The image's id, built first when missing or stale (on the current services image)."""
    with images._build_lock():
        services_id = images.pinned(images.SERVICES_IMAGE)
        why = images._stale(images.NODE_IMAGE, node_context_hash(images, services_id))
        if why:
            images.log(f"{images.NODE_IMAGE}: {why}")
            build_node_image(images)
        return str(images.pinned(images.NODE_IMAGE))
