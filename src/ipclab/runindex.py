"""One table of every run under a folder: what it was, what made it, what it measured.

``ipclab runs`` prints it; ``--where`` selects (``stack=shop-grpc users=200 backend=docker``).
A row per run directory (a ``manifest.json``): its repository-relative path, kind, status,
stack, style, backend, users, experiment, repetition and variant, when it started, the
measuring code that made it (``code``; recorded, or computed from the git revision its
manifest names, ``runstore.recorded_code``) and whether that is the code that would make it
now (``runstore.is_current``: its own measuring files unchanged), its key,
and the headline figures of its summary where it has them (requests per second, mean
latency, failures).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from ipclab import runstore
from ipclab.paths import from_repo, repo_relative

COLUMNS = (
    "path", "kind", "status", "stack", "style", "backend", "users", "experiment",
    "repetition", "variant", "started_at", "code", "code_known_by", "current_code", "key",
    "revision", "rps", "mean_ms", "failures",
)  # fmt: skip
SHOWN = ("path", "status", "stack", "backend", "users", "repetition", "code", "current_code")


def _row(path: Path, manifest: Mapping[str, Any]) -> dict[str, Any]:
    params = manifest.get("parameters") or {}
    summary: dict[str, Any] = {}
    with_summary = path / "summary.json"
    if with_summary.is_file():
        try:
            summary = json.loads(with_summary.read_text())
        except ValueError:
            summary = {}
    latency = summary.get("latency_ms") if isinstance(summary.get("latency_ms"), dict) else {}
    code, how = runstore.recorded_code(manifest)

    def pick(name: str) -> Any:
        return manifest.get(name, params.get(name))

    return {
        "path": repo_relative(path),
        "kind": manifest.get("kind"),
        "status": manifest.get("status"),
        "stack": pick("stack"),
        "style": pick("style"),
        "backend": pick("backend"),
        "users": pick("users"),
        "experiment": params.get("experiment"),
        "repetition": params.get("repetition"),
        "variant": params.get("variant"),
        "started_at": manifest.get("started_at"),
        "code": code,
        "code_known_by": how,
        "current_code": runstore.is_current(manifest),
        "key": manifest.get("key"),
        "revision": ((manifest.get("environment") or {}).get("git") or {}).get("revision"),
        "rps": summary.get("rps"),
        "mean_ms": (latency or {}).get("mean"),
        "failures": summary.get("failures"),
    }


def index(roots: Iterable[str | Path]) -> pd.DataFrame:
    """Every run directory under ``roots`` (relative paths from the repository), one row
    each, in path order; a manifest that does not parse is left out."""
    rows = []
    for root in roots:
        for m in sorted(from_repo(root).rglob("manifest.json")):
            try:
                manifest = json.loads(m.read_text())
            except ValueError:
                continue
            rows.append(_row(m.parent, manifest))
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    for whole in ("users", "repetition", "failures"):
        table[whole] = pd.to_numeric(table[whole], errors="coerce").astype("Int64")
    return table


def _matches(value: Any, wanted: str) -> bool:
    if value is None or value is pd.NA or (isinstance(value, float) and pd.isna(value)):
        return wanted in ("", "none", "None")
    if isinstance(value, bool) or isinstance(value, (int, float)) is False:
        return str(value).lower() == wanted.lower()
    try:
        return float(value) == float(wanted)
    except ValueError:
        return False


def select(table: pd.DataFrame, where: Mapping[str, str]) -> pd.DataFrame:
    """The rows whose columns equal ``where`` (numbers compared as numbers, text and
    booleans case-insensitively); an unknown column is a clear error."""
    unknown = sorted(set(where) - set(table.columns))
    if unknown:
        raise ValueError(f"no column {', '.join(unknown)}; columns: {', '.join(table.columns)}")
    keep = pd.Series(True, index=table.index)
    for column, wanted in where.items():
        keep &= table[column].map(lambda v, w=wanted: _matches(v, w))
    return table[keep]


def parse_where(terms: Iterable[str]) -> dict[str, str]:
    """``["stack=shop-grpc", "users=200"]`` as a mapping; a term without ``=`` is an error."""
    out = {}
    for term in terms:
        column, sep, value = term.partition("=")
        if not sep or not column:
            raise ValueError(f"--where takes column=value, not {term!r}")
        out[column.strip()] = value.strip()
    return out
