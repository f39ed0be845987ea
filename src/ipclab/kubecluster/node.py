"""Start and report the local single-node cluster: ``ipclab cluster up|down|status|build``.

``up`` starts, in this order, each step waiting for its readiness check with a timeout of
its own (a failure names the component and ends with the tail of its log, then everything
started so far is torn down, unless ``--keep-on-failure``):

1. the files: a new PKI, the configurations, the admin kubeconfig (``pki``, ``config``);
2. containerd (private) -> its socket accepts; 3. the pause image (and any ``--image``)
   imported; 4. etcd -> ``/health``; 5. kube-apiserver -> ``/readyz``;
6. kube-controller-manager, kube-scheduler -> ``/healthz``; 7. kubelet -> ``/healthz``,
   then the node ``Ready`` (container runtime and pod network included); 8. kube-proxy ->
   ``/healthz``, then its FORWARD rules put ahead of the CNI firewall's
   (``firewall.order_forward``); 9. the ``default`` service account exists (the
   controller-manager works).

Before step 1 the host's sysctls and shared firewall chains are kept in the host record
(``sysctls``), and the guard that keeps everything but the host and the pods from the
cluster's addresses is installed (``firewall``).

It prints how long each step took (and the build, when there is one), and keeps the times
in the state file, which ``status`` shows again. The processes are detached (their own
sessions, no parent-death signal): the cluster outlives the command that started it and is
stopped by ``down`` (:mod:`ipclab.kubecluster.teardown`).

Ownership after a kill -9: the state file is written before the first process starts and
after each one. ``up`` and ``down`` remove whatever a previous cluster left. A start or stop
whose harness died half-way (phase ``starting`` or ``stopping``, owner gone) is also removed
by :func:`sweep_stale`, which every ``orphans.sweep`` runs (``orphans.BUILTIN_SWEEPERS``):
a cluster that is ``up`` belongs to no harness and is never swept, as a detached stack is
not. Every command that reads the root (``status``, the sweep) checks it first
(``access``): a root another user could write is refused, never acted on.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from ipclab import orphans
from ipclab.kubecluster import (
    access,
    config,
    firewall,
    images,
    nodes,
    pki,
    readiness,
    state,
    sysctls,
)
from ipclab.kubecluster.build import BuildFailed, NotBuilt, ToolchainMissing, binaries
from ipclab.kubecluster.components import CONTAINERD, Component, all_components, link_binary
from ipclab.kubecluster.layout import LOOPBACK, PORTS, ROOT, SOCKET_PATH_MAX, Layout
from ipclab.kubecluster.readiness import ClusterError, answers, wait
from ipclab.kubecluster.state import State
from ipclab.kubecluster.teardown import teardown
from ipclab.private import UnsafeState, private_dir
from ipclab.procs import port_open, spawn

Say = Callable[[str], None]
NODE_READY_TIMEOUT_S = 120.0
SERVICE_ACCOUNT_TIMEOUT_S = 60.0
TOOLS = {  # program -> the Debian package that has it
    "containerd": "containerd",
    "containerd-shim-runc-v2": "containerd",
    "ctr": "containerd",
    "runc": "runc",
    "iptables": "iptables",
    "ip": "iproute2",
    "umount": "mount",
}
DOWN_REMOVES = "`ipclab cluster down --force` removes what a previous ipclab cluster left"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _say(text: str) -> None:
    print(text, flush=True)


def private_root(root: Path = ROOT) -> Path:
    """``root`` made (0700) if new, and checked as every reader checks it (``access``)."""
    root = Path(os.path.abspath(root))
    private_dir(root, "the local Kubernetes cluster", "remove it or set IPCLAB_K8S_ROOT")
    return access.check_root(root)


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    """One ``up``/``down`` at a time per root (an advisory lock on the directory)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ClusterError(f"another ipclab cluster command is working in {root}") from None
        yield
    finally:
        os.close(fd)


def _containerd_major() -> int | None:
    done = subprocess.run(["containerd", "--version"], capture_output=True, text=True)
    m = re.search(r"\s(\d+)\.(\d+)\.\d+", done.stdout)
    return int(m.group(1)) if m else None


def _foreign_chains() -> bool:
    """Another Kubernetes's kube-proxy chains are here (ours were removed before)."""
    iptables = shutil.which("iptables")
    if iptables is None:
        return False
    done = subprocess.run([iptables, "-w", "-t", "nat", "-S"], capture_output=True, text=True)
    return any(line.startswith("-N KUBE-") for line in done.stdout.splitlines())


def _client_missing() -> bool:
    """No Python kubernetes client. Its submodule, not the package: in the repository's root
    the Go sources' folder ``kubernetes/`` is an importable namespace package."""
    try:
        return importlib.util.find_spec("kubernetes.client") is None
    except ModuleNotFoundError:
        return True


