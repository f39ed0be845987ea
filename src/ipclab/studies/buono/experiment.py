"""Buono & Petrović 2021 from end to end, for notebook 05: run the procedure (timings and
sizes, :mod:`procedure`) and the memory experiment (:mod:`memory`), analyse them
(:mod:`analysis`), set them beside the thesis's numbers and claims, write the results.

What the summary tables hold:

* ``sizes``: the answer's body as sent per structure, count and compression, JSON against
  Protobuf, and the reduction (J - P) / J beside the thesis's range (25.80 % to 72.28 %);
* ``processing``: the nested POST with gzip and no cache (Fig. 28), the data service's
  gunzip + deserialisation time and the client's time per format, the difference J - P in
  ms and in % with 95 % intervals (Welch's for the difference, log-ratio for the %) beside
  25.1 % and 164.3 ms;
* ``table3``: Table 3's request counts (1, 5, 50, 100) as the first N requests of each cell,
  per runtime; ``table3_conditions``: the thesis's Table 3 beside the conditions run;
* ``memory``: each memory cell's outcome (completed, OOM-killed) and peaks;
* ``claims``: every claim's verdict for the primary JSON encoder (orjson) and, where the
  runs have it, beside it the verdict with the standard library's encoder.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.stats as sps

from ipclab.claims import mark_underpowered, run_hours
from ipclab.experiments import Experiment, load_runs
from ipclab.paths import from_repo
from ipclab.runs import DEFAULT_ROOT, Run
from ipclab.stats import interval_text, log_ratio_interval, t_interval
from ipclab.stats.plausibility_runs import annotate
from ipclab.studies.buono import analysis, heap, memory, procedure, throughput
from ipclab.studies.buono.stacks import BY_RUNTIME, ENCODERS, THESIS_HEAP

PRIMARY_ENCODER = "orjson"
STDLIB_CLAIMS = "claims_stdlib"  # the claims table with the standard library's encoder
JVM_ENCODER = ENCODERS["jvm"][0]
JVM_CLAIMS = "claims_jvm"  # the claims table of the services on the JVM
JVM_PROFILES = ("full",)  # the profiles that run the JVM's stack too
#: each runtime's JSON encoder whose rows the per-runtime tables and figures read
RUNTIME_ENCODERS = {"python": PRIMARY_ENCODER, "jvm": JVM_ENCODER}
#: the thesis's Table 3, copied exactly (section 4.4): structure, request count, request
#: types, data generation count
TABLE3_SOURCE = "Buono & Petrović 2021, section 4.4, Table 3 – Testing conditions"
THESIS_TABLE3 = (
    ("Flat (simple)", "1, 5, 50, 100", "GET, POST", "Up to to 300 000"),
    ("Nested (complex)", "1, 5, 50, 100", "GET, POST", "Up to 650"),
)
DEVIATIONS = [
    "Python services (uvicorn, orjson or the standard library's json, protobuf on upb) as "
    "the primary set-up; the full profile also runs the same services on the JVM (Quarkus "
    "in JVM mode with its Vert.x routes in place of RESTEasy, Jackson, protobuf-java: "
    "services/java/payload), the runtime a factor with its own claims table (the thesis "
    "does not say per figure whether it ran the JVM or a GraalVM native image; no native "
    "image here); absolute times are not comparable, orderings and ratios are what is "
    "judged.",
    "docker compose (or local processes) in place of a KIND Kubernetes cluster; the 400 MB "
    "limit is the data service container's mem_limit (the edge service has the same).",
    "Locust with one user in place of JMeter: one discarded warm-up request, then N "
    "sequential requests per cell, cells in a seeded random order within each run, 7 "
    "repetitions in the full profile and 3 in the quick one (the thesis ran each cell once).",
    "Table 3's request counts 1, 5, 50, 100 read as the first N requests of a cell's "
    "sequence (the thesis does not say how they map to runs).",
    "Request Processing Time (undefined in the thesis) read two ways: the data service's "
    "own time from Server-Timing (deserialisation, plus gunzip with gzip on) and the "
    "client's response time.",
    "Data generated from a seed (not Faker): 2 transactions of 3 items per payment (the "
    "thesis gives no numbers); every user's age non-zero.",
    "Flat 100,000 and 300,000 are measured by the memory experiment (one request per run, "
    "its size and memory), not by 100 sequential requests.",
    "Memory is the data service's memory sampled at 20 Hz (in a container the cgroup's "
    "usage, which the limit counts, and its rss; psutil's resident memory locally), not "
    "JConsole's heap: 'transient memory' is read as the peak resident memory minus the idle "
    "footprint before the request. The JVM's committed ('requested') heap (B16c) is read "
    "from the JVM's own GC log (-Xlog:gc, gc+init, gc+heap: heap.csv, one row per "
    "collection) where a heap exists, on the JVM; a Python process has none, so B16c stays "
    "inconclusive on Python; the local backend has no memory limit, so only the docker "
    "backend can OOM-kill.",
    "The heap, chosen to match what the thesis ran. Its JVM image (Fig. 40: OpenJDK 11 "
    "started by run-java.sh 1.3.8, which for Java 10 or later adds no -Xmx without "
    "JAVA_MAX_MEM_RATIO, only -XX:+ExitOnOutOfMemoryError) leaves the heap to the JVM's "
    "ergonomics: a JVM that sees the pod's 400 MB takes a quarter, raised to HotSpot's "
    "small-machine floor (126 MiB), under the Serial collector, and ends itself on a full "
    "heap (exit code 3). That JVM cannot give the thesis's results: here it ends both "
    "formats at 300,000 users by its full heap, where the thesis's Protobuf completed and "
    "its Jackson was killed by 'the Docker's memory constraints' after it 'allocated more "
    "memory'; both need a heap that can grow to the container's limit (as it does when the "
    "JVM does not see the pod's limit, or is told to use it). So every JVM run (memory and "
    "procedure alike) runs as the thesis's pods did: both containers under the 400 MB "
    "limit, the heap's maximum at that limit (-XX:MaxRAMPercentage=100, the policy 'limit'), "
    "the collector a JVM picks in 400 MB (Serial, stated: -XX:+UseSerialGC) and the memory it "
    "sizes itself from (-XX:MaxRAM=400m, so a local JVM sizes itself as in the container), "
    "-XX:+ExitOnOutOfMemoryError, and its GC log; the policy and flags are in each run's "
    "options and the JVM's own report of them (final values, as jcmd VM.flags gives them) "
    f"in its manifest. The claims read the JVM's memory runs under that policy "
    f"({memory.PLANS['full'].repetitions} per cell in the full profile); the same cells "
    "under the JVM's own default heap (policy 'default', as many) say what the heap policy "
    "does and are not judged. The JSON out-of-memory claims (B02e, B12a, B16a) rest on this "
    "choice. No heap cap on Python: the data service can use the whole 400 MB before the "
    "kernel OOM-kills it. Not run: a JVM that does not see "
    "its limit (it would size itself from the node's memory, which the thesis does not "
    "give) and a GraalVM native image (the thesis does not say which mode ran Figs. 32-35; "
    "JConsole and 'heap and metaspace' point to the JVM).",
    "Versions (results/environment.csv lists what every run recorded, beside the thesis's "
    "Tables 1 and 2): the JVM set runs OpenJDK 17 (HotSpot, JVM mode) in place of Java SDK "
    "v14.0.1 on GraalVM CE 21.1.0, Quarkus 3.33.2 in place of v1.13.3.Final (Vert.x routes "
    "in place of RESTEasy v1.13.3.Final), Jackson 2.21.2 in place of the thesis's 'Jackson "
    "V1.13.3.Final' (its Quarkus extension), protobuf-java 4.36.2 in place of Protobuf "
    "v1.8.1 (camel-quarkus-protobuf), and ipclab's own gzip (java.util.zip; zlib in Python) "
    "in place of Quarkus's Gzip v2.3.2.Final; the Python set runs CPython 3.11 with "
    "protobuf 7.36 (upb) in place of Protobuf v1.8.1 and orjson in place of Jackson; "
    "Docker engine 20.10 in place of Docker 19.03.9 (client) and 19.03.8 (server), with no "
    "Kind v0.10.0 or Kubernetes v1.14.0; a 2-core AMD EPYC virtual machine in place of an "
    "Intel Core i9-9900K with 64GB, Linux in place of Windows 10 Pro.",
]


@dataclass
class Experiments:
    """The study's experiments for a profile and backend: the thesis's procedure, the
    memory experiment and, beyond the thesis, throughput under closed-loop users."""

    procedure: Experiment
    memory_plan: memory.Plan
    memory_root: Path
    throughput: list[Experiment]
    backend: str
    procedure_jvm: Experiment | None = None  # the procedure on the JVM (the runtime factor)

    def all(self) -> list[Experiment]:
        jvm = [self.procedure_jvm] if self.procedure_jvm is not None else []
        return [self.procedure, *jvm, *self.throughput]


def experiments(
    profile: str = "quick", backend: str = "local", root: Path = DEFAULT_ROOT
) -> Experiments:
    """The experiments of a profile; their runs go under
    ``<root>/buono-<profile>-<backend>/{procedure,memory,throughput-*}/``."""
    base = from_repo(root) / f"buono-{profile}-{backend}"
    jvm = profile in JVM_PROFILES
    return Experiments(
        procedure=procedure.experiment(profile, backend, base, name="procedure"),
        memory_plan=memory.PLANS[profile],
        memory_root=base / "memory",
        throughput=throughput.experiments(profile, backend, base),
        backend=backend,
        procedure_jvm=procedure.experiment(
            profile, backend, base, name="procedure-jvm", runtime="jvm"
        )
        if jvm
        else None,
    )


Runs = tuple[list[Run], list[Run], list[Run]]  # procedure (every runtime's), memory, throughput


def record_heaps(runs: Sequence[Run]) -> int:
    """``heap.csv`` for each JVM procedure run whose logs hold its JVMs' GC log
    (:func:`heap.record`; a run that has one, or whose logs are gone, is left as it is);
    how many were written."""
    stack = BY_RUNTIME["jvm"].name
    written = 0
    for r in runs:
        logs, made = r.path / "logs" / stack, (r.path / heap.HEAP_CSV).exists()
        if r.manifest.get("stack") == stack and logs.is_dir() and not made:
            written += bool(heap.record(r.path, logs))
    return written


def run(e: Experiments, progress: Callable[[str], None] = print) -> Runs:
    """Run (or reuse) every run of the experiments; their runs."""
    runs = e.procedure.run(progress)
    if e.procedure_jvm is not None:
        runs = [*runs, *e.procedure_jvm.run(progress)]
        record_heaps(runs)
    mem = memory.run_plan(e.memory_plan, e.memory_root, backend=e.backend, progress=progress)
    return runs, mem, throughput.run(e.throughput, progress)


def run_jvm(e: Experiments, progress: Callable[[str], None] = print) -> Runs:
    """The JVM's runs alone: the procedure on the JVM and the JVM's memory cells, added to a
    profile whose Python runs are made already (a committed reference); none elsewhere."""
    if e.procedure_jvm is None:
        raise ValueError("this profile runs no JVM cells")
    runs = e.procedure_jvm.run(progress)
    record_heaps(runs)
    plan = replace(e.memory_plan, runtimes=("jvm",))
    mem = memory.run_plan(plan, e.memory_root, backend=e.backend, progress=progress)
    return runs, mem, []


def load(e: Experiments) -> Runs:
    """The runs the experiments have on disk (a committed reference, for one)."""
    mem = load_runs(e.memory_root) if e.memory_root.is_dir() else []
    tp = [r for x in e.throughput if x.directory.is_dir() for r in load_runs(x.directory)]
    procedures = [e.procedure, *([e.procedure_jvm] if e.procedure_jvm is not None else [])]
    return [r for x in procedures if x.directory.is_dir() for r in load_runs(x.directory)], mem, tp


@dataclass
class Analysis:
    requests: pd.DataFrame
    cells: pd.DataFrame
    memory: pd.DataFrame
    sizes: pd.DataFrame
    processing: pd.DataFrame
    codec: pd.DataFrame
    table3: pd.DataFrame
    claims: pd.DataFrame
    encoders: pd.DataFrame
    claims_stdlib: pd.DataFrame
    power: pd.DataFrame
    throughput: pd.DataFrame
    throughput_summary: pd.DataFrame
    environment: dict[str, Any] = field(default_factory=dict)
    # the runtime factor: every claim judged on the JVM's runs, and each claim's verdict on
    # Python (orjson) beside the JVM's (empty without JVM runs)
    claims_jvm: pd.DataFrame = field(default_factory=pd.DataFrame)
    runtimes: pd.DataFrame = field(default_factory=pd.DataFrame)
    # ``sizes`` on the JVM's runs (its memory runs with the heap its claims are judged on)
    sizes_jvm: pd.DataFrame = field(default_factory=pd.DataFrame)


def _welch_difference(
    a: np.ndarray, b: np.ndarray, confidence: float = 0.95
) -> tuple[float, float, float]:
    """mean(a) - mean(b) with Welch's interval (NaN bounds with fewer than 2 per side)."""
    d = float(a.mean() - b.mean())
    if len(a) < 2 or len(b) < 2:
        return d, math.nan, math.nan
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return d, d, d
    dof = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    q = float(sps.t.ppf(0.5 + confidence / 2, dof))
    return d, d - q * se, d + q * se


