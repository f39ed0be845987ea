"""Container images for the docker backend: a local base, the services image, the broker image.

    python -m ipclab.backends.docker.images base  # Debian bookworm via debootstrap + docker import
    python -m ipclab.backends.docker.images build  # services + broker images (--go: + the Go image)
    python -m ipclab.backends.docker.images status  # what exists; does it match the tree

One image (``ipclab-services``) serves every role of every Python stack; the role comes
from the environment at run time. The Go stacks' roles run ``ipclab-services-go``: the
services image plus the static Go binary built on the host (``services/go/Dockerfile``).

The services image's Python dependencies are downloaded as wheels *on the host*
(pinned to the versions the host runs, so local and docker backends use the same libraries)
and installed offline in the image, so the build never depends on the container's network
or certificates. The broker image is the official RabbitMQ image, or Debian's rabbitmq-server
on the local base where no registry answers.
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
import time
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipclab.paths import REPO_ROOT

LOCAL_BASE = os.environ.get("IPCLAB_LOCAL_BASE", "ipclab-base:bookworm")
OFFICIAL_PYTHON = "python:3.11-slim"
OFFICIAL_RABBITMQ = "rabbitmq:3"
SERVICES_IMAGE = os.environ.get("IPCLAB_IMAGE", "ipclab-services:latest")
GO_IMAGE = os.environ.get("IPCLAB_GO_IMAGE", "ipclab-services-go:latest")
BROKER_IMAGE = os.environ.get("IPCLAB_BROKER_IMAGE", "ipclab-broker:latest")
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
    log(f"{tag}: {_image_size_mb(tag)} MB in {time.monotonic() - t0:.0f} s")
    return tag


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


def download_wheels(requirements: list[str], dest: Path) -> None:
    """Wheels for the container's CPython 3.11 / x86_64, downloaded on the host."""
    stamp = dest / "requirements.txt"
    want = "\n".join(requirements) + "\n"
    if stamp.exists() and stamp.read_text() == want and (dest / HASHES).is_file():
        return
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    log(f"downloading wheels for: {' '.join(requirements)}")
    platforms = [a for p in WHEEL_PLATFORMS for a in ("--platform", p)]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--only-binary=:all:",
            *platforms,
            "--python-version",
            WHEEL_PYTHON,
            "--implementation",
            "cp",
            "--abi",
            "cp311",
            "--abi",
            "abi3",
            "--abi",
            "none",
            "--dest",
            str(dest),
            *requirements,
        ],
        check=True,
    )
    # pip checked each file against the index's hash as it downloaded it; record them now, so
    # the image's offline install (--require-hashes) refuses a file changed afterwards.
    (dest / HASHES).write_text(
        "".join(f"{_sha256(w)}  {w.name}\n" for w in sorted(dest.glob("*.whl")))
    )
    stamp.write_text(want)


