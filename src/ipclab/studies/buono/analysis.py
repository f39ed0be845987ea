"""From the procedure's and the memory experiment's runs to the tables the thesis's figures
and claims read.

* :func:`requests_frame`: every measured request of the procedure's runs with its cell
  (structure, method, count, format), the run's variant (gzip, cache, JSON encoder) and
  repetition, and its place in the cell's sequence (``seq`` 1..N; warm-ups dropped);
* :func:`cell_table`: per run and cell, the client's response time (mean, SD, p50, p95),
  the data service's own time (``server_ms``: the sum of its ``Server-Timing``; ``ser_ms``,
  ``deser_ms``, ``gzip_ms``, ``gunzip_ms`` apart), the answer's bytes as sent
  (``body_bytes``) and decoded (``decoded_bytes``) and its header bytes. ``first`` keeps
  the first N requests of each cell only (Table 3's request counts 1, 5, 50, 100);
* :func:`memory_table`: the memory runs, one row each (outcome and peaks);
* :func:`runs_table`: both as the per-run table of the claims (``style``, ``users`` = the
  data generation count, and the claims' metrics), for one JSON encoder;
* :func:`evaluate`: the claims' verdicts, each scope its own Holm family
  (docs/statistics.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ipclab.claims import evaluate_claims
from ipclab.runs import Run
from ipclab.studies.buono import published
from ipclab.studies.buono.procedure import WARMUP, parse_cell

SCOPES = ("performance", "serialisation")
_TIMING = re.compile(r"(\w+);dur=([0-9.]+)")


def _timing(value: object, metric: str) -> float:
    if not isinstance(value, str):
        return float("nan")
    found = [float(d) for m, d in _TIMING.findall(value) if m == metric]
    return sum(found) if found else float("nan")


def _server(run: Run) -> dict[str, object]:
    p = run.path / "server.json"
    return json.loads(p.read_text()) if p.exists() else {}


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
    req = requests if first is None else requests[requests["seq"] <= first]
    keys = ["run", "repetition", "variant", "gzip", "cache", "json_library",
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
    out["style"] = out.apply(_style, axis=1)
    out["users"] = out["count"]
    return out


def memory_table(runs: Sequence[Run]) -> pd.DataFrame:
    """One row per complete memory run: the cell, the outcome and the peaks (MiB)."""
    rows = []
    for run in runs:
        if not run.complete or run.manifest.get("kind") != "memory":
            continue
        s = run.summary
        cell = s["cell"]
        peaks = [v for v in (s.get("peak_rss_bytes"), s.get("peak_usage_bytes")) if v]
        rows.append(
            {
                "run": run.path.name,
                "path": str(run.path),
                "repetition": int(run.parameters.get("repetition", 1)),
                "backend": s["backend"],
                "limit_mb": s["limit_mb"],
                "fmt": cell["fmt"],
                "structure": cell["structure"],
                "count": cell["count"],
                "json_library": cell["json_library"],
                "traced": bool(cell.get("traced", False)),
                "completed": bool(s["completed"]),
                "oom_killed": float(bool(s.get("data_oom_killed"))),
                "exit_code": s.get("data_exit_code"),
                "answer_bytes": s.get("answer_bytes"),
                "body_bytes": s.get("answer_bytes") or np.nan,  # raw: the cells ask no gzip
                "header_bytes": s.get("header_bytes") or np.nan,
                "elapsed_s": s.get("elapsed_s"),
                "peak_rss_mb": (s.get("peak_rss_bytes") or np.nan) / 2**20,
                "peak_usage_mb": (s.get("peak_usage_bytes") or np.nan) / 2**20,
                "peak_mb": max(peaks) / 2**20 if peaks else np.nan,
                "cgroup_peak_mb": (s.get("cgroup_peak_bytes") or np.nan) / 2**20,
                "alloc_peak_mb": (s.get("alloc_peak_bytes") or np.nan) / 2**20,
                "style": published.style(cell["fmt"], cell["structure"]),
                "users": cell["count"],
            }
        )
    return pd.DataFrame(rows)


def runs_table(
    cells: pd.DataFrame, memory: pd.DataFrame | None = None, json_library: str = "orjson"
) -> pd.DataFrame:
    """The claims' per-run table: the procedure's cells made with ``json_library`` (the
    protobuf cells of the same runs), and the memory runs of that encoder."""
    parts = []
    if not cells.empty:
        parts.append(cells[cells["json_library"] == json_library])
    if memory is not None and not memory.empty:  # traced cells: allocation peak only
        encoder = (memory["json_library"] == json_library) | (memory["fmt"] == "protobuf")
        parts.append(memory[encoder & ~memory["traced"]])
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def evaluate(table: pd.DataFrame) -> pd.DataFrame:
    """Every claim's verdict on ``table`` (:func:`runs_table`), scope by scope."""
    parts = [evaluate_claims(table, published.claims(scope=scope), scope=scope) for scope in SCOPES]
    return pd.concat(parts, ignore_index=True)