def processing_table(cells: pd.DataFrame, encoder: str = PRIMARY_ENCODER) -> pd.DataFrame:
    """Fig. 28's cells (nested POST, gzip on, no cache): JSON against Protobuf per count."""
    sel = cells[
        (cells["structure"] == "nested") & (cells["method"] == "POST") & cells["gzip"]
        & ~cells["cache"] & (cells["json_library"] == encoder)
    ]  # fmt: skip
    rows = []
    for count in sorted(sel["count"].unique()):
        for metric in ("server_ms", "deser_ms", "response_ms"):
            j = sel[(sel["count"] == count) & (sel["fmt"] == "json")][metric].to_numpy(float)
            p = sel[(sel["count"] == count) & (sel["fmt"] == "protobuf")][metric].to_numpy(float)
            if not len(j) or not len(p):
                continue
            d, lo, hi = _welch_difference(j, p)
            r = log_ratio_interval([(1, [p]), (-1, [j])])  # P / J
            tj, tp = t_interval(j), t_interval(p)
            rows.append(
                {
                    "count": int(count), "metric": metric, "runs": min(len(j), len(p)),
                    "json_ms": tj.estimate, "json_low": tj.low, "json_high": tj.high,
                    "protobuf_ms": tp.estimate, "protobuf_low": tp.low, "protobuf_high": tp.high,
                    "difference_ms": d, "difference_low": lo, "difference_high": hi,
                    "faster_pct": 100 * (1 - r.estimate),
                    "faster_pct_low": 100 * (1 - r.high), "faster_pct_high": 100 * (1 - r.low),
                    "thesis": "25.1 % (164.3 ms) faster, the best case" if count == 650 else "",
                }
            )  # fmt: skip
    return pd.DataFrame(rows)


