"""Every table and figure into a results folder."""

from __future__ import annotations

import matplotlib.pyplot as plt

from ipclab.results import StudyResults
from ipclab.studies.shafabakhsh.availability import beside
from ipclab.studies.shafabakhsh.availability.analysis import (
    Analysis,
    configuration_share,
    readable,
)
from ipclab.studies.shafabakhsh.availability.figures import (
    figure_availability,
    figure_mttf_by_load,
    figure_mttf_mttr,
    figure_outage_timeline,
)
from ipclab.studies.shafabakhsh.availability.profiles import AvailabilityRuns, deviations, profile

_SUMMARY_COLS = [
    "style",
    "users",
    "runs",
    "n_cycles",
    "failures",
    "recoveries",
    "censored",
    "unrecovered",
    "faults_injected",
    "up_s",
    "down_s",
    "mttf_s",
    "mttf_s_lo",
    "mttf_s_hi",
    "mttf_s_censored",
    "mttf_boot_lo",
    "mttf_boot_hi",
    "mttr_s",
    "mttr_s_lo",
    "mttr_s_hi",
    "availability",
    "availability_lo",
    "availability_hi",
    "time_availability",
    "restart_to_recovery_s",
    "notes",
]


def write_results(a: Analysis, runs: AvailabilityRuns, results: StudyResults) -> None:
    """Every table and figure of the availability study into ``results``."""
    p = profile(a.profile)
    made = [*runs.all(), *runs.tuned]
    backends = {str(r.manifest.get("backend")) for r in made}
    backend = backends.pop() if len(backends) == 1 else ""
    results.deviations = deviations(backend, [r.manifest for r in made])
    results.parameters.setdefault("criteria", p.common.criteria.as_dict())
    if a.users_map:
        results.deviations.append(
            f"Profile {a.profile!r}: loads {sorted(a.users_map.values())} stand in for the "
            f"published {sorted(a.users_map)} users (users_map {a.users_map})."
        )
    results.table(
        a.side_by_side,
        "table_5_4_side_by_side",
        "Thesis table 5.4 (printed MTTF, MTTR, A, and A recomputed from its own "
        "MTTF/MTTR) beside the measured values: method 1 (until failure) and method 2 "
        "(fault injection); estimate [95% interval], 'censored, > T' when no failure.",
    )
    results.table(
        a.formula,
        "formula_mismatch",
        "The published availabilities against A = MTTF/(MTTF+MTTR) of the published "
        "MTTF and MTTR: the printed 0.95 for RabbitMQ follows from no inputs within "
        "the table's rounding.",
    )
    _method_tables(a, results)
    if len(a.outage):
        results.table(
            a.outage,
            "outage",
            "Outage experiment: every request the load generator issued, classed "
            "(served, served late, failed, lost, duplicated) per style and phase "
            "relative to the outage window; classes sum to the requests issued.",
        )
    results.table(a.cycles, "cycles", "Every failure-recovery cycle.", in_report=False)
    if len(a.recovery):
        results.table(
            a.recovery,
            "recovery",
            "Recovery decomposed (docs/availability.md): per method, style, reconnect setting "
            "(each client library's default, or tuned short back-offs) and kind of component "
            "restarted, the mean seconds from the failure's onset to its detection, from the "
            "detection to the restart, from the restart to the component accepting calls "
            "(start) and from then to the first complete page (reconnect); start + reconnect "
            "is the thesis's MTTR (restart_to_recovery_s).",
        )
        share = configuration_share(a.recovery)
        if len(share):
            results.table(
                share,
                "recovery_configuration",
                "How much of each style's MTTR is client configuration: fault injection's mean "
                "restart-to-recovery time per style and kind of component restarted at the "
                "default reconnect settings and with them tuned (one run per style, on the "
                "first default run's schedule), and the share the tuning took away.",
            )
    if len(a.recovery_backends):
        results.table(a.recovery_backends, "recovery_backends", beside.CAPTION)
    _claims_tables(a, results)
    if len(a.power):
        results.table(
            a.power,
            "power",
            "Runs per cell each test would need to detect the published ratio with 80% power "
            "at alpha / (its family's distinct tests) (docs/statistics.md section 7), per "
            "family (until failure, outage, fault injection); only tests with 2 or more runs "
            "per cell are planned.",
        )
    _figures(a, runs, results)


