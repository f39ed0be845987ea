"""Recovery, decomposed: how long the failure took to detect, the harness to react, the
restarted component to start, and the clients to reconnect.

A recovered cycle's down time (``ttr_s``, onset to the first complete page) is the sum of

| part | from | to |
|---|---|---|
| ``detection_s`` | the failure's onset | the probe's rules firing (``t_fail_detected``) |
| ``reaction_s`` | the detection | the restart mark (the harness waits for the process to die) |
| ``start_s`` | the restart mark | the restarted component accepting calls (``ready``) |
| ``reconnect_s`` | ``ready`` | the first complete page: its callers found it again |

``start_s + reconnect_s`` is the thesis's MTTR (``restart_to_recovery_s``). A component is
ready at its ``ipclab-ready`` log line (``ipclab_services.serve`` prints one once it accepts
calls; the harness copies those lines into the run's events as ``ready``), or, for a
component that prints none (the broker, whose restart returns once it is up), when the
backend's restart returned (the ``restarted`` event). Several components restarted for one
failure (method 1 restarts them all): ready when the last is. With neither event, start and
reconnect stay unknown (None) and only their sum is given.

**Where the orchestrator restarts** (Kubernetes: the kubelet restarts a killed container
under the pod's restart policy; ``runner.restarts_itself``) the restart is issued at the
kill, not after the detection: the runner marks ``restart`` at the kill, so ``reaction_s``
is the detection's lag behind the kill, negative (the restart does not wait for it), and
the parts still sum to ``ttr_s``. ``start_s`` is then split by what the kubelet recorded
(``container_started``, ``pod_ready``: whole seconds) and, on ipclab's own cluster, read
from the kernel (``process_started``, exact): ``kubelet_restart_s`` from the kill to the new
container's start (the kubelet noticing the exit, its back-off, the container's creation;
the process start, else the middle of the kubelet's second, +- 0.5 s) and ``readiness_s``
from that start to ready, the later of the role's ``ipclab-ready`` line and its pod's
``Ready`` condition (a call through the role's Service needs both: the endpoint and a
listening process). Elsewhere the two stay None.

**Where the harness restarts** (local, docker) the start splits where the backend's restart
returned (the last ``restarted`` event of the cycle's restarted roles: the process spawned,
the container started): ``returned_s`` from the restart mark to it (the harness's restart),
the rest of ``start_s`` the component's own readiness. Kept apart from ``START_PARTS`` (a
run's ``recovery.csv`` keeps its columns); on Kubernetes ``restart`` returns only once the
pod is ready again, so there the kubelet's record splits the start instead.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from ipclab.availability.model import Cycle

READY_PREFIX = "ipclab-ready "
READY, RESTARTED, RESTART = "ready", "restarted", "restart"
# what an orchestrator that restarts by itself recorded (Kubernetes' kubelet, whole seconds:
# ``ipclab.backends.kubernetes.restarts``)
STARTED, POD_READY = "container_started", "pod_ready"
PROCESS_STARTED = "process_started"  # the same start read from the kernel, to its tick
RECORDED_RESOLUTION_S = 1.0
PARTS = ("detection_s", "reaction_s", "start_s", "reconnect_s")
#: ``start_s`` split where the orchestrator recorded the container's start (else None)
START_PARTS = ("kubelet_restart_s", "readiness_s")
#: the harness's own restart, from the restart mark to its return (module docstring)
RETURNED = "returned_s"
COLUMNS = ("cycle", "component", *PARTS, "restart_to_recovery_s", "ttr_s", *START_PARTS, RETURNED)


def ready_lines(logs: Mapping[str, str]) -> list[dict[str, Any]]:
    """Every ``ipclab-ready`` line of the components' logs (a docker log line starts with
    its timestamp): ``{"t", "role"}``, in time order."""
    out = []
    for text in logs.values():
        for line in text.splitlines():
            at = line.find(READY_PREFIX)
            if at < 0:
                continue
            try:
                doc = json.loads(line[at + len(READY_PREFIX) :])
                out.append({"t": float(doc["t"]), "role": str(doc["role"])})
            except (ValueError, KeyError, TypeError):
                continue  # a line cut by a kill: no time to take from it
    return sorted(out, key=lambda r: r["t"])


def ready_events(logs: Mapping[str, str], since: float, until: float) -> list[dict[str, Any]]:
    """The ``ready`` events of a run observed from ``since`` to ``until``."""
    return [{"event": READY, **r} for r in ready_lines(logs) if since <= r["t"] <= until]


def _times(events: Iterable[Mapping[str, Any]], name: str) -> list[tuple[float, str]]:
    return sorted(
        (float(e["t"]), str(e.get("role", e.get("component"))))
        for e in events
        if e.get("event", e.get("kind")) == name
    )


def _first(
    source: Sequence[tuple[float, str]], role: str, t_from: float, until: float
) -> float | None:
    return next((t for t, r in source if r == role and t_from <= t <= until), None)


def _ready_at(
    role: str,
    t_restart: float,
    until: float,
    ready: Sequence[tuple[float, str]],
    returned: Sequence[tuple[float, str]],
    pod_ready: Sequence[tuple[float, str]] = (),
) -> float | None:
    """When ``role``, restarted at ``t_restart``, was ready (None if unknown by ``until``):
    the later of its ``ready`` line and its pod's readiness where the orchestrator recorded
    one (both are needed for a call through its Service to be answered), else when the
    backend's restart returned."""
    early = t_restart - RECORDED_RESOLUTION_S  # a recorded time is cut to the second
    times = [_first(ready, role, t_restart, until), _first(pod_ready, role, early, until)]
    known = [t for t in times if t is not None]
    if known:
        return max(known)
    return _first(returned, role, t_restart, until)