def codec_table(cells: pd.DataFrame, encoder: str = PRIMARY_ENCODER) -> pd.DataFrame:
    """Fig. 28's variant (nested, gzip on, no cache): the (de)serialisation alone
    (``codec_ms``: ``ser`` of a GET, ``deser`` of a POST, no gzip or gunzip) per count and
    method, JSON against Protobuf, means over runs with 95 % t intervals and P / J with its
    log-ratio interval (the claims B06a and B06b read these cells)."""
    sel = cells[
        (cells["structure"] == "nested") & cells["gzip"] & ~cells["cache"]
        & (cells["json_library"] == encoder)
    ]  # fmt: skip
    rows = []
    for (count, method), g in sel.groupby(["count", "method"]):
        j = g.loc[g["fmt"] == "json", "codec_ms"].dropna().to_numpy(float)
        p = g.loc[g["fmt"] == "protobuf", "codec_ms"].dropna().to_numpy(float)
        if not len(j) or not len(p):
            continue
        tj, tp = t_interval(j), t_interval(p)
        r = log_ratio_interval([(1, [p]), (-1, [j])])
        rows.append(
            {
                "count": int(count), "method": method,
                "phase": "serialisation" if method == "GET" else "deserialisation",
                "runs": min(len(j), len(p)),
                "json_ms": tj.estimate, "json_low": tj.low, "json_high": tj.high,
                "protobuf_ms": tp.estimate, "protobuf_low": tp.low, "protobuf_high": tp.high,
                "pb_over_json": r.estimate, "pb_over_json_low": r.low,
                "pb_over_json_high": r.high,
            }
        )  # fmt: skip
    return pd.DataFrame(rows)


