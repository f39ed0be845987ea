"""The procedure's undecided tests for the planner (``ipclab.planner``): every procedure run
measures every cell of the grid under one variant (gzip, cache, JSON encoder), so a test's
cells are the variants of the runs that measure it, ``<prefix>:<group>@1@<variant>``
(``ipclab.experiments.extend_cell``). The memory family is not planned (its runs are one
request each, at a fixed budget already)."""

from __future__ import annotations

from ipclab import claims as claims_mod
from ipclab.planner import Need, needs_of
from ipclab.runs import Run
from ipclab.studies.buono import analysis, published
from ipclab.studies.buono.experiment import PRIMARY_ENCODER, Analysis
from ipclab.studies.buono.procedure import Variant


def variant_of(style: str) -> str:
    """The procedure variant whose runs measure a claim's cell, e.g.
    ``protobuf-flat-get-raw-nocache`` -> ``gzip-off-cache-off-orjson``."""
    *_, gz, cache = style.split("-")
    return Variant(gz == "gzip", cache == "cache", PRIMARY_ENCODER).name


def needs(a: Analysis, procedure_runs: list[Run], prefix: str, group: str) -> list[Need]:
    table = analysis.runs_table(a.cells, a.memory, PRIMARY_ENCODER)
    claims = a.claims
    undecided = set(claims.loc[claims["verdict"] == claims_mod.INCONCLUSIVE, "claim_id"])
    hours = claims_mod.run_hours([r.manifest for r in procedure_runs])
    family = analysis.families()["procedure"]
    rows = claims_mod.pilot_needs(family, table, undecided, facts=published.FACTS)
    return needs_of(
        "buono", rows, claims, hours, lambda s, _: f"{prefix}:{group}@1@{variant_of(s)}"
    )
