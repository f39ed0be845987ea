"""The runs that decide a claim: its two cells (``grpc@50``, ``rest@50`` in its comparison)
matched to a reference's run folders by name, kept only when the match is exactly the runs
the claim counted (its ``n_a`` and ``n_b``).

A run folder's name says what it was (``shop-grpc-u50-base-r1``, ``delay0ms/acmeair-coap-u10
-base-r3``, ``thesis/bundle-rest+bundle-graphql-u1-rows5-r2``): a cell's group is a set of
its words (``grpc``, ``json-nested-post-gzip-nocache``) and its level a number with a word
before it (``u50``, ``rows5``, ``delay0ms``; never the repetition ``r1``). Where the names
match more or fewer runs than the claim's runs per side (the same cells measured in another
experiment or adapter set, runs made again), the claim gets no list of its own: its links
go to the reference's whole run list instead, which never names a wrong run.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pandas as pd

from ipclab import runindex
from ipclab.paths import from_repo, repo_relative

CELL = re.compile(r"([A-Za-z][\w.+-]*?)@(\d+(?:\.\d+)?)\b")
REPETITION = re.compile(r"r\d+")


def cells(comparison: object) -> list[tuple[str, str]]:
    """A comparison's cells, ``[("grpc", "50"), ("rest", "50")]``, from the text after its
    metric (``rps: grpc@50 > rest@50``)."""
    text = str(comparison).split(": ", 1)[-1]
    return [(g, level.removesuffix(".0")) for g, level in CELL.findall(text)]


def words(run_path: str, folder: str) -> set[str]:
    """The words of a run folder's name below its reference (``delay0ms``, ``acmeair``,
    ``coap``, ``u10``, ``base``, ``r3``)."""
    rel = run_path.removeprefix(folder).strip("/")
    return {w for w in re.split(r"[-_/+]", rel.lower()) if w}


def in_cell(run_words: set[str], group: str, level: str) -> bool:
    """Whether a run of these words measured the cell ``group@level``."""
    if not set(group.lower().split("-")) <= run_words:
        return False
    number = re.compile(rf"[a-z]+{re.escape(level)}(?:ms|s)?")
    return any(number.fullmatch(w) and not REPETITION.fullmatch(w) for w in run_words)


@functools.lru_cache(maxsize=32)
def reference_runs(folder: Path) -> pd.DataFrame:
    """``ipclab runs`` of one reference folder (read once per build)."""
    return runindex.index([folder])


def _count(x: object) -> int | None:
    try:
        v = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return int(v) if v == v else None


def claim_runs(folder: Path, claim: pd.Series) -> pd.DataFrame | None:
    """The runs of ``folder`` that decide ``claim`` (a claims table row), in path order; None
    when its cells cannot be matched to exactly the runs it counted."""
    found = cells(claim.get("comparison"))
    want = (_count(claim.get("n_a")), _count(claim.get("n_b")))
    if len(found) != 2 or None in want or min(w or 0 for w in want) < 1:
        return None  # not two cells, or a side with no runs: nothing to single out
    runs = reference_runs(Path(folder))
    base = repo_relative(from_repo(folder))
    run_words = [words(str(p), str(base)) for p in runs["path"]]
    sides = [[in_cell(w, g, lv) for w in run_words] for g, lv in found]
    if (sum(sides[0]), sum(sides[1])) != want:
        return None
    either = [a or b for a, b in zip(*sides, strict=True)]
    return runs[either]


def decided_by(folder: Path, claims: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per claim id of ``claims``, the runs that decide it (only the claims matched)."""
    out = {}
    for _, r in claims.iterrows():
        runs = claim_runs(folder, r)
        if runs is not None:
            out[str(r["claim_id"])] = runs
    return out
