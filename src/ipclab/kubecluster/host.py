"""What the local cluster changes on the host outside its root, and how each is undone.

A kubelet and kube-proxy cannot be kept entirely inside a folder; these are the
exceptions, each recorded or recognisable so that ``down`` (also after a kill -9 of every
process involved) puts the host back:

- sysctls (the kubelet's, kube-proxy's ``route_localnet``, the bridge's ``ip_forward``):
  recorded before the first start in a host record apart from the root, and written back
  at ``down``, to the documented defaults when no record is left (``sysctls``).
- iptables: kube-proxy's ``KUBE-*`` chains, the harness's guard, and our pods' rules in the
  CNI firewall plugin's shared chains; ``down`` removes only what is the cluster's
  (``firewall``).
- the bridge ``ipclab0`` (the veths go with the pods' network namespaces).
- mounts: the kubelet makes its root an rshared bind mount and mounts pod volumes under
  it; containerd mounts each container's rootfs and the pods' netns files under its state.
  All are under the root: :func:`mounts_under` lists them, deepest first, for ``umount``.
  The root is deleted only once none is left: ``shutil.rmtree`` would walk into a mount
  (a hostPath volume is the host's own folder).
- cgroups: the kubelet's ``kubepods`` tree in every cgroup v1 hierarchy (cgroupfs driver).
- files outside the root: the CNI library's result cache ``/var/lib/cni/results/<network>-*``,
  the kubelet's ``/var/log/containers/*`` symlinks into the pod logs (that folder's name is
  fixed in the kubelet), and the socket of each containerd shim killed rather than stopped,
  ``/run/containerd/s/<sha256 of address/namespace/id>`` (:func:`shim_socket`).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import time
from pathlib import Path

from ipclab.kubecluster.layout import BRIDGE, CNI_NETWORK

CGROUP_ROOT = Path("/sys/fs/cgroup")
KUBEPODS = "kubepods"
NODE_CGROUPS = "ipclab-node-*"  # the extra nodes' cgroup roots (``nodes.CGROUP_PREFIX``)
CNI_CACHE = Path("/var/lib/cni")
SHIM_SOCKETS = Path("/run/containerd/s")  # fixed in containerd 1.6, whatever its address
CONTAINER_LOG_LINKS = Path("/var/log/containers")


def delete_bridge(name: str = BRIDGE) -> list[str]:
    if not Path("/sys/class/net", name).exists():
        return []
    done = subprocess.run(["ip", "link", "delete", name], capture_output=True, text=True)
    return [] if done.returncode == 0 else [f"ip link delete {name}: {done.stderr.strip()}"]


def _unescape(field: str) -> str:
    """A mountinfo path: spaces, tabs, newlines and backslashes are octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mounts_under(root: Path, mountinfo: str) -> list[str]:
    """Every mount point strictly under ``root`` in ``mountinfo`` (``/proc/self/mountinfo``
    text), deepest first, each once."""
    prefix = str(root).rstrip("/") + "/"
    points = []
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) > 4:
            point = _unescape(fields[4])
            if point.startswith(prefix):
                points.append(point)
    return sorted(dict.fromkeys(points), key=lambda p: (-p.count("/"), p))


def unmount_all(root: Path) -> list[str]:
    """Unmount everything under ``root`` (deepest first; lazily if busy). Returns what is
    still mounted there afterwards: then ``root`` must not be deleted."""
    for point in mounts_under(root, Path("/proc/self/mountinfo").read_text()):
        done = subprocess.run(["umount", point], capture_output=True, text=True)
        if done.returncode != 0:
            subprocess.run(["umount", "-l", point], capture_output=True, text=True)
    return mounts_under(root, Path("/proc/self/mountinfo").read_text())


def kubepods_cgroups(cgroup_root: Path = CGROUP_ROOT) -> list[Path]:
    """Every directory of the kubelet's cgroup tree, deepest first (cgroups are removed
    with ``rmdir``, children first), in each hierarchy and in a pure cgroup v2 mount."""
    tops = [*cgroup_root.glob(f"*/{KUBEPODS}"), *cgroup_root.glob(KUBEPODS)]
    tops += [*cgroup_root.glob(f"*/{NODE_CGROUPS}"), *cgroup_root.glob(NODE_CGROUPS)]
    found = []
    for top in tops:
        if top.is_dir() and not top.is_symlink():
            found += [Path(d) for d, _, _ in os.walk(top)]
    return sorted(found, key=lambda p: (-len(p.parts), str(p)))


def remove_cgroups(cgroup_root: Path = CGROUP_ROOT, tries: int = 3) -> list[str]:
    """``rmdir`` the kubelet's cgroups, children first, a few times (a killed process may
    leave its cgroup a moment late); returns those left."""
    left: list[str] = []
    for attempt in range(tries):
        left = []
        for directory in kubepods_cgroups(cgroup_root):
            try:
                directory.rmdir()
            except OSError as e:
                left.append(f"cgroup {directory}: {e.strerror}")
        if not left:
            break
        if attempt + 1 < tries:
            time.sleep(1.0)
    return left


def shim_arguments(cmdline: list[str]) -> dict[str, str]:
    """``-namespace``, ``-id`` and ``-address`` of a containerd shim's command line."""
    wanted = ("-namespace", "-id", "-address")
    return {a[1:]: b for a, b in zip(cmdline, cmdline[1:], strict=False) if a in wanted}


def shim_socket(cmdline: list[str], sockets: Path = SHIM_SOCKETS) -> Path | None:
    """Where the shim of ``cmdline`` listens: as containerd 1.6's ``SocketAddress``
    (runtime/v2/shim/util_unix.go) makes it, the sha256 of ``<containerd address>/
    <namespace>/<id>`` under ``/run/containerd/s`` (read in the source, not yet seen)."""
    args = shim_arguments(cmdline)
    if not all(k in args for k in ("namespace", "id", "address")):
        return None
    path = os.path.join(args["address"], args["namespace"], args["id"])
    return sockets / hashlib.sha256(path.encode()).hexdigest()


def remove_outside_files(pod_logs: Path, cni_cache: Path = CNI_CACHE) -> list[str]:
    """The CNI result cache of our network and the kubelet's links into our pod logs."""
    removed = []
    for path in (cni_cache / "results").glob(f"{CNI_NETWORK}-*"):
        path.unlink(missing_ok=True)
        removed.append(str(path))
    if CONTAINER_LOG_LINKS.is_dir():
        for link in CONTAINER_LOG_LINKS.iterdir():
            if link.is_symlink() and os.readlink(link).startswith(str(pod_logs) + "/"):
                link.unlink(missing_ok=True)
                removed.append(str(link))
    return removed
