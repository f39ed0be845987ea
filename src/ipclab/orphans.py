"""What a killed harness leaves behind, found and removed at the next start.

Every process a stack starts (not detached) carries ``IPCLAB_HARNESS=<pid>:<start time>`` of
the harness that started it, and its temporary workdir an ``.ipclab-harness`` file with the
same mark. Service processes die with the harness (parent-death signal), but some things
cannot: epmd daemonises out of the broker's process group, and a directory outlives
everyone. ``sweep`` removes exactly those whose harness is gone, and says so; what a living
harness (or a detached stack, which carries no mark) started is never touched.

Other kinds of leftovers have a sweeper of their own, which ``sweep`` runs too: the built-in
ones (:data:`BUILTIN_SWEEPERS`: the local Kubernetes cluster's half-done start or stop,
``ipclab.kubecluster``) are imported by every sweep, whichever backend started it, since a
cluster a killed ``ipclab cluster up`` left half started is there whether or not the
Kubernetes package was ever imported by this run; others may :func:`register`. This module
imports none of them at its own import (no cycle, no cost for a run that never sweeps).
"""

from __future__ import annotations

import importlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import psutil

Sweeper = Callable[[Callable[[str], None]], list[str]]  # say -> what it swept
_sweepers: list[Sweeper] = []
# "module:function" run by every sweep, imported when it runs
BUILTIN_SWEEPERS = ("ipclab.kubecluster:sweep",)

MARK = "IPCLAB_HARNESS"
MARK_FILE = ".ipclab-harness"
WORKDIR_PREFIX = "ipclab-"


def _start_time(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def this_harness() -> str:
    """This process's mark: its pid and start time (a reused pid is another harness)."""
    return f"{os.getpid()}:{_start_time(os.getpid()):.2f}"


def harness_alive(mark: str) -> bool:
    try:
        pid_text, started_text = mark.split(":")
        pid, started = int(pid_text), float(started_text)
    except ValueError:
        return True  # not ours to judge: leave it
    now = _start_time(pid)
    return now is not None and abs(now - started) < 0.05


def mark_workdir(workdir: Path) -> None:
    (workdir / MARK_FILE).write_text(this_harness())


def workdir_mark(d: Path) -> str | None:
    """The harness mark of workdir ``d``: None for a symlink, another user's directory or an
    unmarked one (not ours to judge)."""
    try:
        if d.is_symlink() or not d.is_dir() or d.lstat().st_uid != os.getuid():
            return None
        return (d / MARK_FILE).read_text().strip()
    except OSError:
        return None


def register(sweeper: Sweeper) -> None:
    """Have every :func:`sweep` also run ``sweeper`` (once, however often registered)."""
    if sweeper not in _sweepers:
        _sweepers.append(sweeper)


def sweepers() -> list[Sweeper]:
    """What a sweep runs besides its own search: the built-in sweepers, then the
    registered ones (each once)."""
    found: list[Sweeper] = []
    for name in BUILTIN_SWEEPERS:
        module, _, function = name.partition(":")
        found.append(getattr(importlib.import_module(module), function))
    return [*found, *(s for s in _sweepers if s not in found)]


def sweep(say: Callable[[str], None] = print) -> list[str]:
    """Kill processes and remove workdirs left by harnesses that are no longer alive, and
    run the registered sweepers."""
    swept: list[str] = []
    me = os.getuid()
    for p in psutil.process_iter(["pid", "name", "uids", "environ"]):
        try:
            env = p.info["environ"] or {}
            mark = env.get(MARK)
            if not mark or p.info["uids"] is None or p.info["uids"].real != me:
                continue
            if harness_alive(mark):
                continue
            p.kill()
            swept.append(f"process {p.pid} ({p.info['name']})")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    for d in Path(tempfile.gettempdir()).glob(f"{WORKDIR_PREFIX}*"):
        mark = workdir_mark(d)
        if mark is not None and not harness_alive(mark):
            shutil.rmtree(d, ignore_errors=True)
            swept.append(f"directory {d}")
    for sweeper in sweepers():
        swept += sweeper(say)
    if swept:
        say(f"ipclab: swept what a killed run left behind: {', '.join(swept)}")
    return swept