_FORMATS = ("json", "protobuf")
_CASES = {
    ("flat", False): "worst case 25.80 % (Fig. 30, compression not printed)",
    ("flat", True): "best flat case 58.2 % (Fig. 29, flat 5 with gzip)",
    ("nested", False): "64.54 % worst to 72.28 % best (Fig. 31, compression not printed)",
    ("nested", True): "64.54 % worst to 72.28 % best (Fig. 31, compression not printed)",
}


def sizes_table(cells: pd.DataFrame, mem: pd.DataFrame) -> pd.DataFrame:
    """Bytes of the answer as sent, JSON against Protobuf, per structure, count and gzip
    (GET, no cache; flat 100,000 and 300,000 from the memory runs, raw)."""
    parts = []
    if not cells.empty:
        g = cells[(cells["method"] == "GET") & ~cells["cache"]]
        parts.append(g[["structure", "count", "gzip", "fmt", "body_bytes", "header_bytes"]])
    if not mem.empty:
        m = mem[mem["completed"]].assign(gzip=False)
        parts.append(m[["structure", "count", "gzip", "fmt", "body_bytes", "header_bytes"]])
    if not parts:
        return pd.DataFrame()
    allb = pd.concat(parts, ignore_index=True)
    med = allb.groupby(["structure", "count", "gzip", "fmt"]).agg(
        body=("body_bytes", "median"), spread=("body_bytes", lambda s: float(s.max() - s.min())),
        header=("header_bytes", "median"),
    )  # fmt: skip
    wide = med.unstack("fmt")
    rows = []
    for (structure, count, gz), r in wide.iterrows():
        j, p = r.get(("body", "json"), np.nan), r.get(("body", "protobuf"), np.nan)
        rows.append(
            {
                "structure": structure, "count": int(count), "gzip": bool(gz),
                "json_bytes": j, "protobuf_bytes": p,
                "reduction_pct": 100 * (j - p) / j if np.isfinite(j) and np.isfinite(p) else np.nan,
                "json_header_bytes": r.get(("header", "json"), np.nan),
                "protobuf_header_bytes": r.get(("header", "protobuf"), np.nan),
                "bytes_vary": bool(np.nansum([r.get(("spread", f), 0) for f in _FORMATS])),
                "thesis": _CASES[(structure, bool(gz))],
            }
        )  # fmt: skip
    return pd.DataFrame(rows)


