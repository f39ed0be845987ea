"""Roles built in Go: ``go build`` of the module under ``services/go`` into a cache.

The binary lands in ``build/go/<hash>/`` where the hash covers the module's sources
(``*.go``, ``go.mod``, ``go.sum``), so it is rebuilt exactly when they change. Modules
come through the Go module proxy (``GOPROXY``) on the first build. Without a ``go`` on
``PATH``, :class:`ToolchainMissing` says how to install one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ipclab.paths import REPO_ROOT

GO_MODULE = REPO_ROOT / "services" / "go"
BUILD_DIR = Path(os.environ.get("IPCLAB_GO_BUILD_DIR", REPO_ROOT / "build" / "go"))
BINARY = "ipclab-services-go"
INSTALL_HINT = (
    "the Go toolchain (`go`, 1.23 or later) is not on PATH: install it from "
    "https://go.dev/doc/install (or `apt-get install golang-go`) to build and run the Go stacks"
)


class ToolchainMissing(RuntimeError):
    """No ``go`` command: the Go roles cannot be built."""


def toolchain_missing() -> str | None:
    """Why Go roles cannot be built here, or None when ``go`` is on PATH."""
    return None if shutil.which("go") else INSTALL_HINT


def sources_hash(module: Path = GO_MODULE) -> str:
    h = hashlib.sha256()
    for path in sorted(module.rglob("*")):
        if path.is_file() and (path.suffix == ".go" or path.name in ("go.mod", "go.sum")):
            h.update(str(path.relative_to(module)).encode())
            h.update(b"\0")
            h.update(path.read_bytes())
            h.update(b"\0")
    return h.hexdigest()[:16]


def go_binary(module: Path = GO_MODULE) -> Path:
    """The built binary for the module's current sources, built first when missing."""
    out = BUILD_DIR / sources_hash(module) / BINARY
    if out.exists():
        return out
    go = shutil.which("go")
    if go is None:
        raise ToolchainMissing(INSTALL_HINT)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{BINARY}.{os.getpid()}.tmp")
    print(f"building the Go roles: go build {module} -> {out}", file=sys.stderr, flush=True)
    res = subprocess.run(
        [go, "build", "-trimpath", "-o", str(tmp), "."],
        cwd=module,
        capture_output=True,
        text=True,
        check=False,
    )
    if res.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise RuntimeError(f"go build failed in {module}:\n{res.stderr.strip()}")
    tmp.replace(out)
    return out
