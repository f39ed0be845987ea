"""What the kubelet recorded of a killed container's restart, as run events.

A container the harness killed (``KubernetesStack.kill``: SIGKILL to every process of its
cgroup) is restarted by the kubelet under the pod's ``restartPolicy: Always``, at once the
first time and after its back-off (10 s, doubling to 5 min) when the same container was
restarted within the last 10 min. Its pod's status then holds, as the kubelet wrote it:

| event | from the pod's status |
|---|---|
| ``container_exited`` | ``lastState.terminated.finishedAt`` (the old container's exit) |
| ``container_started`` | ``state.running.startedAt`` (the new container's start) |
| ``pod_ready`` | the ``Ready`` condition's ``lastTransitionTime`` (every container ready) |

Each with the container's ``restartCount`` and the old one's exit code and reason. The API
gives these times to the second (RFC 3339 without fractions: ``resolution_s``), so a part
of a recovery computed from them is known to +- 1 s. On ipclab's own cluster the new
container's processes are on this machine, so its start is also read to the kernel's
clock tick (``process_started``: the earliest start of the processes in its cgroup, which
containerd's runtime created), and must fall within the kubelet's second; the services'
own ``ipclab-ready`` lines (``ipclab.availability.recovery``) are exact.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

import psutil

EXITED, STARTED, POD_READY = "container_exited", "container_started", "pod_ready"
PROCESS_STARTED = "process_started"
RESOLUTION_S = 1.0  # the API's times are whole seconds


def _t(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def recorded(role: str, pod: Any, container: str) -> list[dict[str, Any]]:
    """The events (``{"event", "t", "role", ...}``) of ``role``'s restart from its ``pod``'s
    status (the API's object), ``container`` its container's name there; none when the
    pod has no such container."""
    status = next((s for s in pod.status.container_statuses or [] if s.name == container), None)
    if status is None:
        return []
    common = {
        "role": role,
        "pod": pod.metadata.name,
        "restart_count": int(status.restart_count or 0),
        "source": "kubelet",
        "resolution_s": RESOLUTION_S,
    }
    out = []
    ended = status.last_state.terminated if status.last_state else None
    if ended is not None and (t := _t(ended.finished_at)) is not None:
        out.append(
            {"event": EXITED, "t": t, **common, "exit_code": ended.exit_code,
             "reason": ended.reason}
        )  # fmt: skip
    running = status.state.running if status.state else None
    if running is not None and (t := _t(running.started_at)) is not None:
        out.append({"event": STARTED, "t": t, **common})
    ready = next((c for c in pod.status.conditions or [] if c.type == "Ready"), None)
    if ready is not None and ready.status == "True" and (t := _t(ready.last_transition_time)):
        out.append({"event": POD_READY, "t": t, **common})
    return out


def process_started(role: str, pids: Iterable[int]) -> list[dict[str, Any]]:
    """The ``process_started`` event of a container whose processes are ``pids`` (its
    cgroup's): the earliest of their starts (the kernel's, to its clock tick); none when
    none is left to read."""
    starts = []
    for pid in pids:
        try:
            starts.append(psutil.Process(pid).create_time())
        except psutil.Error:
            continue
    if not starts:
        return []
    return [{"event": PROCESS_STARTED, "t": min(starts), "role": role, "source": "cgroup"}]