def table3(requests: pd.DataFrame, encoder: str = PRIMARY_ENCODER) -> pd.DataFrame:
    """Table 3's request counts: the mean response time over the first 1, 5, 50, 100
    requests of each cell (gzip off, no cache), mean over runs with its 95 % interval."""
    rows = []
    sel = requests[(requests["json_library"] == encoder) & ~requests["gzip"] & ~requests["cache"]]
    for k in (1, 5, 50, 100):
        if sel.empty or sel["seq"].max() < k:
            continue
        c = analysis.cell_table(sel, first=k)
        for (structure, method, count, fmt), g in c.groupby(
            ["structure", "method", "count", "fmt"]
        ):
            ci = t_interval(g["response_ms"].to_numpy(float))
            rows.append({"requests": k, "structure": structure, "method": method, "count": count,
                         "fmt": fmt, "runs": ci.n, "response_ms": ci.estimate,
                         "low": ci.low, "high": ci.high})  # fmt: skip
    return pd.DataFrame(rows)


def table3_by_runtime(requests: pd.DataFrame) -> pd.DataFrame:
    """:func:`table3` for each runtime whose runs are there (Python: orjson; the JVM:
    Jackson), one after the other with a ``runtime`` column."""
    if requests.empty:
        return pd.DataFrame()
    parts = [table3(requests, encoder).assign(runtime=runtime)
             for runtime, encoder in RUNTIME_ENCODERS.items()]  # fmt: skip
    parts = [t for t in parts if len(t)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _counts(values: Any) -> str:
    """Generation counts as the thesis prints them (a space between thousands)."""
    return ", ".join(f"{int(v):,}".replace(",", " ") for v in sorted(set(values)))


def conditions_table(t3: pd.DataFrame, cells: pd.DataFrame, mem: pd.DataFrame) -> pd.DataFrame:
    """Table 3 (the testing conditions) as the thesis prints it, then per runtime and
    structure what the reference ran: the request counts ``t3`` (:func:`table3_by_runtime`)
    reads, the methods, the generation counts (the procedure's; the memory experiment's
    apart) and the runs per cell of the procedure."""
    rows = [{"source": TABLE3_SOURCE, "runtime": "", "data structure": s, "request count": n,
             "request types": m, "data generation count": c, "runs per cell": ""}
            for s, n, m, c in THESIS_TABLE3]  # fmt: skip
    for runtime, encoder in RUNTIME_ENCODERS.items():
        ran = cells[cells["json_library"] == encoder] if len(cells) else cells
        for structure, g in ran.groupby("structure") if len(ran) else ():
            reads = t3[(t3["runtime"] == runtime) & (t3["structure"] == structure)]
            m = mem[(mem["json_library"] == encoder) & (mem["structure"] == structure)
                    & ~mem["traced"].astype(bool)] if len(mem) else mem  # fmt: skip
            runs = g.groupby(["method", "count", "fmt", "gzip", "cache"])["run"].nunique()
            counts = _counts(g["count"]) + (f"; memory: {_counts(m['count'])}" if len(m) else "")
            rows.append({"source": "ipclab (this reference)", "runtime": runtime,
                         "data structure": structure,
                         "request count": ", ".join(str(k) for k in sorted(set(reads["requests"]))),
                         "request types": ", ".join(sorted(set(g["method"]))),
                         "data generation count": counts,
                         "runs per cell": f"{runs.min()}" if runs.min() == runs.max()
                         else f"{runs.min()}-{runs.max()}"})  # fmt: skip
    return pd.DataFrame(rows)


def _write_evolution(results: Any) -> None:
    """The schema-evolution checks (Table 4 and Figs. 24-26 and 42 run, not argued): facts of
    protoc and the protobuf runtime, the same in every reference (no measurement)."""
    from dataclasses import asdict

    from ipclab.studies.buono import evolution

    rows = pd.DataFrame([asdict(o) for o in evolution.outcomes()])
    results.table(rows, "evolution", "Table 4's rules and Figs. 24-26 and 42 run: v1/v2 of "
                  "a message written by one and read by the other, protoc on reserved tags "
                  "and names, and the JSON mapping on a reused name (safe: the data keeps its "
                  "meaning, is refused or dropped; False: misread). Facts of protoc and the "
                  "protobuf runtime, no measurement.")  # fmt: skip
    ints = pd.DataFrame(
        [
            {"writer": r.writer, "value": r.value, "wire": r.wire.hex(),
             **{f"read_as_{k}": v for k, v in r.read.items()}}
            for r in evolution.int_reads()
        ]
    )  # fmt: skip
    results.table(ints, "evolution_ints", "Table 4's compatible integer types, value by value: "
                  "what each reader type reads from the writer's bytes.")  # fmt: skip


def grid_table(cells: pd.DataFrame) -> pd.DataFrame:
    """Every cell of the grid that ran: its coordinates, runs and measured requests."""
    keys = ["structure", "method", "count", "fmt", "gzip", "cache", "json_library"]
    return cells.groupby(keys).agg(runs=("run", "nunique"), requests=("n", "sum")).reset_index()


def analyse(
    procedure_runs: list[Run], memory_runs: list[Run], throughput_runs: Sequence[Run] = ()
) -> Analysis:
    req = analysis.requests_frame(procedure_runs)
    tp = throughput.runs_table(list(throughput_runs))
    cells = analysis.cell_table(req)
    mem = analysis.memory_table(memory_runs)
    table = analysis.runs_table(cells, mem, PRIMARY_ENCODER)
    power = analysis.power(table) if len(table) else pd.DataFrame()
    made_by = {"procedure": procedure_runs, "memory": memory_runs}
    claims = _judged(table, power, _of_runtime(made_by, "python"))
    encoders = claims[["claim_id", "comparison", "verdict"]].rename(
        columns={"verdict": PRIMARY_ENCODER}
    )
    std = pd.DataFrame()
    if not cells.empty and (cells["json_library"] == "json").any():
        std = analysis.evaluate(annotate(analysis.runs_table(cells, mem, "json"), procedure_runs))
        encoders["json"] = std["verdict"].to_numpy()
    jvm, runtimes = _jvm_claims(claims, cells, mem, _of_runtime(made_by, "jvm"))
    env = {}
    for r in procedure_runs[:1]:
        p = r.path / "server.json"
        if p.exists():
            import json

            d = json.loads(p.read_text())
            env = {"protobuf": d.get("protobuf"), "implementation": d.get("implementation")}
    return Analysis(
        requests=req, cells=cells, memory=mem,
        sizes=sizes_table(_python_rows(cells), _python_rows(mem)),
        processing=_per_runtime(processing_table, cells),
        codec=codec_table(cells) if not cells.empty else pd.DataFrame(),
        table3=table3_by_runtime(req),
        claims=claims, encoders=encoders, claims_stdlib=std, environment=env,
        power=power,
        throughput=tp, throughput_summary=throughput.summary(tp),
        claims_jvm=jvm, runtimes=runtimes, sizes_jvm=_jvm_sizes(cells, mem),
    )  # fmt: skip


def _per_runtime(
    table: Callable[[pd.DataFrame, str], pd.DataFrame], cells: pd.DataFrame
) -> pd.DataFrame:
    """``table(cells, encoder)`` for Python's primary encoder and, where the runs have it,
    the JVM's, one after the other with a ``runtime`` column."""
    if cells.empty:
        return pd.DataFrame()
    parts = [table(cells, PRIMARY_ENCODER).assign(runtime="python")]
    if (cells["json_library"] == JVM_ENCODER).any():
        parts.append(table(cells, JVM_ENCODER).assign(runtime="jvm"))
    return pd.concat(parts, ignore_index=True)


def _jvm_sizes(cells: pd.DataFrame, mem: pd.DataFrame) -> pd.DataFrame:
    """Body bytes as the JVM sent them: its procedure's cells and its memory runs with the
    heap its claims are judged on (empty without JVM runs)."""
    if "runtime" not in cells.columns or not (cells["runtime"] == "jvm").any():
        return pd.DataFrame()
    m = mem[mem["runtime"] == "jvm"] if "runtime" in mem.columns else mem.iloc[0:0]
    if "heap" in m.columns:
        m = m[m["heap"] == THESIS_HEAP]
    return sizes_table(cells[cells["runtime"] == "jvm"], m)


def _python_rows(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["runtime"] == "python"] if "runtime" in df.columns else df


def _of_runtime(made_by: dict[str, list[Run]], runtime: str) -> dict[str, list[Run]]:
    """Each family's runs made on ``runtime`` (by the stack their manifest names)."""
    stack = BY_RUNTIME[runtime].name
    return {f: [r for r in runs if r.manifest.get("stack") == stack] for f, runs in made_by.items()}


def _judged(
    table: pd.DataFrame, power: pd.DataFrame, made_by: dict[str, list[Run]]
) -> pd.DataFrame:
    """Every claim on ``table``, each family's tests marked underpowered at the wall time of
    that family's own runs (``made_by``)."""
    every = [r for runs in made_by.values() for r in runs]  # flagged cells named per claim
    claims = analysis.evaluate(annotate(table, every))
    for family, runs in made_by.items():
        if len(power):
            hours = run_hours([r.manifest for r in runs])
            claims = mark_underpowered(claims, power[power["family"] == family], hours)
    return claims


def _jvm_claims(
    claims: pd.DataFrame, cells: pd.DataFrame, mem: pd.DataFrame, made_by: dict[str, list[Run]]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every claim judged on the JVM's runs (its procedure cells and its memory cells under
    the thesis's heap policy), and per claim the verdict on Python beside the JVM's,
    ``changes`` where they differ; two empty tables without JVM runs."""
    on_jvm = (not cells.empty and (cells["json_library"] == JVM_ENCODER).any()) or (
        not mem.empty and (mem["runtime"] == "jvm").any()
    )
    if not on_jvm:
        return pd.DataFrame(), pd.DataFrame()
    table = analysis.runs_table(cells, mem, JVM_ENCODER)
    jvm = _judged(table, analysis.power(table) if len(table) else pd.DataFrame(), made_by)
    both = claims[["claim_id", "comparison", "verdict"]].merge(
        jvm[["claim_id", "verdict"]], on="claim_id", how="left", suffixes=("_python", "_jvm")
    )
    both = both.rename(columns={"verdict_python": "python", "verdict_jvm": "jvm"})
    both["changes"] = both["python"] != both["jvm"]
    return jvm, both


def write_results(a: Analysis, results: Any) -> None:
    """Every table and figure into ``results`` (a ``StudyResults``)."""
    import matplotlib.pyplot as plt

    from ipclab.studies.buono import figures

    results.deviations = DEVIATIONS
    if len(a.sizes):
        results.table(a.sizes, "sizes", "Body bytes as sent (GET, no cache), JSON against "
                      "Protobuf, and the reduction (J - P) / J, beside the thesis's case. "
                      "Bytes are the same in every run (the data is seeded).")  # fmt: skip
    if len(a.sizes_jvm):
        results.table(a.sizes_jvm, "sizes_jvm", "The JVM's body bytes as sent (Jackson and "
                      "protobuf-java; GET, no cache; flat 100,000 and 300,000 from its memory "
                      f"runs with the heap at the limit, {THESIS_HEAP}), JSON against Protobuf, "
                      "and the reduction (J - P) / J.")  # fmt: skip
    if len(a.processing):
        results.table(a.processing, "processing", "Fig. 28's cells (nested POST, gzip, no "
                      "cache): the data service's time (gunzip + deserialisation: server_ms; "
                      "deserialisation alone: deser_ms) and the client's, mean over runs with "
                      "95 % t intervals; J - P (Welch) and % faster (log-ratio "
                      "interval).")  # fmt: skip
    if len(a.codec):
        results.table(a.codec, "codec", "The (de)serialisation alone (Server-Timing's ser of "
                      "a GET, deser of a POST; no gzip or gunzip), nested with gzip on and no "
                      "cache: JSON and Protobuf in ms, mean over runs with 95 % t intervals, "
                      "and Protobuf / JSON (log-ratio interval).")  # fmt: skip
    if len(a.memory):
        results.table(a.memory.drop(columns=["style", "users", "path"]), "memory",
                      "The memory cells: flat GET of 100,000 and 300,000 users, one run each "
                      "per repetition: completed or OOM-killed, peaks in MiB.")  # fmt: skip
    if len(a.table3):
        results.table(conditions_table(a.table3, a.cells, a.memory), "table3_conditions",
                      "Table 3 (testing conditions) as the thesis prints it, then per runtime "
                      "(python: orjson; jvm: Jackson) and structure what this reference ran: "
                      "the request counts of table3, the methods, the data generation counts "
                      "(the procedure's; the memory experiment's after 'memory:') and the "
                      "runs per cell.")  # fmt: skip
        results.table(a.table3, "table3", "Table 3's request counts as the first N requests "
                      "of each cell (gzip off, no cache), per runtime (python: orjson; jvm: "
                      "Jackson): mean response time (ms) over runs with its 95 % t "
                      "interval.")  # fmt: skip
    if len(a.cells):
        results.table(grid_table(a.cells), "grid", "The cells run (Table 3's grid): structure x "
                      "method x count x format per gzip, cache and JSON encoder, with the runs "
                      "and requests of each.", in_report=False)  # fmt: skip
        results.table(a.cells, "cells", "Every run and cell: response time (mean, SD, p50, "
                      "p95), the data service's times, bytes.", in_report=False)  # fmt: skip
    if len(a.throughput_summary):
        results.table(a.throughput_summary, "throughput", "Beyond the thesis: closed-loop "
                      "users without think time, GET of a small (nested 5) and a large (nested "
                      "650) payload, one format per run: req/s and mean response time, mean "
                      "over runs with 95 % t intervals, and Protobuf / JSON of req/s "
                      "(log-ratio interval).")  # fmt: skip
    if "json" in a.encoders.columns:
        results.table(a.encoders, "encoders", "Each claim's verdict with orjson (primary) and "
                      "with the standard library's json encoder.")  # fmt: skip
    if len(a.runtimes):
        results.table(a.runtimes, "runtimes", "Each claim's verdict on the Python services "
                      "(orjson) and on the same services on the JVM (Quarkus, Jackson, "
                      "protobuf-java; the thesis's heap policy, the heap's maximum at the "
                      "400 MB limit), and whether it changes with the runtime.")  # fmt: skip
        results.table(a.claims_jvm, JVM_CLAIMS, "Every claim judged on the JVM's runs (the "
                      "same rules and families as claims.csv).", in_report=False)  # fmt: skip
    if len(a.claims_stdlib):
        results.table(a.claims_stdlib, STDLIB_CLAIMS, "Every claim judged again with the "
                      "standard library's json encoder in place of orjson (the same rules and "
                      "families as claims.csv).", in_report=False)  # fmt: skip
    if len(a.power):
        results.table(a.power, "power", "Runs per cell each test with a published ratio needs "
                      "for 80 % power at its own family's strictest Holm level "
                      "(docs/statistics.md section 7).")  # fmt: skip
    _write_evolution(results)
    for name, (fig, caption) in figures.all_figures(a).items():
        results.figure(fig, name, caption)
        plt.close(fig)
    results.claims_table(a.claims)


def summary_markdown(a: Analysis) -> str:
    """The headline numbers in a few lines."""
    lines = []
    if len(a.sizes):
        s = a.sizes.dropna(subset=["reduction_pct"])
        for (structure, gz), g in s.groupby(["structure", "gzip"]):
            lo, hi = g["reduction_pct"].min(), g["reduction_pct"].max()
            counts = ", ".join(str(c) for c in g["count"])
            lines.append(f"- {structure}, {'gzip' if gz else 'raw'}: Protobuf {lo:.1f} % to "
                         f"{hi:.1f} % smaller than JSON (counts {counts})")  # fmt: skip
    if len(a.processing):
        p = a.processing[(a.processing["count"] == a.processing["count"].max())]
        for _, r in p.iterrows():
            on = " on the JVM" if r.get("runtime") == "jvm" else ""
            lines.append(
                f"- nested POST {r['count']}{on} ({r['metric']}): JSON {r['json_ms']:.2f} ms, "
                "Protobuf "
                f"{r['protobuf_ms']:.2f} ms; J - P = {r['difference_ms']:.2f} ms "
                f"[{r['difference_low']:.2f}, {r['difference_high']:.2f}], {r['faster_pct']:.1f} % "
                f"[{r['faster_pct_low']:.1f}, {r['faster_pct_high']:.1f}] faster "
                "(thesis: 25.1 %, 164.3 ms)"
            )
    if len(a.memory):
        untraced = a.memory[~a.memory["traced"]]
        keys = ["runtime", "heap", "fmt", "json_library", "count"]
        for (runtime, heap, fmt, lib, count), g in untraced.groupby(keys):
            done = int(g["completed"].sum())
            oom = int(g["oom_killed"].sum())
            full = int(g["heap_exhausted"].sum())
            fmt = f"{fmt} ({lib})" if fmt == "json" else fmt
            on = "" if runtime == "python" else f" on the JVM ({heap} heap)"
            heap_note = f" ({full} by a full heap)" if runtime == "jvm" else ""
            committed = g["heap_committed_mb"].max() if "heap_committed_mb" in g else np.nan
            read = f", heap committed up to {committed:.0f} MiB" if np.isfinite(committed) else ""
            lines.append(f"- memory, {fmt} flat {count}{on}: {done} of {len(g)} completed, "
                         f"{oom} killed for memory{heap_note}, peak {g['peak_mb'].max():.0f} "
                         f"MiB{read} (limit: {g['limit_mb'].iloc[0] or 'none'})")  # fmt: skip
        traced = a.memory[a.memory["traced"]]
        for (fmt, lib, count), g in traced.groupby(["fmt", "json_library", "count"]):
            fmt = f"{fmt} ({lib})" if fmt == "json" else fmt
            lines.append(f"- allocations traced, {fmt} flat {count}: peak "
                         f"{g['alloc_peak_mb'].max():.0f} MiB of Python objects")  # fmt: skip
    for _, r in a.throughput_summary.iterrows():
        ratio = interval_text(*r[["rps_ratio", "rps_ratio_low", "rps_ratio_high"]], ".2f",
                              missing=None, no_interval=None)  # fmt: skip
        lines.append(
            f"- throughput, {r['payload']} payload ({r['count']}), {r['users']} users: JSON "
            f"{r['json_rps']:.0f} req/s, Protobuf {r['protobuf_rps']:.0f} req/s, P / J {ratio}"
        )
    if len(a.claims):
        counts = a.claims["verdict"].value_counts().to_dict()
        lines.append("- claims: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    if len(a.runtimes):
        changed = a.runtimes[a.runtimes["changes"]]
        lines.append(f"- {len(changed)} of {len(a.runtimes)} verdicts change between Python "
                     "and the JVM" + (": " + ", ".join(
                         f"{r.claim_id} ({r.python} -> {r.jvm})" for r in changed.itertuples()
                     ) if len(changed) else ""))  # fmt: skip
    return "\n".join(lines)
