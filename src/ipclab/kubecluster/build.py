"""The local cluster's two binaries, built from Go module sources into a cache, on demand.

``kubernetes/node`` is one multi-call binary (``ipclab-k8s``): etcd 3.6.4 embedded and
Kubernetes 1.34.4's apiserver, controller-manager, scheduler, kubelet and kube-proxy, one
per process (``kubernetes/node/main.go`` says why). ``kubernetes/pause`` is the pods'
sandbox process. Both land in ``build/kubernetes/<hash>/`` (``$IPCLAB_K8S_BUILD_DIR``),
where the hash covers the module's sources (``*.go``, ``go.mod``, ``go.sum``) and every
build setting, as ``ipclab.gobuild`` builds the Go stacks: rebuilt exactly when they change.

The node binary's first build is long and heavy (measured on 2 cores from a fresh clone with
empty Go caches: 394 s, 540 s of CPU, at most 2.2 GB resident, 556 MB of modules through the
Go module proxy and 3.0 GB of build cache; docs/kubernetes.md). It is therefore never implicit: only
``ipclab cluster up --build``, ``ipclab cluster build`` or ``make k8s-cluster`` start it,
under ``nice -n 19`` with ``-p 1`` (one package at a time), and never during a measurement.
Its output goes to a log beside the cache (``go build -v`` lists each package as it goes).

``go.sum`` is not committed until the first build: when it is missing, the build first runs
``go mod tidy`` (which also completes ``go.mod``'s indirect requirements); commit both
files afterwards, so later builds are reproducible and the hash is stable.

Versions are stamped as the upstream release build stamps them (``-ldflags -X``), from the
``k8s.io/kubernetes`` requirement in ``go.mod``: without them every component reports
``v0.0.0-master``, the node's ``kubeletVersion`` and ``/version`` included.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ipclab.gobuild import ToolchainMissing, toolchain_missing
from ipclab.paths import REPO_ROOT
from ipclab.procs import tail

SOURCES = REPO_ROOT / "kubernetes"
NODE_MODULE = SOURCES / "node"
PAUSE_MODULE = SOURCES / "pause"
BUILD_DIR = Path(os.environ.get("IPCLAB_K8S_BUILD_DIR", REPO_ROOT / "build" / "kubernetes"))
NODE_BINARY = "ipclab-k8s"
PAUSE_BINARY = "pause"
# static binaries; no toolchain download (go.mod's `go` line is older than the local go)
BUILD_ENV = {"CGO_ENABLED": "0", "GOTOOLCHAIN": "local"}
NODE_TAGS = "providerless"  # no in-tree cloud providers: less to compile and link
JOBS = int(os.environ.get("IPCLAB_K8S_BUILD_JOBS", "1"))

__all__ = [
    "BUILD_DIR",
    "BuildFailed",
    "NotBuilt",
    "Target",
    "ToolchainMissing",
    "binaries",
    "build",
    "kubernetes_version",
    "needs_tidy",
    "sources_hash",
]


class BuildFailed(RuntimeError):
    """``go mod tidy`` or ``go build`` failed; the message ends with its log's tail."""


class NotBuilt(RuntimeError):
    """The binary for the current sources is not in the cache, and no build was asked."""


def kubernetes_version(go_mod: str) -> str:
    """The ``k8s.io/kubernetes`` version ``go_mod`` requires, e.g. ``v1.34.4``."""
    m = re.search(r"^\s*(?:require\s+)?k8s\.io/kubernetes\s+(v\d+\.\d+\.\d+\S*)", go_mod, re.M)
    if m is None:
        raise ValueError("go.mod requires no k8s.io/kubernetes version")
    return m.group(1)


def version_ldflags(version: str) -> list[str]:
    """``-X`` stamps of ``version`` (``vMAJOR.MINOR.PATCH``) for component-base and client-go."""
    m = re.fullmatch(r"v(\d+)\.(\d+)\.\d+.*", version)
    if m is None:
        raise ValueError(f"not a Kubernetes version: {version!r}")
    major, minor = m.groups()
    stamps = {"gitVersion": version, "gitMajor": major, "gitMinor": minor, "gitTreeState": "clean"}
    flags = []
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {package}.{name}={value}" for name, value in stamps.items()]
    return flags


