"""Container images for the docker backend: a local base, the services image and the images
the recipes declare (``recipes.py``: the runtimes' and each infrastructure plugin's).

    python -m ipclab.backends.docker.images base  # Debian bookworm via debootstrap + docker import
    python -m ipclab.backends.docker.images build  # services + infrastructure (--go: + Go's)
    python -m ipclab.backends.docker.images status  # what exists; does it match the tree
    python -m ipclab.backends.docker.images lock  # rewrite services/requirements.lock

One image (``ipclab-services``) serves every role of every Python stack; the role comes
from the environment at run time. The Go stacks' roles run ``ipclab-services-go``: the
services image plus the static Go binary built on the host (``services/go/Dockerfile``); the
Node.js stacks' roles run ``ipclab-services-node``: the services image plus the host's node and
its ``npm ci`` build (``services/node/Dockerfile``).

The services image's Python dependencies are the committed lock's wheels
(``services/requirements.lock``: every file by version and sha256, generated from the
versions the host runs, so local and docker backends use the same libraries), downloaded *on
the host*, checked against the lock there and installed offline in the image with
``--require-hashes``, so the build never depends on the container's network or certificates.
Every other image is a recipe (``recipes.ImageRecipe``), built, pinned and checked alike
here: the runtimes' (``recipes.RUNTIME_RECIPES``) and each infrastructure plugin's
(``Infrastructure.recipe``): the broker image is the official RabbitMQ image, or Debian's
rabbitmq-server on the local base where no registry answers (``compose/broker/``); the
database image (``ipclab-postgres``) is Debian's postgresql package on the Python base
(``compose/postgres/``). This module names none of them.

Supply chain (issue 28 item 8, docs/docker.md): every image is built FROM its base's id;
each records its Debian packages (``APT_RECORD``); each build is pinned by image id in
``MANIFEST`` with what made it, and stacks run those ids (``pinned``), never a tag.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipclab.backends.docker.recipes import (
    GO,
    GO_SOURCES,
    JAVA,
    NODE_SOURCES,
    RUNTIME_RECIPES,
    ImageRecipe,
    RecipeError,
)
from ipclab.paths import REPO_ROOT

LOCAL_BASE = os.environ.get("IPCLAB_LOCAL_BASE", "ipclab-base:bookworm")
OFFICIAL_PYTHON = "python:3.11-slim"
OFFICIAL_RABBITMQ = "rabbitmq:3"
SERVICES_IMAGE = os.environ.get("IPCLAB_IMAGE", "ipclab-services:latest")
GO_IMAGE = GO.image
# the native CoAP adapters' (Californium) containers: the services image, a JRE, the jars
JAVA_IMAGE = JAVA.image
DEBIAN_MIRROR = os.environ.get("IPCLAB_DEBIAN_MIRROR", "http://deb.debian.org/debian")
# nginx and nghttp2-proxy (nghttpx): the native protocol adapters (services/adapters/native.py)
BASE_PACKAGES = (
    "python3",
    "python3-venv",
    "ca-certificates",
    "iproute2",
    "iptables",
    "nginx",
    "nghttp2-proxy",
)
BASE_LABEL = "ipclab.base-packages"  # on the local base: the packages it was built with

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

LABEL_HASH = "ipclab.context-hash"
BUILD_DIR = REPO_ROOT / "build" / "docker"


class ImageError(RuntimeError):
    pass


def log(msg: str) -> None:
    print(f"[images] {msg}", file=sys.stderr, flush=True)


def docker_client() -> Any:
    import docker

    return docker.from_env(timeout=600)


def image_exists(name: str) -> bool:
    import docker.errors

    try:
        docker_client().images.get(name)
    except docker.errors.ImageNotFound:
        return False
    return True


def _image_label(name: str, key: str) -> str | None:
    import docker.errors

    try:
        img = docker_client().images.get(name)
    except docker.errors.ImageNotFound:
        return None
    return (img.labels or {}).get(key)


def _image_size_mb(name: str) -> float | None:
    import docker.errors

    try:
        return round(docker_client().images.get(name).attrs["Size"] / 1e6, 1)
    except docker.errors.ImageNotFound:
        return None


# --------------------------------------------------------------------------- base image


def build_base_image(tag: str = LOCAL_BASE, mirror: str = DEBIAN_MIRROR) -> str:
    """Build a Debian bookworm base from the Debian archive (debootstrap) and import it.

    Needs root and debootstrap (``scripts/docker-engine.sh`` installs it). About a minute.
    """
    if shutil.which("debootstrap") is None:
        raise ImageError("debootstrap is missing: apt-get install debootstrap")
    if os.geteuid() != 0:
        raise ImageError("debootstrap needs root")
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ipclab-rootfs-", dir="/var/tmp") as tmp:
        rootfs = Path(tmp) / "rootfs"
        log(f"debootstrap bookworm ({', '.join(BASE_PACKAGES)}) from {mirror}")
        subprocess.run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(BASE_PACKAGES)}",
                "bookworm",
                str(rootfs),
                mirror,
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        _trim_rootfs(rootfs, mirror)
        packages = _record_rootfs_packages(rootfs)
        log(f"docker import -> {tag}")
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        changes = [
            "--change",
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "--change",
            "ENV LANG=C.UTF-8",
            "--change",
            'CMD ["/bin/bash"]',
            "--change",
            "LABEL ipclab.image=base",
            "--change",
            f"LABEL {BASE_LABEL}={','.join(BASE_PACKAGES)}",
        ]
        imp = subprocess.run(
            ["docker", "import", *changes, "-", tag], stdin=tar.stdout, capture_output=True
        )
        assert tar.stdout is not None
        tar.stdout.close()
        if tar.wait() != 0 or imp.returncode != 0:
            raise ImageError(f"docker import failed: {imp.stderr.decode(errors='replace')}")
    image_id = _image_id(tag) or ""
    record_image(tag, {"id": image_id, "mirror": mirror, "apt_packages": packages})
    log(f"{tag}: {image_id[:19]}, {_image_size_mb(tag)} MB in {time.monotonic() - t0:.0f} s")
    return tag


def _record_rootfs_packages(rootfs: Path) -> list[str]:
    """Write the debootstrapped tree's package=version list to its ``APT_RECORD`` (what every
    image built on it carries too) and return it."""
    out = subprocess.run(
        [
            "sh",
            "-c",
            DPKG_QUERY.replace("dpkg-query ", f"dpkg-query --admindir={rootfs}/var/lib/dpkg ", 1),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    record = rootfs / APT_RECORD.lstrip("/")
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(out)
    return out.split()


def local_base_current(tag: str = LOCAL_BASE) -> bool:
    """Does the local base exist with today's ``BASE_PACKAGES``?"""
    return _image_label(tag, BASE_LABEL) == ",".join(BASE_PACKAGES)


