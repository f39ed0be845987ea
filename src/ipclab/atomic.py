"""Files that are either the old or the new version, never half written, and on disk.

Written to a temporary file beside the target, fsynced, renamed over it, then the directory
fsynced: a crash or kill -9 at any point leaves the previous file or the complete new one.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def write_text_atomic(path: Path, text: str, mode: int | None = None) -> None:
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_json_atomic(path: Path, data: Mapping[str, Any], mode: int | None = None) -> None:
    write_text_atomic(path, json.dumps(data, indent=2, default=str) + "\n", mode)