def preflight(layout: Layout) -> list[str]:
    """What keeps the cluster from starting here, each with what to do; empty if nothing."""
    problems = []
    if os.geteuid() != 0:
        problems.append("it needs root (containerd, the kubelet, iptables, mounts)")
    for tool, package in TOOLS.items():
        if shutil.which(tool, path=SYSTEM_PATH) is None:
            problems.append(f"{tool} is missing (Debian package {package})")
    if shutil.which("containerd", path=SYSTEM_PATH) and (_containerd_major() or 1) >= 2:
        problems.append(
            "containerd 2.x ignores restrict_oom_score_adj for pod sandboxes, which this "
            "machine needs (no CAP_SYS_RESOURCE); install Debian 12's containerd 1.6"
        )
    missing = [p for p in config.CNI_PLUGINS if not (config.CNI_BIN_DIR / p).exists()]
    if missing:
        where = f"CNI plugins {missing} missing in {config.CNI_BIN_DIR}"
        problems.append(f"{where} (Debian package containernetworking-plugins)")
    busy = [f"{port} ({name})" for name, port in PORTS.items() if port_open(LOOPBACK, port)]
    if busy:
        taken = f"ports taken on {LOOPBACK}: {', '.join(busy)}"
        problems.append(f"{taken}; another cluster? ({DOWN_REMOVES})")
    if _foreign_chains():
        chains = "iptables has KUBE-* chains of another Kubernetes, or of an ipclab cluster"
        problems.append(f"{chains} whose state is lost ({DOWN_REMOVES})")
    if len(str(layout.socket)) > SOCKET_PATH_MAX:
        too_long = f"{layout.socket} is too long for a unix socket"
        problems.append(f"{too_long}: set a shorter IPCLAB_K8S_ROOT")
    if _client_missing():
        problems.append(readiness.CLIENT_MISSING)
    if nodes.nsenter_missing():
        problems.append(f"{nodes.NSENTER} is missing (Debian package util-linux)")
    return problems


def _env() -> dict[str, str]:
    """The components' environment: the harness's, without its ownership mark (the cluster
    outlives it: ``orphans.sweep`` must not take its processes for a dead run's) nor a
    kubeconfig or containerd address meant for something else."""
    drop = (orphans.MARK, "KUBECONFIG", "CONTAINERD_ADDRESS", "CONTAINERD_NAMESPACE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PATH"] = f"{SYSTEM_PATH}:{env.get('PATH', '')}"
    return env


@contextlib.contextmanager
def _step(layout: Layout, st: State, name: str, say: Say) -> Iterator[None]:
    started = time.monotonic()
    yield
    st.steps[name] = round(time.monotonic() - started, 2)
    state.write(layout, st)
    say(f"  {name:<26} {st.steps[name]:7.1f} s")


def _launch(
    layout: Layout, st: State, component: Component, files: pki.Pki
) -> subprocess.Popen[bytes]:
    """Start one component detached, record it, wait until it is ready."""
    log = layout.log(component.name)  # an extra node's: logs/<node>/<component>.log
    log.parent.mkdir(mode=0o700, exist_ok=True)
    process = spawn(component.argv, _env(), log, detached=True, cwd=layout.root)
    st.processes[component.name] = state.Started.of(process.pid)
    state.write(layout, st)
    ready = functools.partial(answers, component.ready, files)
    wait(component.name, ready, component.timeout, log, process)
    return process


def _make_files(layout: Layout, node: Path, extras: Sequence[nodes.ExtraNode]) -> pki.Pki:
    for directory in (layout.logs, layout.run, layout.pod_logs, layout.etcd_data):
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    ways_in = [n.host_ip for n in extras]  # the extra nodes reach the API server there
    files = pki.make(layout.pki, ways_in, [n.name for n in extras])
    config.write_all(layout, files)
    for extra in extras:
        nodes.write_files(extra, files)
    link_binary(layout, node)
    return files


def _start_node(
    layout: Layout,
    st: State,
    extra: nodes.ExtraNode,
    files: pki.Pki,
    pause: Path,
    images_: Sequence[str],
    say: Say,
) -> None:
    """One extra node: its containerd (and images), kubelet (until Ready), kube-proxy."""
    containerd, kubelet, proxy = nodes.components(extra, layout.bin, CONTAINERD)
    with _step(layout, st, containerd.name, say):
        _launch(layout, st, containerd, files)
        images.import_pause(extra.layout.socket, pause)
        for name in images_:
            images.import_docker_image(extra.layout.socket, name)
    with _step(layout, st, f"{kubelet.name} (Ready)", say):
        process = _launch(layout, st, kubelet, files)
        ready = functools.partial(readiness.node_ready, layout.root, extra.name)
        log = layout.log(kubelet.name)
        wait(f"{extra.name}'s Ready condition", ready, NODE_READY_TIMEOUT_S, log, process)
    with _step(layout, st, proxy.name, say):
        _launch(layout, st, proxy, files)


