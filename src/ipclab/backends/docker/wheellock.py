"""The services image's Python requirements and their wheel lock (``services/requirements.lock``):
what the image needs, the lock's lines, the lock written from the host's versions
(``python -m ipclab.backends.docker.images lock``: uv resolves, ``uv pip compile`` for the
container's platform under the host's ``pip freeze``; pip downloads each locked version's
wheel for that platform, whose sha256 the lock records), and the locked wheels downloaded
and checked on the host before a build."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

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


# Optional dependencies the services import too: the stores' drivers (services/domains/shop/
# dbstore.py, with --store db), which the harness itself never needs.
SERVICE_EXTRAS = ("stores",)


def service_requirements(pin: bool = True) -> list[str]:
    """The services' requirements: project dependencies minus harness-only ones, and the
    ``SERVICE_EXTRAS``, each pinned to the version installed on this host when there is one
    (same libraries on both backends); ``pin=False``: as pyproject.toml states them (the
    lock's resolution pins them by constraints)."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    extras = project.get("optional-dependencies", {})
    deps = [*project["dependencies"], *(d for e in SERVICE_EXTRAS for d in extras.get(e, []))]
    out = []
    for dep in deps:
        m = re.match(r"^\s*([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*(.*)$", dep)
        if not m:
            continue
        name, extras, spec = m.group(1), m.group(2) or "", m.group(3).strip()
        if name.lower() in HARNESS_ONLY:
            continue
        try:
            if not pin:
                raise importlib.metadata.PackageNotFoundError(name)
            out.append(f"{name}{extras}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            out.append(f"{name}{extras}{spec}")
    return out


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


# uv's name for the container's platform: glibc x86_64 Linux, manylinux_2_28 and older tags
UV_PLATFORM = "x86_64-manylinux_2_28"
_UV_LINE = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>\S+)"
    r"\s*(?:#\s*via\s+(?P<via>.*))?$"
)


def _uv() -> str:
    """uv, a dev tool like scripts/python-lock.sh's (``$UV``, else ``uv`` on PATH), not one of
    ipclab's dependencies."""
    uv = os.environ.get("UV") or shutil.which("uv")
    if not uv:
        raise ImageError("uv is missing: pip install uv (or UV=/path/to/uv), as for python-lock.sh")
    return uv


def host_constraints() -> str:
    """The host's installed versions (``pip freeze``) as constraints: the lock resolves to what
    the local backend runs wherever the host has the package."""
    out = subprocess.run(
        [sys.executable, "-m", "pip", "freeze", "--all"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    keep = (ln for ln in out.splitlines() if ln and not ln.startswith("-e ") and " @ " not in ln)
    return "".join(f"{ln}\n" for ln in keep if not ln.startswith(("ipclab==", "pip==")))


def resolve(requirements: list[str], constraints: str) -> dict[str, tuple[str, tuple[str, ...]]]:
    """uv's resolution of ``requirements`` for the container (CPython 3.11, x86_64 Linux,
    wheels only) under ``constraints``: canonical name -> (version, the canonical names of
    its dependencies in the image, from uv's ``# via`` annotations turned around)."""
    with tempfile.TemporaryDirectory(prefix="ipclab-lock-") as tmp:
        reqs, cons = Path(tmp) / "requirements.in", Path(tmp) / "constraints.txt"
        reqs.write_text("".join(f"{r}\n" for r in requirements))
        cons.write_text(constraints)
        out = subprocess.run(
            [
                _uv(), "pip", "compile", str(reqs), "--constraint", str(cons),
                "--python-version", WHEEL_PYTHON, "--python-platform", UV_PLATFORM,
                "--only-binary", ":all:", "--no-header", "--annotation-style", "line", "--quiet",
            ],
            check=True, stdout=subprocess.PIPE, text=True,
        ).stdout  # fmt: skip
    versions, via = {}, {}
    for line in out.splitlines():
        m = _UV_LINE.match(line.strip())
        if m:
            name = _canonical(m.group("name"))
            versions[name] = m.group("version")
            via[name] = {_canonical(v.strip()) for v in (m.group("via") or "").split(",")}
    requires: dict[str, set[str]] = {name: set() for name in versions}
    for name, parents in via.items():
        for parent in parents & versions.keys():
            requires[parent].add(name)
    return {n: (v, tuple(sorted(requires[n]))) for n, v in versions.items()}


def lock_entries(requirements: list[str], constraints: str, wheels: Path) -> list[Locked]:
    """The lock for ``requirements``: uv's resolution, each version's wheel for the container
    downloaded into ``wheels`` (pip, as the build does: the same file) and its sha256."""
    resolved = resolve(requirements, constraints)
    _pip_download(["--no-deps", *(f"{n}=={v}" for n, (v, _) in sorted(resolved.items()))], wheels)
    files = {_canonical(w.name.split("-")[0]): w for w in sorted(wheels.glob("*.whl"))}
    top = {}
    for r in requirements:
        m = re.match(r"([A-Za-z0-9_.\-]+)(\[[^\]]*\])?", r)
        if m and m.group(2):
            top[_canonical(m.group(1))] = m.group(2)
    out = []
    for name, (version, requires) in resolved.items():
        if name not in files:
            raise ImageError(f"no wheel for {name}=={version} (needed by the image) in {wheels}")
        out.append(Locked(name, top.get(name, ""), version, sha256_file(files[name]), requires))
    return out


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def pip_download_args(args: list[str], dest: Path) -> list[str]:
    """``pip download`` of ``args`` into ``dest``: wheels only, for the container's platform."""
    platforms = [a for p in WHEEL_PLATFORMS for a in ("--platform", p)]
    return [
        sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:",
        *platforms, "--python-version", WHEEL_PYTHON, "--implementation", "cp",
        "--abi", "cp311", "--abi", "abi3", "--abi", "none", "--dest", str(dest), *args,
    ]  # fmt: skip


def _pip_download(args: list[str], dest: Path) -> None:
    subprocess.run(pip_download_args(args, dest), check=True)


def write_lock(dest: Path = LOCK, constraints: str | None = None) -> Path:
    """Resolve the services' requirements with uv (constrained to the host's installed
    versions, or to ``constraints``) for the container, download each wheel and write the
    lock: ``python -m ipclab.backends.docker.images lock``."""
    reqs = service_requirements(pin=False)
    cons = host_constraints() if constraints is None else constraints
    with tempfile.TemporaryDirectory(prefix="ipclab-lock-") as tmp:
        log(f"resolving with uv and downloading wheels for: {' '.join(reqs)}")
        dest.write_text(lock_text(lock_entries(reqs, cons, Path(tmp))))
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