def _started_at(
    roles: Sequence[tuple[float, str]],
    until: float,
    started: Sequence[tuple[float, str]],
    processes: Sequence[tuple[float, str]] = (),
) -> float | None:
    """When the last of the restarted ``roles`` was started again: its processes' start
    where it was read (exact), else the orchestrator's record (the middle of its second);
    None when neither is known for one of them."""
    times = []
    for t, r in roles:
        exact = _first(processes, r, t, until)
        recorded = _first(started, r, t - RECORDED_RESOLUTION_S, until)
        half = RECORDED_RESOLUTION_S / 2
        times.append(exact if exact is not None else None if recorded is None else recorded + half)
    return max(times) if times and None not in times else None  # type: ignore[type-var]


def decompose(cycles: Iterable[Cycle], events: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per recovered cycle with a restart: the parts of its down time (COLUMNS)."""
    events = list(events)
    restarts = _times(events, RESTART)
    ready, returned = _times(events, READY), _times(events, RESTARTED)
    started, pod_ready = _times(events, STARTED), _times(events, POD_READY)
    processes = _times(events, PROCESS_STARTED)
    rows = []
    for c in cycles:
        if not c.recovered or c.t_restart is None or c.t_recovered is None:
            continue
        assert c.t_fail is not None and c.t_fail_detected is not None
        roles = [(t, r) for t, r in restarts if c.t_restart <= t <= c.t_recovered]
        times = [_ready_at(r, t, c.t_recovered, ready, returned, pod_ready) for t, r in roles]
        t_ready = max(times) if times and None not in times else None  # type: ignore[type-var]
        t_started = _started_at(roles, c.t_recovered, started, processes)
        back = [_first(returned, r, t, c.t_recovered) for t, r in roles]
        t_returned = max(back) if back and None not in back else None  # type: ignore[type-var]
        split = t_ready is not None and t_started is not None
        rows.append(
            {
                "cycle": c.index,
                "component": c.component,
                "detection_s": c.t_fail_detected - c.t_fail,
                "reaction_s": c.t_restart - c.t_fail_detected,
                "start_s": None if t_ready is None else t_ready - c.t_restart,
                "reconnect_s": None if t_ready is None else c.t_recovered - t_ready,
                "restart_to_recovery_s": c.restart_to_recovery_s,
                "ttr_s": c.ttr_s,
                "kubelet_restart_s": None if t_started is None else t_started - c.t_restart,
                "readiness_s": t_ready - t_started if split else None,  # type: ignore[operator]
                RETURNED: None if t_returned is None else t_returned - c.t_restart,
            }
        )
    return pd.DataFrame(rows, columns=list(COLUMNS))


def summarise(parts: pd.DataFrame) -> dict[str, Any]:
    """A run's mean of each part over its recovered cycles (None where none is known)."""
    out: dict[str, Any] = {"recovered_cycles": len(parts)}
    for col in (*PARTS, "restart_to_recovery_s", *START_PARTS):
        values = pd.to_numeric(parts[col], errors="coerce").dropna() if len(parts) else []
        out[f"mean_{col}"] = float(values.mean()) if len(values) else None
    return out