def _trim_rootfs(rootfs: Path, mirror: str) -> None:
    """Make the debootstrapped tree a usable image: apt sources, no daemons, no caches."""
    security = mirror.replace("/debian", "/debian-security") if mirror.endswith("/debian") else None
    lines = [f"deb {mirror} bookworm main", f"deb {mirror} bookworm-updates main"]
    if security:
        lines.append(f"deb {security} bookworm-security main")
    (rootfs / "etc/apt/sources.list").write_text("\n".join(lines) + "\n")
    # Package scripts must not try to start services inside an image build.
    policy = rootfs / "usr/sbin/policy-rc.d"
    policy.write_text("#!/bin/sh\nexit 101\n")
    policy.chmod(0o755)
    (rootfs / "etc/apt/apt.conf.d/90ipclab").write_text(
        'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\nAcquire::Retries "3";\n'
    )
    for sub in ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man"):
        d = rootfs / sub
        if d.is_dir():
            for child in d.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child, ignore_errors=True)
                elif child.name not in ("lock", "partial"):
                    child.unlink(missing_ok=True)


# --------------------------------------------------------------------------- requirements


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
        out.append(Locked(name, f"[{','.join(top)}]" if top else "", version, _sha256(wheel), deps))
    return out


def _sha256(path: Path) -> str:
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
        by_hash.setdefault(_sha256(w), w)
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


# --------------------------------------------------------------------------- contexts


# The runtimes' sources (the Go module, the Node.js project) are not part of the Python
# services (their builds go into their own images): the services image's hash leaves them out.
NOT_IN_SERVICES_IMAGE = (GO_SOURCES, NODE_SOURCES)


