"""The thesis's procedure on the payload stack: one client, and per cell of the grid one
discarded warm-up request then 100 sequential requests (§5.2).

A **cell** is (structure, method, count, format): ``GET /{format}/{structure}?count=N`` or a
``POST`` of N elements. A **variant** is a setting of the data service's knobs (gzip, the
cache, the JSON encoder): the stack is started with it, so each variant is its own run. One
run walks every cell of the grid, in an order drawn from the run's seed (the repetition),
each cell's requests back to back; the experiment (``ipclab.experiments``, a group of one
stack) shuffles the variants within each repetition and reuses runs already done.

Table 3's request counts (1, 5, 50, 100) are read as the first 1, 5, 50 and 100 requests of
a cell's sequence: the analysis gives each (the thesis does not say how the counts map to
runs). The counts of elements are the thesis's nested ones (5, 325, 650) and flat 5, with
flat 1,000 between; flat 100,000 and 300,000 are the memory experiment's
(:mod:`ipclab.studies.buono.memory`: one request each, its size and the memory it takes),
as in the thesis, whose only figures at those counts are sizes and memory.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import product
from pathlib import Path
from typing import Any

from ipclab.backends import StackOptions
from ipclab.experiments import Experiment
from ipclab.load.group import GroupLoad
from ipclab.runs import DEFAULT_ROOT
from ipclab.studies.buono.stacks import BY_RUNTIME, ENCODERS, LIMIT_MB, THESIS_HEAP, knobs

WARMUP = "warmup "  # the prefix of a warm-up request's name
METHODS = ("GET", "POST")
FORMATS = ("json", "protobuf")
STRUCTURES = ("flat", "nested")
CALL_TIMEOUT_S = 120.0  # the edge's deadline on the data service: the largest cells take s


@dataclass(frozen=True, order=True)
class Cell:
    """One cell of the grid; its ``name`` names its requests in the run's records."""

    structure: str
    method: str
    count: int
    fmt: str

    def __post_init__(self) -> None:
        if self.structure not in STRUCTURES:
            raise ValueError(f"structure {self.structure!r}: one of {', '.join(STRUCTURES)}")
        if self.method not in METHODS:
            raise ValueError(f"method {self.method!r}: one of {', '.join(METHODS)}")
        if self.fmt not in FORMATS:
            raise ValueError(f"format {self.fmt!r}: one of {', '.join(FORMATS)}")
        if self.count < 0:
            raise ValueError(f"count {self.count}: not negative")

    @property
    def name(self) -> str:
        return f"{self.method} {self.fmt} {self.structure} {self.count}"

    @property
    def path(self) -> str:
        return f"/{self.fmt}/{self.structure}"


def parse_cell(name: str) -> Cell:
    """The cell a request name (``GET json flat 5``, maybe ``warmup ``-prefixed) stands for."""
    words = name.removeprefix(WARMUP).split()
    if len(words) != 4 or not words[3].isdigit():
        raise ValueError(f"{name!r} is not a cell name (METHOD FORMAT STRUCTURE COUNT)")
    method, fmt, structure, count = words
    return Cell(structure, method, int(count), fmt)


def check_answer(answer: Any, cell: Cell) -> None:
    """Mark a Locust answer (``catch_response``) failed unless it is a 200 holding the
    cell's count of elements (``X-Elements``)."""
    if answer.status_code != 200:
        answer.failure(f"HTTP {answer.status_code}")
    elif answer.headers.get("x-elements") != str(cell.count):
        answer.failure(f"{answer.headers.get('x-elements')} elements, not {cell.count}")


def encode_cells(cells: Sequence[Cell]) -> str:
    """Cells for the load generator's environment (``IPCLAB_PAYLOAD_CELLS``)."""
    return ";".join(c.name for c in cells)


def parse_cells(text: str) -> list[Cell]:
    cells = [parse_cell(part) for part in text.split(";") if part.strip()]
    if not cells:
        raise ValueError("IPCLAB_PAYLOAD_CELLS names no cell")
    return cells


def schedule(
    cells: Sequence[Cell], requests: int, warmup: int, seed: int
) -> list[tuple[str, Cell]]:
    """``(request name, cell)`` for every request of one run: the cells in an order drawn
    from ``seed``, each its ``warmup`` requests (named ``warmup <cell>``) then ``requests``."""
    if requests < 1 or warmup < 0:
        raise ValueError("requests must be at least 1 and warm-up not negative")
    order = sorted(cells)
    random.Random(seed).shuffle(order)
    return [
        (f"{prefix}{c.name}", c)
        for c in order
        for prefix, n in ((WARMUP, warmup), ("", requests))
        for _ in range(n)
    ]


