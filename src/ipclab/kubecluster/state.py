"""The local cluster's state file, and how its processes are recognised.

``<root>/state.json`` (mode 0600, written whole or not at all: ``ipclab.atomic``) says
who is starting or stopping the cluster (the harness's mark, ``orphans.this_harness``),
in which phase it is (``starting``, ``up``, ``stopping``), the sysctls as they were before
the first component started, each component's pid with its start time (a reused pid is
another process), and how long each step of the last start took. It is written before
anything is started and after each process starts, so that ``down`` after a kill -9 of
the harness at any point finds what there is to stop and to restore.

A process is the cluster's only when :func:`is_ours` says so: it runs as this user, its
program is one of the cluster's (a component's name, ``containerd``, a containerd shim)
and an argument of its command line names the cluster's root (every component is started
with its configuration or data under the root; a shim with ``-address <root>/...``).
Nothing else is ever signalled, whatever a state file says.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

from ipclab.atomic import write_json_atomic
from ipclab.kubecluster import access
from ipclab.kubecluster.layout import Layout

PHASES = ("starting", "up", "stopping")
COMPONENTS = (  # in start order; stopped in reverse
    "containerd",
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubelet",
    "kube-proxy",
)
SHIM_PREFIX = "containerd-shim"


@dataclass(frozen=True)
class Started:
    """A process the cluster started: its pid and start time (``psutil`` create_time)."""

    pid: int
    started: float

    @classmethod
    def of(cls, pid: int) -> Started:
        return cls(pid, psutil.Process(pid).create_time())

    def process(self) -> psutil.Process | None:
        """The process if it still runs and is the same one (not a reused pid)."""
        try:
            p = psutil.Process(self.pid)
            return p if abs(p.create_time() - self.started) < 0.05 else None
        except psutil.Error:
            return None


@dataclass
class State:
    owner: str  # the harness that starts or stops it (pid:start time)
    phase: str
    binary: str = ""
    sysctls: dict[str, str] = field(default_factory=dict)
    processes: dict[str, Started] = field(default_factory=dict)
    steps: dict[str, float] = field(default_factory=dict)  # seconds per step of the start

    def __post_init__(self) -> None:
        if self.phase not in PHASES:
            raise ValueError(f"unknown phase {self.phase!r}")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> State:
        processes = {
            k: Started(int(v["pid"]), float(v["started"]))
            for k, v in data.get("processes", {}).items()
        }
        return cls(
            owner=str(data["owner"]),
            phase=str(data["phase"]),
            binary=str(data.get("binary", "")),
            sysctls={str(k): str(v) for k, v in data.get("sysctls", {}).items()},
            processes=processes,
            steps={str(k): float(v) for k, v in data.get("steps", {}).items()},
        )


def read(layout: Layout) -> State | None:
    """The state file, or None: none, unreadable, not a state, or not this user's alone in
    a root of this user's alone (read through ``access``: a planted one is never acted on;
    ``UnsafeState`` is a ValueError)."""
    try:
        data = access.read(layout.root, layout.state_file.relative_to(layout.root))
        return State.from_json(json.loads(data))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write(layout: Layout, state: State) -> None:
    write_json_atomic(layout.state_file, state.to_json(), mode=0o600)


def program(cmdline: list[str]) -> str:
    return os.path.basename(cmdline[0]) if cmdline else ""


def is_ours(cmdline: list[str], uid: int, root: Path) -> bool:
    """A process (by its command line and real uid) is one of the cluster under ``root``."""
    name = program(cmdline)
    if uid != os.getuid() or not (name in COMPONENTS or name.startswith(SHIM_PREFIX)):
        return False
    mark = str(root).rstrip("/") + "/"
    return any(mark in arg for arg in cmdline[1:])


def processes(root: Path) -> Iterator[psutil.Process]:
    """Every running process of the cluster under ``root`` (:func:`is_ours`)."""
    for p in psutil.process_iter(["cmdline", "uids"]):
        try:
            cmdline, uids = p.info["cmdline"] or [], p.info["uids"]
            if uids is not None and p.pid != os.getpid() and is_ours(cmdline, uids.real, root):
                yield p
        except psutil.Error:
            continue
