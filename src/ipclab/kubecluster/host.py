"""What the local cluster changes on the host outside its root, and how each is undone.

A kubelet and kube-proxy cannot be kept entirely inside a folder; these are the
exceptions, each recorded or recognisable so that ``down`` (also after a kill -9 of every
process involved) puts the host back:

- sysctls: the kubelet sets ``vm.overcommit_memory=1``, ``vm.panic_on_oom=0``,
  ``kernel.panic=10``, ``kernel.panic_on_oops=1`` and the two ``kernel.keys.root_max*``;
  kube-proxy sets ``net.ipv4.conf.all.route_localnet=1`` (NodePorts on loopback); the CNI
  bridge turns on ``net.ipv4.ip_forward``. :data:`SYSCTLS` are read before the first
  component starts, kept in the state file, and written back at ``down`` where they differ.
- iptables: kube-proxy's ``KUBE-*`` chains (filter, nat, mangle) and the CNI firewall
  plugin's ``CNI-*`` chains, with the jumps to them from the built-in chains, in both
  address families. ``kube-proxy --cleanup`` removes its own; :func:`cleanup_iptables` then
  removes whatever of both is left (the plan is a pure function, :func:`iptables_cleanup`).
  Docker's chains are never touched.
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

import contextlib
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from ipclab.kubecluster.layout import BRIDGE, CNI_NETWORK

SYSCTLS = (
    "vm.overcommit_memory",
    "vm.panic_on_oom",
    "kernel.panic",
    "kernel.panic_on_oops",
    "kernel.keys.root_maxkeys",
    "kernel.keys.root_maxbytes",
    "net.ipv4.conf.all.route_localnet",
    "net.ipv4.ip_forward",
    # left alone by the configuration (conntrack knobs 0), recorded in case they are not
    "net.netfilter.nf_conntrack_max",
    "net.netfilter.nf_conntrack_tcp_timeout_established",
    "net.netfilter.nf_conntrack_tcp_timeout_close_wait",
)
PROC_SYS = Path("/proc/sys")
CHAIN_PREFIXES = ("KUBE-", "CNI-")
TABLES = ("filter", "nat", "mangle", "raw")
CGROUP_ROOT = Path("/sys/fs/cgroup")
KUBEPODS = "kubepods"
CNI_CACHE = Path("/var/lib/cni")
SHIM_SOCKETS = Path("/run/containerd/s")  # fixed in containerd 1.6, whatever its address
CONTAINER_LOG_LINKS = Path("/var/log/containers")


def sysctl_path(name: str, proc_sys: Path = PROC_SYS) -> Path:
    return proc_sys.joinpath(*name.split("."))


def record_sysctls(names: Iterable[str] = SYSCTLS, proc_sys: Path = PROC_SYS) -> dict[str, str]:
    """The current value of each sysctl that exists here."""
    values = {}
    for name in names:
        with contextlib.suppress(OSError):
            values[name] = sysctl_path(name, proc_sys).read_text().strip()
    return values


def restore_sysctls(recorded: Mapping[str, str], proc_sys: Path = PROC_SYS) -> list[str]:
    """Write back each recorded value that differs now; returns what was restored (and,
    prefixed ``failed:``, what could not be)."""
    done = []
    for name, value in recorded.items():
        path = sysctl_path(name, proc_sys)
        try:
            now = path.read_text().strip()
            if now != value:
                path.write_text(value + "\n")
                done.append(f"{name} {now} -> {value}")
        except OSError as e:
            done.append(f"failed: {name} back to {value}: {e}")
    return done


def _ours(chain: str) -> bool:
    return chain.startswith(CHAIN_PREFIXES)


def iptables_cleanup(rules: str) -> list[list[str]]:
    """The commands (``iptables -t T`` arguments) that remove our chains from one table,
    given its ``iptables -t T -S``: delete every rule of another chain that jumps to one of
    ours, then flush our chains, then delete them."""
    ours: list[str] = []
    deletes: list[list[str]] = []
    for line in rules.splitlines():
        words = shlex.split(line)
        if len(words) >= 2 and words[0] == "-N" and _ours(words[1]):
            ours.append(words[1])
        elif len(words) >= 2 and words[0] == "-A" and not _ours(words[1]):
            targets = [b for a, b in zip(words, words[1:], strict=False) if a in ("-j", "-g")]
            if any(_ours(t) for t in targets):
                deletes.append(["-D", *words[1:]])
    return [*deletes, *(["-F", c] for c in ours), *(["-X", c] for c in ours)]


def cleanup_iptables() -> list[str]:
    """Remove our chains in every table of both address families; returns the problems."""
    problems = []
    for tool in ("iptables", "ip6tables"):
        binary = shutil.which(tool)
        if binary is None:
            continue
        for table in TABLES:
            listed = subprocess.run(
                [binary, "-w", "-t", table, "-S"], capture_output=True, text=True, check=False
            )
            if listed.returncode != 0:
                continue  # the table does not exist in this family
            for command in iptables_cleanup(listed.stdout):
                done = subprocess.run(
                    [binary, "-w", "-t", table, *command], capture_output=True, text=True
                )
                if done.returncode != 0:
                    problems.append(f"{tool} -t {table} {shlex.join(command)}: {done.stderr}")
    return problems


# the CNI firewall plugin's jump from FORWARD, exactly as the plugin writes it (it adds the
# rule only when no identical one exists, wherever that one is)
CNI_FORWARD_JUMP = ("-m", "comment", "--comment", "CNI firewall plugin rules", "-j", "CNI-FORWARD")
# kube-proxy's jump to its service rules, which REJECT a Service without endpoints
KUBE_SERVICES_JUMP = (
    "-m", "conntrack", "--ctstate", "NEW",
    "-m", "comment", "--comment", "kubernetes service portals", "-j", "KUBE-SERVICES",
)  # fmt: skip


def _normalized(rules: str) -> list[str]:
    return [shlex.join(shlex.split(line)) for line in rules.splitlines()]


def kube_proxy_forwards(filter_rules: str) -> bool:
    """kube-proxy's jump to its service rules is in FORWARD (given ``iptables -S``)."""
    return shlex.join(["-A", "FORWARD", *KUBE_SERVICES_JUMP]) in _normalized(filter_rules)


