"""The services image's Python requirements and their wheel lock (``services/requirements.lock``):
what the image needs, the lock's lines, the lock written from the host's versions
(``python -m ipclab.backends.docker.images lock``), and the locked wheels downloaded and
checked on the host before a build."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipclab.backends.docker.imagebasics import ImageError, log
from ipclab.paths import REPO_ROOT

# The container's interpreter and platform (Debian 12 and python:3.11-slim: CPython 3.11, glibc).
WHEEL_PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64")
WHEEL_PYTHON = "3.11"

# Project dependencies the services never import; everything else goes into the image.
HARNESS_ONLY = {
    "cryptography",  # ipclab.tls makes the certificates; the services only read them
    "locust",
    "psutil",
    "pandas",
    "pyarrow",
    "numpy",
    "scipy",
    "matplotlib",
    "docker",
}


def service_requirements() -> list[str]:
    """The services' requirements: project dependencies minus harness-only ones, each pinned to
    the version installed on this host when there is one (same libraries on both backends)."""
    deps = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    out = []
    for dep in deps:
        m = re.match(r"^\s*([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*(.*)$", dep)
        if not m:
            continue
        name, extras, spec = m.group(1), m.group(2) or "", m.group(3).strip()
        if name.lower() in HARNESS_ONLY:
            continue
        try:
            out.append(f"{name}{extras}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            out.append(f"{name}{extras}{spec}")
    return out


# The container's interpreter and platform, for evaluating a wheel's dependency markers.
CONTAINER_MARKERS = {
    "python_version": WHEEL_PYTHON,
    "python_full_version": f"{WHEEL_PYTHON}.2",  # Debian 12's; no dependency here tells apart
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "os_name": "posix",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
}

# The committed lock: every wheel the services image installs, by version and sha256
# (``python -m ipclab.backends.docker.images lock`` writes it). The build downloads exactly
# these files, checks them on the host, and the image installs them with --require-hashes.
LOCK = REPO_ROOT / "services" / "requirements.lock"
LOCK_HEADER = """\
# The services image's Python packages (services/Dockerfile): every wheel, for CPython 3.11
# on x86_64 Linux, pinned by version and sha256; `# requires:` names each one's dependencies
# in the image (markers evaluated for it). The image build downloads these files, checks
# each one's hash on the host, and installs them with `pip install --require-hashes`.
# Generated from the host's installed versions; do not edit, regenerate with
#   python -m ipclab.backends.docker.images lock
"""


@dataclass(frozen=True)
class Locked:
    """One line of the lock: a wheel pinned by version and sha256."""

    name: str  # canonical (PEP 503)
    extras: str  # "[standard]" or ""
    version: str
    sha256: str
    requires: tuple[str, ...]  # canonical names of its dependencies in the image

    def line(self) -> str:
        requires = ", ".join(self.requires) or "-"
        return (
            f"{self.name}{self.extras}=={self.version} --hash=sha256:{self.sha256}"
            f"  # requires: {requires}"
        )


_LOCK_LINE = re.compile(
    r"^(?P<name>[a-z0-9][a-z0-9._-]*)(?P<extras>\[[^\]]*\])?==(?P<version>\S+)"
    r" --hash=sha256:(?P<sha256>[0-9a-f]{64})\s+# requires: (?P<requires>.*)$"
)


def read_lock(path: Path = LOCK) -> dict[str, Locked]:
    """The lock's entries by canonical name; a line of another shape is an error."""
    if not path.is_file():
        raise ImageError(f"{path} is missing: python -m ipclab.backends.docker.images lock")
    out: dict[str, Locked] = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        m = _LOCK_LINE.match(line)
        if not m:
            raise ImageError(f"{path}:{n}: not a lock line: {line!r}")
        req = m.group("requires").strip()
        requires = () if req == "-" else tuple(r.strip() for r in req.split(","))
        out[m.group("name")] = Locked(
            m.group("name"), m.group("extras") or "", m.group("version"), m.group("sha256"),
            requires,
        )  # fmt: skip
    return out


def lock_text(entries: Iterable[Locked]) -> str:
    return LOCK_HEADER + "".join(e.line() + "\n" for e in sorted(entries, key=lambda e: e.name))


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _wheel_metadata(wheel: Path) -> tuple[str, str, list[str]]:
    """(canonical name, version, Requires-Dist lines) read from a wheel's METADATA."""
    import email.parser
    import zipfile

    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        msg = email.parser.HeaderParser().parsestr(z.read(meta).decode())
    return _canonical(msg["Name"]), msg["Version"], msg.get_all("Requires-Dist") or []


def _needed(requires_dist: list[str], extras: set[str]) -> list[Any]:
    """The Requires-Dist entries that apply in the container with ``extras`` asked for."""
    from packaging.requirements import Requirement

    out = []
    for line in requires_dist:
        r = Requirement(line)
        if r.marker is None or any(
            r.marker.evaluate({**CONTAINER_MARKERS, "extra": e}) for e in ["", *sorted(extras)]
        ):
            out.append(r)
    return out


