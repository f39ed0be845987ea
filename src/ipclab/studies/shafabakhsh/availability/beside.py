"""The recovery decomposition of one availability reference beside the others' (issue 51):
per style, the detection, restart, readiness and reconnect times of fault injection's
default runs on each backend, the run being the unit (docs/statistics.md sections 1, 2 and
6: each run's mean over its recovered cycles, then the mean over runs with its Student-t
interval, from 3 runs; fewer give the estimate alone).

The parts come from each cycle's decomposition (``ipclab.availability.recovery``,
``analysis.recovery_cycles``), one timeline per backend:

- **local and docker**: the harness restarts a component after the probe detected its
  failure; restart is from the restart mark (the detection, a few ms later) to the
  backend's restart returning (the process spawned, the container started: ``returned_s``),
  readiness from then to the component accepting calls (its ``ipclab-ready`` line; a broker
  prints none, so its readiness is 0 and its restart its whole start);
- **where the orchestrator restarts** (Kubernetes: the kubelet, ``profiles.RESTARTS_ITSELF``)
  the restart is issued at the kill, so the detection overlaps it: restart is the kubelet's,
  from the kill to the new container's start (``kubelet_restart_s``: its noticing the exit,
  its back-off, the container's creation), readiness from that start to ready
  (``readiness_s``: the later of the ready line and the pod's Ready condition).

On every backend restart + readiness + reconnect is the thesis's MTTR (restart to
recovery); detection + restart + readiness + reconnect is the MTTR in A (onset to
recovery) on local and docker only. The restart is also given apart for a component's first
kill in its run and for a component killed again: the kubelet holds a container restarted
again within 10 min back (10 s, then 20 s, doubling to 5 min), and that back-off is part of
Kubernetes' MTTR, not tuned away.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from ipclab.runs import Run
from ipclab.stats.intervals import t_interval
from ipclab.studies.shafabakhsh.availability.analysis import recovery_cycles
from ipclab.studies.shafabakhsh.availability.profiles import RESTARTS_ITSELF, STYLES

#: the backends a reference of another backend is set beside, in the table's order
BASELINES = ("local", "docker")
#: (column of a cycle's parts, the part's name in the table)
PARTS = (
    ("detection_s", "detection"),
    ("restart_s", "restart"),
    ("restart_first_s", "restart, first kill of the component in its run"),
    ("restart_again_s", "restart, the component killed again (kubelet: back-off)"),
    ("readiness_s", "readiness"),
    ("reconnect_s", "reconnect"),
    ("restart_to_recovery_s", "restart to recovery (the thesis's MTTR)"),
    ("ttr_s", "onset to recovery (MTTR in A)"),
)
MIN_RUNS = 3  # intervals over runs need at least 3 (docs/statistics.md section 6)

CAPTION = (
    "Recovery decomposed beside the other backends' references (fault injection at each "
    "client library's default reconnect settings, the tuned runs apart): per style and part, "
    "each run's mean over its recovered cycles, then the mean over runs [95% Student-t "
    "interval, from 3 runs] (docs/statistics.md sections 2 and 6), with the runs and cycles "
    "it rests on. Detection: the failure's onset to the probe's rules firing. Restart: on "
    "local and docker the harness's, issued at the detection, until the backend's restart "
    "returned (process spawned: on local at once, so its start is readiness; container "
    "started); on kubernetes the kubelet's, from the kill to the new container's start (the "
    "detection overlaps it). Readiness: from then to the component accepting calls (its "
    "ready line; on kubernetes also its pod's Ready condition; a broker prints no ready "
    "line, so on local and docker its start is all restart). Reconnect: to "
    "the first complete page. Restart + readiness + reconnect is the thesis's MTTR (restart "
    "to recovery), which on kubernetes starts at the kill and on local and docker after the "
    "detection: onset to recovery, the MTTR in A, compares the backends from the same instant. "
    "The restart is also split by whether the "
    "component was killed for the first time in its run or again: the kubelet's back-off "
    "(10 s, then 20 s, for a container restarted again within 10 minutes) is kept, not "
    "tuned away, and is part of the Kubernetes MTTR."
)


def cycle_parts(runs: Sequence[Run]) -> pd.DataFrame:
    """Every recovered cycle of the default fault-injection runs with the table's parts
    (``PARTS``), its backend, style and run."""
    df = recovery_cycles(list(runs))
    if df.empty:
        return df
    df = df[(df["method"] == "fault_injection") & (df["reconnect"] == "default")].copy()
    num = {c: pd.to_numeric(df.get(c), errors="coerce") for c in
           ("start_s", "kubelet_restart_s", "readiness_s", "returned_s")}  # fmt: skip
    itself = df["backend"].isin(RESTARTS_ITSELF)
    restart = num["kubelet_restart_s"].where(itself, num["returned_s"])
    readiness = num["readiness_s"].where(itself, num["start_s"] - num["returned_s"])
    again = pd.to_numeric(df["kill"], errors="coerce") > 1
    return df.assign(
        restart_s=restart,
        readiness_s=readiness,
        restart_first_s=restart.where(~again),
        restart_again_s=restart.where(again),
    )


def per_run(cycles: pd.DataFrame) -> pd.DataFrame:
    """Each run's mean of each part over its recovered cycles (the run is the unit), with
    its cycles counted per part (a part unknown in a cycle is left out of its mean)."""
    cols = [c for c, _ in PARTS]
    values = cycles[cols].apply(pd.to_numeric, errors="coerce")
    keys = [cycles["backend"], cycles["style"], cycles["run"]]
    means = values.groupby(keys).mean()
    counts = values.notna().groupby(keys).sum().add_suffix("_cycles")
    return pd.concat([means, counts], axis=1).reset_index()


def table(by_backend: Mapping[str, Sequence[Run]], confidence: float = 0.95) -> pd.DataFrame:
    """Per style and part (``PARTS``), each backend's mean over runs with its interval
    (``<backend>_s``, ``_lo``, ``_hi``; no interval under ``MIN_RUNS`` runs), the runs and
    the cycles it rests on; ``by_backend``: each backend's runs (its reference's), in the
    columns' order."""
    frames = [cycle_parts(runs) for runs in by_backend.values()]
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame()
    runs = per_run(pd.concat(frames, ignore_index=True))
    styles = [s for s in STYLES if s in set(runs["style"])]
    rows = []
    for style in styles:
        for col, name in PARTS:
            row: dict[str, object] = {"style": style, "part": name}
            for backend in by_backend:
                cell = runs[(runs["backend"] == backend) & (runs["style"] == style)]
                x = cell[col].dropna().to_numpy(dtype=float)
                iv = t_interval(x, confidence)
                wide = len(x) >= MIN_RUNS
                row.update({
                    f"{backend}_s": iv.estimate if len(x) else np.nan,
                    f"{backend}_lo": iv.low if wide else np.nan,
                    f"{backend}_hi": iv.high if wide else np.nan,
                    f"{backend}_runs": len(x),
                    f"{backend}_cycles": int(cell[f"{col}_cycles"].sum()),
                })  # fmt: skip
            rows.append(row)
    return pd.DataFrame(rows)


def again_sentence(parts: pd.DataFrame, backend: str, label: Callable[[str], str] = str) -> str:
    """How many of ``backend``'s restarts were of a component killed again in its run, and
    their mean restart beside the first kills' (cycles pooled; from ``table``'s rows)."""
    rows = parts.set_index(["style", "part"])
    first, again = PARTS[2][1], PARTS[3][1]
    said = []
    for style in dict.fromkeys(parts["style"]):
        a, f = rows.loc[(style, again)], rows.loc[(style, first)]
        n = int(a[f"{backend}_cycles"])
        if not n:
            continue
        said.append(
            f"{label(style)}: {n} of {n + int(f[f'{backend}_cycles'])} restarts, "
            f"{float(a[f'{backend}_s']):.2f} s against {float(f[f'{backend}_s']):.2f} s"
        )
    if not said:
        return f"No component was killed twice in one {backend} run."
    return (
        f"Restarts of a component killed again in its run on {backend}, and their mean "
        f"restart against a first kill's: {'; '.join(said)}."
    )
