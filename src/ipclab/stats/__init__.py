"""Statistics of load runs: tidy per-run tables, per-cell CIs, pairwise tests, Little's law,
saturation.

The unit of replication is the run: a cell (style x users x think time) is repeated, each run
gives one value per metric (its mean latency, its p95, its throughput...), and confidence
intervals and tests are over those per-run values, never over the requests of one run (they
are not independent). Every random step takes a ``seed``.

One module per job; every public name is importable from here (``from ipclab import stats``):

- pure statistics of samples (numpy and scipy only, no run reading): :mod:`.samples`,
  :mod:`.intervals` (t, log-ratio and bootstrap intervals, and their one text ``estimate
  [low, high]``), :mod:`.comparisons` (Welch, permutation, Mann-Whitney, Cliff's delta,
  Holm), :mod:`.power` (repetitions needed), :mod:`.design` (the smallest p a test can
  reach at its runs, against its Holm level);
- the per-run table, read from run directories: :mod:`.run_parameters`, :mod:`.run_table`;
- tables over a per-run table: :mod:`.cells` (per-cell summaries, pairs of styles),
  :mod:`.queueing` (Little's law), :mod:`.saturation`, :mod:`.machine` (the machine check),
  :mod:`.plausibility` (the plausibility check; its per-run inputs read from run directories
  by :mod:`.plausibility_runs`);
- runs made in several sittings: :mod:`.sittings` (which sitting a run is of, and the
  log-ratio test with the sitting as a block).
"""

from __future__ import annotations

from ipclab.stats.cells import CELL_KEYS, CELL_METRICS, cell_summary, cell_table, compare_styles
from ipclab.stats.comparisons import (
    Comparison,
    cliffs_delta,
    cliffs_delta_ci,
    compare_samples,
    holm,
    permutation_p,
    stratified_permutation_p,
)
from ipclab.stats.intervals import (
    Interval,
    bootstrap_ci,
    bootstrap_means,
    interval_text,
    log_ratio_interval,
    t_interval,
)
from ipclab.stats.machine import MachineLimits, machine_check
from ipclab.stats.plausibility import PlausibilityLimits, plausibility_check
from ipclab.stats.power import repetitions_needed, repetitions_needed_log_ratio
from ipclab.stats.queueing import LittleCheck, littles_law, littles_law_table
from ipclab.stats.run_parameters import parse_seconds, parse_think_time
from ipclab.stats.run_table import MACHINE_COLUMNS, run_metrics, runs_table
from ipclab.stats.samples import ArrayLike
from ipclab.stats.saturation import Saturation, detect_saturation, saturation_steps
from ipclab.stats.sittings import log_ratio_interval_by_sitting, pooled_cv2, sittings

__all__ = [
    "CELL_KEYS",
    "CELL_METRICS",
    "MACHINE_COLUMNS",
    "ArrayLike",
    "Comparison",
    "Interval",
    "LittleCheck",
    "MachineLimits",
    "PlausibilityLimits",
    "Saturation",
    "bootstrap_ci",
    "bootstrap_means",
    "cell_summary",
    "cell_table",
    "cliffs_delta",
    "cliffs_delta_ci",
    "compare_samples",
    "compare_styles",
    "detect_saturation",
    "holm",
    "interval_text",
    "littles_law",
    "littles_law_table",
    "log_ratio_interval",
    "log_ratio_interval_by_sitting",
    "machine_check",
    "parse_seconds",
    "parse_think_time",
    "permutation_p",
    "plausibility_check",
    "pooled_cv2",
    "repetitions_needed",
    "repetitions_needed_log_ratio",
    "run_metrics",
    "runs_table",
    "saturation_steps",
    "sittings",
    "stratified_permutation_p",
    "t_interval",
]
