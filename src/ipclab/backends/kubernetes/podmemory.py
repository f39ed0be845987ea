"""A role's memory in its pod, read fast enough for a study's memory runs, and how it ended.

The Kubernetes side of :mod:`ipclab.backends.memory` (which the memory runs call on any
backend): the same three answers the docker backend gives from its containers.

- :func:`reader`: the container's memory read from its cgroup by the backend's own sampler
  (``sampling``: the one that fills ``resources.csv``), as ``{"rss_bytes", "usage_bytes"}``:
  the resident anonymous memory (v1 ``rss``, v2 ``anon``) and the usage the pod's memory
  limit counts (v1 ``memory.usage_in_bytes``, v2 ``memory.current``). The reader stays
  on the container it was made for: once the kernel has killed it, its samples are empty,
  never the restarted container's.
- :func:`running_cgroup`: that container's cgroup while it runs, whose own high-water mark
  :func:`ipclab.backends.memory.peak` reads (``cgroup_peak``); None when it has ended (its
  cgroup is gone, as a docker container's is) or on another cluster (no cgroup to read).
- :func:`outcome`: from the kubelet's record of the container (its status in the pod, as
  containerd reported it): running, or ended with its exit code and whether the kernel's
  OOM killer ended it (``reason: OOMKilled``, exit code 137), as docker's ``OOMKilled``
  says. A Deployment's pod restarts an ended container (``restartPolicy: Always``), so an
  end is read from the container's last state once it has restarted (``restarts``: how
  often). The kubelet learns of an end within about a second (its relist); until its record
  says so, a container whose cgroup holds no process any more is waited for
  (``SETTLE_S``), so an OOM kill right before the answer is not read as "running".
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from ipclab.backends.kubernetes.sampling import memory, pids

#: how long :func:`outcome` waits for the kubelet to record an end its cgroup already shows
SETTLE_S = 15.0
OOM_REASON = "OOMKilled"  # the reason containerd gives a container the OOM killer ended
Reading = dict[str, int | None]


class PodStack(Protocol):
    """What these functions need of a Kubernetes stack (``KubernetesStack``)."""

    def container_status(self, role: str) -> Any:
        """The kubelet's status of ``role``'s container now (a ``V1ContainerStatus``)."""

    def memory_cgroup(self, container_id: str) -> Path | None:
        """The memory cgroup folder of a container (None: not found, or another cluster)."""


def container_id(status: Any) -> str:
    """The id of the container a status describes (``containerd://<id>`` without scheme)."""
    return str(getattr(status, "container_id", "") or "").split("://")[-1]


def reading(folder: Path | None) -> Reading:
    """One reading of a container's memory cgroup (both None without one)."""
    if folder is None:
        return {"rss_bytes": None, "usage_bytes": None}
    got = memory(folder)
    return {"rss_bytes": got["rss_bytes"], "usage_bytes": got["mem_usage_bytes"]}


def reader(stack: PodStack, role: str) -> Callable[[], Reading]:
    """How to read ``role``'s memory: its running container's cgroup (FileNotFoundError when
    there is none to read: the container is not running, or the cluster is not this
    machine's)."""
    status = stack.container_status(role)
    cid = container_id(status) if status is not None and _running(status) else ""
    folder = stack.memory_cgroup(cid) if cid else None
    if folder is None:
        raise FileNotFoundError(
            f"no memory cgroup for {role}'s container {cid[:12] or '(not running)'}: "
            "only ipclab's own cluster's pods are read on this machine"
        )
    return lambda: reading(folder)


def running_cgroup(stack: PodStack, role: str) -> Path | None:
    """The memory cgroup of ``role``'s container while it runs as started (never
    restarted); None once it has ended or on another cluster. Its high-water mark is read
    by :func:`ipclab.backends.memory.peak`, as a docker container's."""
    status = stack.container_status(role)
    if status is None or not _running(status) or (status.restart_count or 0) > 0:
        return None
    return stack.memory_cgroup(container_id(status))


def _running(status: Any) -> bool:
    state = getattr(status, "state", None)
    return bool(state is not None and getattr(state, "running", None))


def _terminated(status: Any) -> Any:
    """The container's end as the kubelet recorded it: its current state if it is ended,
    else (restarted since) its last state; None if it has not ended."""
    state = getattr(status, "state", None)
    if state is not None and getattr(state, "terminated", None) is not None:
        return state.terminated
    last = getattr(status, "last_state", None)
    if (status.restart_count or 0) > 0 and last is not None:
        return getattr(last, "terminated", None)
    return None


def classify(status: Any) -> dict[str, Any]:
    """``{"running", "exit_code", "oom_killed", "restarts"}`` of a container's status (a
    ``V1ContainerStatus``; None: no such container, recorded as not running)."""
    if status is None:
        return {"running": False, "exit_code": None, "oom_killed": None, "restarts": None}
    restarts = int(status.restart_count or 0)
    ended = _terminated(status)
    if ended is not None:
        return {
            "running": False,
            "exit_code": ended.exit_code,
            "oom_killed": ended.reason == OOM_REASON,
            "restarts": restarts,
        }
    return {"running": _running(status), "exit_code": None, "oom_killed": False,
            "restarts": restarts}  # fmt: skip


def _stale(stack: PodStack, status: Any) -> bool:
    """The kubelet still records the container as running (and never restarted) while its
    cgroup holds no process: its end is not yet in the record."""
    if status is None or not _running(status) or (status.restart_count or 0) > 0:
        return False
    folder = stack.memory_cgroup(container_id(status))
    return folder is not None and not pids(folder)


def outcome(
    stack: PodStack, role: str, settle_s: float = SETTLE_S, poll_s: float = 0.25
) -> dict[str, Any]:
    """How ``role``'s container is (:func:`classify`), once the kubelet's record agrees
    with its cgroup (at most ``settle_s`` waited)."""
    deadline = time.monotonic() + settle_s
    status = stack.container_status(role)
    while _stale(stack, status) and time.monotonic() < deadline:
        time.sleep(poll_s)
        status = stack.container_status(role)
    return classify(status)
