"""Johansson 2017's claims (``published.claims``) judged on the measured per-run tables:
one Holm family per experiment (the thesis test's concurrent runs; the serialisation
micro-benchmark's processes, each a fresh interpreter whose rounds are averaged into one
replicate: docs/statistics.md section 1), the bytes compared as facts, and the runs each
test needs (power).
"""

from __future__ import annotations

import pandas as pd

from ipclab import claims as claims_mod
from ipclab.planner import Need, needs_of
from ipclab.studies.johansson import published

#: metrics fixed by construction, compared as facts (docs/statistics.md): the bytes of the
#: seeded bundles, as one library encodes them (serialisation processes) or as one response
#: body (thesis test), are the same in every process and run
FACTS = ("bytes",)

#: one Holm family per experiment (docs/statistics.md section 3): the claims' scope and the
#: family's label; the thesis test's runs feed the first, the serialisation processes the second
FAMILIES = (("performance", "thesis test"), ("serialisation", "serialisation micro-benchmark"))


def _family_runs(
    thesis: pd.DataFrame, serialisation: pd.DataFrame
) -> list[tuple[str, str, pd.DataFrame]]:
    """(scope, family label, per-run table) of every family that has runs: the serialisation
    rounds averaged per process (``serialisation.per_process``: the replicate)."""
    from ipclab.studies.johansson.serialisation import per_process

    runs = (thesis, per_process(serialisation))
    return [(s, label, r) for (s, label), r in zip(FAMILIES, runs, strict=True) if len(r)]


def claims_table(thesis: pd.DataFrame, serialisation: pd.DataFrame) -> pd.DataFrame:
    """The claims with their verdicts: one ``evaluate_claims`` call, so one Holm family, per
    experiment (the thesis test's concurrent runs; the serialisation processes), bytes as
    facts."""
    tables = [
        claims_mod.evaluate_claims(
            runs, published.claims(scope=scope), scope=scope, facts=FACTS, family=label
        )
        for scope, label, runs in _family_runs(thesis, serialisation)
    ]
    return pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()


def power_table(thesis: pd.DataFrame, serialisation: pd.DataFrame) -> pd.DataFrame:
    """``claims.repetitions`` per family, each with exactly that family's claims (alpha over
    its own distinct tests, facts apart); a ``family`` column first."""
    parts = []
    for scope, label, runs in _family_runs(thesis, serialisation):
        rep = claims_mod.repetitions(published.claims(scope=scope), runs, facts=FACTS)
        if len(rep):
            parts.append(rep.assign(family=label))
    if not parts:
        return pd.DataFrame()
    out = pd.concat(parts, ignore_index=True)
    return out[["family", *[c for c in out.columns if c != "family"]]]


def needs(
    thesis: pd.DataFrame, claims: pd.DataFrame, run_hours: float, prefix: str, group: str
) -> list[Need]:
    """The thesis test's undecided tests for the planner (``ipclab.planner``): both styles
    of a load share one group run, so a test's cells are the group runs of its loads,
    ``<prefix>:<group>@1@rows<N>`` (``ipclab.experiments.extend_cell``)."""
    scope, label = FAMILIES[0]
    base = thesis[~thesis["sequential"]] if len(thesis) else thesis
    undecided = set(claims.loc[claims["verdict"] == claims_mod.INCONCLUSIVE, "claim_id"])
    rows = claims_mod.pilot_needs(published.claims(scope=scope), base, undecided, facts=FACTS)
    return needs_of(
        "johansson", rows, claims, run_hours, lambda _, u: f"{prefix}:{group}@1@rows{u}"
    )
