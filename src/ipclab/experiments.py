"""Experiments: a matrix of runs (stack x users x variant x repetition) in randomized order.

Every cell is an ordinary run directory under ``<root>/<experiment>/<cell>``; a cell whose
directory already holds a complete run with the same parameters and key (the files that
measure it unchanged, ``runstore.reusable``) is reused, so an interrupted experiment
continues where it stopped and a rerun costs nothing. Each cell
starts a fresh stack, unless ``share_stacks`` (quick profiles): then the cells of one stack
and variant run back to back within each repetition, on one stack started for the first.

A variant is a named setting of the system's knobs (:class:`StackOptions`, e.g. rows per
table); ``variants`` makes it a factor whose levels are shuffled with the rest. With
``group`` set, a cell runs every stack at once under one load that spreads its requests
over them (:mod:`ipclab.load.group`): the stacks are compared within each run.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ipclab.atomic import write_json_atomic
from ipclab.backends import RunningStack, StackOptions, get_backend
from ipclab.load import forkserver
from ipclab.load.group import GroupLoad, run_group
from ipclab.load.runner import LoadProfile, run
from ipclab.paths import repo_relative
from ipclab.runs import DEFAULT_ROOT, Run, read_run, utcnow
from ipclab.runstore import reusable
from ipclab.stacks import resolve


@dataclass(frozen=True)
class Cell:
    stack: str
    users: int
    repetition: int
    variant: str = "base"

    @property
    def key(self) -> str:
        return f"{self.stack}-u{self.users}-{self.variant}-r{self.repetition}"


@dataclass
class Experiment:
    """A load experiment. ``spawn_rate`` None means all users start in the first second."""

    name: str
    stacks: Sequence[str]
    users: Sequence[int]
    repetitions: int = 1
    duration_s: float = 30.0
    warmup_s: float = 5.0
    spawn_rate: float | None = None
    think_time_s: float = 0.0
    think_time_max_s: float | None = None
    variant: str = "base"
    backend: str = "local"
    options: StackOptions = field(default_factory=StackOptions)
    order_seed: int = 2020
    root: Path = DEFAULT_ROOT
    # variant name -> the options of that variant; None: the one ``variant`` with ``options``
    variants: Mapping[str, StackOptions] | None = None
    group: GroupLoad | None = None  # every stack at once in each cell, under this load
    # one stack per stack, variant and repetition, its cells back to back (a stack's start,
    # ~2 s, ~17 s with a RabbitMQ broker, is most of a quick cell); each run says so
    # (parameter ``shared_stack``, compared when a run is reused). Not with ``group``.
    share_stacks: bool = False
    # the profile whose scaling made it (e.g. "quick", "full"; "": none named), recorded in
    # its experiment.json: what a part asks of the profile, never guessed from a folder name
    profile_name: str = ""

    def __post_init__(self) -> None:
        if self.share_stacks and self.group is not None:
            raise ValueError("share_stacks lends one stack to each cell; a group cell runs several")
        for s in self.stacks:
            resolve(s)
        if self.repetitions < 1:
            raise ValueError("repetitions must be at least 1")
        if not self.users or min(self.users) < 1:
            raise ValueError("users must be positive")
        if self.variants is not None and not self.variants:
            raise ValueError("variants, when given, name at least one")
        for name in self.levels():
            if not name or "/" in name or name != name.strip():
                raise ValueError(f"variant name {name!r} cannot name a directory")
        self.root = Path(self.root)

    def levels(self) -> dict[str, StackOptions]:
        """Variant name -> its options."""
        return dict(self.variants) if self.variants is not None else {self.variant: self.options}

    def _options(self, cell: Cell) -> StackOptions:
        return self.levels()[cell.variant]

    def _stacks(self) -> list[str]:
        """A cell's stack: each stack, or all of them at once (``group``)."""
        return ["+".join(self.stacks)] if self.group is not None else list(self.stacks)

    @property
    def directory(self) -> Path:
        return self.root / self.name

    def cells(self) -> list[Cell]:
        """Every cell, in an order shuffled by ``order_seed`` (repetitions stay in sequence)."""
        rng = random.Random(self.order_seed)
        out: list[Cell] = []
        for rep in range(1, self.repetitions + 1):
            block = [
                Cell(s, u, rep, v)
                for s in self._stacks()
                for u in self.users
                for v in self.levels()
            ]
            rng.shuffle(block)
            if self.share_stacks:  # a stack's cells back to back, stacks in shuffled order
                first: dict[tuple[str, str], int] = {}
                for c in block:
                    first.setdefault((c.stack, c.variant), len(first))
                block.sort(key=lambda c: first[c.stack, c.variant])
            out.extend(block)
        return out

    def profile(self, cell: Cell) -> LoadProfile:
        return LoadProfile(
            users=cell.users,
            spawn_rate=self.spawn_rate or float(cell.users),
            duration_s=self.duration_s,
            warmup_s=self.warmup_s,
            think_time_s=self.think_time_s,
            think_time_max_s=self.think_time_max_s,
            seed=cell.repetition,
        )

    def _reusable(self, path: Path, cell: Cell, current_only: bool = True) -> bool:
        try:
            r = read_run(path)
        except ValueError:
            return False
        group = self.group

        def same(p: Mapping[str, Any]) -> bool:
            return (
                _same(p.get("profile"), asdict(self.profile(cell)))
                # other cpus, delay, sequential, timeout or seed: another experiment
                and _same(p.get("options"), self._options(cell).as_dict())
                and bool(p.get("shared_stack")) == self.share_stacks
                and (
                    group is None
                    or p.get("group") == {"stacks": list(self.stacks), **group.as_dict()}
                )
            )

        names = list(self.stacks) if group is not None else [cell.stack]
        declared = {n: resolve(n).declaration() for n in names}
        spec = declared if group is not None else declared[cell.stack]
        return reusable(
            r.manifest,
            backend=self.backend,
            stack_spec=spec,
            same_parameters=same,
            current_only=current_only,
        )

    def pending(self, current_only: bool = True) -> list[Cell]:
        """The cells that :meth:`run` would run (not yet done, or done differently: other
        parameters, stacks, backend or measuring code). ``current_only=False``: the cells no
        run of this experiment covers, whatever code and declarations made it (a committed
        reference)."""
        return [
            c for c in self.cells() if not self._reusable(self.directory / c.key, c, current_only)
        ]

    def run(self, progress: Callable[[str], None] = print) -> list[Run]:
        """Run every cell not yet done; return all cells' runs in cell order."""
        self.directory.mkdir(parents=True, exist_ok=True)
        write_json_atomic(
            self.directory / "experiment.json",
            {"name": self.name, "updated_at": utcnow(), **self.describe()},
        )
        cells = self.cells()
        runs = []
        with _SharedStack(self) as shared:
            for i, cell in enumerate(cells, 1):
                runs.append(self.run_cell(cell, f"[{i}/{len(cells)}]", progress, shared))
        return runs

    def run_cell(
        self,
        cell: Cell,
        label: str = "",
        progress: Callable[[str], None] = print,
        shared: _SharedStack | None = None,
    ) -> Run:
        """Run one cell unless a reusable run of it is on disk; return its run (on the
        stack ``shared`` lends when the experiment shares its stacks)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / cell.key
        if self._reusable(path, cell):
            progress(f"{label} {cell.key}: reused")
            return read_run(path)
        if path.exists():
            shutil.rmtree(path)  # an unfinished or different run: redo it
        started = time.monotonic()
        scheduled = self.group.requests if self.group is not None else None
        what = (
            f"a schedule of {scheduled} requests" if scheduled else f"{self.duration_s:.0f}s load"
        )
        progress(f"{label} {cell.key}: running ({what})")
        extra = {"experiment": self.name, "repetition": cell.repetition, "variant": cell.variant}
        lent = shared.lend(cell) if shared is not None and self.share_stacks else None
        if lent is not None:
            extra["shared_stack"] = True
        if self.group is not None:
            run_group(
                self.stacks, self.group, self.profile(cell), out=path,
                backend=self.backend, options=self._options(cell), extra=extra,
            )  # fmt: skip
        else:
            run(
                cell.stack,
                self.profile(cell),
                backend=self.backend,
                options=self._options(cell),
                out=path,
                extra=extra,
                stack=lent,
            )
        finished = read_run(path)
        progress(
            f"{label} {cell.key}: {_progress(finished.summary)} ({time.monotonic() - started:.0f}s)"
        )
        return finished

    def describe(self) -> dict[str, Any]:
        d = asdict(self)
        d["root"] = repo_relative(self.root)
        if not self.profile_name:  # none named: recorded as before the field
            del d["profile_name"]
        if self.variants is not None:
            d["variants"] = {k: v.as_dict() for k, v in self.variants.items()}
        if self.group is not None:
            d["group"] = self.group.as_dict()
        return d


def _progress(s: dict[str, Any]) -> str:
    """A finished run in a line; a run without a request in its window says so (a loaded
    machine can start Locust seconds late, and a short window then holds nothing)."""
    mean = (s.get("latency_ms") or {}).get("mean")
    if not s.get("requests") or mean is None:
        return f"no request in the measured window, {s.get('failures', 0)} failures"
    cost = s.get("stack_cpu_ms_per_request")
    machine = f", {cost:.2f} ms CPU per request" if cost else ""
    return f"{s['rps']:.0f} req/s, mean {mean:.0f} ms, {s['failures']} failures{machine}"


class _SharedStack:
    """The one stack up for a ``share_stacks`` experiment: started for the first cell of
    its stack, variant and repetition that runs (its logs under the experiment's
    ``stacks/``), stopped when another cell needs another or the experiment ends, whatever
    happens."""

    def __init__(self, experiment: Experiment) -> None:
        self.experiment = experiment
        self.key: tuple[str, str, int] | None = None
        self.stack: RunningStack | None = None

    def __enter__(self) -> _SharedStack:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.stack is not None:
            self.stack, stack, self.key = None, self.stack, None
            stack.stop()

    def lend(self, cell: Cell) -> RunningStack:
        key = (cell.stack, cell.variant, cell.repetition)
        if self.stack is None or key != self.key:
            self.close()
            e = self.experiment
            folder = e.directory / "stacks" / f"{cell.stack}-{cell.variant}-r{cell.repetition}"
            forkserver.warm()  # Locust's imports overlap the stack's start
            self.stack = get_backend(e.backend).start(
                resolve(cell.stack), e._options(cell), logs_dir=_new_logs(folder)
            )
            self.key = key
        else:  # the previous cell's load may have left it failing: healthy before the next
            from ipclab.backends.local import wait_ready

            wait_ready(self.stack.gateway_url, 60.0)
        return self.stack


def _new_logs(folder: Path) -> Path:
    """``folder/logs`` for a shared stack's first start; a later start of the same stack (an
    experiment resumed after a stop) writes ``logs-2``, ``logs-3``..., so the logs of the
    stack its finished runs were made on are kept."""
    logs, n = folder / "logs", 1
    while logs.exists():
        n += 1
        logs = folder / f"logs-{n}"
    return logs


def interleaved(
    experiments: Sequence[Experiment], order_seed: int = 2017
) -> list[tuple[Experiment, Cell]]:
    """The cells of several experiments (e.g. one per network delay) in one order: within
    each repetition every (experiment, cell) pair shuffled by ``order_seed``, repetitions
    in sequence, so no factor level runs all at one time of the session."""
    rng = random.Random(order_seed)
    reps = max(e.repetitions for e in experiments)
    out: list[tuple[Experiment, Cell]] = []
    for rep in range(1, reps + 1):
        block = [(e, c) for e in experiments for c in e.cells() if c.repetition == rep]
        rng.shuffle(block)
        out.extend(block)
    return out


def run_interleaved(
    experiments: Sequence[Experiment],
    order_seed: int = 2017,
    progress: Callable[[str], None] = print,
) -> list[Run]:
    """Run :func:`interleaved`'s cells (reusing finished ones); their runs in that order."""
    for e in experiments:
        e.directory.mkdir(parents=True, exist_ok=True)
        write_json_atomic(
            e.directory / "experiment.json",
            {"name": e.name, "updated_at": utcnow(), **e.describe()},
        )
    if shared := [e.name for e in experiments if e.share_stacks]:
        raise ValueError(f"run_interleaved starts a stack per cell; {shared} share_stacks")
    order = interleaved(experiments, order_seed)
    return [
        e.run_cell(c, f"[{i}/{len(order)}] {e.name}", progress) for i, (e, c) in enumerate(order, 1)
    ]


