"""Roles built in Go: ``go build`` of the module under ``services/go`` into a cache.

The binary lands in ``build/go/<hash>/`` where the hash covers the module's sources
(``*.go``, ``go.mod``, ``go.sum``) and the build flags, so it is rebuilt exactly when they
change. It is built with ``CGO_ENABLED=0``: a static binary, the same one on the local
backend and in the docker image (``ipclab.backends.docker.images``), whatever the host's C
library. Modules come through the Go module proxy (``GOPROXY``) on the first build. Without
a ``go`` on ``PATH``, or with one older than ``go.mod`` asks for, :func:`toolchain_missing`
and :class:`ToolchainMissing` say how to install one.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from ipclab import buildlock
from ipclab.paths import REPO_ROOT

GO_MODULE = REPO_ROOT / "services" / "go"
BUILD_DIR = Path(os.environ.get("IPCLAB_GO_BUILD_DIR", REPO_ROOT / "build" / "go"))
BINARY = "ipclab-services-go"
BUILD_ENV = {"CGO_ENABLED": "0"}  # static: runs on the host and in the image alike
BUILD_FLAGS = ("-trimpath",)
INSTALL = (
    "install Go {need} or later from https://go.dev/dl/ (the linux-amd64 archive, unpacked "
    "with `tar -C /usr/local -xzf go*.linux-amd64.tar.gz`, then /usr/local/go/bin added to "
    "PATH; Debian 12's golang-go is Go 1.19, too old) to build and run the Go stacks"
)
USUAL_PLACE = Path("/usr/local/go/bin/go")  # where go.dev's archive puts it


class ToolchainMissing(RuntimeError):
    """No usable ``go`` command: the Go roles cannot be built."""


def required_version(module: Path = GO_MODULE) -> str:
    """The Go version the module's ``go.mod`` asks for (its ``go`` line), e.g. ``1.23``."""
    m = re.search(r"^go\s+(\d+\.\d+(?:\.\d+)?)\s*$", (module / "go.mod").read_text(), re.M)
    return m.group(1) if m else "1.23"


def _version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


@functools.cache
def _go_version(go: str, module: Path) -> tuple[str, str]:
    """(version, error) of ``go`` run in the module: a go >= 1.21 older than go.mod asks
    for switches to (first downloading) the toolchain go.mod names, and reports that one."""
    try:
        r = subprocess.run(
            [go, "env", "GOVERSION"],
            cwd=module,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return "", str(e)
    have = r.stdout.strip().removeprefix("go")
    if r.returncode != 0 or not have:
        return "", (r.stderr.strip() or "no version").splitlines()[-1]
    return have, ""


def _toolchain_problem(go: str | None, module: Path) -> str | None:
    need = required_version(module)
    install = INSTALL.format(need=need)
    if go is None:
        if USUAL_PLACE.exists():
            return (
                f"the Go toolchain (`go`) is not on PATH, but {USUAL_PLACE} exists: add "
                f"{USUAL_PLACE.parent} to PATH to build and run the Go stacks"
            )
        return f"the Go toolchain (`go`) is not on PATH: {install}"
    have, error = _go_version(go, module)
    if error:
        return f"the Go toolchain at {go} cannot build Go {need} ({error}): {install}"
    if _version_tuple(have) < _version_tuple(need):
        return f"the Go toolchain at {go} is Go {have}, older than {need}: {install}"
    return None


def toolchain_missing(module: Path = GO_MODULE) -> str | None:
    """Why Go roles cannot be built here (naming the Go toolchain and how to install it),
    or None when a ``go`` recent enough for ``go.mod`` is on PATH."""
    return _toolchain_problem(shutil.which("go"), module)


def sources_hash(module: Path = GO_MODULE) -> str:
    h = hashlib.sha256()
    h.update(repr((sorted(BUILD_ENV.items()), BUILD_FLAGS)).encode())
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
    missing = toolchain_missing(module)
    go = shutil.which("go")
    if missing is not None or go is None:
        raise ToolchainMissing(missing or "no go on PATH")
    with buildlock.held(BUILD_DIR):  # another harness may be building it: once is enough
        if out.exists():
            return out
        out.parent.mkdir(parents=True, exist_ok=True)
        print(f"building the Go roles: go build {module} -> {out}", file=sys.stderr, flush=True)
        if (error := build(go, [*BUILD_FLAGS, "."], module, out, BUILD_ENV)) is not None:
            raise RuntimeError(f"go build failed in {module}:\n{error}")
    return out


def build(go: str, args: Sequence[str], cwd: Path, out: Path, env: Mapping[str, str]) -> str | None:
    """``go build <args>`` in ``cwd`` with ``env`` over the environment, into a temporary
    name beside ``out`` moved in place only when it succeeds (a killed or failed build leaves
    no binary); None, or the compiler's message."""
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    res = subprocess.run(
        [go, "build", "-o", str(tmp), *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )
    if res.returncode != 0:
        tmp.unlink(missing_ok=True)
        return res.stderr.strip()
    tmp.replace(out)
    return None
