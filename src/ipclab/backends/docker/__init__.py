"""The docker backends: ``docker`` (a compose project, ``backend.py``) and ``swarm``
(``docker stack deploy``, ``swarm.py``), declared here for the backend registry
(``ipclab.backends``) and made from their modules only when used (they import the engine's
client and the run files' tables)."""

from __future__ import annotations

import shutil
import subprocess

from ipclab.backends.base import BackendPlugin


def docker_missing() -> str | None:
    """Why no stack can run on docker here: no client, or no engine answers (None: both)."""
    if shutil.which("docker") is None:
        return "the docker backend needs Docker; no docker client is installed"
    if subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode:
        return "no Docker engine answers (start one: make docker-engine)"
    return None


PLUGINS = (
    BackendPlugin(
        "docker",
        f"{__name__}.backend:DockerBackend",
        order=1,
        description="a compose project",
        missing=docker_missing,
        stop_detached=f"{__name__}.swarm:down",  # the projects, and a swarm ipclab made
        options=frozenset({"cpus", "memory", "delay-ms", "tls", "detach", "store"}),
    ),
    BackendPlugin(
        "swarm",
        f"{__name__}.swarm:SwarmBackend",
        order=2,
        description="docker stack deploy",
        missing=docker_missing,
        stop_detached=f"{__name__}.swarm:down",
        options=frozenset({"cpus", "memory", "delay-ms", "detach"}),
    ),
)
