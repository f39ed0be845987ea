"""The manifest of the images the harness built (``build/docker/images.json``): each pinned by
id with what made it (base, context hash, wheel lock, Debian packages read from the image's
``APT_RECORD``); stacks run the pinned ids, never a tag (``pinned``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ipclab.backends.docker.imagebasics import (
    BUILD_DIR,
    LABEL_HASH,
    ImageError,
    docker_client,
    image_id_of,
    image_label,
)

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
    current = image_id_of(tag)
    if current != entry["id"]:
        now = f"now names {current}" if current else "names no image now"
        raise ImageError(
            f"{tag} {now}, not {entry['id']}, the image the harness built and recorded in "
            f"{_manifest_path()}; rebuild it with python -m ipclab.backends.docker.images build"
        )
    return str(entry["id"])


def stale(tag: str, want_hash: str) -> str | None:
    """Why ``tag`` must be (re)built, or None when it is the pinned build of ``want_hash``."""
    label = image_label(tag, LABEL_HASH)
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


def dpkg_list(image: str) -> list[str]:
    """The package=version list of an image made before it carried ``APT_RECORD``."""
    out = docker_client().containers.run(
        image, ["sh", "-c", DPKG_QUERY], remove=True, network_mode="none", labels=_reader_labels()
    )
    return bytes(out).decode().split()


def pin_build(tag: str, image_id: str, context_hash: str, base: str, **extra: Any) -> None:
    import datetime

    import docker.errors

    base_id = base if base.startswith("sha256:") else image_id_of(base)
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
    image_id = image_id_of(ref) if not ref.startswith("sha256:") else ref
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
