"""What a manifest records about the machine and software a run used."""

from __future__ import annotations

import functools
import importlib.metadata
import os
import platform
import socket
import subprocess
from pathlib import Path
from typing import Any

import psutil

from ipclab.paths import REPO_ROOT

LIBRARIES = (
    "ipclab",
    "aiohttp",
    "uvicorn",
    "httptools",
    "uvloop",
    "orjson",
    "grpcio",
    "protobuf",
    "aio-pika",
    "aiormq",
    "locust",
    "gevent",
    "geventhttpclient",
    "psutil",
    "pandas",
    "numpy",
    "pyarrow",
    "scipy",
    "matplotlib",
    "docker",
    "httpx",
    "aiocoap",
    "papermill",
)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _git() -> dict[str, Any]:
    def run(*args: str) -> str | None:
        try:
            out = subprocess.run(
                ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=5
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    status = run("status", "--porcelain", "--untracked-files=no")
    return {
        "revision": run("rev-parse", "HEAD"),
        "dirty": bool(status) if status is not None else None,
    }


def library_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in LIBRARIES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


@functools.cache
def _static() -> dict[str, Any]:
    vm = psutil.virtual_memory()
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "os": platform.platform(),
        "host": socket.gethostname(),
        "cpu_model": _cpu_model(),
        "cpu_cores_logical": os.cpu_count(),
        "cpu_cores_physical": psutil.cpu_count(logical=False),
        "memory_bytes": vm.total,
        "libraries": library_versions(),
        "protobuf_backend": _protobuf_backend(),
    }


def _protobuf_backend() -> str | None:
    """Which implementation the ``protobuf`` package runs on here (upb, python, cpp): its
    speed differs by an order of magnitude, so every run records it."""
    try:
        from google.protobuf.internal import api_implementation
    except ImportError:
        return None
    return str(api_implementation.Type())


def describe_environment() -> dict[str, Any]:
    return {**_static(), "git": _git(), "load_average": os.getloadavg()}
