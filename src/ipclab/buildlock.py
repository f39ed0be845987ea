"""One builder at a time per build folder, across threads and processes.

Two harnesses on one machine (two test workers, ``pytest -n 2``, or two engineers' runs in
one tree) may need the same build at once: the Go roles (``build/go``), the Node.js roles
(``build/node``), the Java roles and their Maven repository (``build/java``, ``build/maven``),
FerretDB (``build/ferretdb``), the docker images (``build/docker``). :func:`held` takes an
exclusive ``flock`` on ``.<folder's name>.build.lock`` beside the folder (not in it: taking
the lock makes no build folder; per open file, so two threads of one process exclude each
other too), re-entrant within a thread: a builder checks whether its product exists, takes
the lock, checks again (another harness may have built it meanwhile) and only then builds.
"""

from __future__ import annotations

import contextlib
import fcntl
import threading
from collections.abc import Iterator
from pathlib import Path

LOCK_SUFFIX = ".build.lock"

_GUARD = threading.Lock()
_THREAD_LOCKS: dict[Path, threading.RLock] = {}
_DEPTH: dict[Path, int] = {}


@contextlib.contextmanager
def held(folder: Path) -> Iterator[None]:
    """Hold ``folder``'s build lock (its parent made if missing) for the ``with`` body; a
    nested call for the same folder in the same thread holds it already."""
    folder = Path(folder).absolute()
    with _GUARD:
        thread_lock = _THREAD_LOCKS.setdefault(folder, threading.RLock())
    with thread_lock:  # the other threads of this process wait here
        if _DEPTH.get(folder):
            _DEPTH[folder] += 1
            try:
                yield
            finally:
                _DEPTH[folder] -= 1
            return
        folder.parent.mkdir(parents=True, exist_ok=True)
        with (folder.parent / f".{folder.name}{LOCK_SUFFIX}").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # other processes wait here; closing releases
            _DEPTH[folder] = 1
            try:
                yield
            finally:
                _DEPTH[folder] = 0
