"""Roles built in Java: ``mvn package`` of a Maven project under ``services/java`` into a
cache, as :mod:`ipclab.gobuild` builds the Go roles.

What a build leaves lands in ``build/java/<project>/<hash>/``, where the hash covers the
project's sources (``src/**``, ``pom.xml``), so it is rebuilt exactly when they change:
``lib/`` (the project's own jar and every dependency's: :func:`classpath`, which a role runs
as ``java -cp <lib>/*``, the Californium adapters) or ``quarkus-app/`` (a Quarkus
application's fast-jar: :func:`quarkus_app`, which :func:`payload_launcher` starts, the
payload services). Every artifact a build reads (dependencies, plugins, ``protoc``) is
pinned by its sha256 in ``services/java/maven.lock`` (:mod:`ipclab.mavenlock`): before each
build the locked files ``build/maven`` lacks are fetched from Maven Central and checked,
everything in ``build/maven`` is checked against the lock (a file it does not name, or
whose checksum differs, stops the build), and Maven runs offline (``-o``) from there only.
Without ``java`` or ``mvn`` on PATH, :func:`toolchain_missing` and :class:`ToolchainMissing`
say what to install.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from ipclab import buildlock, mavenlock
from ipclab.javaprotos import PROTO_DIR, PROTO_SOURCES, write_protos
from ipclab.paths import REPO_ROOT

JAVA_PROJECTS = REPO_ROOT / "services" / "java"
BUILD_DIR = Path(os.environ.get("IPCLAB_JAVA_BUILD_DIR", REPO_ROOT / "build" / "java"))
MAVEN_REPO = mavenlock.MAVEN_REPO
JAVA_RELEASE = 17  # the pom's maven.compiler.release
INSTALL = (
    "install a Java {release} JDK and Maven (Debian: apt-get install "
    "openjdk-{release}-jdk-headless maven; scripts/system-deps.sh installs both) to build and "
    "run the Java roles"
)


class ToolchainMissing(RuntimeError):
    """No usable ``java`` or ``mvn``: the Java roles cannot be built."""


def _java_release(java: str) -> int | None:
    try:
        r = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', r.stderr + r.stdout)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def toolchain_missing() -> str | None:
    """Why Java roles cannot be built here (what to install), or None."""
    install = INSTALL.format(release=JAVA_RELEASE)
    java, mvn = shutil.which("java"), shutil.which("mvn")
    if java is None or mvn is None:
        missing = " and ".join(n for n, p in (("java", java), ("mvn", mvn)) if p is None)
        return f"{missing} not on PATH: {install}"
    release = _java_release(java)
    if release is None or release < JAVA_RELEASE:
        return f"the java at {java} is release {release}, older than {JAVA_RELEASE}: {install}"
    return None


def sources_hash(project: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(project.rglob("*")):
        rel = path.relative_to(project)
        if path.is_file() and rel.parts[0] in ("src", "pom.xml"):
            h.update(str(rel).encode() + b"\0" + path.read_bytes() + b"\0")
    for f in PROTO_SOURCES.get(project.name, ()):
        h.update(f"proto/{f}".encode() + b"\0" + (PROTO_DIR / f).read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _maven(project: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """``mvn package``, offline, from the checked local repository only."""
    argv = [
        "mvn", "-B", "-q", "-o", f"-Dmaven.repo.local={MAVEN_REPO}",
        "-f", str(project / "pom.xml"), f"-DbuildDirectory={out}", "package",
    ]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=1800, check=False)


def _built(name: str, product: str, marker: str) -> Path:
    """``build/java/<name>/<hash>/<product>`` for the project's current sources, built first
    when its ``marker`` file is missing there."""
    project = JAVA_PROJECTS / name
    out = BUILD_DIR / name / sources_hash(project)
    if (out / product / marker).exists():
        return out / product
    if why := toolchain_missing():
        raise ToolchainMissing(why)
    # one Maven build at a time (they share build/maven, which the lock's fetch fills and
    # checks); another harness may have built this one meanwhile
    with buildlock.held(BUILD_DIR):
        if not (out / product / marker).exists():
            _build_into(project, out, product, name)
    return out / product


def _build_into(project: Path, out: Path, product: str, name: str) -> None:
    """The build of :func:`_built`, in a temporary folder moved to ``out`` when done."""
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    mavenlock.prepare(MAVEN_REPO)  # LockMismatch: nothing unlocked or altered is built on
    print(f"building the Java roles: mvn package {project} -> {out}", file=sys.stderr, flush=True)
    write_protos(name, tmp)
    done = _maven(project, tmp)
    if done.returncode != 0 or not (tmp / product).is_dir():
        shutil.rmtree(tmp, ignore_errors=True)
        raise ToolchainMissing(
            f"mvn -o package of {project} failed (an artifact the lock lacks? after a pom "
            f"changes: python -m ipclab.mavenlock lock):\n{done.stdout[-3000:]}"
        )
    if product == "lib":  # the project's own jar beside its dependencies'
        shutil.copy2(tmp / f"ipclab-{name}.jar", tmp / "lib" / f"ipclab-{name}.jar")
    shutil.rmtree(out, ignore_errors=True)
    tmp.replace(out)


def classpath(name: str = "californium") -> Path:
    """The folder of the project's jars (``lib/``, its own among them) for its current
    sources, built first when missing: a role runs ``java -cp <folder>/*``."""
    return _built(name, "lib", f"ipclab-{name}.jar")


def quarkus_app(name: str = "payload") -> Path:
    """The Quarkus application's fast-jar folder (``quarkus-run.jar`` and what it loads) for
    the project's current sources, built first when missing."""
    return _built(name, "quarkus-app", "quarkus-run.jar")


LAUNCHER = "ipclab-payload"
LAUNCHER_TEXT = """#!/bin/sh
# The payload services on the JVM (services/java/payload, built by ipclab.javabuild): the
# Quarkus application beside this file, with the run's JVM flags (IPCLAB_JVM_OPTIONS,
# space-separated; none: the JVM's own ergonomics, a quarter of the memory, at least about
# 125 MB, for the heap).
exec java $IPCLAB_JVM_OPTIONS -jar "$(dirname "$0")/quarkus-app/quarkus-run.jar"
"""


def payload_launcher() -> Path:
    """The command that starts a payload role on the JVM: a shell script beside the built
    Quarkus application, which execs ``java`` (the role's pid is the JVM's)."""
    app = quarkus_app("payload")
    script = app.parent / LAUNCHER
    if not script.exists() or script.read_text() != LAUNCHER_TEXT:
        tmp = script.with_name(f"{LAUNCHER}.{os.getpid()}.tmp")
        tmp.write_text(LAUNCHER_TEXT)
        tmp.chmod(0o755)
        tmp.replace(script)
    return script


def main(argv: list[str] | None = None) -> int:
    """``python -m ipclab.javabuild protos [BUILD_DIR]``: the .proto files of every project
    into its build directory (default ``services/java/<project>/target``), for a ``mvn
    package`` by hand."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] != "protos" or len(args) > 2:
        print("usage: python -m ipclab.javabuild protos [BUILD_DIR]", file=sys.stderr)
        return 2
    for name in PROTO_SOURCES:
        out = Path(args[1]) if len(args) == 2 else JAVA_PROJECTS / name / "target"
        write_protos(name, out)
        print(out / "proto")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