def _start(
    layout: Layout,
    st: State,
    binaries_: tuple[Path, Path],
    extra: Sequence[str],
    say: Say,
    extras: Sequence[nodes.ExtraNode] = (),
) -> None:
    node, pause = binaries_
    with _step(layout, st, "guard (iptables)", say):
        firewall.install_guard()  # before anything listens or forwards
    with _step(layout, st, "files (PKI, configurations)", say):
        files = _make_files(layout, node, extras)
    components = {c.name: c for c in all_components(layout, files)}
    with _step(layout, st, "containerd", say):
        _launch(layout, st, components["containerd"], files)
    with _step(layout, st, f"images (pause + {len(extra)})", say):
        images.import_pause(layout.socket, pause)
        for name in extra:
            images.import_docker_image(layout.socket, name)
    started = {}
    for name in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet"):
        with _step(layout, st, name, say):
            started[name] = _launch(layout, st, components[name], files)
    with _step(layout, st, "node Ready", say):
        ready = functools.partial(readiness.node_ready, layout.root)
        log = layout.log("kubelet")
        wait("the node's Ready condition", ready, NODE_READY_TIMEOUT_S, log, started["kubelet"])
    with _step(layout, st, "kube-proxy", say):
        _launch(layout, st, components["kube-proxy"], files)
        firewall.order_forward()  # a Service without endpoints refused, as on any cluster
    with _step(layout, st, "default service account", say):
        ready = functools.partial(readiness.service_account_ready, layout.root)
        log = layout.log("kube-controller-manager")
        wait("the default service account", ready, SERVICE_ACCOUNT_TIMEOUT_S, log)
    if extras:
        with _step(layout, st, f"node links ({len(extras)})", say):
            nodes.setup_host(list(extras))
        for one in extras:
            _start_node(layout, st, one, files, pause, extra, say)


def _healthy(layout: Layout) -> bool:
    files = pki.Pki(layout.pki)
    return all(answers(c.ready, files) for c in all_components(layout, files))


def up(
    root: Path = ROOT,
    build_missing: bool = False,
    extra_images: Iterable[str] = (),
    keep_on_failure: bool = False,
    say: Say = _say,
    node_count: int = 1,
) -> State:
    """Start the cluster under ``root`` (its binaries built first if ``build_missing``)
    with ``node_count`` nodes (1 to 3: ``nodes``); return its state. Already up and
    healthy: says so and returns. ``ClusterError`` (with
    everything removed again, unless ``keep_on_failure``) if it cannot start."""
    began = time.monotonic()
    try:
        extras = nodes.extra_nodes(Path(os.path.abspath(root)), node_count)
    except ValueError as e:
        raise ClusterError(str(e)) from None
    found = binaries(build_missing, say=say)
    say(f"binaries ready in {time.monotonic() - began:.1f} s: {found[0]}, {found[1]}")
    layout = Layout(private_root(root))
    with _locked(layout.root):
        previous = state.read(layout)
        if previous is not None and previous.phase == "up" and _healthy(layout):
            running = 1 + len(nodes.node_roots(layout.root))
            if running != node_count:
                raise ClusterError(
                    f"the local cluster is up with {running} nodes, not {node_count}: "
                    "`ipclab cluster down` first"
                )
            say(f"the local cluster is already up; kubeconfig {layout.kubeconfig}")
            return previous
        if os.geteuid() != 0:
            raise ClusterError("the local cluster needs root (containerd, kubelet, iptables)")
        for problem in teardown(layout, previous, say, keep_root=True):
            say(f"  left by a previous cluster: {problem}")
        if problems := preflight(layout):
            listed = "\n- ".join(problems)
            raise ClusterError(
                f"the local cluster cannot start here:\n- {listed}\n"
                "(`make k8s-deps` installs the packages)"
            )
        record = sysctls.keep(sysctls.read(), firewall.shared_chains_present())
        st = State(orphans.this_harness(), "starting", str(found[0]), record.sysctls)
        state.write(layout, st)
        say(f"starting the local cluster in {layout.root}")
        try:
            _start(layout, st, found, list(extra_images), say, extras)
        except BaseException:
            if keep_on_failure:
                say(
                    f"kept for inspection (logs in {layout.logs}); `ipclab cluster down` removes it"
                )
            else:
                say("tearing down what was started")
                teardown(layout, st, say, keep_root=True)
            raise
        st.phase = "up"
        state.write(layout, st)
    say(f"up in {time.monotonic() - began:.1f} s; kubeconfig {layout.kubeconfig}")
    return st