@dataclass(frozen=True)
class Grid:
    """The cells a run walks: every structure's counts x methods x formats."""

    flat: tuple[int, ...]
    nested: tuple[int, ...]
    methods: tuple[str, ...] = METHODS
    formats: tuple[str, ...] = FORMATS

    def cells(self) -> list[Cell]:
        counts = {"flat": self.flat, "nested": self.nested}
        return [
            Cell(s, m, n, f)
            for s in STRUCTURES
            for n, m, f in product(counts[s], self.methods, self.formats)
        ]


@dataclass(frozen=True)
class Variant:
    gzip: bool
    cache: bool
    json_library: str = "orjson"

    @property
    def name(self) -> str:
        on = {True: "on", False: "off"}
        return f"gzip-{on[self.gzip]}-cache-{on[self.cache]}-{self.json_library}"

    @property
    def jvm(self) -> bool:
        return self.json_library in ENCODERS["jvm"]

    def options(self) -> StackOptions:
        """The stack's options. On the JVM, as the thesis's pods ran (docs/buono.md, "The
        heap"): both containers under the 400 MB limit (on docker; a local JVM sizes itself
        from it all the same) and the thesis's heap policy, so the procedure's JVMs run the
        heap and collector of the memory runs, not the whole machine's (a 6 GB heap, G1)."""
        heap = THESIS_HEAP if self.jvm else None
        return StackOptions(
            call_timeout_s=CALL_TIMEOUT_S,
            memory_mb=LIMIT_MB if self.jvm else None,
            extra_env=dict(knobs(self.gzip, self.cache, self.json_library, heap)),
        )


def _both(json_library: str) -> tuple[Variant, ...]:
    return tuple(Variant(g, c, json_library) for g in (False, True) for c in (False, True))


@dataclass(frozen=True)
class Profile:
    """How much of the procedure to run: ``full`` is the thesis's (100 requests after one
    warm-up) with 7 repetitions; ``quick`` a few minutes for ``make reproduce``."""

    name: str
    grid: Grid
    requests: int
    warmup: int
    repetitions: int
    variants: tuple[Variant, ...] = field(default_factory=lambda: _both("orjson"))

    def __post_init__(self) -> None:
        if len({v.name for v in self.variants}) != len(self.variants):
            raise ValueError("a variant is named twice")

    @property
    def requests_per_run(self) -> int:
        return len(self.grid.cells()) * (self.requests + self.warmup)


# Sizes are the same in every run (seeded data), so a size claim rests on the exact
# permutation test, whose smallest p-value is 2 / C(2n, n): 0.0079 at n = 5, 0.00058 at
# n = 7; Holm over the 8 distinct size tests of the claims needs n >= 7 to reach 0.05
# (docs/statistics.md section 3). The full profile runs 7, for the timings too.
REPETITIONS_FULL = 7

PROFILES = {
    # every grid cell and variant, 3 repetitions (the fewest a claim is judged on), 6
    # requests a cell: a run is mostly its stack's and Locust's start
    "quick": Profile(
        "quick", Grid(flat=(5, 1000), nested=(5, 325, 650)), requests=6, warmup=1, repetitions=3
    ),
    "full": Profile(
        "full",
        Grid(flat=(5, 1000), nested=(5, 325, 650)),
        requests=100,
        warmup=1,
        repetitions=REPETITIONS_FULL,
        # the JSON encoder is a factor: orjson in every setting, the standard library too
        variants=(*_both("orjson"), *_both("json")),
    ),
}


def experiment(
    profile: str | Profile = "quick",
    backend: str = "local",
    root: Path = DEFAULT_ROOT,
    name: str = "",
    runtime: str = "python",
) -> Experiment:
    """The procedure as an experiment: one run per variant and repetition, in a shuffled
    order, each run a group of the one payload stack under the procedure's load; its runs go
    under ``<root>/<name>`` (by default ``buono-<profile>-<backend>``). ``runtime`` ``jvm``:
    the same on the JVM's stack, whose variants are the knobs' with its one encoder."""
    p = PROFILES[profile] if isinstance(profile, str) else profile
    if runtime != "python":
        p = replace(p, variants=_both(ENCODERS[runtime][0]))
    cells = p.grid.cells()
    load = GroupLoad(
        users="ipclab.studies.buono.users",
        requests=p.requests_per_run,
        env={
            "IPCLAB_PAYLOAD_CELLS": encode_cells(cells),
            "IPCLAB_SCHEDULE_REQUESTS": str(p.requests),
            "IPCLAB_SCHEDULE_WARMUP": str(p.warmup),
        },
    )
    return Experiment(
        name=name or f"buono-{p.name}-{backend}" + ("" if runtime == "python" else "-jvm"),
        stacks=[BY_RUNTIME[runtime].name],
        users=[1],
        repetitions=p.repetitions,
        # bounds the run: the schedule ends it; the largest grid takes minutes per run
        duration_s=3600.0,
        warmup_s=0.0,
        spawn_rate=1.0,
        backend=backend,
        variants={v.name: v.options() for v in p.variants},
        group=load,
        root=root,
    )