HASHES = "SHA256SUMS"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def hashed_requirements(wheels: Path) -> str:
    """A requirements file pinning every downloaded wheel by name, version and the hash recorded
    at download: what ``pip install --require-hashes`` in the image accepts and nothing else."""
    sums = wheels / HASHES
    if not sums.is_file():
        raise ImageError(f"{sums} is missing: remove {wheels} and build again")
    lines = []
    for line in sums.read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        dist, version = name.split("-")[:2]
        lines.append(f"{dist}=={version} --hash=sha256:{digest}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- contexts


# The Go module is not part of the Python services (its binary goes into the Go image).
GO_SOURCES = REPO_ROOT / "services" / "go"


def _copy_tree(src: Path, dst: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "Dockerfile")

    def ignored(directory: str, names: list[str]) -> set[str]:
        skip = set(ignore(directory, names))
        if Path(directory) == GO_SOURCES.parent:
            skip.add(GO_SOURCES.name)
        return skip

    shutil.copytree(src, dst, ignore=ignored)


def _tree_hash(paths: Iterable[Path], extra: str = "") -> str:
    h = hashlib.sha256(extra.encode())
    for root in paths:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for f in files:
            if "__pycache__" in f.parts or f.suffix == ".pyc" or GO_SOURCES in f.parents:
                continue
            h.update(str(f.relative_to(REPO_ROOT)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def services_context_hash(base: str) -> str:
    # the local base's packages too: a base rebuilt with other packages rebuilds the image
    packages = ",".join(BASE_PACKAGES) if base == LOCAL_BASE else ""
    return _tree_hash(
        [REPO_ROOT / "services"],
        extra=base + packages + "\n" + "\n".join(service_requirements()),
    )


def broker_context_hash(base: str) -> str:
    return _tree_hash([REPO_ROOT / "compose" / "broker"], extra=base)


def go_context_hash(services_hash: str) -> str:
    """The Go image's: the services image it is built on, the Go sources and build flags
    (``gobuild.sources_hash``) and its Dockerfile."""
    from ipclab import gobuild

    dockerfile = (GO_SOURCES / "Dockerfile").read_text()
    text = f"{services_hash}\n{gobuild.sources_hash()}\n{dockerfile}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def prepare_go_context(dest: Path = BUILD_DIR / "services-go") -> Path:
    """The Go image's context: its Dockerfile and the static binary built on the host."""
    from ipclab import gobuild

    try:
        binary = gobuild.go_binary()
    except gobuild.ToolchainMissing as e:
        raise ImageError(f"cannot build {GO_IMAGE}: {e}") from None
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    shutil.copy2(GO_SOURCES / "Dockerfile", dest / "Dockerfile")
    shutil.copy2(binary, dest / gobuild.BINARY)
    return dest


def prepare_services_context(dest: Path = BUILD_DIR / "services") -> Path:
    """Assemble the build context: Dockerfile, requirements, wheels, the services package
    (which imports nothing from the harness)."""
    reqs = service_requirements()
    download_wheels(reqs, BUILD_DIR / "wheels")
    for sub in ("ipclab_services", "ipclab"):  # "ipclab": what older contexts also held
        shutil.rmtree(dest / sub, ignore_errors=True)
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(REPO_ROOT / "services" / "Dockerfile", dest / "Dockerfile")
    (dest / "requirements.txt").write_text(hashed_requirements(BUILD_DIR / "wheels"))
    shutil.rmtree(dest / "wheels", ignore_errors=True)
    shutil.copytree(BUILD_DIR / "wheels", dest / "wheels")
    _copy_tree(REPO_ROOT / "services", dest / "ipclab_services")
    return dest


# --------------------------------------------------------------------------- build


@dataclass
class Bases:
    python: str
    rabbitmq: str


def resolve_bases(base: str = "auto") -> Bases:
    """``official``: python:3.11-slim / rabbitmq:3 (pulled if missing); ``local``: the
    debootstrapped base (built if missing); ``auto``: official when present or pullable, else
    local; any other value: that image for both."""
    if base == "official":
        for img in (OFFICIAL_PYTHON, OFFICIAL_RABBITMQ):
            if not image_exists(img):
                _pull(img)
        return Bases(OFFICIAL_PYTHON, OFFICIAL_RABBITMQ)
    if base == "local":
        if not local_base_current():
            build_base_image()
        return Bases(LOCAL_BASE, LOCAL_BASE)
    if base == "auto":
        if image_exists(LOCAL_BASE):
            if not local_base_current():
                log(f"{LOCAL_BASE} lacks some of {', '.join(BASE_PACKAGES)}: rebuilding it")
                build_base_image()
            return Bases(LOCAL_BASE, LOCAL_BASE)
        try:
            return resolve_bases("official")
        except ImageError as e:
            log(f"no official images ({e}); building the local base")
            return resolve_bases("local")
    return Bases(base, base)


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
) -> None:
    import docker.errors

    client = docker_client()
    try:
        old_id = client.images.get(tag).id
    except docker.errors.ImageNotFound:
        old_id = None
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
    log(f"{tag}: {_image_size_mb(tag)} MB in {time.monotonic() - t0:.0f} s")
    if old_id and old_id != client.images.get(tag).id:
        # The image this tag named before is now untagged; drop it (not if a container uses it).
        with contextlib.suppress(docker.errors.APIError):
            client.images.remove(old_id, noprune=False)


def build_services_image(
    base: str, tag: str = SERVICES_IMAGE, network_mode: str | None = "auto"
) -> str:
    """``network_mode="auto"``: no network at all on the local base (it has every system
    package; Python packages come from the host's wheels), the default network otherwise
    (the official python image lacks tc and iptables, installed with apt)."""
    ctx = prepare_services_context()
    labels = {LABEL_HASH: services_context_hash(base), "ipclab.image": "services"}
    if network_mode == "auto":
        network_mode = "none" if base == LOCAL_BASE else None
    _build(ctx, tag, base, labels, "Dockerfile", network_mode)
    return tag


def build_go_image(services: str = SERVICES_IMAGE, tag: str = GO_IMAGE) -> str:
    """The Go roles' image on top of the services image ``services`` (by its id, so a tag
    moved meanwhile changes nothing), with no network: everything comes from the host."""
    ctx = prepare_go_context()
    services_hash = _image_label(services, LABEL_HASH) or ""
    base_id = docker_client().images.get(services).id
    labels = {LABEL_HASH: go_context_hash(services_hash), "ipclab.image": "services-go"}
    _build(ctx, tag, base_id, labels, "Dockerfile", network_mode="none")
    return tag


def build_broker_image(base: str, tag: str = BROKER_IMAGE) -> str:
    labels = {LABEL_HASH: broker_context_hash(base), "ipclab.image": "broker"}
    _build(REPO_ROOT / "compose" / "broker", tag, base, labels, "Dockerfile")
    return tag


RUNTIME_IMAGES = {"python": SERVICES_IMAGE, "go": GO_IMAGE}


def runtime_image(runtime: str) -> str:
    """The image the roles of a ``runtime`` (``Runtime.name``) run."""
    if runtime not in RUNTIME_IMAGES:
        raise ImageError(f"no image for the {runtime} runtime; known: {', '.join(RUNTIME_IMAGES)}")
    return RUNTIME_IMAGES[runtime]


def build_images(base: str = "auto", broker: bool = True, go: bool = False) -> dict[str, str]:
    """Build the services image (and the broker image, the Go image); returns role -> image
    (``go``: the Go roles' image)."""
    bases = resolve_bases(base)
    out = {"services": build_services_image(bases.python)}
    if go:
        out["go"] = build_go_image(out["services"])
    if broker:
        out["broker"] = build_broker_image(bases.rabbitmq)
    return out


def ensure_images(
    base: str = "auto", broker: bool = True, runtime: str = "python"
) -> dict[str, str]:
    """Build only what is missing or stale (its context hash differs from the working tree).

    Returns ``services``: the image the roles of ``runtime`` run (for ``go``, the Go image,
    built on the services image), and ``broker`` when asked for."""
    runtime_image(runtime)
    if base == "auto" and _fresh_enough(broker):
        out = {"services": SERVICES_IMAGE, **({"broker": BROKER_IMAGE} if broker else {})}
    else:
        bases = resolve_bases(base)
        out = {}
        if _image_label(SERVICES_IMAGE, LABEL_HASH) != services_context_hash(bases.python):
            build_services_image(bases.python)
        out["services"] = SERVICES_IMAGE
        if broker:
            if _image_label(BROKER_IMAGE, LABEL_HASH) != broker_context_hash(bases.rabbitmq):
                build_broker_image(bases.rabbitmq)
            out["broker"] = BROKER_IMAGE
    if runtime == "go":
        want = go_context_hash(_image_label(SERVICES_IMAGE, LABEL_HASH) or "")
        if _image_label(GO_IMAGE, LABEL_HASH) != want:
            build_go_image(SERVICES_IMAGE)
        out["services"] = GO_IMAGE
    return out


def _fresh_enough(broker: bool) -> bool:
    """With base=auto: are the existing images up to date for one of the possible bases?"""
    for python_base, rabbit_base in (
        (LOCAL_BASE, LOCAL_BASE),
        (OFFICIAL_PYTHON, OFFICIAL_RABBITMQ),
    ):
        ok = _image_label(SERVICES_IMAGE, LABEL_HASH) == services_context_hash(python_base)
        if broker:
            ok = ok and _image_label(BROKER_IMAGE, LABEL_HASH) == broker_context_hash(rabbit_base)
        if ok:
            return True
    return False


def status() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in (
        LOCAL_BASE,
        OFFICIAL_PYTHON,
        OFFICIAL_RABBITMQ,
        SERVICES_IMAGE,
        GO_IMAGE,
        BROKER_IMAGE,
    ):
        out[name] = {"exists": image_exists(name), "size_mb": _image_size_mb(name)}
    out["up_to_date"] = _fresh_enough(broker=True)
    out["go_up_to_date"] = _image_label(GO_IMAGE, LABEL_HASH) == go_context_hash(
        _image_label(SERVICES_IMAGE, LABEL_HASH) or ""
    )
    return out


# --------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="ipclab images", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("base", help="build the local Debian base (debootstrap + docker import)")
    b.add_argument("--tag", default=LOCAL_BASE)
    b.add_argument("--mirror", default=DEBIAN_MIRROR)
    b.add_argument("--force", action="store_true", help="rebuild even if it exists")
    bl = sub.add_parser("build", help="build the services and broker images")
    bl.add_argument(
        "--base",
        default="auto",
        help="auto (default), official (python:3.11-slim, rabbitmq:3), local (debootstrap "
        "base, built if missing), or an image name",
    )
    bl.add_argument("--no-broker", action="store_true")
    bl.add_argument("--go", action="store_true", help="also the Go roles' image (needs go)")
    bl.add_argument("--if-needed", action="store_true", help="skip images already up to date")
    sub.add_parser("status", help="which images exist and whether they are up to date")
    args = p.parse_args(argv)
    try:
        if args.cmd == "base":
            if local_base_current(args.tag) and not args.force:
                log(f"{args.tag} exists (use --force to rebuild)")
            else:
                build_base_image(args.tag, args.mirror)
            print(args.tag)
        elif args.cmd == "build":
            broker = not args.no_broker
            if args.if_needed:
                made = ensure_images(base=args.base, broker=broker)
                if args.go:
                    made["go"] = ensure_images(base=args.base, broker=False, runtime="go")[
                        "services"
                    ]
            else:
                made = build_images(base=args.base, broker=broker, go=args.go)
            for role, image in made.items():
                print(f"{role}\t{image}")
        else:
            import json

            print(json.dumps(status(), indent=2))
    except (ImageError, subprocess.CalledProcessError) as e:
        print(f"ipclab images: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
