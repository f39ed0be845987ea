"""Where the local cluster keeps everything, and the addresses it uses.

Every file the cluster writes lives under ONE private root, like the PostgreSQL clusters'
(``ipclab.backends.postgres``): ``$IPCLAB_K8S_ROOT``, default :func:`default_root`
(``/var/lib/ipclab-k8s-0`` for root, who alone can start the cluster; not a shared
``/tmp``, where another user could make the folder first and a cleaner removes the state
file that says what to undo), a real directory owned by this user and writable by no one
else (``ipclab.private``), else ``UnsafeState`` and nothing is done. It is checked at every
open, not once at ``up`` (``ipclab.kubecluster.access``). Not ``/etc/kubernetes`` nor
``/var/lib/kubelet``: a system cluster, if one is ever installed, is never touched, and
``down`` removes one folder. What cannot live there is listed in docs/kubernetes.md (the
kernel's sysctls, iptables chains, the bridge, cgroups, CNI's result cache,
``/var/log/containers``).

Every listener is on 127.0.0.1 (``LOOPBACK``) at a fixed port (``PORTS``): the ports are
fixed so that ``status`` and ``down`` find the cluster after a kill -9 of the harness, and
are outside the kernel's ephemeral range so no client socket takes one.

:func:`kubeconfig` is what the kubernetes backend reads: ``$IPCLAB_KUBECONFIG`` when set
(any cluster: AKS, GKE, a lab's; a file only root or this user can change, since its
``exec:`` plugin would run as this user: :func:`check_override`), else this local
cluster's admin kubeconfig. The standard ``$KUBECONFIG`` is deliberately not read: a shell
set up for a production cluster must not receive benchmark stacks by accident.
"""

from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ipclab.private import UnsafeState, check_private

SYSTEM_ROOT = Path("/var/lib/ipclab-k8s-0")


def default_root(uid: int | None = None) -> Path:
    """The cluster's root when ``$IPCLAB_K8S_ROOT`` is not set: ``/var/lib/ipclab-k8s-0``
    for root (only root can start the cluster; ``/var/lib`` is root's, survives a ``/tmp``
    clean-up, and holds the imported images, too large for a ``/run`` in memory); for
    another user ``<tmp>/ipclab-k8s-<uid>``, where no cluster can start but a client still
    looks (and checks)."""
    uid = os.getuid() if uid is None else uid
    return SYSTEM_ROOT if uid == 0 else Path(tempfile.gettempdir()) / f"ipclab-k8s-{uid}"


ROOT = Path(os.environ.get("IPCLAB_K8S_ROOT") or default_root())
KUBECONFIG_ENV = "IPCLAB_KUBECONFIG"

LOOPBACK = "127.0.0.1"
NODE_NAME = "ipclab-node"
CLUSTER_NAME = "ipclab"
CLUSTER_DOMAIN = "cluster.local"
POD_CIDR = "10.244.0.0/16"  # the cluster's (kube-proxy's clusterCIDR)
POD_SUBNET = "10.244.0.0/24"  # this node's, handed out by host-local
POD_GATEWAY = "10.244.0.1"  # the bridge's address
SERVICE_CIDR = "10.96.0.0/16"
API_SERVICE_IP = "10.96.0.1"  # the ``kubernetes`` Service
# where a backend picks fixed ClusterIPs itself (no DNS here: the same addresses go into the
# pods' hostAliases): KEP-3070's static band, for a /16 the first 256 addresses, which the
# apiserver hands out dynamically only when the rest is full (.1 is the ``kubernetes`` one)
STATIC_SERVICE_BAND = "10.96.0.0/24"
BRIDGE = "ipclab0"  # clear of docker0 (172.17/16), compose's networks and eth0
CNI_NETWORK = "ipclab"
NODEPORT_RANGE = "30000-32767"  # below the kernel's ephemeral ports (32768-60999)
PORTS = {
    "etcd": 23790,  # not 2379: a system etcd, if any, keeps its port
    "etcd-peer": 23800,
    "kube-apiserver": 6443,
    "kube-controller-manager": 10257,
    "kube-scheduler": 10259,
    "kubelet": 10250,
    "kubelet-healthz": 10248,
    "kube-proxy-healthz": 10256,
    "kube-proxy-metrics": 10249,
}
API_SERVER = f"https://{LOOPBACK}:{PORTS['kube-apiserver']}"
# node labels: this node was made by ipclab; a role placed on labelled nodes (as on swarm)
MADE_BY_LABEL = "ipclab.made-cluster"
ROLE_LABEL = "ipclab.role"
SOCKET_PATH_MAX = 107  # sun_path holds 108 bytes with the terminating NUL


