"""Images in the local cluster without a registry: imported into its private containerd.

No registry is reachable here, so nothing is ever pulled (pods use ``imagePullPolicy:
Never``: a missing image shows as ``ErrImageNeverPull``, not as a pull that hangs).

- The pause image (``ipclab-pause:1``, containerd's ``sandbox_image``) is written here as a
  docker-archive tarball (what ``docker save`` writes: ``manifest.json``, the image config,
  one uncompressed layer holding ``/pause``), byte-for-byte reproducible from the pause
  binary, and imported with ``ctr images import``. No docker, no Dockerfile: the archive
  is a pure function of the binary (:func:`pause_archive`).
- The project's images go from the docker engine to containerd as kind loads images into
  its nodes: ``docker save NAME | ctr -n k8s.io images import -``. Each imported image is
  labelled with its docker id (``ipclab.docker-id``), so an import is skipped exactly when
  containerd already holds that very image under that name, and redone when the tag moved.

Names normalise alike on both sides (``ipclab-services:latest`` is
``docker.io/library/ipclab-services:latest`` in containerd), so pod specs keep the
project's names. Imported images are stored twice (docker's store and containerd's);
they are removed with the cluster.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import subprocess
import tarfile
from collections.abc import Iterable
from pathlib import Path

from ipclab.kubecluster.config import PAUSE_IMAGE

NAMESPACE = "k8s.io"  # the CRI plugin's containerd namespace
DOCKER_ID_LABEL = "ipclab.docker-id"
PAUSE_USER = "65535:65535"  # as upstream's pause image: it needs no privilege


class ImageError(RuntimeError):
    pass


def normalized(name: str) -> str:
    """``name`` as containerd (and docker) spell it in full: registry, path, tag."""
    first, _, rest = name.partition("/")
    if not rest or ("." not in first and ":" not in first and first != "localhost"):
        name = f"docker.io/{name}" if rest else f"docker.io/library/{name}"
    last = name.rsplit("/", 1)[-1]
    return name if ":" in last or "@" in last else f"{name}:latest"


def _tar_member(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    tar.addfile(info, io.BytesIO(data))


def _tar(members: Iterable[tuple[str, bytes, int]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data, mode in members:
            _tar_member(tar, name, data, mode)
    return buffer.getvalue()


def pause_archive(binary: bytes, name: str = PAUSE_IMAGE) -> bytes:
    """A docker-archive tarball of a FROM-scratch image ``name`` whose one layer holds
    ``binary`` as ``/pause`` (its entrypoint), run as an unprivileged user."""
    layer = _tar([("pause", binary, 0o755)])
    layer_id = hashlib.sha256(layer).hexdigest()
    config = {
        "architecture": "amd64",
        "os": "linux",
        "created": "1970-01-01T00:00:00Z",
        "config": {"Entrypoint": ["/pause"], "User": PAUSE_USER, "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{layer_id}"]},
        "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "ipclab pause_archive"}],
    }
    config_bytes = json.dumps(config, sort_keys=True, separators=(",", ":")).encode()
    config_name = f"{hashlib.sha256(config_bytes).hexdigest()}.json"
    manifest = [{"Config": config_name, "RepoTags": [name], "Layers": [f"{layer_id}/layer.tar"]}]
    return _tar(
        [
            (f"{layer_id}/layer.tar", layer, 0o644),
            (config_name, config_bytes, 0o644),
            ("manifest.json", json.dumps(manifest).encode(), 0o644),
        ]
    )


def _ctr(socket: Path, *args: str) -> list[str]:
    ctr = shutil.which("ctr")
    if ctr is None:
        raise ImageError("ctr (Debian's containerd package) is not on PATH")
    return [ctr, "--address", str(socket), "--namespace", NAMESPACE, *args]


def parse_image_list(text: str) -> dict[str, dict[str, str]]:
    """``ctr images ls`` output -> {reference: labels}. Columns: REF TYPE DIGEST SIZE
    PLATFORMS LABELS; SIZE holds a space ("1.2 MiB"), so only the first and last are read."""
    out: dict[str, dict[str, str]] = {}
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 2:
            continue
        labels = {}
        if fields[-1] != "-":
            for pair in fields[-1].split(","):
                key, _, value = pair.partition("=")
                labels[key] = value
        out[fields[0]] = labels
    return out


def imported(socket: Path) -> dict[str, dict[str, str]]:
    """The images containerd holds in the CRI namespace, with their labels."""
    done = subprocess.run(
        _ctr(socket, "images", "ls"), capture_output=True, text=True, timeout=60, check=False
    )
    if done.returncode != 0:
        raise ImageError(f"ctr images ls failed: {done.stderr.strip()}")
    return parse_image_list(done.stdout)


def import_archive(socket: Path, archive: bytes) -> None:
    """Import a docker-archive (or OCI) tarball given in memory."""
    done = subprocess.run(
        _ctr(socket, "images", "import", "-"),
        input=archive,
        capture_output=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise ImageError(f"ctr images import failed: {done.stderr.decode(errors='replace')}")


def import_pause(socket: Path, pause_binary: Path) -> None:
    import_archive(socket, pause_archive(pause_binary.read_bytes()))


def docker_id(name: str) -> str:
    docker = shutil.which("docker")
    if docker is None:
        raise ImageError(f"no docker CLI to read {name} from the docker engine")
    done = subprocess.run(
        [docker, "image", "inspect", "--format", "{{.Id}}", name],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        raise ImageError(f"{name}: not in the docker engine ({done.stderr.strip()})")
    return done.stdout.strip()


def import_docker_image(socket: Path, name: str) -> bool:
    """``name`` from the docker engine into containerd (``docker save | ctr import``),
    labelled with its docker id; skipped (False) when containerd holds that id already.
    By name (``repository:tag``): an archive saved by image id carries no name to import
    it under."""
    if name.startswith("sha256:") or re.fullmatch(r"[0-9a-f]{12,64}", name):
        raise ImageError(f"{name}: import an image by its name (repository:tag), not its id")
    want = docker_id(name)
    ref = normalized(name)
    if imported(socket).get(ref, {}).get(DOCKER_ID_LABEL) == want:
        return False
    docker = shutil.which("docker")
    assert docker is not None  # docker_id found it
    save = subprocess.Popen([docker, "save", name], stdout=subprocess.PIPE)
    try:
        done = subprocess.run(
            _ctr(socket, "images", "import", "-"),
            stdin=save.stdout,
            capture_output=True,
            timeout=1800,
            check=False,
        )
    finally:
        assert save.stdout is not None
        save.stdout.close()
        saved = save.wait()
    if saved != 0 or done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip() or f"docker save exited {saved}"
        raise ImageError(f"importing {name} into the cluster failed: {why}")
    label = subprocess.run(
        _ctr(socket, "images", "label", ref, f"{DOCKER_ID_LABEL}={want}"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if label.returncode != 0:
        raise ImageError(f"labelling {ref} failed: {label.stderr.strip()}")
    return True
