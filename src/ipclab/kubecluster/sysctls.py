"""The kernel settings the local cluster changes, and how each is put back, with or without
a record of what it was (issue 48).

The kubelet sets ``vm.overcommit_memory=1``, ``vm.panic_on_oom=0``, ``kernel.panic=10``,
``kernel.panic_on_oops=1`` and the two ``kernel.keys.root_max*``; kube-proxy sets
``net.ipv4.conf.all.route_localnet=1`` (NodePorts on loopback: left on after its DROP rule
is gone, a neighbour reaches 127.0.0.1's listeners, CVE-2020-8558's pattern); the CNI bridge
turns on ``net.ipv4.ip_forward`` (:data:`CLUSTER_SETS`).

Where the values from before the start are kept: in a **host record**,
``/run/ipclab-k8s-<uid>/host.json`` (:data:`RECORD_DIR`, root's private folder), beside
the state file in the cluster's root. The record is apart from the root on purpose: it
outlives a root that is removed, cleaned from ``/tmp`` or planted over, and it is tied to
the boot it was made in (``/proc/sys/kernel/random/boot_id``): sysctls are reset by a
reboot, and so a record of another boot is ignored. It is written at the first ``up`` and
kept as long as a ``down`` has not put everything back (a second ``up`` after a half-done
``down`` reuses it: its values are the host's own, not the last cluster's); a complete
``down`` removes it. It also names the shared firewall chains that were there before
(``firewall``), which ``down`` must leave.

Without any record (no host record of this boot, no state file): each sysctl whose value is
the one the cluster sets is written back to its **documented default**, the kernel's
(:data:`DEFAULTS`: docs/kubernetes.md has the table), except ``ip_forward`` while dockerd
runs (docker turned it on at its start, and its containers need it). A value the cluster
does not set is never touched.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil

from ipclab.atomic import write_json_atomic
from ipclab.private import UnsafeState, private_dir, read_private

PROC_SYS = Path("/proc/sys")
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
RECORD_DIR = Path(f"/run/ipclab-k8s-{os.getuid()}")
RECORD_FILE = "host.json"
IP_FORWARD = "net.ipv4.ip_forward"
# what the cluster sets each to (the kubelet's setupKernelTunables, kube-proxy, CNI bridge)
CLUSTER_SETS = {
    "vm.overcommit_memory": "1",
    "vm.panic_on_oom": "0",
    "kernel.panic": "10",
    "kernel.panic_on_oops": "1",
    "kernel.keys.root_maxkeys": "1000000",
    "kernel.keys.root_maxbytes": "25000000",
    "net.ipv4.conf.all.route_localnet": "1",
    IP_FORWARD: "1",
}
# the kernel's defaults (Documentation/admin-guide/sysctl/{vm,kernel}.rst, ip-sysctl.rst)
DEFAULTS = {
    "vm.overcommit_memory": "0",
    "vm.panic_on_oom": "0",
    "kernel.panic": "0",
    "kernel.panic_on_oops": "0",
    "kernel.keys.root_maxkeys": "1000000",
    "kernel.keys.root_maxbytes": "25000000",
    "net.ipv4.conf.all.route_localnet": "0",
    IP_FORWARD: "0",
}
SYSCTLS = (
    *CLUSTER_SETS,
    # left alone by the configuration (conntrack knobs 0), recorded in case they are not
    "net.netfilter.nf_conntrack_max",
    "net.netfilter.nf_conntrack_tcp_timeout_established",
    "net.netfilter.nf_conntrack_tcp_timeout_close_wait",
)


def sysctl_path(name: str, proc_sys: Path | None = None) -> Path:
    return (proc_sys or PROC_SYS).joinpath(*name.split("."))


def read(names: Iterable[str] = SYSCTLS, proc_sys: Path | None = None) -> dict[str, str]:
    """The current value of each sysctl that exists here."""
    values = {}
    for name in names:
        with contextlib.suppress(OSError):
            values[name] = sysctl_path(name, proc_sys).read_text().strip()
    return values


def forwarding_needed() -> bool:
    """dockerd runs: it turned ``ip_forward`` on at its start and its containers need it."""
    return any(p.info["name"] == "dockerd" for p in psutil.process_iter(["name"]))


def targets(
    recorded: Mapping[str, str] | None, now: Mapping[str, str], keep_forwarding: bool
) -> dict[str, str]:
    """Each sysctl to write back, with its value: the recorded one where it differs now;
    without a record, the default of each still at the value the cluster sets. Never
    ``ip_forward`` off when ``keep_forwarding``."""
    if recorded:
        out = {n: v for n, v in recorded.items() if n in now and now[n] != v}
    else:
        out = {
            n: DEFAULTS[n]
            for n, value in CLUSTER_SETS.items()
            if now.get(n) == value and DEFAULTS[n] != value
        }
    if keep_forwarding and out.get(IP_FORWARD) == "0":
        del out[IP_FORWARD]
    return out


def restore(
    recorded: Mapping[str, str] | None,
    proc_sys: Path | None = None,
    keep_forwarding: bool | None = None,
) -> list[str]:
    """Write back what :func:`targets` says; returns what was restored (and, prefixed
    ``failed:``, what could not be)."""
    keep = forwarding_needed() if keep_forwarding is None else keep_forwarding
    now = read(recorded or CLUSTER_SETS, proc_sys)
    done = []
    for name, value in targets(recorded, now, keep).items():
        try:
            sysctl_path(name, proc_sys).write_text(value + "\n")
            how = "" if recorded else " (the documented default: no record)"
            done.append(f"{name} {now[name]} -> {value}{how}")
        except OSError as e:
            done.append(f"failed: {name} back to {value}: {e}")
    return done


@dataclass
class Record:
    """The host as it was before the first start of this boot."""

    boot: str
    sysctls: dict[str, str] = field(default_factory=dict)
    chains: list[str] = field(default_factory=list)  # shared chains there before


def boot_id(path: Path = BOOT_ID) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def load(directory: Path | None = None, boot: str | None = None) -> Record | None:
    """The host record of this boot, or None (none, another boot's, unreadable, or in a
    folder that is not root's alone: ``ipclab.private``)."""
    directory = directory or RECORD_DIR
    try:
        data = json.loads(read_private(directory, RECORD_FILE, "the host record", "remove it"))
        record = Record(
            str(data["boot"]),
            {str(k): str(v) for k, v in data["sysctls"].items()},
            [str(c) for c in data.get("chains", [])],
        )
    except (OSError, UnsafeState, ValueError, KeyError, TypeError, AttributeError):
        return None
    return record if record.boot == (boot_id() if boot is None else boot) else None


def keep(
    sysctls: Mapping[str, str], chains: Iterable[str], directory: Path | None = None
) -> Record:
    """The record of this boot: the one there is, else a new one of ``sysctls`` and
    ``chains``, written (mode 0600 in a private 0700 folder)."""
    directory = directory or RECORD_DIR
    if (found := load(directory)) is not None:
        return found
    record = Record(boot_id(), dict(sysctls), sorted(chains))
    private_dir(directory, "the host record", "remove it")
    write_json_atomic(directory / RECORD_FILE, asdict(record), mode=0o600)
    return record


def drop(directory: Path | None = None) -> None:
    """Remove the record (everything it describes is back)."""
    directory = directory or RECORD_DIR
    with contextlib.suppress(FileNotFoundError):
        (directory / RECORD_FILE).unlink()
    with contextlib.suppress(OSError):
        directory.rmdir()
