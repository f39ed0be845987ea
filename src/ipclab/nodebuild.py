"""Roles written for Node.js: the project under ``services/node``, installed into a cache by
``npm ci`` from its committed lock, as :mod:`ipclab.gobuild` builds the Go roles.

What a build leaves lands in ``build/node/<hash>/`` where the hash covers the project's
sources (``*.js``, ``package.json``, ``package-lock.json``), the ``shop.proto`` every runtime
reads and the launcher: ``app/`` (the sources, ``proto/shop.proto`` copied from
``services/proto``, and ``node_modules`` from ``npm ci``, which installs exactly what
``package-lock.json`` names and checks each package against the lock's integrity hash, or
fails) and the launcher ``ipclab-services-node`` (``exec node app/main.js``), which every role
runs. Nothing is fetched when a role starts: a build happens before the roles start (the
local backend) or before the image is built (the docker backend, which copies the build and
the host's ``node`` into ``ipclab-services-node``). Without ``node`` and ``npm`` on PATH, or
with a ``node`` older than :data:`NODE_MAJOR`, :func:`toolchain_missing` and
:class:`ToolchainMissing` say what to install. :func:`versions` is what a run's manifest
records: the node version and every locked package's.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from ipclab import buildlock
from ipclab.paths import REPO_ROOT

NODE_PROJECT = REPO_ROOT / "services" / "node"
PROTO = REPO_ROOT / "services" / "proto" / "shop.proto"
BUILD_DIR = Path(os.environ.get("IPCLAB_NODE_BUILD_DIR", REPO_ROOT / "build" / "node"))
NODE_MAJOR = 20  # package.json's engines
LAUNCHER = "ipclab-services-node"
LAUNCHER_TEXT = """#!/bin/sh
# A role of a Node.js shop stack (services/node, built by ipclab.nodebuild): the sources and
# their locked dependencies beside this file; the role's pid is node's.
exec node "$(dirname "$0")/app/main.js"
"""
NPM_CI = ("npm", "ci", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund")
INSTALL = (
    "install Node.js {major} or later with npm (Debian 12's nodejs is 18, too old: the "
    "NodeSource nodejs package for {major}.x, or the linux-x64 archive from "
    "https://nodejs.org/en/download with its bin/ on PATH) to build and run the Node.js stacks"
)


class ToolchainMissing(RuntimeError):
    """No usable ``node`` or ``npm``: the Node.js roles cannot be built."""


@functools.cache
def node_version(node: str = "node") -> str:
    """``node --version`` without its ``v`` (e.g. ``20.20.2``), or "" when it does not run."""
    try:
        r = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return r.stdout.strip().removeprefix("v") if r.returncode == 0 else ""


def toolchain_missing() -> str | None:
    """Why the Node.js roles cannot be built here (what to install), or None."""
    install = INSTALL.format(major=NODE_MAJOR)
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        missing = " and ".join(n for n, p in (("node", node), ("npm", npm)) if p is None)
        return f"{missing} not on PATH: {install}"
    have = node_version(node)
    m = re.match(r"(\d+)\.", have)
    if m is None or int(m.group(1)) < NODE_MAJOR:
        return f"the node at {node} is {have or 'unknown'}, older than {NODE_MAJOR}: {install}"
    return None


def _sources(project: Path) -> list[Path]:
    """The project's own files a build copies: its JavaScript and package files."""
    return sorted(
        p
        for p in project.rglob("*")
        if p.is_file()
        and "node_modules" not in p.relative_to(project).parts
        and (p.suffix == ".js" or p.name in ("package.json", "package-lock.json"))
    )


def sources_hash(project: Path = NODE_PROJECT, proto: Path = PROTO) -> str:
    h = hashlib.sha256(repr(NPM_CI).encode() + LAUNCHER_TEXT.encode())
    for path in [*_sources(project), proto]:
        name = "proto/shop.proto" if path == proto else str(path.relative_to(project))
        h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _npm_ci(app: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(NPM_CI), cwd=app, capture_output=True, text=True, timeout=1800, check=False
    )


def build(project: Path = NODE_PROJECT) -> Path:
    """``build/node/<hash>/`` for the project's current sources (``app/`` and the launcher),
    built first when missing: the sources and shop.proto copied, ``npm ci`` from the lock."""
    out = BUILD_DIR / sources_hash(project)
    if (out / LAUNCHER).exists():
        return out
    if why := toolchain_missing():
        raise ToolchainMissing(why)
    with buildlock.held(BUILD_DIR):  # another harness may be building it: once is enough
        if not (out / LAUNCHER).exists():
            _build_into(project, out)
    return out


def _build_into(project: Path, out: Path) -> None:
    """The build of :func:`build`, in a temporary folder moved to ``out`` when done."""
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    app = tmp / "app"
    for src in _sources(project):
        dest = app / src.relative_to(project)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)
    (app / "proto").mkdir(parents=True, exist_ok=True)
    shutil.copy2(PROTO, app / "proto" / PROTO.name)
    print(f"building the Node.js roles: npm ci in {out}", file=sys.stderr, flush=True)
    done = _npm_ci(app)
    if done.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ToolchainMissing(
            f"npm ci for {project} failed (a package the lock lacks, or one whose integrity "
            f"hash differs? after package.json changes: npm install --package-lock-only "
            f"--ignore-scripts in {project}):\n{(done.stderr or done.stdout)[-3000:]}"
        )
    (tmp / LAUNCHER).write_text(LAUNCHER_TEXT)
    (tmp / LAUNCHER).chmod(0o755)
    shutil.rmtree(out, ignore_errors=True)
    tmp.replace(out)


def launcher() -> Path:
    """The command every Node.js role runs (built first when its sources changed)."""
    return build() / LAUNCHER


def locked_packages(project: Path = NODE_PROJECT) -> dict[str, str]:
    """Every package ``package-lock.json`` installs, by name, with its version."""
    lock = json.loads((project / "package-lock.json").read_text())
    out = {}
    for where, entry in (lock.get("packages") or {}).items():
        if where.startswith("node_modules/") and not entry.get("dev"):
            out[where.rsplit("node_modules/", 1)[1]] = str(entry.get("version"))
    return dict(sorted(out.items()))


def versions() -> dict[str, str]:
    """What a run of a Node.js stack records (its manifest's ``stack_spec``): the node
    version and every locked package's."""
    return {"node": node_version() or "unknown", **locked_packages()}