@dataclass(frozen=True)
class Layout:
    """The paths of one cluster, all under ``root``."""

    root: Path

    @property
    def state_file(self) -> Path:
        return self.root / "state.json"

    @property
    def bin(self) -> Path:
        """Symlinks named after each component to the node binary (``ps`` shows names)."""
        return self.root / "bin"

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    @property
    def config(self) -> Path:
        return self.root / "config"

    @property
    def cni_conf_dir(self) -> Path:
        return self.config / "cni"

    @property
    def containerd_toml(self) -> Path:
        return self.config / "containerd.toml"

    @property
    def kubelet_yaml(self) -> Path:
        return self.config / "kubelet.yaml"

    @property
    def kube_proxy_yaml(self) -> Path:
        return self.config / "kube-proxy.yaml"

    @property
    def kubeconfig(self) -> Path:
        return self.root / "admin.kubeconfig"

    @property
    def etcd_data(self) -> Path:
        return self.root / "etcd"

    @property
    def containerd_root(self) -> Path:
        return self.root / "containerd"

    @property
    def run(self) -> Path:
        """What a reboot may lose: containerd's state, runc's, the IP allocations."""
        return self.root / "run"

    @property
    def containerd_state(self) -> Path:
        return self.run / "containerd"

    @property
    def socket(self) -> Path:
        return self.run / "containerd.sock"

    @property
    def runc_root(self) -> Path:
        return self.run / "runc"

    @property
    def cni_ipam(self) -> Path:
        return self.run / "cni-ipam"

    @property
    def kubelet_root(self) -> Path:
        return self.root / "kubelet"

    @property
    def apiserver_certs(self) -> Path:
        return self.root / "apiserver"

    @property
    def pod_logs(self) -> Path:
        """The containers' logs, ``<ns>_<pod>_<uid>/<container>/<n>.log`` (podLogsDir)."""
        return self.root / "pod-logs"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def log(self, component: str) -> Path:
        return self.logs / f"{component}.log"


def kubeconfig(root: Path = ROOT) -> Path:
    """The kubeconfig the kubernetes backend uses: ``$IPCLAB_KUBECONFIG`` when set (any
    cluster), else the local cluster's admin kubeconfig under ``root`` (which exists only
    while it is up: see :func:`why_no_cluster`)."""
    override = os.environ.get(KUBECONFIG_ENV)
    if override:
        return Path(override).expanduser()
    return Layout(root).kubeconfig


def check_override(path: Path) -> Path:
    """``$IPCLAB_KUBECONFIG``'s file, if only root or this user can change it (the file and
    its folder), else UnsafeState: a client runs the ``exec:`` plugin a kubeconfig names, as
    this user."""
    for p in (path, path.parent):
        st = p.stat()
        sticky = p == path.parent and bool(st.st_mode & stat.S_ISVTX)  # as /tmp
        if st.st_uid not in (0, os.getuid()) or (st.st_mode & 0o022 and not sticky):
            raise UnsafeState(
                f"${KUBECONFIG_ENV} names {path}, and {p} may be changed by users other than "
                f"root and uid {os.getuid()}; its exec plugin would run as this user: refused "
                "(copy it to a file of your own, mode 0600)"
            )
    return path


def why_no_cluster(root: Path = ROOT) -> str | None:
    """Why the kubernetes backend has no cluster to use, or None. Only that a kubeconfig is
    there, in a root (or an override file) that is safe to read: whether its cluster
    answers is for the caller to ask (with a timeout)."""
    path = kubeconfig(root)
    if os.environ.get(KUBECONFIG_ENV):
        if not path.is_file():
            return f"${KUBECONFIG_ENV} names {path}, which is not a file"
        try:
            check_override(path)
        except UnsafeState as e:
            return str(e)
        return None
    try:
        check_private(root, "the local Kubernetes cluster", "remove it or set IPCLAB_K8S_ROOT")
    except FileNotFoundError:
        pass
    except UnsafeState as e:
        return f"refused: {e}"
    if os.path.lexists(path):
        return None  # whether it may be read is for its reader to check (``access``)
    return (
        f"no local cluster is up (no {path}); start one with `make k8s-cluster` "
        f"(docs/kubernetes.md), or set ${KUBECONFIG_ENV} to another cluster's kubeconfig"
    )
