"""The local base image: Debian bookworm from the Debian archive (debootstrap), imported
into the engine with its packages recorded (``python -m ipclab.backends.docker.images base``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from ipclab.backends.docker.imagebasics import (
    LOCAL_BASE,
    ImageError,
    image_id_of,
    image_label,
    image_size_mb,
    log,
)
from ipclab.backends.docker.pins import APT_RECORD, DPKG_QUERY, record_image

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
    image_id = image_id_of(tag) or ""
    record_image(tag, {"id": image_id, "mirror": mirror, "apt_packages": packages})
    log(f"{tag}: {image_id[:19]}, {image_size_mb(tag)} MB in {time.monotonic() - t0:.0f} s")
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
    return image_label(tag, BASE_LABEL) == ",".join(BASE_PACKAGES)


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
