"""The memory experiment (thesis §5.2.4, Figs. 32-35): the data service builds and serialises
flat 100,000 and 300,000 users in one format under a 400 MB memory limit; does it finish,
or does the kernel's OOM killer end it (the thesis: JSON killed at 300,000, Protobuf done
with a 43320KB blob)?

Each cell is its own run directory (kind ``memory``) on a fresh stack, so a cell's process
holds only its own format's objects (``data.Dataset`` builds each form on first use):
``memory.csv`` samples the data service's memory every ``interval_s`` (resident memory and,
in a container, the cgroup usage the limit counts) while one ``GET`` asks for the list
through the edge service, and ``summary.json`` gives the outcome: completed or not, the
answer's size, the data service's exit code and whether it was OOM-killed (the container's
``OOMKilled``), the peaks sampled and the cgroup's own high-water mark. An OOM kill is the
cell's outcome, recorded, not a failure of the experiment: the run is ``complete`` when it
measured the cell either way.

The limit needs a container: the docker backend's (compose's ``mem_limit``) or the
kubernetes backend's pods (the container's ``resources.limits.memory``, requested as
limited, stated in the manifest's ``stack_info``), whose memory is read from the pod's
cgroup and whose OOM kill from the kubelet's record (``OOMKilled``, exit code 137;
:mod:`ipclab.backends.memory`); on the local backend the cells run unlimited (the
footprint without a limit), said in every summary.

The runtime is a factor (``MemoryCell.runtime``): the Python services, or the same services
on the JVM (``payload-http-jvm``: Quarkus, Jackson, protobuf-java), started as the thesis's
image started them (run-java.sh's ``-XX:+ExitOnOutOfMemoryError``), with the collector and
the memory a JVM in the 400 MB container sizes itself from, under one of two heap policies
(``heap``, :data:`ipclab.studies.buono.stacks.HEAPS`): ``limit``, the heap's maximum at the
container's limit (the thesis's, which the claims read), or ``default``, the JVM's own
default there (a quarter of its memory but at least about 125 MB: 126 MiB at 400 MB). On
the JVM a cell can end in two ways for want of memory: the kernel kills the container
(``OOMKilled``, the limit) or the JVM ends itself on a full heap (exit code 3,
``java.lang.OutOfMemoryError``: the heap policy); the summary says which (``out_of_memory``:
either), so the report can tell the format's doing from the heap's. The JVM's own GC log
gives its heap (``heap.csv``, ``summary.json``'s ``heap``: :mod:`ipclab.studies.buono.heap`).
"""

from __future__ import annotations

import random
import shutil
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from ipclab.backends import StackOptions, get_backend, memory
from ipclab.backends.base import RunningStack
from ipclab.backends.described import describe_stack
from ipclab.runs import CsvAppender, Run, RunWriter, read_run
from ipclab.runstore import reusable
from ipclab.studies.buono import heap as jvm_heap
from ipclab.studies.buono.stacks import (
    BY_RUNTIME,
    ENCODERS,
    HEAPS,
    LIMIT_MB,
    THESIS_HEAP,
    knobs,
)

#: LIMIT_MB (stacks'): the thesis's limit on the service's container (§6.1)
COUNTS = (100_000, 300_000)
FORMATS = ("json", "protobuf")
INTERVAL_S = 0.05  # 20 Hz
TIMEOUT_S = 300.0
COLUMNS = ("t", "rss_bytes", "usage_bytes")
JVM_OOM_EXIT = 3  # -XX:+ExitOnOutOfMemoryError's exit code


