"""From the procedure's and the memory experiment's runs to the tables the thesis's figures
and claims read.

* :func:`requests_frame`: every measured request of the procedure's runs with its cell
  (structure, method, count, format), the run's variant (gzip, cache, JSON encoder) and
  repetition, and its place in the cell's sequence (``seq`` 1..N; warm-ups dropped);
* :func:`cell_table`: per run and cell, the client's response time (mean, SD, p50, p95),
  the data service's own time (``server_ms``: the sum of its ``Server-Timing``; ``ser_ms``,
  ``deser_ms``, ``gzip_ms``, ``gunzip_ms`` apart; ``codec_ms``: the (de)serialisation
  alone, ``ser_ms`` of a GET and ``deser_ms`` of a POST; ``codec_pb_json``: on a Protobuf
  row, its ``codec_ms`` over the JSON cell's of the same run), the answer's bytes as sent
  (``body_bytes``) and decoded (``decoded_bytes``) and its header bytes. ``first`` keeps
  the first N requests of each cell only (Table 3's request counts 1, 5, 50, 100);
* :func:`memory_table`: the memory runs, one row each (outcome, peaks, and the memory the
  request takes above the idle footprint: ``transient_rss_mb``; on the JVM its heap as its
  GC log reports it: ``heap_committed_mb``, ``heap_used_mb``, ``heap_max_mb``);
* :func:`runs_table`: both as the per-run table of the claims (``style``, ``users`` = the
  data generation count, and the claims' metrics), for one JSON encoder;
* :func:`evaluate`: the claims' verdicts, one Holm family per experiment (:data:`FAMILIES`,
  docs/statistics.md section 3); the bytes (:data:`published.FACTS`) compared as facts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ipclab.claims import evaluate_claims, repetitions
from ipclab.paths import repo_relative
from ipclab.published import Claim
from ipclab.runs import Run
from ipclab.studies.buono import published
from ipclab.studies.buono.procedure import WARMUP, parse_cell
from ipclab.studies.buono.stacks import ENCODERS, THESIS_HEAP

SCOPES = ("performance", "serialisation")
#: one Holm family per experiment (docs/statistics.md section 3), by the metric a claim reads:
#: the procedure's times (its runs: 100 sequential requests per cell), the memory runs'
#: outcomes and peaks, and the bytes, fixed by construction: facts, in no family at all
FAMILIES = {
    "procedure": ("response_ms", "server_ms", "codec_ms", "codec_pb_json"),
    "memory": ("oom_killed", "peak_rss_mb", "transient_rss_mb", "heap_committed_mb"),
    "sizes (facts)": published.FACTS,
}
#: the heap policy whose memory runs the claims read, per runtime (a Python process has no
#: heap to size: its cells say "default")
JUDGED_HEAP = {"python": "default", "jvm": THESIS_HEAP}
_TIMING = re.compile(r"(\w+);dur=([0-9.]+)")


def _timing(value: object, metric: str) -> float:
    if not isinstance(value, str):
        return float("nan")
    found = [float(d) for m, d in _TIMING.findall(value) if m == metric]
    return sum(found) if found else float("nan")


def _server(run: Run) -> dict[str, object]:
    p = run.path / "server.json"
    return json.loads(p.read_text()) if p.exists() else {}


def runtime_of(described: dict[str, object]) -> str:
    """The runtime a data service described itself as running on (its ``/healthz``):
    ``jvm``, or ``python`` (the Python service, which names no runtime)."""
    runtime = described.get("runtime")
    return "jvm" if isinstance(runtime, dict) and runtime.get("runtime") == "jvm" else "python"


def requests_frame(runs: Sequence[Run]) -> pd.DataFrame:
    """Every measured request of the complete procedure runs (warm-ups left out)."""
    parts = []
    for run in runs:
        if not run.complete:
            continue
        req = run.requests()
        if req.empty:
            continue
        req = req[~req["name"].str.startswith(WARMUP)].copy()
        settings = dict(_server(run).get("settings") or {})  # type: ignore[call-overload]
        cells = {n: parse_cell(n) for n in req["name"].unique()}
        for column in ("structure", "method", "count", "fmt"):
            req[column] = req["name"].map({n: getattr(c, column) for n, c in cells.items()})
        req = req.sort_values("t", kind="stable")
        req["seq"] = req.groupby("name").cumcount() + 1
        req["repetition"] = int(run.manifest.get("parameters", {}).get("repetition", 0))
        req["variant"] = run.manifest.get("parameters", {}).get("variant", "")
        req["gzip"] = bool(settings.get("gzip"))
        req["cache"] = bool(settings.get("cache"))
        req["json_library"] = str(settings.get("json_library", ""))
        req["runtime"] = runtime_of(_server(run))
        req["protobuf"] = (
            f"{_server(run).get('protobuf', '')} {_server(run).get('implementation', '')}"
        )
        req["run"] = run.path.name
        for metric in ("ser", "deser", "gzip", "gunzip"):
            req[f"{metric}_ms"] = req["timing"].map(lambda v, m=metric: _timing(v, m))
        parts.append(req)
    if not parts:
        return pd.DataFrame()
    return pd.concat(parts, ignore_index=True)


def _style(row: pd.Series) -> str:
    return published.style(
        row["fmt"], row["structure"], row["method"].lower(),
        "gzip" if row["gzip"] else "raw", "cache" if row["cache"] else "nocache",
    )  # fmt: skip


def cell_table(requests: pd.DataFrame, first: int | None = None) -> pd.DataFrame:
    """Per run and cell: response and server times, bytes (see the module's doc)."""
    if requests.empty:
        return pd.DataFrame()
    if "runtime" not in requests:  # a frame made before the runtime was a factor
        requests = requests.assign(runtime="python")
    req = requests if first is None else requests[requests["seq"] <= first]
    keys = ["run", "repetition", "variant", "runtime", "gzip", "cache", "json_library",
            "structure", "method", "count", "fmt"]  # fmt: skip
    g = req.groupby(keys, sort=True)
    out = g.agg(
        n=("latency_ms", "size"),
        failures=("ok", lambda s: int((~s.astype(bool)).sum())),
        response_ms=("latency_ms", "mean"),
        response_sd_ms=("latency_ms", lambda s: float(np.std(s, ddof=1)) if len(s) > 1 else np.nan),
        p50_ms=("latency_ms", "median"),
        p95_ms=("latency_ms", lambda s: float(np.percentile(s, 95))),
        server_ms=("server_ms", "mean"),
        ser_ms=("ser_ms", "mean"),
        deser_ms=("deser_ms", "mean"),
        gzip_ms=("gzip_ms", "mean"),
        gunzip_ms=("gunzip_ms", "mean"),
        body_bytes=("wire_bytes", "mean"),
        decoded_bytes=("bytes", "mean"),
        header_bytes=("header_bytes", "mean"),
    ).reset_index()
    out["codec_ms"] = out["ser_ms"].where(out["method"] == "GET", out["deser_ms"])
    out["codec_pb_json"] = _protobuf_over_json(out, "codec_ms")
    out["style"] = out.apply(_style, axis=1)
    out["users"] = out["count"]
    return out


def _protobuf_over_json(cells: pd.DataFrame, metric: str) -> pd.Series:
    """On each Protobuf row, its ``metric`` over the JSON row of the same run and cell
    (NaN on the JSON rows and where either is missing)."""
    keys = ["run", "runtime", "gzip", "cache", "json_library", "structure", "method", "count"]
    json_rows = cells[cells["fmt"] == "json"].set_index(keys)[metric]
    json_rows = json_rows[~json_rows.index.duplicated()]
    idx = pd.MultiIndex.from_frame(cells[keys])
    same_cell_json = json_rows.reindex(idx).to_numpy(dtype=float)
    ratio = cells[metric].to_numpy(dtype=float) / same_cell_json
    return pd.Series(np.where(cells["fmt"] == "protobuf", ratio, np.nan), index=cells.index)


def idle_rss_bytes(run: Run) -> float:
    """The data service's resident memory before the request: the median of the samples
    ``memory.csv`` holds before the run's ``request`` event (NaN without them)."""
    path = run.path / "memory.csv"
    if not path.exists():
        return float("nan")
    samples = pd.read_csv(path)
    sent = [e["t"] for e in run.events() if e.get("event") == "request"]
    idle = samples[samples["t"] < sent[0]] if sent else samples.iloc[:0]
    return float(idle["rss_bytes"].median()) if len(idle) else float("nan")


def _mib(value: object) -> float:
    return float(value) / 2**20 if isinstance(value, int | float) and value else np.nan


def heap_columns(summary: dict[str, object]) -> dict[str, float]:
    """The data service's heap over a memory run, in MiB, as its JVM's GC log reports it
    (``summary.json``'s ``heap``, :mod:`ipclab.studies.buono.heap`): the peak committed heap
    (what the JVM took from the system for it: B16c's "requesting (allocating) heap"), the
    peak used heap (before a collection), the maximum and the collections; NaN where there
    is no heap (Python) or no reading (a run made before the GC log was read)."""
    data = (summary.get("heap") or {}).get("data") or {}  # type: ignore[union-attr]
    return {
        "heap_committed_mb": _mib(data.get("committed_peak_bytes")),
        "heap_used_mb": _mib(data.get("used_peak_bytes")),
        "heap_max_mb": _mib(data.get("heap_max_bytes")),
        "heap_collections": float(data["collections"]) if "collections" in data else np.nan,
    }


def memory_table(runs: Sequence[Run]) -> pd.DataFrame:
    """One row per complete memory run: the cell, the outcome and the peaks (MiB)."""
    rows = []
    for run in runs:
        if not run.complete or run.manifest.get("kind") != "memory":
            continue
        s = run.summary
        cell = s["cell"]
        peaks = [v for v in (s.get("peak_rss_bytes"), s.get("peak_usage_bytes")) if v]
        # killed for memory: by the kernel (the limit) or, on the JVM, by its own full heap
        killed = s.get("out_of_memory", s.get("data_oom_killed"))
        rows.append(
            {
                "run": run.path.name,
                "path": repo_relative(run.path),
                "repetition": int(run.parameters.get("repetition", 1)),
                "backend": s["backend"],
                "limit_mb": s["limit_mb"],
                "fmt": cell["fmt"],
                "structure": cell["structure"],
                "count": cell["count"],
                "json_library": cell["json_library"],
                "runtime": cell.get("runtime", "python"),
                "heap": cell.get("heap", "default"),
                "traced": bool(cell.get("traced", False)),
                "completed": bool(s["completed"]),
                "oom_killed": float(bool(killed)),
                "kernel_killed": bool(s.get("data_oom_killed")),
                "heap_exhausted": bool(s.get("heap_exhausted")),
                "exit_code": s.get("data_exit_code"),
                "answer_bytes": s.get("answer_bytes"),
                "body_bytes": s.get("answer_bytes") or np.nan,  # raw: the cells ask no gzip
                "header_bytes": s.get("header_bytes") or np.nan,
                "elapsed_s": s.get("elapsed_s"),
                "peak_rss_mb": (s.get("peak_rss_bytes") or np.nan) / 2**20,
                "transient_rss_mb": ((s.get("peak_rss_bytes") or np.nan) - idle_rss_bytes(run))
                / 2**20,
                "peak_usage_mb": (s.get("peak_usage_bytes") or np.nan) / 2**20,
                "peak_mb": max(peaks) / 2**20 if peaks else np.nan,
                "cgroup_peak_mb": (s.get("cgroup_peak_bytes") or np.nan) / 2**20,
                "alloc_peak_mb": (s.get("alloc_peak_bytes") or np.nan) / 2**20,
                **heap_columns(s),
                "style": published.style(cell["fmt"], cell["structure"]),
                "users": cell["count"],
            }
        )
    return pd.DataFrame(rows)


def runs_table(
    cells: pd.DataFrame, memory: pd.DataFrame | None = None, json_library: str = "orjson"
) -> pd.DataFrame:
    """The claims' per-run table: the procedure's cells made with ``json_library`` (the
    protobuf cells of the same runs), and the memory runs of that encoder and its runtime
    (``jackson``: the JVM's), on the JVM under the thesis's heap policy
    (``stacks.THESIS_HEAP``; the JVM's own default heap says what the policy does, and is
    not judged)."""
    parts = []
    if not cells.empty:
        parts.append(cells[cells["json_library"] == json_library])
    if memory is not None and not memory.empty:  # traced cells: allocation peak only
        runtime = next((r for r, libs in ENCODERS.items() if json_library in libs), None)
        if runtime is None:
            raise ValueError(f"no runtime encodes JSON with {json_library!r}")
        judged = JUDGED_HEAP[runtime]
        mine = (memory["runtime"] == runtime) & (memory["heap"] == judged)
        encoder = (memory["json_library"] == json_library) | (memory["fmt"] == "protobuf")
        parts.append(memory[mine & encoder & ~memory["traced"]])
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def family_of(claim: Claim) -> str:
    """The experiment (and so the Holm family) a claim belongs to: :data:`FAMILIES`."""
    for family, metrics in FAMILIES.items():
        if claim.metric in metrics:
            return family
    raise ValueError(f"claim {claim.claim_id}: metric {claim.metric!r} is in no family")


def families(claims: Sequence[Claim] | None = None) -> dict[str, list[Claim]]:
    """The study's claims (or ``claims``) split by :func:`family_of`, in :data:`FAMILIES`'
    order."""
    cl = published.claims() if claims is None else list(claims)
    return {f: [c for c in cl if family_of(c) == f] for f in FAMILIES}


def evaluate(table: pd.DataFrame, claims: Sequence[Claim] | None = None) -> pd.DataFrame:
    """Every claim's verdict on ``table`` (:func:`runs_table`): one ``evaluate_claims`` call,
    so one Holm family, per experiment; the bytes compared as facts."""
    parts = [
        evaluate_claims(table, cl, scope=SCOPES, facts=published.FACTS, family=family)
        for family, cl in families(claims).items()
        if cl
    ]
    return pd.concat(parts, ignore_index=True)


def power(table: pd.DataFrame, claims: Sequence[Claim] | None = None) -> pd.DataFrame:
    """Runs per cell each test with a published ratio needs (docs/statistics.md section 7),
    at the level of its own family."""
    parts = [
        repetitions(cl, table, facts=published.FACTS).assign(family=family)
        for family, cl in families(claims).items()
        if cl
    ]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
