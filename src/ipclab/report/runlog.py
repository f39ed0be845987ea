"""What the report reads from the run log of ``ipclab reproduce`` (``run_log.json``):
its notebooks, which were skipped or failed and why, the profile and backend."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def notebooks(run_log: dict[str, Any] | None) -> list[dict[str, Any]]:
    return list((run_log or {}).get("notebooks") or [])


def not_run_items(run_log: dict[str, Any] | None) -> list[str]:
    """Every notebook of the run log that was skipped or failed, with its reason."""
    out = []
    for e in notebooks(run_log):
        status = str(e.get("status", ""))
        if status in ("skipped", "failed"):
            word = "Skipped" if status == "skipped" else "FAILED"
            out.append(
                f"{word}: {e.get('notebook')} because {e.get('reason') or 'no reason given'}"
            )
    return out


def not_run_by_results(run_log: dict[str, Any] | None) -> dict[str, list[str]]:
    """:func:`not_run_items` per results folder name, for each study's section."""
    by_results: dict[str, list[str]] = {}
    for e in notebooks(run_log):
        if e.get("status") in ("skipped", "failed") and e.get("results"):
            by_results.setdefault(str(e["results"]), []).extend(not_run_items({"notebooks": [e]}))
    return by_results


def profile_backend(
    run_log: dict[str, Any] | None, metas: Sequence[dict[str, Any]]
) -> tuple[str, str]:
    """The run log's profile and backend, else those the results folders record."""

    def pick(k: str) -> str:
        if run_log and run_log.get(k):
            return str(run_log[k])
        vals = sorted({str(m["parameters"][k]) for m in metas if k in (m.get("parameters") or {})})
        return ", ".join(vals) if vals else "not recorded"

    return pick("profile"), pick("backend")


def fmt_seconds(s: Any) -> str:
    try:
        v = float(s)
    except (TypeError, ValueError):
        return "–"
    return f"{v:.0f} s" if v < 120 else f"{v / 60:.1f} min"
