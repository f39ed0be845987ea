"""Major GCs are logged with timestamps and read back per role (issue 14)."""

from __future__ import annotations

import io
import time
from pathlib import Path

from ipclab_services import gcwatch

from ipclab.studies.nyflott.gcevents import read_gc_events


def test_gen2_collections_are_logged_and_read_back(tmp_path: Path) -> None:
    import gc

    out = io.StringIO()
    before = len(gc.callbacks)
    gcwatch.install(out)
    try:
        t0 = time.time()
        gc.collect(0)  # a young collection: not logged
        gc.collect()  # a full one: logged
        gc.collect()
    finally:
        del gc.callbacks[before:]
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and all(line.startswith(gcwatch.PREFIX) for line in lines)
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "gateway.log").write_text(
        "INFO started\n" + lines[1] + "\n" + gcwatch.PREFIX + "{bad\n"
    )
    (logs / "auth.log").write_text(lines[0] + "\n")
    events = read_gc_events(tmp_path)
    assert list(events["role"]) == ["auth", "gateway"]
    assert (events["t"] >= t0 - 1).all() and (events["ms"] >= 0).all()
