"""Published claims against measured runs: the effect, its interval and p-value, and a
verdict, by the rules of docs/statistics.md (the document is the rule; the code applies it,
and ``tests/test_statistics_doc.py`` evaluates the document's worked examples against it).

One module per job:

* :mod:`ipclab.claims.rules`: the verdicts, the bands, a claim's band and size words, the
  verdict of one effect, what a claim tests, and the document's table of kinds;
* :mod:`ipclab.claims.measure`: a claim's effect from runs (pooled or by sitting, facts,
  stated values, code measures);
* :mod:`ipclab.claims.planning`: repetitions by power, the design check, pilots, and the
  underpowered mark within the budget;
* :mod:`ipclab.claims.evaluate`: every claim of a study judged (Holm over the family of
  distinct tests, machine and plausibility checks), one row per claim;
* :mod:`ipclab.claims.tally`: distinct tests, tallies, verdicts per statement, band
  sensitivity.

The names below are the package's interface (``from ipclab.claims import ...``).
"""

from __future__ import annotations

from ipclab.claims.evaluate import (
    adjusted_p,
    evaluate_claims,
    evidence_of,
    machine_check_of,
    plausibility_of,
    sensitivity,
)
from ipclab.claims.measure import _cells, is_fact, measure, measure_compare, value_effect
from ipclab.claims.planning import (
    P_KINDS,
    by_design,
    design_column,
    design_of,
    mark_underpowered,
    pilot_needs,
    repetitions,
    run_hours,
)
from ipclab.claims.rules import (
    BUDGET_H,
    CODE,
    CONSIDERABLE_BAND,
    EQUAL_BAND,
    FACT,
    INCONCLUSIVE,
    KINDS_SECTION,
    NOT_REPRODUCED,
    REPRODUCED,
    SENSITIVITY,
    STATISTICS_DOC,
    TEST,
    UNDERPOWERED,
    VERDICTS,
    Effect,
    Rules,
    band_of,
    kinds_table,
    published_consistent,
    size_words,
    test_key,
    verdict,
)
from ipclab.claims.tally import (
    band_sensitivity,
    claim_ids,
    distinct_tests,
    statement_verdicts,
    tally,
)

__all__ = [
    "BUDGET_H",
    "CODE",
    "CONSIDERABLE_BAND",
    "EQUAL_BAND",
    "Effect",
    "FACT",
    "INCONCLUSIVE",
    "KINDS_SECTION",
    "NOT_REPRODUCED",
    "REPRODUCED",
    "Rules",
    "SENSITIVITY",
    "STATISTICS_DOC",
    "TEST",
    "UNDERPOWERED",
    "VERDICTS",
    "band_of",
    "kinds_table",
    "published_consistent",
    "size_words",
    "test_key",
    "verdict",
    "_cells",
    "is_fact",
    "measure",
    "measure_compare",
    "value_effect",
    "P_KINDS",
    "by_design",
    "design_column",
    "design_of",
    "mark_underpowered",
    "pilot_needs",
    "repetitions",
    "run_hours",
    "adjusted_p",
    "evaluate_claims",
    "evidence_of",
    "machine_check_of",
    "plausibility_of",
    "sensitivity",
    "band_sensitivity",
    "claim_ids",
    "distinct_tests",
    "statement_verdicts",
    "tally",
]
