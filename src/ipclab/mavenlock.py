"""The Java roles' Maven artifacts, pinned by checksum: a committed lock, a local repository
fetched from it and checked against it, and Maven run offline on nothing else (issue 48).

The poms pin versions; versions are names, not contents. ``services/java/maven.lock``
(:data:`LOCK`) holds the sha256 of every file a build of the Java projects reads from its
local repository (``build/maven``): the dependencies' and plugins' jars and poms, the BOMs,
Quarkus's platform properties, and the native ``protoc`` executable the protobuf plugin
runs. Before any build, :func:`prepare`

1. fetches each locked file the local repository lacks from Maven Central itself (not
   through Maven, so nothing runs before it is checked), checks its sha256 and only then
   puts it in place;
2. checks every file of the local repository against the lock (:func:`problems`): a file
   whose checksum differs, or that the lock does not name, stops the build with the list;
   Maven's own bookkeeping (:data:`BOOKKEEPING`: ``_remote.repositories``, ``*.sha1``,
   ``maven-metadata*.xml``, ...) is not an artifact and is left out; and the repository's
   folders and files must be this user's and writable by no one else.

Then ``javabuild`` runs ``mvn -o`` (offline): Maven reads the checked files only, and a
build that needs a file the lock lacks fails offline instead of fetching it. Without the
lock file no build runs.

``python -m ipclab.mavenlock lock`` regenerates the lock: Maven (``-C``, strict checksums
against Central's own) builds each project online into an empty repository, and every
artifact it fetched is recorded. Run it after a pom changes and review the diff of hashes.
``verify`` and ``fetch`` run the two steps above on ``build/maven``.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import os
import stat
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ipclab.javaprotos import write_protos
from ipclab.paths import REPO_ROOT

LOCK = REPO_ROOT / "services" / "java" / "maven.lock"
#: the Maven repository the builds use (ipclab.javabuild.MAVEN_REPO is this)
MAVEN_REPO = Path(os.environ.get("IPCLAB_MAVEN_REPO", REPO_ROOT / "build" / "maven"))
PROJECTS = ("californium", "payload")  # services/java/<project>/pom.xml
CENTRAL = "https://repo.maven.apache.org/maven2/"
# Maven's and its resolver's own records in a local repository: not artifacts, never read
# as code or as a model
BOOKKEEPING = (
    "_remote.repositories", "*.lastUpdated", "resolver-status.properties",
    "maven-metadata*.xml", "*.sha1", "*.md5", "*.sha256", "*.sha512", "*.part", "*.lock",
)  # fmt: skip
HEADER = (
    "# The sha256 of every file the Java roles' Maven builds read from their local\n"
    "# repository (src/ipclab/mavenlock.py). Regenerate: python -m ipclab.mavenlock lock\n"
)


class LockMismatch(RuntimeError):
    """The local repository holds a file the lock does not allow: no build runs."""


def read_lock(path: Path = LOCK) -> dict[str, str]:
    """The lock: relative path -> sha256 (LockMismatch if there is none)."""
    if not path.is_file():
        raise LockMismatch(
            f"{path} is missing: the Java roles are built only from artifacts whose checksums "
            "are committed (regenerate it with `python -m ipclab.mavenlock lock`)"
        )
    out: dict[str, str] = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        digest, _, name = line.partition("  ")
        if len(digest) != 64 or not name or name.startswith("/") or ".." in name.split("/"):
            raise LockMismatch(f"{path}:{n}: not '<sha256>  <relative path>': {line!r}")
        out[name] = digest
    return out


def bookkeeping(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in BOOKKEEPING)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def artifacts(repo: Path) -> Iterator[Path]:
    """Every file of ``repo`` that is not Maven's bookkeeping (links included)."""
    for folder, _, files in os.walk(repo):
        for name in files:
            if not bookkeeping(name):
                yield Path(folder) / name


def _unsafe_owner(repo: Path) -> list[str]:
    """Folders and files of ``repo`` another user could change (or links)."""
    out = []
    me = os.getuid()
    paths = [repo]
    for folder, dirs, files in os.walk(repo):
        paths += [Path(folder) / name for name in (*dirs, *files)]
    for path in paths:
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode):
            out.append(f"{path}: a symbolic link")
        elif st.st_uid != me or st.st_mode & 0o022:
            out.append(f"{path}: uid {st.st_uid}, mode {stat.filemode(st.st_mode)}")
    return out


def problems(repo: Path, lock: dict[str, str]) -> list[str]:
    """What in ``repo`` the lock does not allow (empty: the build may run)."""
    if not repo.is_dir():
        return []
    out = _unsafe_owner(repo)
    for path in artifacts(repo):
        name = path.relative_to(repo).as_posix()
        if name not in lock:
            out.append(f"{name}: not in the lock")
        elif path.is_symlink() or not path.is_file():
            out.append(f"{name}: not a regular file")
        elif (found := sha256(path)) != lock[name]:
            out.append(f"{name}: sha256 {found}, the lock says {lock[name]}")
    return out


def check(repo: Path, lock: dict[str, str] | None = None) -> None:
    """LockMismatch listing what in ``repo`` the lock does not allow."""
    found = problems(repo, read_lock() if lock is None else lock)
    if found:
        shown = "\n  ".join(found[:20]) + (
            f"\n  ... {len(found) - 20} more" if len(found) > 20 else ""
        )
        raise LockMismatch(
            f"the Maven repository {repo} holds what {LOCK.relative_to(REPO_ROOT)} does not "
            f"allow; no build runs:\n  {shown}\nRemove {repo} (it is fetched again from the "
            "lock), or, if a pom changed, regenerate the lock: python -m ipclab.mavenlock lock"
        )