@dataclass(frozen=True)
class MemoryCell:
    """One cell; ``traced``: Python's allocations traced (tracemalloc) for their peak, with
    no memory limit (the tracing takes memory and time of its own, so a traced cell gives
    the allocation peak only, never an outcome under the limit)."""

    fmt: str
    count: int
    structure: str = "flat"
    json_library: str = "orjson"
    traced: bool = False
    runtime: str = "python"  # or "jvm" (its encoder: jackson)
    heap: str = "default"  # the JVM's heap policy (stacks.HEAPS); "default" for Python

    def __post_init__(self) -> None:
        if self.runtime not in ENCODERS:
            raise ValueError(f"runtime {self.runtime!r}: one of {', '.join(ENCODERS)}")
        if self.json_library not in ENCODERS[self.runtime]:
            raise ValueError(
                f"{self.runtime} encodes JSON with {', '.join(ENCODERS[self.runtime])}, "
                f"not {self.json_library!r}"
            )
        if self.heap not in HEAPS or (self.heap != "default" and self.runtime != "jvm"):
            raise ValueError(f"heap {self.heap!r}: the JVM's {', '.join(HEAPS)}")
        if self.traced and self.runtime != "python":
            raise ValueError("allocations are traced in Python only")

    @property
    def key(self) -> str:
        traced = "-traced" if self.traced else ""
        heap = "" if self.heap == "default" else f"-heap-{self.heap}"
        return f"{self.fmt}-{self.structure}-{self.count}-{self.json_library}{traced}{heap}"

    def parameters(self) -> dict[str, Any]:
        """The cell as its run's parameters record it: the runtime and the heap only when
        they are not Python's (so a Python cell reads as before they were factors)."""
        out = asdict(self)
        if self.runtime == "python":
            del out["runtime"], out["heap"]
        return out


def cells(
    counts: Sequence[int] = COUNTS,
    formats: Sequence[str] = FORMATS,
    json_libraries: Sequence[str] = ("orjson",),
    runtime: str = "python",
    heap: str = "default",
) -> list[MemoryCell]:
    """Every count x format on ``runtime``; JSON once per encoder (a Protobuf cell's
    ``json_library`` is the runtime's primary and means nothing)."""
    primary = ENCODERS[runtime][0]
    libraries = json_libraries if runtime == "python" else ENCODERS[runtime]
    return [
        MemoryCell(f, n, json_library=lib, runtime=runtime, heap=heap)
        for n in counts
        for f in formats
        for lib in (libraries if f == "json" else (primary,))
    ]


class _Sampler(threading.Thread):
    def __init__(self, read: Callable[[], memory.Reading], out: CsvAppender, interval_s: float):
        super().__init__(daemon=True, name="memory-sampler")
        self.read, self.out, self.interval_s = read, out, interval_s
        self.halt = threading.Event()
        self.peaks: dict[str, int] = {}
        self.samples = 0

    def run(self) -> None:
        while True:
            row = {"t": time.time(), **self.read()}
            self.out.write([row])
            self.samples += 1
            for k in ("rss_bytes", "usage_bytes"):
                v = row.get(k)
                if isinstance(v, int):
                    self.peaks[k] = max(self.peaks.get(k, 0), v)
            if self.halt.wait(self.interval_s):
                return


def _ask(url: str, timeout_s: float) -> dict[str, Any]:
    started = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as r:
            body = r.read()
            head = (
                len(f"HTTP/1.1 {r.status} {r.reason}\r\n")
                + 2
                + sum(len(k) + len(v) + 4 for k, v in r.headers.items())
            )
            peak = r.headers.get("x-alloc-peak")
            return {
                "http_status": r.status,
                "answer_bytes": len(body),
                "alloc_peak_bytes": int(peak) if peak else None,
                "header_bytes": head,
                "elements": r.headers.get("x-elements"),
                "elapsed_s": round(time.monotonic() - started, 3),
            }
    except urllib.error.HTTPError as e:
        return {"http_status": e.code, "answer_bytes": None, "elements": None,
                "elapsed_s": round(time.monotonic() - started, 3),
                "error": e.read().decode(errors="replace")[:300]}  # fmt: skip
    except (OSError, TimeoutError) as e:
        elapsed = round(time.monotonic() - started, 3)
        return {"http_status": 0, "answer_bytes": None, "elements": None,
                "elapsed_s": elapsed, "error": repr(e)[:300]}  # fmt: skip