def _claims_tables(a: Analysis, results: StudyResults) -> None:
    """The claims of the until-failure and outage families, and the MTTR claims judged on
    the restarts of fault injection and of the outage experiment."""
    results.claims_table(a.claims)
    results.table(
        a.claims_fault_injection,
        "claims_mttr_fault_injection",
        "Claims T20 and P15 (MTTR after the restart) on the fault-injection runs, a Holm family "
        "of their own: one value per run (its mean over its cycles; the run is the unit of "
        "replication), at the load the runs used (users_map); verdicts by the same rules.",
        in_report=False,
    )
    if len(a.claims_mttr_outage) and a.claims_mttr_outage["n_a"].gt(0).any():
        results.table(
            a.claims_mttr_outage,
            "claims_mttr_outage",
            "Claims T20 and P15 (MTTR after the restart) on the outage runs, a Holm family of "
            "their own: one stop of a service and its restart per run, so each run gives one "
            "restart-to-recovery time, at the load the runs used (users_map); verdicts by the "
            "same rules. One restarted service, where the thesis restarted its whole cluster.",
        )


def _figures(a: Analysis, runs: AvailabilityRuns, results: StudyResults) -> None:
    results.figure(
        figure_availability(a),
        "availability_fig4_side_by_side",
        "Availability per style: published (paper figure 4 / thesis table 5.4, "
        "printed and recomputed) beside the measured A with 95% intervals.",
    )
    results.figure(
        figure_mttf_mttr(a),
        "availability_mttf_mttr",
        "MTTF and MTTR per style: published, fault injection and until failure "
        "(log scale; hatched: censored MTTF, lower bound).",
    )
    none = "" if len(a.until_failure) else " No run of the current method 1 yet: published only."
    results.figure(
        figure_mttf_by_load(a),
        "availability_fig4_by_load",
        "Paper figure 4's loads: method 1's MTTF per style at 200, 300 and 400 users "
        "(95% interval; triangles: no failure within the cap, the one-sided lower bound) "
        "beside the published MTTF at 200 users (stars)." + none,
    )
    if runs.outage and all(len(r.requests()) for r in runs.outage):
        results.figure(
            figure_outage_timeline(runs.outage),
            "availability_outage_timeline",
            "Outage experiment: requests per second by outcome and issue time, "
            "one service stopped for 10 s (shaded).",
        )
    plt.close("all")


# (method, summary attribute, caption of its readable table)
_METHOD_TABLES = (
    (
        "fault_injection",
        "Method 2, fault injection: MTTF (chi-square interval, exponential "
        "model), MTTR and A (bootstrap over cycles) per style.",
    ),
    (
        "until_failure",
        "Method 1, until failure (the thesis's): per style and load; a stack "
        "that did not fail within the cap is censored, never given a number.",
    ),
)


def _method_tables(a: Analysis, results: StudyResults) -> None:
    """Per method that ran: its readable estimates, and every estimator column."""
    for method, caption in _METHOD_TABLES:
        summary = getattr(a, method)
        if not len(summary):
            continue
        number = 2 if method == "fault_injection" else 1
        results.table(readable(summary), f"availability_{method}", caption)
        results.table(
            summary.reindex(columns=_SUMMARY_COLS),
            f"summary_{method}",
            f"Method {number}, every estimator column.",
            in_report=False,
        )
    if len(a.until_failure_runs):
        results.table(
            a.until_failure_runs,
            "until_failure_runs",
            "Method 1's runs, one row each: how it was judged (only runs of the current method, "
            "the users' failed requests with the users spawned on a ramp, enter the summary "
            "and the claims; superseded runs are listed, never judged), its spawn rate, when "
            "the load counted as fully up (ramp_end_s) and when Locust had every user up "
            "(users_up_s), both from the load's start, its time to failure from the ramp's "
            "end or to its cap (ttf_s, failed; start-up failures apart) and Little's law's "
            "lowest response time N / X_max beside what its users saw (N / X).",
        )