def forward_order_commands(filter_rules: str) -> list[list[str]]:
    """The ``iptables -t filter`` commands that put the CNI firewall's jump after
    kube-proxy's in FORWARD, given the filter table's ``iptables -S``.

    The plugin accepts every packet of a pod in its chain; placed first (it prepends its
    jump at the first pod), it accepts a pod's packets to a Service that has no endpoints
    before kube-proxy's REJECT sees them, and they are routed off the machine and lost: a
    client waits for its TCP connect to time out (about 130 s) where any cluster refuses
    at once, and an AMQP service that starts before its broker hangs that long."""
    jump = shlex.join(["-A", "FORWARD", *CNI_FORWARD_JUMP])
    kube = shlex.join(["-A", "FORWARD", *KUBE_SERVICES_JUMP])
    lines = _normalized(filter_rules)
    if kube not in lines:
        return []  # kube-proxy has not written its rules: nothing to order against yet
    commands = [["-N", "CNI-FORWARD"]] if "-N CNI-FORWARD" not in lines else []
    if jump in lines and lines.index(jump) > lines.index(kube):
        return commands
    if jump in lines:
        commands.append(["-D", "FORWARD", *CNI_FORWARD_JUMP])
    return [*commands, ["-A", "FORWARD", *CNI_FORWARD_JUMP]]


def order_forward(timeout_s: float = 30.0) -> None:
    """Once kube-proxy's jump is in FORWARD, the CNI firewall's after it (before any pod
    starts, so the plugin finds its rule and leaves it there); RuntimeError if kube-proxy
    wrote none within ``timeout_s``."""
    iptables = shutil.which("iptables") or "iptables"
    deadline = time.monotonic() + timeout_s
    while True:
        listed = subprocess.run([iptables, "-w", "-S"], capture_output=True, text=True, check=True)
        if kube_proxy_forwards(listed.stdout):
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"kube-proxy wrote no FORWARD rules within {timeout_s:.0f} s")
        time.sleep(0.2)
    for command in forward_order_commands(listed.stdout):
        subprocess.run([iptables, "-w", *command], capture_output=True, text=True, check=True)


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
