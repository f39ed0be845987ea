"""What availability is measured in: event marks on a timeline and failure/recovery cycles.

Shared by the tracker (which makes cycles), the estimators (which summarise them) and the
runner (which writes them to ``cycles.csv``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from typing import Any

# Event names the tracker understands (``kind`` of a Mark). ``ramp_start`` and ``ramp_end``
# bound the load's ramp (users spawned at a stated rate): a failure before its end is a
# start-up failure, and the time to failure is counted from it.
START, FAULT, RESTART, END = "start", "fault", "restart", "end"
RAMP_START, RAMP_END = "ramp_start", "ramp_end"

# A failed cycle's kind (``Cycle.kind``): a fault mark in its up period (``injected``), none
# (``spontaneous``: method 1's load-induced failures, or a failure with no fault in method 2),
# or an onset before the load was fully up (``startup``: not a time to failure).
INJECTED, SPONTANEOUS, STARTUP = "injected", "spontaneous", "startup"
KINDS = (INJECTED, SPONTANEOUS, STARTUP)

#: Names found in a run's events.jsonl mapped onto the four kinds above.
EVENT_ALIASES: dict[str, str] = {
    "start": START,
    "load_start": START,
    "probe_start": START,
    "fault": FAULT,
    "kill": FAULT,
    "fault_injected": FAULT,
    "restart": RESTART,
    "restart_issued": RESTART,
    "end": END,
    "load_stop": END,
    "probe_stop": END,
    "ramp_start": RAMP_START,
    "ramp_end": RAMP_END,
}


@dataclass(frozen=True, order=True)
class Mark:
    """An event on the timeline: ``kind`` is start, fault, restart or end."""

    t: float
    kind: str
    component: str | None = None
    event: str | None = field(default=None, compare=False)  # the event's own name, if any


class CycleStatus(StrEnum):
    RECOVERED = "recovered"  # failed and recovered: both times observed
    UNRECOVERED = "unrecovered"  # failed, not recovered by the end: repair time censored
    CENSORED = "censored"  # no failure by the cap or the end: time to failure censored


@dataclass
class Cycle:
    """One up period and the down period that follows it (if any).

    ``ttf_s`` is the up time (a lower bound when censored); ``ttr_s`` the down time from the
    failure onset to recovery (a lower bound when unrecovered, None when censored).
    ``restart_to_recovery_s`` is the thesis's MTTR (from the restart to the recovery).
    """

    index: int
    status: CycleStatus
    t_up: float
    ttf_s: float
    ttr_s: float | None = None
    t_fail: float | None = None
    t_fail_detected: float | None = None
    rule: str | None = None  # "error_rate" or "silence"
    t_fault: float | None = None
    component: str | None = None
    faults: int = 0  # fault marks in the up period (more than one: earlier ones were masked)
    t_restart: float | None = None
    t_recovered: float | None = None
    t_recovery_detected: float | None = None
    restart_to_recovery_s: float | None = None
    t_end: float | None = None  # end of the cycle (recovery, cap or end of observation)
    # what the failure was (INJECTED, SPONTANEOUS, STARTUP; a censored cycle: None, or
    # STARTUP when observation ended before the load was up); None in cycles written before
    # the detector classed them (``ipclab.availability.classify`` infers it)
    kind: str | None = None
    # the probe's own evidence: the bad answers behind the rule that fired (the triggering
    # window's, or the silence rule's run of bad answers), among ``window`` answers, every
    # one asked within the up period; ``bad_seqs`` their probe sequence numbers
    bad: int | None = None
    window: int | None = None
    bad_seqs: str | None = None

    @property
    def failed(self) -> bool:
        return self.status != CycleStatus.CENSORED

    @property
    def recovered(self) -> bool:
        return self.status == CycleStatus.RECOVERED

    def as_row(self) -> dict[str, Any]:
        row = asdict(self)
        row["status"] = str(self.status)
        return row


CYCLE_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(Cycle))
