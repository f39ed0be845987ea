"""Shafabakhsh 2020, availability: MTTF, MTTR and A = MTTF / (MTTF + MTTR), per IPC style.

What a notebook calls: ``run_experiments`` (method 1 until failure, method 2 fault
injection, and the outage experiment; every run an ordinary run directory, finished runs
reused), ``analyse`` (cycles, estimators with intervals, thesis table 5.4 and paper figure 4
beside the measured values, the formula mismatch, the outage table, computed claim
verdicts) and ``write_results`` (tables and figures into a results folder).
See docs/availability.md. The parts: ``profiles`` (profiles and the experiment),
``analysis``, ``until_failure`` (method 1's claims with the run as the unit), ``pricing``
(machine-hours per cell), ``plan``, ``figures``, ``beside`` (the recovery decomposition
beside other backends' references), ``readme`` and ``results``.
"""

from __future__ import annotations

from ipclab.studies.shafabakhsh.availability.analysis import (
    Analysis,
    analyse,
    claims_rows,
    classified_outage,
    cycles_frame,
    outage_summary,
    published_table,
    readable,
    side_by_side,
    summary_table,
)
from ipclab.studies.shafabakhsh.availability.figures import (
    figure_availability,
    figure_mttf_mttr,
    figure_outage_timeline,
)
from ipclab.studies.shafabakhsh.availability.profiles import (
    DEVIATIONS,
    METHODS,
    PROFILES,
    STACKS,
    STYLES,
    AvailabilityExperiment,
    AvailabilityRuns,
    Job,
    Profile,
    deviations,
    experiments,
    profile,
    run_experiments,
)
from ipclab.studies.shafabakhsh.availability.results import write_results

__all__ = [
    "DEVIATIONS",
    "METHODS",
    "PROFILES",
    "STACKS",
    "STYLES",
    "Analysis",
    "AvailabilityExperiment",
    "AvailabilityRuns",
    "Job",
    "Profile",
    "analyse",
    "claims_rows",
    "classified_outage",
    "cycles_frame",
    "deviations",
    "experiments",
    "figure_availability",
    "figure_mttf_mttr",
    "figure_outage_timeline",
    "outage_summary",
    "profile",
    "published_table",
    "readable",
    "run_experiments",
    "side_by_side",
    "summary_table",
    "write_results",
]
