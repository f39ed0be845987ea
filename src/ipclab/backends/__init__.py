"""Backends run a stack: ``local`` (processes on this machine), ``docker`` (compose) or
``swarm`` (``docker stack deploy`` on a Docker Swarm)."""

from __future__ import annotations

from ipclab.backends.base import Backend, RunningStack, StackOptions

BACKENDS = ("local", "docker", "swarm")


def get_backend(name: str) -> Backend:
    if name == "local":
        from ipclab.backends.local import LocalBackend

        return LocalBackend()
    if name == "docker":
        from ipclab.backends.docker.backend import DockerBackend

        return DockerBackend()
    if name == "swarm":
        from ipclab.backends.docker.swarm import SwarmBackend

        return SwarmBackend()
    raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")


__all__ = ["BACKENDS", "Backend", "RunningStack", "StackOptions", "get_backend"]
