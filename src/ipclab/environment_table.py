"""The environment a committed reference's runs ran in (issue 52), summarised from their
manifests: one row per (field, value) with the number of runs that recorded it, so a field
whose runs differ shows every value with its count. Written as ``results/environment.csv``
by each reference's rebuild (:func:`write_reference`)."""

from __future__ import annotations

import ast
import importlib
import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

COLUMNS = ["source", "field", "value", "runs"]
MEASURED = "ipclab runs (manifests)"
TABLE = "environment"
#: a role's runtime record's keys that are not its environment
ROLE_SKIPPED = ("role", "pid", "vm_options")
#: the apt packages of an image whose versions the table shows (servers the studies name)
APT_SHOWN = (
    "nginx",
    "nghttp2-proxy",
    "libnghttp2-14",
    "rabbitmq-server",
    "postgresql",
    "openjdk-17-jre-headless",
    "openjdk-17-jdk-headless",
    "nodejs",
    "golang-go",
)
#: the environment fields the table shows (the manifest's ``environment`` record)
FIELDS = ("python", "implementation", "os", "host", "cpu_model", "cpu_cores_logical",
          "cpu_cores_physical", "memory_bytes")  # fmt: skip


def _record(value: Any) -> dict[str, Any]:
    """A manifest record: a dict, or the repr of one (older manifests stored repr text)."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value.startswith("{"):
        try:
            parsed = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


def _runtimes(manifest: dict[str, Any]) -> dict[str, str]:
    """Each role's runtime as the role reported it (its VM, versions, flags), per key."""
    out = {}
    for role, rt in _record(manifest.get("runtimes")).items():
        rec = _record(rt)
        if not rec.get("runtime"):
            continue
        for key, value in rec.items():
            if key in ROLE_SKIPPED or isinstance(value, dict):
                continue
            shown = " ".join(map(str, value)) if isinstance(value, list) else str(value)
            out[f"runtime {role} {key}"] = shown
    return out


def _images(manifest: dict[str, Any]) -> dict[str, str]:
    """Each container image a run's stack used (tag, base) and the versions of the servers
    its apt packages hold (nginx, nghttp2, ...), and the container engine."""
    info = _record(manifest.get("stack_info"))
    out = {"container engine": str(info["engine"])} if info.get("engine") else {}
    for name, image in _record(info.get("images")).items():
        rec = _record(image)
        out[f"image {name}"] = f"{rec.get('tag', '?')} on {rec.get('base', '?')}"
        for pkg in rec.get("apt_packages") or []:
            package, _, version = str(pkg).partition("=")
            if package in APT_SHOWN:
                out[f"image {name} {package}"] = version
    return out


def fields(manifest: dict[str, Any]) -> dict[str, str]:
    """The environment one run recorded, flattened to ``field -> value`` text."""
    env = _record(manifest.get("environment"))
    out = {f: str(env[f]) for f in FIELDS if f in env}
    for name, version in _record(env.get("libraries")).items():
        out[f"library {name}"] = str(version)
    out.update(_runtimes(manifest))
    out.update(_images(manifest))
    specs = _record(manifest.get("stack_spec"))
    if "domain" in specs or "runtime" in specs:  # one stack's declaration, not keyed by name
        specs = {str(manifest.get("stack")): specs}
    for stack, spec in specs.items():
        rec = _record(spec)
        out[f"stack {stack}"] = f"runtime {rec.get('runtime') or 'python'}" + (
            f", adapters {rec['adapters']}" if rec.get("adapters") else ""
        )
    return out


def summarise(manifests: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """Every (field, value) the runs recorded, with how many runs recorded it."""
    counts: Counter[tuple[str, str]] = Counter()
    for m in manifests:
        counts.update(fields(m).items())
    rows = [{"source": MEASURED, "field": f, "value": v, "runs": n}
            for (f, v), n in sorted(counts.items())]  # fmt: skip
    return pd.DataFrame(rows, columns=COLUMNS)


def reference_table(folder: Path) -> pd.DataFrame:
    """The table of one reference folder, from every manifest under it."""
    paths = sorted(Path(folder).rglob("manifest.json"))
    return summarise(json.loads(p.read_text()) for p in paths)


def parts() -> dict[str, str]:
    """Each results name a study's notebooks write, to its study's name (a study's extension
    writes results of another name), from the registry: the core names no study."""
    from ipclab.studies import all_studies

    return {name: s.name for s in all_studies().values() for name in s.results_names()}


def study_of(results_study: str) -> str:
    """The study a results name belongs to (an extension's results name, its study's)."""
    return parts().get(results_study, results_study.split("_")[0])


def published(study: str) -> pd.DataFrame:
    """The study's own published environment (its ``setup.PUBLISHED_ENVIRONMENT``, copied
    exactly with its source), no rows when the study prints none; ``study`` as the results
    name it (an extension's, its study's)."""
    folder = study_of(study)
    try:
        module = importlib.import_module(f"ipclab.studies.{folder}.setup")
    except ModuleNotFoundError:
        return pd.DataFrame(columns=COLUMNS)
    rows = [{"source": src, "field": f, "value": v, "runs": pd.NA}
            for f, v, src in module.PUBLISHED_ENVIRONMENT]  # fmt: skip
    return pd.DataFrame(rows, columns=COLUMNS)


def table(folder: Path, study: str) -> pd.DataFrame:
    """The study's published environment, then what its reference's runs recorded."""
    parts = [t for t in (published(study), reference_table(folder)) if len(t)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=COLUMNS)


CAPTION = (
    "Environment: the study's own published set-up (copied exactly, with its source), then "
    "every value the reference's run manifests record (machine, OS, Python and its "
    "libraries, each role's runtime, each stack's runtime and adapters) with the number of "
    "runs that recorded it; a field whose runs differ has one row per value."
)


def write_reference(results: Any) -> Path:
    """Write ``results/environment.csv`` (in the report) for the results' reference folder."""
    directory = Path(results.directory)
    return results.table(table(directory.parent, results.study), TABLE, CAPTION)
