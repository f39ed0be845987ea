"""Major garbage collections, timestamped: one line per gen-2 collection on stderr.

With ``IPCLAB_GC_EVENTS=1`` a role prints, at the end of every generation-2 collection,
``ipclab-gc {"t": <unix s at start>, "ms": <pause>, "collected": n, "uncollectable": n}``
to stderr, which the backends keep as the role's log (``logs/<role>.log`` in the run
directory), so response-time extremes can be set against major GCs.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
from typing import Any

PREFIX = "ipclab-gc "
ENV = "IPCLAB_GC_EVENTS"


def install(stream: Any = None) -> None:
    """Register the callback (once per process)."""
    out = stream if stream is not None else sys.stderr
    started: list[tuple[float, float]] = []

    def callback(phase: str, info: dict[str, Any]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            started[:] = [(time.time(), time.perf_counter())]
        elif started:
            wall, t0 = started.pop()
            event = {
                "t": round(wall, 6),
                "ms": round((time.perf_counter() - t0) * 1000, 3),
                "collected": info.get("collected", 0),
                "uncollectable": info.get("uncollectable", 0),
            }
            out.write(PREFIX + json.dumps(event) + "\n")
            out.flush()

    gc.callbacks.append(callback)


def install_from_env() -> None:
    if os.environ.get(ENV) == "1":
        install()