def extend_cell(
    experiment: Experiment, cell: str, repetition: int, progress: Callable[[str], None] = print
) -> Run:
    """One run added to ``experiment`` by the planner: ``cell`` is ``<stack>@<users>`` (or
    ``<stack>@<users>@<variant>``), ``repetition`` its number. A finished run of it is
    reused when its key matches and its machine was quiet (``ipclab.stats.machine.
    quiet_run``); otherwise it is made (again)."""
    from ipclab.stats.machine import quiet_run

    experiment = as_recorded(experiment)
    stack, users, *variant = cell.split("@")
    c = Cell(stack, int(users), repetition, variant[0] if variant else experiment.variant)
    path = experiment.directory / c.key
    if path.exists():
        try:
            done = read_run(path)
        except ValueError:
            done = None
        if done is not None and done.complete and not quiet_run(done.summary):
            progress(f"{c.key}: made on a busy machine, made again")
            shutil.rmtree(path)
    return experiment.run_cell(c, "[plan]", progress)


RECORDED_LOAD = ("duration_s", "warmup_s", "spawn_rate", "think_time_s", "think_time_max_s")


def as_recorded(experiment: Experiment) -> Experiment:
    """``experiment`` with the load its directory's runs were made under, as its
    ``experiment.json`` records it (window, warm-up, ramp, think time): a run the planner adds
    to a reference made with a shorter window than its profile's is then made
    like the runs it joins, not by the profile's defaults."""
    path = experiment.directory / "experiment.json"
    if not path.is_file():
        return experiment
    doc = json.loads(path.read_text())
    return replace(experiment, **{k: doc[k] for k in RECORDED_LOAD if k in doc})


def load_runs(directory: Path) -> list[Run]:
    """Every complete run below an experiment directory."""
    return [
        r
        for r in (read_run(m.parent) for m in sorted(Path(directory).glob("*/manifest.json")))
        if r.complete
    ]


def _same(recorded: dict[str, Any] | None, wanted: dict[str, Any]) -> bool:
    """A recorded run's parameters equal ``wanted``; a field added since it was made counts as
    equal when ``wanted`` leaves it at None (e.g. ``cpuset``: unpinned then, unpinned now)."""
    if recorded is None:
        return False
    missing = {k: v for k, v in wanted.items() if k not in recorded}
    return all(v is None for v in missing.values()) and {**recorded, **missing} == wanted
