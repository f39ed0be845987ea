"""Whether the code that measured a set of runs (a committed reference) changed since, in
words a reader can use.

Each run is judged by its **own** measuring files (``ipclab.runcode``), not by the whole
harness: a run that recorded them (``code_files``) by their blob ids against the files such
a run would be measured by now; a run made before, by ``git diff --name-only`` between the
revision its manifest names and the working tree, kept to the files such a run is
measured by (derived now, with the modules that write runs of its kind as its writer,
``runcode.writers_of``). A revision this repository does not hold leaves its runs
unknown. :func:`provenance_text` says it as "made by code at revision X (n runs); since
then the measuring code of m of these runs changed in a.py (k runs), ..." or "no measuring
file of these runs changed since".
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ipclab import runcode, runstore
from ipclab.paths import REPO_ROOT


@dataclass
class Provenance:
    """What made a set of runs and what of their measuring code changed since."""

    runs: int = 0
    revisions: Counter[str] = field(default_factory=Counter)  # revision -> runs
    dirty: int = 0  # runs made from a tree with uncommitted changes
    unknown: int = 0  # runs whose code this repository cannot tell (no revision here)
    changed: Counter[str] = field(default_factory=Counter)  # changed file -> its runs
    folders: Counter[str] = field(default_factory=Counter)  # folder of changed files -> runs
    runs_changed: int = 0  # runs with at least one changed file

    @property
    def known(self) -> int:
        return self.runs - self.unknown


@functools.cache
def _diff(revision: str) -> frozenset[str] | None:
    """The files that differ between ``revision`` and the working tree (None: unknown here)."""
    known = runstore._git(REPO_ROOT, "cat-file", "-e", f"{revision}^{{commit}}")
    if known is None:
        return None
    out = runstore._git(
        REPO_ROOT, "diff", "--name-only", "-z", revision, "--", *runcode.TOP_FOLDERS
    )
    return None if out is None else frozenset(n for n in out.decode().split("\0") if n)


def changed_files(manifest: Mapping[str, Any]) -> list[str] | None:
    """The run's own measuring files that changed since it was made (None: not known)."""
    own = runstore.own_code(manifest)
    if own is not None:
        return runstore.code_now(manifest).changed_since(own)
    revision = _git_of(manifest).get("revision")
    diff = _diff(str(revision)) if revision else None
    if diff is None:
        return None
    now = runstore.code_now(manifest, writers=runcode.writers_of(str(manifest.get("kind"))))
    return sorted(diff & set(now.files))


def _git_of(manifest: Mapping[str, Any]) -> Mapping[str, Any]:
    return (manifest.get("environment") or {}).get("git") or {}


def provenance(manifests: Iterable[Mapping[str, Any]]) -> Provenance:
    """The revisions ``manifests`` were made at and which of their runs' own measuring
    files changed since, counted in runs."""
    out = Provenance()
    for m in manifests:
        out.runs += 1
        git = _git_of(m)
        if git.get("revision"):
            out.revisions[str(git["revision"])] += 1
        out.dirty += bool(git.get("dirty"))
        changed = changed_files(m)
        if changed is None:
            out.unknown += 1
            continue
        out.changed.update(changed)
        out.folders.update({_folder(f) for f in changed})
        out.runs_changed += bool(changed)
    return out


def _folder(path: str) -> str:
    return path.rpartition("/")[0] + "/" if "/" in path else "./"


def _runs(n: int) -> str:
    return f"{n} run{'s' if n != 1 else ''}"


def _more(n: int, what: str) -> str:
    return f"{n} more {what}{'s' if n != 1 else ''}"


def _made_at(p: Provenance, shown: int) -> str:
    revisions = p.revisions.most_common()
    named = [f"{rev[:10]} ({_runs(n)})" for rev, n in revisions[:shown]]
    rest = revisions[shown:]
    if rest:
        named.append(f"{_more(len(rest), 'revision')} ({_runs(sum(n for _, n in rest))})")
    if not named:
        return "made by code at no recorded revision"
    word = "revision" if len(revisions) == 1 else "revisions"
    text = f"made by code at {word} {_listed(named)}"
    if p.dirty:
        text += f", {_runs(p.dirty)} with uncommitted changes"
    return text


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _changed_text(p: Provenance, shown: int) -> str:
    """The changed files by folder, the folders touching most runs first: "services/
    transports/ (amqp.py, rest.py; 30 runs)", a folder's run count said when it is not
    every changed run's."""
    named = []
    files_in = Counter(_folder(f) for f in p.changed)
    order = sorted(p.folders.items(), key=lambda kv: (-kv[1], -files_in[kv[0]], kv[0]))
    for folder, runs in order[:shown]:
        files = sorted(f.rpartition("/")[2] for f in p.changed if _folder(f) == folder)
        listed = _listed([*files[:3], *([f"{len(files) - 3} more"] if len(files) > 3 else [])])
        named.append(f"{folder} ({listed}{f'; {_runs(runs)}' if runs < p.runs_changed else ''})")
    if len(p.folders) > shown:
        named.append(_more(len(p.folders) - shown, "folder"))
    count = f"{len(p.changed)} file{'s' if len(p.changed) != 1 else ''}"
    of = f"all {p.runs} runs" if p.runs_changed == p.runs else f"{p.runs_changed} of these runs"
    return f"since then the measuring code of {of} changed: {count}, in {_listed(named)}"


def provenance_text(p: Provenance, shown: int = 4) -> str:
    """:func:`provenance` in words: the revisions, and which of the runs' measuring files
    changed since (by folder), or that none did."""
    if not p.runs:
        return "no runs"
    parts = [_made_at(p, shown)]
    if p.unknown:
        parts.append(f"the code of {_runs(p.unknown)} is not known here (its revision is not "
                     "in this repository)")  # fmt: skip
    if p.known and not p.changed:
        these = "these runs" if not p.unknown else f"the other {_runs(p.known)}"
        parts.append(f"no measuring file of {these} changed since")
    elif p.changed:
        parts.append(_changed_text(p, shown))
    return "; ".join(parts)