def _limited(cell: MemoryCell, backend: str, limit_mb: int | None) -> bool:
    """Whether the cell's containers run under ``limit_mb`` (docker or kubernetes, untraced)."""
    return backend != "local" and limit_mb is not None and not cell.traced


def cell_options(
    cell: MemoryCell, backend: str, limit_mb: int | None = LIMIT_MB, timeout_s: float = TIMEOUT_S
) -> StackOptions:
    """The stack options a cell runs with: the limit where it applies, and the data
    service's knobs (gzip and the cache off, the cell's encoder; on the JVM its heap policy,
    sized from the limit, or from the thesis's where the cell runs unlimited)."""
    limited = _limited(cell, backend, limit_mb)
    sized_from = limit_mb if limited and limit_mb is not None else LIMIT_MB
    env = dict(knobs(False, False, cell.json_library, heap=cell.heap, limit_mb=sized_from))
    if cell.traced:
        env["IPCLAB_TRACE_ALLOC"] = "1"
    return StackOptions(
        call_timeout_s=timeout_s, memory_mb=limit_mb if limited else None, extra_env=env
    )


def run_cell(
    cell: MemoryCell,
    out: Path,
    *,
    backend: str = "docker",
    limit_mb: int | None = LIMIT_MB,
    interval_s: float = INTERVAL_S,
    timeout_s: float = TIMEOUT_S,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Measure one cell into the run directory ``out`` (new or empty); return it."""
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} exists and is not an empty directory")
    limited = _limited(cell, backend, limit_mb)
    options = cell_options(cell, backend, limit_mb, timeout_s)
    spec = BY_RUNTIME[cell.runtime]
    parameters = {
        "stack": spec.name,
        "cell": cell.parameters(),
        "limit_mb": limit_mb if limited else None,
        "traced": cell.traced,
        "interval_s": interval_s,
        "timeout_s": timeout_s,
        "options": options.as_dict(),
        **(extra or {}),
    }
    writer = RunWriter(
        out,
        "memory",
        parameters,
        stack=spec.name,
        style="http",
        stack_spec=spec.declaration(),
        backend=backend,
    )
    with writer.guard():
        stack = get_backend(backend).start(spec, options, logs_dir=out / "logs")
        try:
            writer.event("stack_up", gateway_url=stack.gateway_url)
            writer.update_manifest(**describe_stack(stack))  # the data service's backend
            answer, sampler = _ask_sampled(stack, cell, out, writer, interval_s, timeout_s)
            ended = memory.outcome(stack, "data")
            edge = memory.outcome(stack, spec.gateway)  # the edge must not be what failed
            peak = memory.peak(stack, "data")
        finally:
            stack.stop()
            writer.event("stack_down")
        heap = jvm_heap.record(out)  # the JVM's own GC log, from the roles' logs
        completed = answer["http_status"] == 200 and answer["elements"] == str(cell.count)
        summary = {
            "cell": cell.parameters(),
            "backend": backend,
            "limit_mb": limit_mb if limited else None,
            "completed": completed,
            **answer,
            **{f"data_{k}": v for k, v in ended.items()},
            **{f"edge_{k}": v for k, v in edge.items()},
            **out_of_memory(cell, ended, answer),
            "peak_rss_bytes": sampler.peaks.get("rss_bytes"),
            "peak_usage_bytes": sampler.peaks.get("usage_bytes"),
            "cgroup_peak_bytes": peak,
            "samples": sampler.samples,
            "heap": heap or None,  # per JVM role (heap.csv): None for Python's
        }
        writer.write_json("summary.json", summary)
    writer.finish("complete")
    return out


def _ask_sampled(
    stack: RunningStack,
    cell: MemoryCell,
    out: Path,
    writer: RunWriter,
    interval_s: float,
    timeout_s: float,
) -> tuple[dict[str, Any], _Sampler]:
    """The cell's one request, the data service's memory sampled from before it (its idle
    footprint) to after it into ``memory.csv``; the answer and the sampler (its peaks)."""
    samples = CsvAppender(out / "memory.csv", COLUMNS)
    sampler = _Sampler(memory.reader(stack, "data"), samples, interval_s)
    sampler.start()
    try:
        time.sleep(10 * interval_s)  # the idle footprint first
        writer.event("request", cell=cell.key)
        url = f"{stack.gateway_url}/{cell.fmt}/{cell.structure}?count={cell.count}"
        answer = _ask(url, timeout_s)
        writer.event("answer", **answer)
        time.sleep(10 * interval_s)
    finally:
        sampler.halt.set()
        sampler.join(timeout=5)
        samples.close()
    return answer, sampler


def out_of_memory(
    cell: MemoryCell, ended: Mapping[str, Any], answer: Mapping[str, Any]
) -> dict[str, Any]:
    """How the cell ran out of memory, if it did: ``heap_exhausted`` (the JVM ended itself
    on a full heap, exit code 3, or answered ``out_of_memory``) and ``out_of_memory`` (that
    or the kernel's kill, ``data_oom_killed``)."""
    exited_full = cell.runtime == "jvm" and ended.get("exit_code") == JVM_OOM_EXIT
    answered_full = '"out_of_memory"' in str(answer.get("error") or "")
    heap = bool(exited_full or answered_full)
    return {"heap_exhausted": heap, "out_of_memory": bool(heap or ended.get("oom_killed"))}


@dataclass(frozen=True)
class Plan:
    """The memory experiment of a profile: every count x format, ``repetitions`` times, the
    cells shuffled within each repetition."""

    counts: tuple[int, ...] = COUNTS
    formats: tuple[str, ...] = FORMATS
    repetitions: int = 1
    traced_repetitions: int = 1  # cells with the allocations traced (descriptive, unjudged)
    json_libraries: tuple[str, ...] = ("orjson",)
    order_seed: int = 2021
    # the counts whose cells are traced too (None: every count); tracing the larger count
    # takes ~40 s a cell on 2 cores, most of the quick profile's memory experiment
    traced_counts: tuple[int, ...] | None = None
    # the runtimes whose cells it runs (the JVM: its cells under each heap policy of
    # ``jvm_heaps``, ``repetitions`` times each); ("jvm",) alone adds the JVM's cells beside
    # Python's already made
    runtimes: tuple[str, ...] = ("python",)
    # the JVM's heap policies (stacks.HEAPS): the thesis's, which the claims read, first
    jvm_heaps: tuple[str, ...] = (THESIS_HEAP, "default")

    def __post_init__(self) -> None:
        unknown = [h for h in self.jvm_heaps if h not in HEAPS]
        if unknown or len(set(self.jvm_heaps)) != len(self.jvm_heaps):
            raise ValueError(f"jvm_heaps {self.jvm_heaps}: each once, of {', '.join(HEAPS)}")

    def cells(self) -> list[tuple[int, MemoryCell]]:
        """Every (repetition, cell), each repetition's cells shuffled together (every
        runtime's): the Python cells drawn as before the runtime was a factor when the
        plan has Python alone."""
        rng = random.Random(self.order_seed)
        python = "python" in self.runtimes  # a plan of the JVM's cells alone adds them later
        every = cells(self.counts, self.formats, self.json_libraries) if python else []
        jvm = [
            c
            for heap in (self.jvm_heaps if "jvm" in self.runtimes else ())
            for c in cells(self.counts, self.formats, runtime="jvm", heap=heap)
        ]
        out = []
        for rep in range(1, max(self.repetitions, self.traced_repetitions) + 1):
            block = list(every) if rep <= self.repetitions else []
            if rep <= self.traced_repetitions:
                block += [replace(c, traced=True) for c in every if self._traced(c.count)]
            block += jvm if rep <= self.repetitions else []
            rng.shuffle(block)
            out.extend((rep, c) for c in block)
        return out

    def _traced(self, count: int) -> bool:
        return self.traced_counts is None or count in self.traced_counts


# 7 in the full profile: an outcome (0/1) or a size is the same in every run, and the exact
# permutation test needs n >= 6 to survive Holm over the memory family's 7 claims (2 / C(12,
# 6) = 0.0022 < 0.05 / 7; 5 runs give 0.0079, above it), so 7, as the procedure's
# (procedure.REPETITIONS_FULL); the JSON encoder is a factor (the full profile runs the
# standard library's too), and so is the runtime: the JVM's cells 7 times under each heap
# policy, the thesis's (which the claims read) and the JVM's own default
PLANS = {
    # the allocation peak traced at the smaller count only (the larger one's untraced cells
    # still give its outcome and resident peak)
    "quick": Plan(repetitions=1, traced_counts=(100_000,)),
    "full": Plan(repetitions=7, json_libraries=("orjson", "json"), runtimes=("python", "jvm")),
}


def _reusable(path: Path, rep: int, cell: MemoryCell, backend: str, limit_mb: int | None) -> bool:
    """A complete run of ``cell`` and ``rep`` is at ``path``, made by the current code with
    the same limit and knobs: the JVM's flags (its heap policy, its GC log) among them."""
    try:
        r = read_run(path)
    except ValueError:
        return False
    limit = limit_mb if _limited(cell, backend, limit_mb) else None
    wanted = (cell.parameters(), rep, limit, cell_options(cell, backend, limit_mb).extra_env)

    def same(p: Mapping[str, Any]) -> bool:
        got = (p.get("options") or {}).get("extra_env")
        return (p.get("cell"), p.get("repetition"), p.get("limit_mb"), got) == wanted

    spec = BY_RUNTIME[cell.runtime].declaration()
    return reusable(r.manifest, backend=backend, stack_spec=spec, same_parameters=same)


def pending(
    plan: Plan, root: Path, *, backend: str = "docker", limit_mb: int | None = LIMIT_MB
) -> list[tuple[int, MemoryCell]]:
    """The (repetition, cell) pairs of ``plan`` that :func:`run_plan` would measure: no
    reusable run of them under ``root``."""
    return [
        (rep, cell)
        for rep, cell in plan.cells()
        if not _reusable(Path(root) / f"{cell.key}-r{rep}", rep, cell, backend, limit_mb)
    ]


def run_plan(
    plan: Plan,
    root: Path,
    *,
    backend: str = "docker",
    limit_mb: int | None = LIMIT_MB,
    progress: Callable[[str], None] = print,
) -> list[Run]:
    """Every cell of ``plan`` as ``root/<cell>-r<repetition>``, reusing a complete run made
    with the same parameters (a crash or a rerun loses nothing finished); their runs."""
    todo = plan.cells()
    out = []
    for i, (rep, cell) in enumerate(todo, 1):
        path = Path(root) / f"{cell.key}-r{rep}"
        label = f"[{i}/{len(todo)}] {path.name}"
        if _reusable(path, rep, cell, backend, limit_mb):
            progress(f"{label}: reused")
            out.append(read_run(path))
            continue
        if path.exists():
            shutil.rmtree(path)  # unfinished or made with other parameters: redo it
        run_cell(cell, path, backend=backend, limit_mb=limit_mb, extra={"repetition": rep})
        r = read_run(path)
        s = r.summary
        verdict = "completed" if s["completed"] else (
            "OOM-killed" if s["data_oom_killed"] else
            "heap exhausted" if s.get("heap_exhausted") else "not completed")  # fmt: skip
        peak = max(v for v in (s["peak_rss_bytes"], s["peak_usage_bytes"], 0) if v is not None)
        committed = ((s.get("heap") or {}).get("data") or {}).get("committed_peak_bytes")
        heap = f", heap committed {committed / 2**20:.0f} MiB" if committed else ""
        progress(f"{label}: {verdict}, peak {peak / 2**20:.0f} MiB{heap}, {s['elapsed_s']} s")
        out.append(r)
    return out