#: pauses before a fetch's network failures are tried again (a resolver's or a link's blip
#: must not fail a build; a checksum that differs is never tried again)
RETRY_PAUSES_S = (2.0, 10.0)
MISMATCH = "Central sent sha256"


def _fetch_one(repo: Path, name: str, digest: str) -> str | None:
    """Download ``name`` from Central into ``repo`` if its sha256 is ``digest``; else why."""
    target = repo / name
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".fetch-", suffix=".part")
    try:
        h = hashlib.sha256()
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(CENTRAL + name, timeout=60) as r:
            for block in iter(lambda: r.read(1 << 20), b""):
                h.update(block)
                out.write(block)
        if h.hexdigest() != digest:
            return f"{name}: {MISMATCH} {h.hexdigest()}, the lock says {digest}"
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
        tmp = ""
        return None
    except OSError as e:
        return f"{name}: {e}"
    finally:
        if tmp:
            Path(tmp).unlink(missing_ok=True)


def fetch(repo: Path, lock: dict[str, str] | None = None, workers: int = 8) -> list[str]:
    """Put every locked file ``repo`` lacks in place, checked; returns the names fetched
    (LockMismatch naming each file that could not be fetched or did not match)."""
    lock = read_lock() if lock is None else lock
    missing = sorted(n for n in lock if not (repo / n).exists())
    if not missing:
        return []
    print(f"fetching {len(missing)} locked Maven artifacts from {CENTRAL}", file=sys.stderr)
    todo, failed = missing, []
    for attempt, pause in enumerate(RETRY_PAUSES_S + (None,)):
        with ThreadPoolExecutor(workers) as pool:
            why = dict(
                zip(todo, pool.map(lambda n: _fetch_one(repo, n, lock[n]), todo), strict=True)
            )
        failed = [w for w in why.values() if w]
        # a network error (a name not resolved, a reset) is tried again after a pause; a
        # file whose checksum differs is not: Central sent another file
        todo = [n for n, w in why.items() if w and MISMATCH not in w]
        if not todo or pause is None:
            break
        print(f"{len(todo)} Maven artifacts failed (attempt {attempt + 1}); again in {pause:g} s",
              file=sys.stderr)  # fmt: skip
        time.sleep(pause)
    if failed:
        raise LockMismatch("fetching the locked Maven artifacts failed:\n  " + "\n  ".join(failed))
    return missing


def prepare(repo: Path) -> None:
    """Before a build: the lock read, what it names fetched, everything checked."""
    lock = read_lock()
    repo.mkdir(parents=True, exist_ok=True)
    fetch(repo, lock)
    check(repo, lock)


def _format(entries: Iterable[tuple[str, str]]) -> str:
    return HEADER + "".join(f"{digest}  {name}\n" for name, digest in sorted(entries))


def generate(out: Path = LOCK, projects: Iterable[str] = PROJECTS) -> int:
    """Build each project online into an empty repository (strict checksums) and write the
    sha256 of every artifact Maven fetched to ``out``; the number of entries."""
    java = REPO_ROOT / "services" / "java"
    with tempfile.TemporaryDirectory(prefix="ipclab-mavenlock-") as tmp:
        repo = Path(tmp) / "repo"
        for project in projects:
            write_protos(project, Path(tmp) / project)
            argv = [
                "mvn", "-B", "-q", "-C", f"-Dmaven.repo.local={repo}",
                "-f", str(java / project / "pom.xml"), f"-DbuildDirectory={Path(tmp) / project}",
                "package",
            ]  # fmt: skip
            done = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
            if done.returncode != 0:
                raise LockMismatch(f"mvn package of {project} failed:\n{done.stdout[-3000:]}")
        foreign = _not_from_central(repo)
        if foreign:
            raise LockMismatch(
                "artifacts from a repository other than Central: " + ", ".join(foreign)
            )
        entries = [(p.relative_to(repo).as_posix(), sha256(p)) for p in artifacts(repo)]
    tmp_out = out.with_name(f".{out.name}.tmp")
    tmp_out.write_text(_format(entries))
    tmp_out.replace(out)
    return len(entries)


def _not_from_central(repo: Path) -> list[str]:
    """Files Maven recorded as fetched from a repository other than ``central``."""
    out = []
    for record in repo.rglob("_remote.repositories"):
        for line in record.read_text().splitlines():
            if line and not line.startswith("#") and not line.endswith(">central="):
                out.append(f"{record.parent.name}: {line}")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ipclab.mavenlock", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("command", choices=("lock", "verify", "fetch"))
    p.add_argument("--repo", type=Path, default=None, help="default: javabuild's (build/maven)")
    a = p.parse_args(argv)
    repo = a.repo or MAVEN_REPO
    try:
        if a.command == "lock":
            print(f"{generate()} artifacts locked in {LOCK}")
        elif a.command == "fetch":
            print(f"{len(fetch(repo))} fetched into {repo}")
            check(repo)
        else:
            check(repo)
            print(f"{repo}: every artifact as {LOCK.name} says")
    except LockMismatch as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = [
    "LOCK", "LockMismatch", "check", "fetch", "generate", "prepare", "problems", "read_lock",
]  # fmt: skip