def _copy_tree(src: Path, dst: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "Dockerfile", LOCK.name)

    def ignored(directory: str, names: list[str]) -> set[str]:
        skip = set(ignore(directory, names))
        skip.update(p.name for p in NOT_IN_SERVICES_IMAGE if p.parent == Path(directory))
        return skip

    shutil.copytree(src, dst, ignore=ignored)


def _tree_hash(paths: Iterable[Path], extra: str = "") -> str:
    h = hashlib.sha256(extra.encode())
    for root in paths:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for f in files:
            if "__pycache__" in f.parts or f.suffix == ".pyc":
                continue
            if any(p in f.parents for p in NOT_IN_SERVICES_IMAGE):
                continue
            # a file of the repository by its path there; of a plugin kept outside it (its
            # recipe's folder), by its path in that folder
            top = REPO_ROOT if f.is_relative_to(REPO_ROOT) else root.parent
            h.update(str(f.relative_to(top)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _image_id(name: str) -> str | None:
    import docker.errors

    try:
        return str(docker_client().images.get(name).id)
    except docker.errors.ImageNotFound:
        return None


def services_context_hash(base: str) -> str:
    """The services tree (its Dockerfile and the wheel lock included) and the base *by its
    id*: a base tag moved to another image makes the services image stale."""
    packages = ",".join(BASE_PACKAGES) if base == LOCAL_BASE else ""
    return _tree_hash(
        [REPO_ROOT / "services", LOCK], extra=f"{base}@{_image_id(base) or ''}\n{packages}"
    )


def recipe_context_hash(recipe: ImageRecipe, base: str) -> str:
    """A recipe's image's (``recipes.ImageRecipe``), built FROM the tag ``base``: its folder's
    files and the base (by id); or, for a context ``prepare`` makes, the base's id, the
    digest of what ``prepare`` adds (``inputs``) and its Dockerfile."""
    if recipe.prepare is None or recipe.inputs is None:
        folder = recipe.dockerfile.parent
        return _tree_hash([folder], extra=f"{base}@{_image_id(base) or ''}")
    text = f"{_image_id(base) or ''}\n{recipe.inputs()}\n{recipe.dockerfile.read_text()}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def prepare_recipe_context(recipe: ImageRecipe) -> Path:
    """A recipe's build context: its Dockerfile's folder as it is, or a fresh folder with
    the Dockerfile and what ``prepare`` builds on the host."""
    if recipe.prepare is None:
        return recipe.dockerfile.parent
    dest = _fresh_context(BUILD_DIR / recipe.kind, recipe.dockerfile)
    try:
        recipe.prepare(dest)
    except RecipeError as e:
        raise ImageError(f"cannot build {recipe.image}: {e}") from None
    return dest


def _fresh_context(dest: Path, dockerfile: Path) -> Path:
    """An image's build context: the folder ``dest``, emptied, with its ``dockerfile``."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    shutil.copy2(dockerfile, dest / "Dockerfile")
    return dest


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


def prepare_services_context(dest: Path | None = None) -> Path:
    """Assemble the build context: Dockerfile, the lock, its wheels (checked against it), the
    services package (which imports nothing from the harness)."""
    dest = dest or BUILD_DIR / "services"
    lock = read_lock()
    check_lock_covers_requirements(lock)
    wheels = download_wheels(LOCK, BUILD_DIR / "wheels")
    for sub in ("ipclab_services", "ipclab", "wheels"):  # "ipclab": what older contexts held
        shutil.rmtree(dest / sub, ignore_errors=True)
    (dest / "requirements.txt").unlink(missing_ok=True)  # older contexts' unlocked hashes
    (dest / "wheels").mkdir(parents=True)
    shutil.copy2(REPO_ROOT / "services" / "Dockerfile", dest / "Dockerfile")
    shutil.copy2(LOCK, dest / LOCK.name)
    for wheel in wheels.values():
        shutil.copy2(wheel, dest / "wheels" / wheel.name)
    _copy_tree(REPO_ROOT / "services", dest / "ipclab_services")
    return dest


# --------------------------------------------------------------------------- pins
#
# With no registry an image has no repository digest; its id (the sha256 of its config, which
# names every layer's content) is the digest. Each image the harness builds is recorded in
# MANIFEST by that id with what made it; stacks run the id, never the tag.

MANIFEST = BUILD_DIR / "images.json"
APT_RECORD = "/etc/ipclab/apt-packages.txt"  # written by each Dockerfile: dpkg-query at build
# the package=version list of the installed Debian packages, sorted (a Dockerfile's RUN line)
DPKG_QUERY = (
    "dpkg-query -W -f='${db:Status-Status} ${Package}=${Version}\\n' "
    "| sed -n 's/^installed //p' | LC_ALL=C sort"
)


def _manifest_path() -> Path:
    return MANIFEST  # read at call time: tests (and a trial build) point it elsewhere


def read_manifest() -> dict[str, dict[str, Any]]:
    import json

    path = _manifest_path()
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except ValueError as e:
        raise ImageError(f"{path} is not JSON ({e}): remove it and build again") from None
    return data if isinstance(data, dict) else {}


def record_image(tag: str, entry: dict[str, Any]) -> None:
    """Pin ``tag`` to ``entry["id"]`` in the manifest (written whole, atomically)."""
    import fcntl
    import json

    path = _manifest_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with (path.parent / f".{path.name}.lock").open("w") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        data = read_manifest()
        data[tag] = entry
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, path)


def pinned(tag: str) -> str:
    """The id ``tag`` was built as, after checking that the tag still names it: a clear
    ``ImageError`` when the harness recorded no build of it or the tag now names another
    image (re-tagged, or built by something else)."""
    entry = read_manifest().get(tag)
    if not entry or not entry.get("id"):
        raise ImageError(
            f"{tag}: no build of it is recorded in {_manifest_path()}; build it with "
            "python -m ipclab.backends.docker.images build"
        )
    current = _image_id(tag)
    if current != entry["id"]:
        now = f"now names {current}" if current else "names no image now"
        raise ImageError(
            f"{tag} {now}, not {entry['id']}, the image the harness built and recorded in "
            f"{_manifest_path()}; rebuild it with python -m ipclab.backends.docker.images build"
        )
    return str(entry["id"])


def _stale(tag: str, want_hash: str) -> str | None:
    """Why ``tag`` must be (re)built, or None when it is the pinned build of ``want_hash``."""
    label = _image_label(tag, LABEL_HASH)
    if label is None:
        return "missing"
    if label != want_hash:
        return "built from other sources"
    try:
        pinned(tag)
    except ImageError as e:
        return str(e)
    if read_manifest()[tag].get("context_hash") != want_hash:
        return "its recorded build is of other sources"
    return None


def _reader_labels() -> dict[str, str]:
    """Labels of a container that only reads an image: a project of this harness's own, so a
    harness killed while it exists leaves it to the next start's orphan sweep."""
    import secrets

    from ipclab import orphans
    from ipclab.backends.docker.ownership import HARNESS_LABEL, PROJECT_LABEL

    project = f"ipclab-image-read-{secrets.token_hex(4)}"
    return {PROJECT_LABEL: project, HARNESS_LABEL: orphans.this_harness()}


def apt_packages(image: str) -> list[str]:
    """The image's own record of its Debian packages (``APT_RECORD``), read without starting
    it; [] for an image built before the record existed."""
    import io
    import tarfile

    import docker.errors

    c = docker_client().containers.create(
        image, command=["true"], network_mode="none", labels=_reader_labels()
    )
    try:
        stream, _ = c.get_archive(APT_RECORD)
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            member = tar.extractfile(tar.getmembers()[0])
            return member.read().decode().split() if member else []
    except docker.errors.NotFound:
        return []
    finally:
        c.remove(force=True)


def _dpkg_in(image: str) -> list[str]:
    """The package=version list of an image made before it carried ``APT_RECORD``."""
    out = docker_client().containers.run(
        image, ["sh", "-c", DPKG_QUERY], remove=True, network_mode="none", labels=_reader_labels()
    )
    return bytes(out).decode().split()


def _pin_build(tag: str, image_id: str, context_hash: str, base: str, **extra: Any) -> None:
    import datetime

    import docker.errors

    base_id = base if base.startswith("sha256:") else _image_id(base)
    try:
        digests = docker_client().images.get(base).attrs.get("RepoDigests") or []
    except docker.errors.ImageNotFound:
        digests = []
    packages = apt_packages(image_id)
    if not packages:
        raise ImageError(f"{tag} ({image_id}) has no package record at {APT_RECORD}")
    record_image(
        tag,
        {
            "id": image_id,
            "context_hash": context_hash,
            "base": base,
            "base_id": base_id,
            "base_repo_digests": digests,
            "built_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "apt_packages": packages,
            **extra,
        },
    )


def image_record(ref: str) -> dict[str, Any]:
    """What a run records of an image it ran (``stack_info.images``): its id, and, when the
    harness built it, the tag, base, wheel lock and Debian packages that made it."""
    image_id = _image_id(ref) if not ref.startswith("sha256:") else ref
    out: dict[str, Any] = {"name": ref, "id": image_id}
    for tag, entry in read_manifest().items():
        if image_id and entry.get("id") == image_id:
            keep = ("base", "base_id", "base_repo_digests", "built_at", "wheel_lock_sha256")
            out.update({"tag": tag, **{k: entry[k] for k in keep if k in entry}})
            out["apt_packages"] = entry.get("apt_packages", [])
            break
    else:
        out["pinned"] = False
    return out


_BUILD_DEPTH = 0
_BUILD_THREADS = threading.RLock()


@contextlib.contextmanager
def _build_lock() -> Any:
    """One builder at a time on this machine (concurrent harnesses share the wheel cache, the
    tags and the manifest): a thread lock, then a file lock taken by the outermost call."""
    import fcntl

    global _BUILD_DEPTH
    with _BUILD_THREADS:
        if _BUILD_DEPTH:
            _BUILD_DEPTH += 1
            try:
                yield
            finally:
                _BUILD_DEPTH -= 1
            return
        BUILD_DIR.mkdir(parents=True, exist_ok=True)
        with (BUILD_DIR / ".build.lock").open("w") as lk:
            fcntl.flock(lk, fcntl.LOCK_EX)
            _BUILD_DEPTH = 1
            try:
                yield
            finally:
                _BUILD_DEPTH = 0


# --------------------------------------------------------------------------- build


@dataclass
class Bases:
    python: str
    rabbitmq: str


def resolve_bases(base: str = "auto") -> Bases:
    """``official``: python:3.11-slim / rabbitmq:3 (pulled if missing); ``local``: the
    debootstrapped base (built if missing); ``auto``: official when present or pullable, else
    local; any other value: that image for both (``name@sha256:...`` pins a registry image)."""
    if base == "official":
        for img in (OFFICIAL_PYTHON, OFFICIAL_RABBITMQ):
            if not image_exists(img):
                _pull(img)
        return Bases(OFFICIAL_PYTHON, OFFICIAL_RABBITMQ)
    if base == "local":
        _ensure_local_base()
        return Bases(LOCAL_BASE, LOCAL_BASE)
    if base == "auto":
        if image_exists(LOCAL_BASE):
            _ensure_local_base()
            return Bases(LOCAL_BASE, LOCAL_BASE)
        try:
            return resolve_bases("official")
        except ImageError as e:
            log(f"no official images ({e}); building the local base")
            return resolve_bases("local")
    return Bases(base, base)


def _ensure_local_base() -> None:
    """The local base with today's ``BASE_PACKAGES``, and the one the harness recorded: a
    base tag moved to another image is rebuilt from the Debian archive. A base made before
    builds were recorded is recorded as found (``adopted``): nothing else can vouch for it,
    and its packages are read back from it."""
    if not local_base_current():
        if image_exists(LOCAL_BASE):
            log(f"{LOCAL_BASE} lacks some of {', '.join(BASE_PACKAGES)}: rebuilding it")
        build_base_image()
        return
    entry = read_manifest().get(LOCAL_BASE)
    if entry is None:
        image_id = _image_id(LOCAL_BASE) or ""
        log(f"{LOCAL_BASE} ({image_id[:19]}) was built before builds were recorded: adopting it")
        packages = apt_packages(image_id) or _dpkg_in(image_id)
        record_image(LOCAL_BASE, {"id": image_id, "adopted": True, "apt_packages": packages})
        return
    try:
        pinned(LOCAL_BASE)
    except ImageError as e:
        log(f"{e}: rebuilding it")
        build_base_image()


def _pull(image: str) -> None:
    import docker.errors

    repo, _, tag = image.partition(":")
    try:
        docker_client().images.pull(repo, tag=tag or "latest")
    except docker.errors.APIError as e:
        raise ImageError(f"cannot pull {image}: {e.explanation or e}") from None


def _build(
    path: Path,
    tag: str,
    base: str,
    labels: dict[str, str],
    dockerfile: str,
    network_mode: str | None = None,
) -> str:
    """Build ``tag`` FROM ``base`` (an id); returns the new image's id."""
    import docker.errors

    client = docker_client()
    old_id = _image_id(tag)
    t0 = time.monotonic()
    log(f"building {tag} from {base}")
    tail: list[str] = []
    for chunk in client.api.build(
        path=str(path),
        dockerfile=dockerfile,
        tag=tag,
        buildargs={"BASE_IMAGE": base},
        labels=labels,
        rm=True,
        forcerm=True,
        decode=True,
        pull=False,
        network_mode=network_mode,
    ):
        if "stream" in chunk:
            line = chunk["stream"].rstrip()
            if line:
                tail = (tail + [line])[-40:]
                if os.environ.get("IPCLAB_VERBOSE"):
                    log(line)
        if "error" in chunk:
            raise ImageError(f"building {tag} failed: {chunk['error']}\n" + "\n".join(tail))
    new_id = str(client.images.get(tag).id)
    log(f"{tag}: {new_id[:19]}, {_image_size_mb(tag)} MB in {time.monotonic() - t0:.0f} s")
    if old_id and old_id != new_id:
        # The image this tag named before is now untagged; drop it (not if a container uses it).
        with contextlib.suppress(docker.errors.APIError):
            client.images.remove(old_id, noprune=False)
    return new_id


def _base_id(base: str) -> str:
    image_id = _image_id(base)
    if image_id is None:
        raise ImageError(f"no base image {base}")
    return image_id


def build_services_image(
    base: str, tag: str = SERVICES_IMAGE, network_mode: str | None = "auto"
) -> str:
    """``network_mode="auto"``: no network at all on the local base (it has every system
    package; Python packages come from the host's wheels), the default network otherwise
    (the official python image lacks tc and iptables, installed with apt). Built FROM the
    base's id; pinned (``MANIFEST``) with its Debian packages and the wheel lock's hash."""
    with _build_lock():
        ctx = prepare_services_context()
        context_hash = services_context_hash(base)
        labels = {LABEL_HASH: context_hash, "ipclab.image": "services"}
        if network_mode == "auto":
            network_mode = "none" if base == LOCAL_BASE else None
        image_id = _build(ctx, tag, _base_id(base), labels, "Dockerfile", network_mode)
        _pin_build(
            tag, image_id, context_hash, base,
            wheel_lock_sha256=_sha256(LOCK), wheels=len(read_lock()),
        )  # fmt: skip
    return tag


def build_recipe(recipe: ImageRecipe, base: str) -> str:
    """A recipe's image (``recipes.ImageRecipe``) FROM the tag ``base`` (by its id, so a tag
    moved meanwhile changes nothing), pinned (``MANIFEST``) with its Debian packages."""
    with _build_lock():
        ctx = prepare_recipe_context(recipe)
        context_hash = recipe_context_hash(recipe, base)
        labels = {LABEL_HASH: context_hash, "ipclab.image": recipe.kind}
        tag = recipe.image
        image_id = _build(ctx, tag, _base_id(base), labels, "Dockerfile", recipe.network)
        _pin_build(tag, image_id, context_hash, base, **(recipe.record() if recipe.record else {}))
    return tag


def ensure_recipe(recipe: ImageRecipe, base: str) -> str:
    """A recipe's image's id, built first when missing, stale or not the recorded build."""
    with _build_lock():
        if recipe.base == "services":
            pinned(SERVICES_IMAGE)  # built on the services image the harness recorded
        why = _stale(recipe.image, recipe_context_hash(recipe, base))
        if why:
            log(f"{recipe.image}: {why}")
            build_recipe(recipe, base)
        return pinned(recipe.image)


def ensure_java_image() -> str:
    """The Java image's id (the native adapters'), built first when missing or stale (on
    the current services image, which ``ensure_images`` made)."""
    return ensure_recipe(JAVA, SERVICES_IMAGE)


def _from(recipe: ImageRecipe, bases: Bases) -> str:
    """The tag a recipe's image is built FROM."""
    return SERVICES_IMAGE if recipe.base == "services" else str(getattr(bases, recipe.base))


def runtime_recipe(runtime: str) -> ImageRecipe | None:
    """The recipe of the image the roles of a ``runtime`` (``Runtime.name``) run; None for
    ``python``, whose roles run the services image itself."""
    if runtime == "python":
        return None
    for recipe in RUNTIME_RECIPES:
        if recipe.runtime == runtime:
            return recipe
    known = ", ".join(["python", *(r.runtime for r in RUNTIME_RECIPES)])
    raise ImageError(f"no image for the {runtime} runtime; known: {known}")


def runtime_image(runtime: str) -> str:
    """The tag of the image the roles of a ``runtime`` (``Runtime.name``) run."""
    recipe = runtime_recipe(runtime)
    return SERVICES_IMAGE if recipe is None else recipe.image


def infrastructure_recipes(names: Iterable[str]) -> tuple[ImageRecipe, ...]:
    """The image recipes of the infrastructure plugins ``names`` (a stack's
    ``infrastructure``), those that bring one."""
    from ipclab import infrastructure

    return tuple(p.recipe for p in infrastructure.of(tuple(names)) if p.recipe is not None)


def build_images(
    base: str = "auto",
    runtimes: Iterable[str] = (),
    infrastructure: Iterable[ImageRecipe] = (),
) -> dict[str, str]:
    """Build the services image, the images of ``runtimes`` (``go``, ...) and the
    ``infrastructure`` recipes' images; returns each one's key -> its pinned id."""
    with _build_lock():
        bases = resolve_bases(base)
        out = {"services": pinned(build_services_image(bases.python))}
        for runtime in runtimes:
            recipe = runtime_recipe(runtime)
            if recipe is not None:
                out[recipe.name] = pinned(build_recipe(recipe, SERVICES_IMAGE))
        for recipe in infrastructure:
            out[recipe.name] = pinned(build_recipe(recipe, _from(recipe, bases)))
    return out


def ensure_images(
    base: str = "auto", runtime: str = "python", infrastructure: Iterable[ImageRecipe] = ()
) -> dict[str, str]:
    """Build only what is missing, stale (its context hash differs from the working tree) or
    no longer the recorded build (the tag now names another image, or no build is recorded).

    Returns image *ids*, what a stack runs: ``services``, the image the roles of ``runtime``
    run (for ``go`` the Go image, for ``jvm`` the Java image, each built on the services
    image), and each ``infrastructure`` recipe's under its name (``broker``, ``database``)."""
    recipe = runtime_recipe(runtime)
    infrastructure = tuple(infrastructure)
    with _build_lock():
        if not (base == "auto" and _fresh_enough(infrastructure)):
            bases = resolve_bases(base)
            why = _stale(SERVICES_IMAGE, services_context_hash(bases.python))
            if why:
                log(f"{SERVICES_IMAGE}: {why}")
                build_services_image(bases.python)
            for extra in infrastructure:
                ensure_recipe(extra, _from(extra, bases))
        if recipe is not None:
            ensure_recipe(recipe, SERVICES_IMAGE)
        return pinned_images(runtime, infrastructure)


def pinned_images(
    runtime: str = "python", infrastructure: Iterable[ImageRecipe] = ()
) -> dict[str, str]:
    """The ids a stack of ``runtime`` runs, without building: ``ImageError`` when a tag is not
    the build the harness recorded (see ``pinned``)."""
    out = {"services": pinned(runtime_image(runtime))}
    out.update({recipe.name: pinned(recipe.image) for recipe in infrastructure})
    return out


def _fresh_enough(infrastructure: Iterable[ImageRecipe] = ()) -> bool:
    """With base=auto: are the existing images the pinned, up-to-date builds for one of the
    possible bases?"""
    for bases in (Bases(LOCAL_BASE, LOCAL_BASE), Bases(OFFICIAL_PYTHON, OFFICIAL_RABBITMQ)):
        if not image_exists(bases.python):
            continue
        if bases.python == LOCAL_BASE:
            try:
                pinned(LOCAL_BASE)
            except ImageError:
                continue  # unrecorded or moved: resolve_bases decides
        ok = _stale(SERVICES_IMAGE, services_context_hash(bases.python)) is None
        for recipe in infrastructure:
            base = _from(recipe, bases)
            ok = ok and _stale(recipe.image, recipe_context_hash(recipe, base)) is None
        if ok:
            return True
    return False


def status() -> dict[str, Any]:
    out: dict[str, Any] = {}
    manifest = read_manifest()
    every = infrastructure_recipes(_plugin_names())
    recipes = (*RUNTIME_RECIPES, *every)
    for name in (
        LOCAL_BASE,
        OFFICIAL_PYTHON,
        OFFICIAL_RABBITMQ,
        SERVICES_IMAGE,
        *(r.image for r in recipes),
    ):
        image_id = _image_id(name)
        out[name] = {
            "exists": image_id is not None,
            "id": image_id,
            "size_mb": _image_size_mb(name),
        }
        if name in manifest:
            out[name]["pinned"] = manifest[name].get("id")
            out[name]["pin_holds"] = manifest[name].get("id") == image_id
            out[name]["apt_packages"] = len(manifest[name].get("apt_packages", []))
    # the services image and each infrastructure image built so far (recorded), current
    out["up_to_date"] = _fresh_enough([r for r in every if r.image in manifest])
    for recipe in RUNTIME_RECIPES:
        fresh = _stale(recipe.image, recipe_context_hash(recipe, SERVICES_IMAGE)) is None
        out[f"{recipe.runtime}_up_to_date"] = fresh
    out["lock"] = {"path": str(LOCK), "wheels": len(read_lock()), "drift": lock_drift()}
    return out


def _plugin_names() -> tuple[str, ...]:
    from ipclab import infrastructure

    return infrastructure.names()


# --------------------------------------------------------------------------- CLI


def _build_command(args: argparse.Namespace) -> dict[str, str]:
    """``build``: the services image, the runtimes' and the infrastructure's asked for."""
    names = _plugin_names() if args.infrastructure is None else args.infrastructure.split(",")
    infra = infrastructure_recipes(n.strip() for n in names if n.strip())
    runtimes = [*args.runtime, *(["go"] if args.go else [])]
    if not args.if_needed:
        return build_images(base=args.base, runtimes=runtimes, infrastructure=infra)
    made = ensure_images(base=args.base, infrastructure=infra)
    for runtime in runtimes:
        recipe = runtime_recipe(runtime)
        if recipe is not None:
            made[recipe.name] = ensure_images(base=args.base, runtime=runtime)["services"]
    return made


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="ipclab images", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("base", help="build the local Debian base (debootstrap + docker import)")
    b.add_argument("--tag", default=LOCAL_BASE)
    b.add_argument("--mirror", default=DEBIAN_MIRROR)
    b.add_argument("--force", action="store_true", help="rebuild even if it exists")
    bl = sub.add_parser("build", help="build the services and infrastructure images")
    bl.add_argument(
        "--base",
        default="auto",
        help="auto (default), official (python:3.11-slim, rabbitmq:3), local (debootstrap "
        "base, built if missing), or an image name (name@sha256:... pins one)",
    )
    bl.add_argument(
        "--infrastructure",
        metavar="NAMES",
        help="the infrastructure plugins whose images to build, comma-separated ('' none; "
        "default: every plugin that brings an image)",
    )
    bl.add_argument(
        "--runtime",
        action="append",
        default=[],
        choices=[r.runtime for r in RUNTIME_RECIPES],
        help="also the image of this runtime's roles (built on the host's toolchain)",
    )
    bl.add_argument("--go", action="store_true", help="as --runtime go")
    bl.add_argument("--if-needed", action="store_true", help="skip images already up to date")
    sub.add_parser("status", help="which images exist and whether they are up to date")
    sub.add_parser(
        "lock", help=f"rewrite {LOCK.relative_to(REPO_ROOT)} from the host's installed versions"
    )
    args = p.parse_args(argv)
    try:
        if args.cmd == "base":
            with _build_lock():
                if local_base_current(args.tag) and not args.force:
                    log(f"{args.tag} exists (use --force to rebuild)")
                else:
                    build_base_image(args.tag, args.mirror)
            print(args.tag)
        elif args.cmd == "build":
            for role, image in _build_command(args).items():
                print(f"{role}\t{image}")
        elif args.cmd == "lock":
            print(write_lock())
        else:
            import json

            print(json.dumps(status(), indent=2))
    except (ImageError, subprocess.CalledProcessError) as e:
        print(f"ipclab images: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
