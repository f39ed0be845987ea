"""What every module of the docker backend's images shares: the image names, the build
folder, the error, the log and the engine's client with the few image look-ups they all make
(``images`` builds; ``baseimage``, ``wheellock``, ``contexts`` and ``pins`` hold one job each)."""

from __future__ import annotations

import os
import sys
from typing import Any

from ipclab.paths import REPO_ROOT

LOCAL_BASE = os.environ.get("IPCLAB_LOCAL_BASE", "ipclab-base:bookworm")
OFFICIAL_PYTHON = "python:3.11-slim"
OFFICIAL_RABBITMQ = "rabbitmq:3"
SERVICES_IMAGE = os.environ.get("IPCLAB_IMAGE", "ipclab-services:latest")

LABEL_HASH = "ipclab.context-hash"
BUILD_DIR = REPO_ROOT / "build" / "docker"


class ImageError(RuntimeError):
    pass


def log(msg: str) -> None:
    print(f"[images] {msg}", file=sys.stderr, flush=True)


def docker_client() -> Any:
    import docker

    return docker.from_env(timeout=600)


def image_exists(name: str) -> bool:
    import docker.errors

    try:
        docker_client().images.get(name)
    except docker.errors.ImageNotFound:
        return False
    return True


def image_label(name: str, key: str) -> str | None:
    import docker.errors

    try:
        img = docker_client().images.get(name)
    except docker.errors.ImageNotFound:
        return None
    return (img.labels or {}).get(key)


def image_size_mb(name: str) -> float | None:
    import docker.errors

    try:
        return round(docker_client().images.get(name).attrs["Size"] / 1e6, 1)
    except docker.errors.ImageNotFound:
        return None


def image_id_of(name: str) -> str | None:
    import docker.errors

    try:
        return str(docker_client().images.get(name).id)
    except docker.errors.ImageNotFound:
        return None
