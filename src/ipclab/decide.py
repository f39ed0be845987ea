"""``ipclab plan``: the runs that decide the most undecided tests per machine-hour, from the
committed references, and (``--make``) making them.

Every notebook with a committed reference whose study part states its undecided tests
(``StudyPart.needs``) takes part: its reference is loaded as it is (whatever code made it),
analysed, and its tests' needs (``ipclab.planner.Need``, sized from the runs' variance as an
internal pilot) go into one budget (:func:`ipclab.planner.choose`). The plan is printed
before anything runs, with the design check (the tests whose runs cannot pass their Holm
level whatever they measure, from the committed claims tables), and written to
``<root>/plan.json``; ``--make`` runs its blocks in order (:func:`ipclab.planner.blocks`:
the k-th added run of every cell in one shuffled block), each through its part's
``extend``. A killed ``--make`` resumes from ``plan.json``:
finished runs are reused (the same run key, a quiet machine), the rest made. Afterwards each
reference is rebuilt by its study's ``reference`` module, and the final tests use every run.
The core names no study: the parts say what a cell is.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ipclab.atomic import write_json_atomic
from ipclab.paths import from_repo, repo_relative
from ipclab.planner import Need, Plan, blocks, choose, describe, design_lines
from ipclab.protocol import Parameters, StudyPart
from ipclab.stats import machine
from ipclab.studies import all_studies

PLAN_FILE = "plan.json"


@dataclass
class Source:
    """One reference the planner can extend: its study part, parameters, plan and needs."""

    study: str
    results: str
    part: StudyPart
    params: Parameters
    plan: Any
    needs: list[Need]


def reference_parameters(reference: str) -> tuple[str, str]:
    """A reference folder's profile and backend, from its name ``<name>-<profile>-<backend>``."""
    parts = reference.rsplit("-", 2)
    if len(parts) != 3:
        raise ValueError(f"reference {reference!r} is not named <name>-<profile>-<backend>")
    return parts[1], parts[2]


def sources(root: Path = Path("data/runs/reference"), studies: Sequence[str] = ()) -> list[Source]:
    """Every reference whose part states its needs (of ``studies``, when given)."""
    out = []
    for study in all_studies().values():
        if studies and study.name not in studies:
            continue
        for nb in study.notebooks:
            if not nb.reference or not nb.part:
                continue
            part = study.part(nb.results)
            if type(part).needs is StudyPart.needs:
                continue
            profile, backend = reference_parameters(nb.reference)
            params = part.parameters(profile=profile, backend=backend, runs_root=from_repo(root))
            plan = part.experiments(params)
            analysis = part.analyse(part.load(plan), params)
            needs = list(part.needs(analysis, params))
            out.append(Source(study.name, nb.results, part, params, plan, needs))
    return out


def committed_tables(root: Path = Path("data/runs/reference")) -> dict[str, pd.DataFrame]:
    """Every committed reference's claims tables (code claims apart), named
    ``<reference>`` (``claims.csv``) or ``<reference>:<table>``: what the design check
    (``ipclab.planner.design_lines``) reads before any run."""
    out = {}
    for path in sorted(from_repo(root).glob("*/results/claims*.csv")):
        if path.name == "claims_code.csv" or not path.stat().st_size:
            continue
        name = path.parent.parent.name
        out[name if path.stem == "claims" else f"{name}:{path.stem}"] = pd.read_csv(path)
    return out


def make_plan(found: Sequence[Source], budget_h: float) -> Plan:
    return choose([n for s in found for n in s.needs], budget_h)


def _have(plan: Plan) -> dict[str, int]:
    """The runs each planned cell has (the fewest any of its tests counted)."""
    have: dict[str, int] = {}
    for n in plan.decided:
        for c in n.cells:
            have[c] = min(have.get(c, n.have), n.have)
    return have


def write_plan(plan: Plan, path: Path) -> list[tuple[str, int]]:
    """``plan.json``: the budget, the tests, and the runs in the order they are made."""
    order = blocks(plan.extra, _have(plan))
    write_json_atomic(
        path,
        {
            "budget_h": plan.budget_h,
            "hours": plan.hours,
            "decided": [asdict(n) for n in plan.decided],
            "left": [asdict(n) for n in plan.left],
            "runs": [list(r) for r in order],
        },
    )
    return order


def read_plan(path: Path) -> list[tuple[str, int]]:
    return [(str(c), int(k)) for c, k in json.loads(path.read_text())["runs"]]


def make(
    found: Sequence[Source],
    order: Sequence[tuple[str, int]],
    progress: Callable[[str], None],
    wait_quiet: Callable[[Callable[[str], None]], bool] = machine.wait_until_quiet,
) -> int:
    """Make the planned runs in ``order``, each by the part whose cells it names, each after
    the machine is quiet (``wait_quiet``: other processes' CPU within the machine check's
    limits, waiting while it is not)."""
    by_prefix = {f"{s.results}:": s for s in found}
    for i, (cell, repetition) in enumerate(order, 1):
        source = next((s for p, s in by_prefix.items() if cell.startswith(p)), None)
        if source is None:
            raise ValueError(f"plan names {cell!r}, which no reference's part makes")
        wait_quiet(progress)
        progress(f"[plan {i}/{len(order)}] {cell} r{repetition}")
        source.part.extend(source.plan, [(cell, repetition)], progress)
    return len(order)


def parse_budget(text: str) -> float:
    """'3h', '90m', '2.5' (hours) -> hours."""
    t = text.strip().lower()
    try:
        if t.endswith("h"):
            return float(t[:-1])
        if t.endswith("m"):
            return float(t[:-1]) / 60
        return float(t)
    except ValueError:
        raise ValueError(f"budget {text!r}: give hours, e.g. 3h, 90m or 2.5") from None


def main(
    budget: str,
    root: Path = Path("data/runs/reference"),
    studies: Sequence[str] = (),
    run: bool = False,
    say: Callable[[str], None] = print,
) -> int:
    """Print the plan (and write ``plan.json``); with ``run``, make its runs, resuming a
    ``plan.json`` already there."""
    path = from_repo(root) / PLAN_FILE
    found = sources(root, studies)
    if run and path.exists():
        order = read_plan(path)
        say(f"resuming {repo_relative(path)}: {len(order)} runs")
    else:
        plan = make_plan(found, parse_budget(budget))
        say(describe(plan))
        say("\n".join(design_lines(committed_tables(root))))
        order = write_plan(plan, path)
        say(f"written to {repo_relative(path)}")
    if run:
        made = make(found, order, say)
        say(f"{made} runs made or reused; rebuild the references to judge them")
        path.unlink()
    return 0
