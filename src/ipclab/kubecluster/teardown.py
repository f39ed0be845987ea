"""Stopping the local cluster and undoing everything it did to the host, in reverse order.

Used by ``ipclab cluster down``, by a failed start, by ``up`` when it finds a cluster a
killed harness left, and by the orphan sweep (``orphans.sweep``) for a start or stop a
killed harness left half done. Every step runs even when an earlier one failed; what could
not be done is returned, not raised, so that one stuck mount does not leave the iptables
chains behind too.

1. The Kubernetes components, newest first (kube-proxy ... etcd): SIGTERM, then SIGKILL
   after a grace. The kubelet leaves the pods running, by design.
2. The pods: every containerd shim of this cluster and every process under it (the
   containers), SIGKILL. containerd does not restart them; the shims outlive containerd,
   so they are found by their command line (``-address <root>/...``), not asked of it.
3. containerd, then any process of the cluster still running (:func:`state.processes`,
   whatever the state file says: a kill -9 may have come before a pid was written).
4. ``kube-proxy --cleanup``, then our own removal of the cluster's rules (``firewall``:
   the ``KUBE-*`` chains, the guard, our pods' rules in the shared ``CNI-*`` chains, those
   chains only if nothing else's is in them and they were not there before), the bridge,
   the extra nodes' network namespaces (``nodes``: their veths and routes go with them),
   every mount under the root, the kubelet's cgroups, the CNI cache entries and log links
   outside the root.
5. The sysctls back to the host record's values (else the state file's, else the
   documented defaults: ``sysctls``), the host record removed once everything is back,
   then the root removed (only when nothing is mounted under it any more).

Host-wide steps (4, 5) run only when there is evidence of this cluster (its state file, one
of its processes, its bridge, a mount under its root, or a host record of this boot), or
with ``force``: the ``KUBE-*`` names are shared by every Kubernetes, and another's must
never be deleted (``node.preflight`` refuses to start beside one).
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import psutil

from ipclab import orphans
from ipclab.kubecluster import firewall, host, nodes, state, sysctls
from ipclab.kubecluster.layout import BRIDGE, Layout
from ipclab.kubecluster.state import COMPONENTS, SHIM_PREFIX, State

STOP_GRACE_S = {"kubelet": 20.0, "kube-apiserver": 20.0, "etcd": 10.0, "containerd": 20.0}
DEFAULT_GRACE_S = 10.0


def _terminate(processes: list[psutil.Process], grace: float) -> None:
    """SIGTERM each, wait up to ``grace`` seconds, SIGKILL what is left."""
    for p in processes:
        with contextlib.suppress(psutil.Error):
            p.terminate()
    _, alive = psutil.wait_procs(processes, timeout=grace)
    for p in alive:
        with contextlib.suppress(psutil.Error):
            p.kill()
    psutil.wait_procs(alive, timeout=5)


def _recorded(layout: Layout, st: State | None, name: str) -> psutil.Process | None:
    """The component's process from the state file, if it still runs and is ours."""
    started = st.processes.get(name) if st is not None else None
    p = started.process() if started is not None else None
    try:
        ours = p is not None and state.is_ours(p.cmdline(), p.uids().real, layout.root)
    except psutil.Error:
        return None
    return p if ours else None


def _by_program(layout: Layout, name: str) -> list[psutil.Process]:
    return [p for p in state.processes(layout.root) if _program(p) == name]


def _program(p: psutil.Process) -> str:
    try:
        return state.program(p.cmdline())
    except psutil.Error:
        return ""


def stop_component(layout: Layout, st: State | None, name: str) -> None:
    """Stop one component: the recorded process and any other of that name of ours."""
    found = {p.pid: p for p in _by_program(layout, name)}
    if (recorded := _recorded(layout, st, name)) is not None:
        found[recorded.pid] = recorded
    if found:
        _terminate(list(found.values()), STOP_GRACE_S.get(name, DEFAULT_GRACE_S))


def kill_pods(layout: Layout) -> int:
    """SIGKILL every container (the processes under each of our shims), then the shims;
    returns how many processes were killed."""
    shims = [p for p in state.processes(layout.root) if _program(p).startswith(SHIM_PREFIX)]
    victims: list[psutil.Process] = []
    sockets = []
    for shim in shims:
        with contextlib.suppress(psutil.Error):
            sockets.append(host.shim_socket(shim.cmdline()))
            victims += shim.children(recursive=True)
    victims += shims
    for p in victims:
        with contextlib.suppress(psutil.Error):
            p.kill()
    psutil.wait_procs(victims, timeout=10)
    for socket in sockets:  # a killed shim leaves its socket behind
        if socket is not None:
            socket.unlink(missing_ok=True)
    return len(victims)