def lock_entries(requirements: list[str], wheels: Path) -> list[Locked]:
    """The lock for ``requirements`` from the wheels pip downloaded for them: the closure of
    their dependencies, markers evaluated for the container, each with its file's sha256.
    A dependency with no wheel here is an error (the lock would not install)."""
    from packaging.requirements import Requirement

    files = {}
    for w in sorted(wheels.glob("*.whl")):
        name, version, requires = _wheel_metadata(w)
        files[name] = (w, version, requires)
    wanted: dict[str, set[str]] = {}
    todo = [Requirement(r) for r in requirements]
    top_extras = {_canonical(r.name): r.extras for r in todo}
    while todo:
        req = todo.pop()
        name = _canonical(req.name)
        seen = wanted.get(name)
        if seen is not None and req.extras <= seen:
            continue
        wanted[name] = (seen or set()) | req.extras
        if name not in files:
            raise ImageError(f"no wheel for {name} (needed by the image) in {wheels}")
        todo += _needed(files[name][2], wanted[name])
    out = []
    for name, extras in wanted.items():
        wheel, version, requires = files[name]
        top = sorted(top_extras.get(name, set()))
        deps = tuple(sorted({_canonical(r.name) for r in _needed(requires, extras)}))
        out.append(
            Locked(name, f"[{','.join(top)}]" if top else "", version, sha256_file(wheel), deps)
        )
    return out


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _pip_download(args: list[str], dest: Path) -> None:
    platforms = [a for p in WHEEL_PLATFORMS for a in ("--platform", p)]
    subprocess.run(
        [
            sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:",
            *platforms, "--python-version", WHEEL_PYTHON, "--implementation", "cp",
            "--abi", "cp311", "--abi", "abi3", "--abi", "none", "--dest", str(dest), *args,
        ],
        check=True,
    )  # fmt: skip


def write_lock(dest: Path = LOCK) -> Path:
    """Download the services' requirements (pinned to the host's versions) for the container
    and write the lock: ``python -m ipclab.backends.docker.images lock``."""
    reqs = service_requirements()
    with tempfile.TemporaryDirectory(prefix="ipclab-lock-") as tmp:
        log(f"downloading wheels for: {' '.join(reqs)}")
        _pip_download(reqs, Path(tmp))
        dest.write_text(lock_text(lock_entries(reqs, Path(tmp))))
    log(f"{dest}: {len(read_lock(dest))} wheels")
    return dest


def lock_drift(lock: dict[str, Locked] | None = None) -> dict[str, tuple[str, str]]:
    """The services' direct requirements whose locked version is not the host's
    (name -> (lock, host)): the two backends then run different libraries; regenerate the
    lock to align them. Missing from the lock: version ``""``."""
    lock = read_lock() if lock is None else lock
    out = {}
    for req in service_requirements():
        name = _canonical(re.split(r"[\[=<>!~ ]", req, maxsplit=1)[0])
        host = req.split("==", 1)[1] if "==" in req else "?"
        have = lock[name].version if name in lock else ""
        if have != host:
            out[name] = (have, host)
    return out


def verify_wheels(wheels: Path, lock: dict[str, Locked]) -> dict[str, Path]:
    """Each locked package's wheel in ``wheels``, found by its sha256; raises ``ImageError``
    naming every package whose file is missing or differs from the lock."""
    by_hash: dict[str, Path] = {}
    for w in sorted(wheels.glob("*.whl")) if wheels.is_dir() else []:
        by_hash.setdefault(sha256_file(w), w)
    out, bad = {}, []
    for name, entry in lock.items():
        wheel = by_hash.get(entry.sha256)
        if wheel is None:
            named = [w.name for w in by_hash.values() if _canonical(w.name.split("-")[0]) == name]
            bad.append(f"{name}=={entry.version}: " + (
                f"{', '.join(named)} does not match the lock's sha256 {entry.sha256}"
                if named else "no file"
            ))  # fmt: skip
            continue
        out[name] = wheel
    if bad:
        raise ImageError(f"wheels in {wheels} differ from {LOCK.name}: " + "; ".join(bad))
    return out


def download_wheels(lock_path: Path, dest: Path) -> dict[str, Path]:
    """The locked wheels in ``dest``: downloaded (pip in hash-checking mode: a file whose hash
    is not the lock's is refused, and so is a dependency the lock lacks) unless ``dest``
    already holds them all, then checked against the lock here too."""
    lock = read_lock(lock_path)
    with contextlib.suppress(ImageError):
        return verify_wheels(dest, lock)
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    log(f"downloading the {len(lock)} locked wheels into {dest}")
    _pip_download(["--require-hashes", "-r", str(lock_path)], dest)
    return verify_wheels(dest, lock)


def check_lock_covers_requirements(lock: dict[str, Locked]) -> None:
    """Every direct requirement of the services is in the lock (else the image would lack it:
    pip installs what the lock names and nothing else); a version other than the host's is
    only logged (the image runs the lock's)."""
    drift = lock_drift(lock)
    missing = sorted(name for name, (have, _) in drift.items() if not have)
    if missing:
        raise ImageError(
            f"{LOCK} lacks {', '.join(missing)} (services' dependencies in pyproject.toml): "
            "regenerate it with python -m ipclab.backends.docker.images lock"
        )
    if drift:
        log(
            "the image installs the locked versions, not the host's: "
            + ", ".join(f"{n} {lk} (host {h})" for n, (lk, h) in sorted(drift.items()))
        )
