"""Which runs decide the most undecided tests per machine-hour (docs/statistics.md section 7).

Each study states its undecided tests as :class:`Need` rows: the cells a test compares, the
runs each has, the runs per cell it needs (sized from the runs' variance only, an internal
pilot: ``ipclab.stats.pilot``) and what a run of its cells costs. :func:`choose` spends a
budget of machine-hours greedily: the test whose remaining runs cost least goes first (runs
that a cell gets for one test count for every other test of that cell), until no further
test fits. A test that needs more than ``ipclab.stats.pilot.MAX_RUNS_PER_CELL`` runs per
cell, or more hours than any budget under ``ipclab.claims.Rules.budget_h``, is not planned:
it is the undecidable verdict's (``underpowered``), with the runs it needs. The core names
no study; :func:`blocks` orders the chosen runs into randomised interleaved blocks.

Before any run, :func:`design_lines` lists the tests whose runs cannot pass their Holm level
whatever they measure (docs/statistics.md section 3's design check: an exact test's smallest
p at its runs not below alpha over its family's tests), with the runs per cell that could.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ipclab.stats.design import EXACT_METHODS, floor_of, holm_level, runs_to_reach
from ipclab.stats.pilot import MAX_RUNS_PER_CELL


@dataclass(frozen=True)
class Need:
    """One undecided test: ``cells`` (ids unique across studies: the results folder's name,
    then what its part makes of it) have ``have`` runs each and need ``need`` (None: more
    than the most a cell gets); a run of them takes ``run_hours``."""

    study: str
    test: str  # the claim ids, e.g. "T14a, P12a"
    comparison: str
    cells: tuple[str, ...]
    have: int
    need: int | None
    run_hours: float

    def missing(self, extra: Mapping[str, int]) -> dict[str, int]:
        """Runs each cell still lacks, with ``extra`` runs already planned."""
        if self.need is None:
            return {}
        return {c: max(self.need - self.have - extra.get(c, 0), 0) for c in self.cells}

    def hours(self, extra: Mapping[str, int]) -> float:
        if self.need is None:
            return math.inf
        return sum(self.missing(extra).values()) * self.run_hours


def needs_of(
    study: str,
    rows: Iterable[Mapping[str, Any]],
    table: pd.DataFrame,
    run_hours: float,
    cell: Callable[[str, Any], str],
) -> list[Need]:
    """A study's needs from ``ipclab.claims.pilot_needs`` rows: each test named by its claim
    ids in the claims ``table``, each compared (style, load) mapped by ``cell`` to the id of
    the run that measures it (cells one run measures together counted once)."""
    from ipclab.claims import claim_ids

    out = []
    for row in rows:
        first = table[table["claim_id"] == row["claim_id"]].iloc[0]
        cells = tuple(dict.fromkeys(cell(s, u) for s, u in row["cells"]))
        ids = claim_ids(table, first)
        out.append(Need(study, ids, row["comparison"], cells, row["have"], row["need"], run_hours))
    return out


@dataclass
class Plan:
    budget_h: float
    extra: dict[str, int] = field(default_factory=dict)  # cell -> runs to add
    decided: list[Need] = field(default_factory=list)  # tests the plan gives their runs
    left: list[Need] = field(default_factory=list)  # tests it does not

    @property
    def hours(self) -> float:
        cost = {c: n.run_hours for n in self.decided for c in n.cells}
        return sum(k * cost[c] for c, k in self.extra.items())

    @property
    def runs(self) -> int:
        return sum(self.extra.values())


def choose(needs: Iterable[Need], budget_h: float) -> Plan:
    """The tests to give their runs within ``budget_h``, cheapest remaining first."""
    plan = Plan(budget_h)
    open_ = [n for n in needs if n.need is not None and n.need <= MAX_RUNS_PER_CELL]
    plan.left = [n for n in needs if n not in open_]
    spent = 0.0
    while open_:
        best = min(open_, key=lambda n: (n.hours(plan.extra), n.study, n.test))
        cost = best.hours(plan.extra)
        open_.remove(best)
        if spent + cost > budget_h:
            plan.left.append(best)
            continue
        for cell, k in best.missing(plan.extra).items():
            if k:
                plan.extra[cell] = plan.extra.get(cell, 0) + k
        plan.decided.append(best)
        spent += cost
    return plan


def blocks(
    extra: Mapping[str, int], have: Mapping[str, int], seed: int = 2027
) -> list[tuple[str, int]]:
    """The runs to make as (cell, repetition number), in blocks: the k-th added run of every
    cell in one block, shuffled by ``seed``, blocks in order; so what is compared runs
    interleaved, and a killed plan resumes at the same order."""
    rng = random.Random(seed)
    out: list[tuple[str, int]] = []
    for k in range(1, max(extra.values(), default=0) + 1):
        block = [(c, have.get(c, 0) + k) for c in sorted(extra) if extra[c] >= k]
        rng.shuffle(block)
        out.extend(block)
    return out


def describe(plan: Plan) -> str:
    """The plan as printed before it runs."""
    lines = [
        f"plan: {plan.runs} runs, {plan.hours:.2f} machine-hours of a {plan.budget_h:g} h budget; "
        f"{len(plan.decided)} tests get the runs they need, {len(plan.left)} do not",
    ]
    for n in plan.decided:
        gets = "already has the runs it needs" if (n.need or 0) <= n.have else f"{n.need} runs"
        lines.append(f"  {n.study} {n.test}: {n.comparison}: {n.have} made, {gets} per cell")
    for cell, k in sorted(plan.extra.items()):
        lines.append(f"  + {k} runs of {cell}")
    for n in plan.left:
        need = "more than 25" if n.need is None or n.need > MAX_RUNS_PER_CELL else str(n.need)
        lines.append(f"  not planned: {n.study} {n.test} ({n.comparison}): {need} runs per cell")
    return "\n".join(lines)


def needs_table(needs: Sequence[Need]) -> list[dict[str, object]]:
    """The needs as rows (for a results table)."""
    return [
        {
            "study": n.study,
            "test": n.test,
            "comparison": n.comparison,
            "cells": ", ".join(n.cells),
            "runs_per_cell": n.have,
            "runs_needed": n.need,
            "run_hours": n.run_hours,
        }
        for n in needs
    ]


def design_rows(name: str, table: pd.DataFrame, alpha: float = 0.05) -> list[dict[str, Any]]:
    """The distinct tests of one claims table whose runs cannot pass their Holm level
    (docs/statistics.md section 3): the floor from the row's ``p_floor`` (a study's own
    test) or its ``p_method`` at its runs, the level from ``p_level`` or alpha over its
    family's distinct tests. A table written before the design check is checked the same."""
    from ipclab.claims import P_KINDS, claim_ids, distinct_tests

    if table.empty or "p_method" not in table.columns:
        return []
    tests = table[table.get("evidence", pd.Series("test", index=table.index)).fillna("test")
                  == "test"]  # fmt: skip
    fam = tests["family"].fillna("") if "family" in tests.columns else pd.Series("", tests.index)
    sizes = tests.assign(_f=fam).groupby("_f")["test_key"].nunique().to_dict()
    out = []
    for _, r in distinct_tests(tests).iterrows():
        if r["test"] not in P_KINDS or not isinstance(r["p_method"], str):
            continue
        n_a, n_b = int(r["n_a"]), int(r["n_b"])
        given = float(r.get("p_floor", np.nan))
        floor = given if np.isfinite(given) else floor_of(r["p_method"], n_a, n_b)
        level = float(r.get("p_level", np.nan))
        if not np.isfinite(level):
            level = holm_level(alpha, int(sizes.get(r.get("family", "") or "", 1)))
        if not (np.isfinite(floor) and floor >= level):
            continue
        could = runs_to_reach(level) if r["p_method"] in EXACT_METHODS else None
        out.append({"reference": name, "claims": claim_ids(table, r),
                    "comparison": r["comparison"], "p_method": r["p_method"], "n_a": n_a,
                    "n_b": n_b, "floor": floor, "level": level, "runs_that_could": could,
                    "verdict": r["verdict"]})  # fmt: skip
    return out


def design_lines(tables: Mapping[str, pd.DataFrame], alpha: float = 0.05) -> list[str]:
    """The design check as ``ipclab plan`` prints it: one line per test whose runs cannot
    pass its Holm level (``tables``: reference name -> claims table)."""
    rows = [r for name, t in tables.items() for r in design_rows(name, t, alpha)]
    if not rows:
        return ["design check: every test's runs can pass its Holm level"]
    word = (
        "test whose runs cannot pass its"
        if len(rows) == 1
        else "tests whose runs cannot pass their"
    )
    lines = [f"design check: {len(rows)} {word} Holm level, whatever they measure"]
    for r in rows:
        could = (
            f"{r['runs_that_could']} runs per cell could" if r["runs_that_could"]
            else "no runs per cell up to 1,000 could" if r["p_method"] in EXACT_METHODS
            else "more runs could"
        )  # fmt: skip
        lines.append(
            f"  {r['reference']} {r['claims']} ({r['comparison']}): {r['p_method']}, "
            f"{r['n_a']} + {r['n_b']} runs: floor {r['floor']:.2g} >= level {r['level']:.2g}; "
            f"{could} ({r['verdict']})"
        )
    return lines