def stop_processes(layout: Layout, st: State | None, say: Callable[[str], None]) -> None:
    """Steps 1-3: components newest first, the pods, containerd, any straggler."""
    for name in reversed(COMPONENTS[1:]):
        stop_component(layout, st, name)
    killed = kill_pods(layout)
    if killed:
        say(f"  killed {killed} container processes and shims")
    stop_component(layout, st, "containerd")
    left = list(state.processes(layout.root))
    if left:
        say(f"  killing {len(left)} more processes of the cluster: {[p.pid for p in left]}")
        _terminate(left, 2.0)


def _proxy_cleanup(st: State | None) -> None:
    """``kube-proxy --cleanup`` with the binary that ran (its own view of its rules)."""
    binary = Path(st.binary) if st is not None and st.binary else None
    if binary is None or not binary.is_file():
        return
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        subprocess.run(
            [str(binary), "kube-proxy", "--cleanup"],
            capture_output=True,
            timeout=60,
            check=False,
        )


def undo_host(
    layout: Layout, st: State | None, record: sysctls.Record | None
) -> tuple[list[str], list[str]]:
    """Step 4; returns (mounts still under the root, other problems)."""
    _proxy_cleanup(st)
    problems = firewall.cleanup(keep=record.chains if record else ())
    problems += host.delete_bridge()
    problems += nodes.remove_all()  # the extra nodes' namespaces, with their links and routes
    left = host.unmount_all(layout.root) if layout.root.exists() else []
    problems += [f"still mounted: {m}" for m in left]
    problems += host.remove_cgroups()
    host.remove_outside_files(layout.pod_logs)
    return left, problems


def evidence(layout: Layout) -> bool:
    """Something of this cluster is here: its state file, one of its processes, its
    bridge, an extra node's namespace, a mount under its root, a host record of this boot
    (an empty root is none)."""
    mounts = host.mounts_under(layout.root, Path("/proc/self/mountinfo").read_text())
    return (
        layout.state_file.exists()
        or any(True for _ in state.processes(layout.root))
        or Path("/sys/class/net", BRIDGE).exists()
        or bool(nodes.namespaces())
        or bool(mounts)
        or sysctls.load() is not None
    )


def restore_sysctls(
    st: State | None, record: sysctls.Record | None, say: Callable[[str], None]
) -> list[str]:
    """Step 5's sysctls: the host record's values, else the state file's, else the
    documented defaults; returns the problems."""
    recorded = record.sysctls if record else (st.sysctls if st is not None else None)
    if not recorded:
        say("  no record of the sysctls from before the start: the documented defaults")
    problems = []
    for change in sysctls.restore(recorded or None):
        say(f"  sysctl {change}")
        if change.startswith("failed:"):
            problems.append(change)
    return problems


def _remove_root(layout: Layout, keep_root: bool) -> None:
    if not keep_root:
        shutil.rmtree(layout.root, ignore_errors=True)
        return
    for child in layout.root.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def teardown(
    layout: Layout,
    st: State | None,
    say: Callable[[str], None],
    keep_root: bool = False,
    force: bool = False,
) -> list[str]:
    """Stop the cluster under ``layout`` and undo its host changes (the module's steps);
    returns the problems (empty: nothing of it is left). ``keep_root``: leave the (empty)
    root directory itself, as ``up`` does when it restarts in it. ``force``: the host-wide
    steps even without evidence of this cluster."""
    if not force and not evidence(layout):
        if layout.root.exists():
            _remove_root(layout, keep_root)
        return []
    if st is not None and layout.root.exists():
        st.phase, st.owner = "stopping", orphans.this_harness()
        state.write(layout, st)
    stop_processes(layout, st, say)
    record = sysctls.load()
    left, problems = undo_host(layout, st, record)
    problems += restore_sysctls(st, record, say)
    if not problems and not left:
        sysctls.drop()  # everything it describes is back
    if left:
        problems.append(f"{layout.root} kept: something is still mounted under it")
    elif layout.root.exists():
        _remove_root(layout, keep_root)
    return problems