def down(root: Path = ROOT, say: Say = _say, force: bool = False) -> list[str]:
    """Stop the cluster under ``root`` and undo what it changed; returns the problems.
    ``force``: also the host-wide steps without evidence of this cluster (its chains left
    by a cluster whose root is gone; never on a machine that runs another Kubernetes)."""
    layout = Layout(Path(os.path.abspath(root)))
    if not layout.root.exists():
        problems = teardown(layout, None, say, force=force)  # processes, bridge, chains
        say("no local cluster" if not problems else "removed what was left without a root")
        return problems
    private_root(layout.root)
    with _locked(layout.root):
        problems = teardown(layout, state.read(layout), say, force=force)
    say("the local cluster is down" if not problems else "down, with problems:")
    return problems


def status(root: Path = ROOT) -> tuple[bool, list[str]]:
    """(healthy, lines describing it) of the cluster under ``root``."""
    layout = Layout(Path(os.path.abspath(root)))
    try:
        access.check_root(layout.root)
    except FileNotFoundError:
        pass
    except UnsafeState as e:
        return False, [f"refused: {e}"]
    st = state.read(layout)
    if st is None:
        strays = [p.pid for p in state.processes(layout.root)]
        return False, [f"no local cluster in {layout.root}"] + (
            [f"but processes of one run: {strays} (`ipclab cluster down`)"] if strays else []
        )
    owner = "" if orphans.harness_alive(st.owner) else ", its harness gone"
    lines, healthy = [f"phase {st.phase}{owner}; root {layout.root}"], st.phase == "up"
    files = pki.Pki(layout.pki)
    for c in all_components(layout, files):
        started = st.processes.get(c.name)
        running = started is not None and started.process() is not None
        ready = running and answers(c.ready, files)
        healthy = healthy and ready
        pid = started.pid if started else "-"
        lines.append(f"  {c.name:<26} pid {pid!s:<8} {'ready' if ready else 'NOT ready'}")
    for name, started in st.processes.items():  # the extra nodes' (``<node>/<component>``)
        if "/" in name:
            running = started.process() is not None
            healthy = healthy and running
            lines.append(f"  {name:<26} pid {started.pid!s:<8} {'running' if running else 'GONE'}")
    lines.append(f"kubeconfig {layout.kubeconfig}")
    if st.phase == "up":
        lines += ["nodes (the API server's list):", *readiness.node_lines(layout.root)]
    lines += [f"  last start: {k:<26} {v:7.1f} s" for k, v in st.steps.items()]
    return healthy, lines


def sweep_stale(say: Say = _say, root: Path = ROOT) -> list[str]:
    """Remove a cluster whose start or stop was left half done by a harness that is gone
    (never one that is up, nor one whose harness lives); returns what was swept."""
    layout = Layout(Path(os.path.abspath(root)))
    try:
        access.check_root(layout.root)
    except (OSError, UnsafeState):
        return []  # none, or not ours alone: never acted on
    st = state.read(layout)
    if st is None or st.phase == "up" or orphans.harness_alive(st.owner):
        return []
    phase = st.phase  # teardown marks it stopping
    try:
        with _locked(layout.root):
            problems = teardown(layout, st, say)
    except ClusterError:
        return []  # an up or down is running on it now
    for problem in problems:
        say(f"  {problem}")
    return [f"the local Kubernetes cluster left {phase} in {layout.root}"]


def command(
    action: str,
    build_missing: bool = False,
    extra_images: Sequence[str] = (),
    keep: bool = False,
    force: bool = False,
    node_count: int = 1,
) -> int:
    """``ipclab cluster ACTION``: the exit status, errors printed as one message."""
    try:
        if action == "build":
            binaries(build_missing=True, say=_say)
            return 0
        if action == "up":
            up(
                build_missing=build_missing,
                extra_images=extra_images,
                keep_on_failure=keep,
                node_count=node_count,
            )
            return 0
        if action == "down":
            problems = down(force=force)
            for problem in problems:
                print(f"  {problem}", file=sys.stderr)
            return 1 if problems else 0
        healthy, lines = status()
        print("\n".join(lines))
        return 0 if healthy else 1
    except (
        ClusterError,
        BuildFailed,
        NotBuilt,
        ToolchainMissing,
        UnsafeState,
        images.ImageError,
    ) as e:
        print(f"ipclab: cluster {action}: {e}", file=sys.stderr)
        return 1