@dataclass(frozen=True)
class Target:
    """One Go module built into one binary, with the flags that make it."""

    module: Path
    binary: str
    tags: str = ""
    ldflags: tuple[str, ...] = ("-s", "-w")

    def go_build_args(self, output: Path) -> list[str]:
        args = ["build", "-p", str(JOBS), "-trimpath", "-v"]
        if self.tags:
            args += ["-tags", self.tags]
        return [*args, "-ldflags", " ".join(self.ldflags), "-o", str(output), "."]

    def settings(self) -> str:
        """What besides the sources changes the binary (``-v`` and ``-p`` do not)."""
        return repr((sorted(BUILD_ENV.items()), self.binary, self.tags, self.ldflags))


def node_target(module: Path = NODE_MODULE) -> Target:
    version = kubernetes_version((module / "go.mod").read_text())
    return Target(module, NODE_BINARY, NODE_TAGS, ("-s", "-w", *version_ldflags(version)))


def pause_target(module: Path = PAUSE_MODULE) -> Target:
    return Target(module, PAUSE_BINARY)


def sources_hash(target: Target) -> str:
    """sha256 (16 hex digits) of the module's ``*.go``, ``go.mod``, ``go.sum`` and settings."""
    h = hashlib.sha256(target.settings().encode())
    for path in sorted(target.module.rglob("*")):
        if path.is_file() and (path.suffix == ".go" or path.name in ("go.mod", "go.sum")):
            h.update(str(path.relative_to(target.module)).encode() + b"\0")
            h.update(path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def cached(target: Target, build_dir: Path = BUILD_DIR) -> Path:
    """Where the binary of the module's current sources is (or will be) in the cache."""
    return build_dir / sources_hash(target) / target.binary


def _go(module: Path) -> str:
    missing = toolchain_missing(module)
    go = shutil.which("go")
    if missing is not None or go is None:
        raise ToolchainMissing(f"the local Kubernetes cluster is built with Go: {missing}")
    return go


def _run_logged(argv: list[str], cwd: Path, log: Path, what: str) -> None:
    """``argv`` under ``nice -n 19`` with output appended to ``log``; RuntimeError with the
    log's tail if it fails."""
    nice = ["nice", "-n", "19"] if shutil.which("nice") else []
    with open(log, "ab") as out:
        out.write(f"\n$ {' '.join(argv)}  (in {cwd})\n".encode())
        out.flush()
        done = subprocess.run(
            [*nice, *argv],
            cwd=cwd,
            env={**os.environ, **BUILD_ENV},
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    if done.returncode != 0:
        raise BuildFailed(f"{what} failed (exit {done.returncode}; log {log}):\n{tail(log, 40)}")


def needs_tidy(module: Path) -> bool:
    """The module requires other modules but has no ``go.sum`` yet (before its first build)."""
    requires = re.search(r"^require\b", (module / "go.mod").read_text(), re.M)
    return requires is not None and not (module / "go.sum").exists()


def build(target: Target, build_dir: Path = BUILD_DIR, say: Callable[[str], None] = print) -> Path:
    """The target's binary for its current sources: from the cache, or built now (with
    ``go mod tidy`` first when ``go.sum`` is missing). Prints what it builds and how long
    it took; ``ToolchainMissing`` without a usable ``go``."""
    go = _go(target.module)
    build_dir.mkdir(parents=True, exist_ok=True)
    log = build_dir / f"{target.binary}.log"
    if needs_tidy(target.module):
        say(f"go mod tidy in {target.module} (first build: writes go.sum; commit it)")
        _run_logged([go, "mod", "tidy"], target.module, log, "go mod tidy")
    out = cached(target, build_dir)
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{target.binary}.{os.getpid()}.tmp")
    say(f"building {target.binary}: go build in {target.module} -> {out} (log {log})")
    started = time.monotonic()
    try:
        _run_logged([go, *target.go_build_args(tmp)], target.module, log, "go build")
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    tmp.replace(out)
    say(f"built {target.binary} in {time.monotonic() - started:.0f} s")
    return out


def binaries(
    build_missing: bool = False, build_dir: Path = BUILD_DIR, say: Callable[[str], None] = print
) -> tuple[Path, Path]:
    """(node binary, pause binary) for the current sources. Missing ones are built when
    ``build_missing``, else ``NotBuilt`` says how to build them."""
    out = []
    for target in (node_target(), pause_target()):
        path = None if needs_tidy(target.module) else cached(target, build_dir)
        if path is not None and path.exists():
            out.append(path)
        elif build_missing:
            out.append(build(target, build_dir, say))
        else:
            raise NotBuilt(
                f"{target.binary} is not built for the current sources of {target.module} "
                "(the node binary's first build takes about 7 min on 2 cores): run "
                "`make k8s-cluster`, `ipclab cluster build` or `ipclab cluster up --build`"
            )
    node, pause = out
    return node, pause
