"""The local cluster's extra nodes: ``ipclab cluster up --nodes N`` (docs/kubernetes.md,
"Several nodes").

Node k (2, 3) is a containerd, a kubelet and a kube-proxy of the same binaries, in a network
namespace of its own (``ipclab-k8s-node-k``) joined to the host by a veth pair
(``ipclabnk`` 10.245.k.1 on the host, ``eth0`` 10.245.k.2 inside), started through
``nsenter --net=`` only (the mounts, cgroups and ``/sys`` stay the host's). Its files live
under ``<root>/nodes/k`` (a :class:`Layout` of their own). It joins the one API server as a
real node: its own client certificate of the cluster's authority (``system:node:<name>``,
``system:nodes``; its kube-proxy ``system:kube-proxy``), the API server reached at
10.245.k.1:6443, which the host DNATs to 127.0.0.1:6443 for packets from that link only
(the API server keeps listening on loopback only).

Pods: ``10.244.(k-1).0/24`` on a bridge inside the namespace; routed through the host (its
route to that subnet via 10.245.k.2; the namespace's default route via 10.245.k.1), so
every node's pods reach each other and every Service without encapsulation or NAT.

Every command and file is a pure function of the node (unit-tested); :func:`setup_host`
and :func:`remove_all` run them. Teardown: the processes are the cluster's by their
arguments (:mod:`ipclab.kubecluster.state`); the namespaces go with :func:`remove_all`,
their veths, routes, rules and sysctls with them; the host chains ``IPCLAB-K8S-NODES`` with
the cluster's other ``IPCLAB-K8S-*`` chains (``firewall.cleanup``), the cgroups with the
kubelet's others (``host.remove_cgroups``).
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ipclab.kubecluster import config
from ipclab.kubecluster.components import Component
from ipclab.kubecluster.layout import (
    CLUSTER_NAME,
    LOOPBACK,
    MADE_BY_LABEL,
    NODE_NAME,
    PORTS,
    Layout,
)
from ipclab.kubecluster.pki import Pki

MAX_NODES = 3
NETNS_PREFIX = "ipclab-k8s-node-"
NETNS_DIR = Path("/run/netns")
LINK_PREFIX = "ipclabn"  # the host's end of each node's veth (``ipclabn2``, ...)
LINKS = f"{LINK_PREFIX}+"  # iptables' wildcard for all of them
CHAIN = "IPCLAB-K8S-NODES"  # filter (FORWARD) and nat (PREROUTING), ours alone
CGROUP_PREFIX = "ipclab-node-"
NSENTER = "/usr/bin/nsenter"
CGROUP_FS = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class ExtraNode:
    """Node ``index`` (2 or 3) of the cluster under ``root``."""

    root: Path
    index: int

    @property
    def name(self) -> str:
        return f"{NODE_NAME}-{self.index}"

    @property
    def netns(self) -> str:
        return f"{NETNS_PREFIX}{self.index}"

    @property
    def link(self) -> str:
        return f"{LINK_PREFIX}{self.index}"

    @property
    def host_ip(self) -> str:
        return f"10.245.{self.index}.1"

    @property
    def ip(self) -> str:
        return f"10.245.{self.index}.2"

    @property
    def pod_subnet(self) -> str:
        return f"10.244.{self.index - 1}.0/24"

    @property
    def pod_gateway(self) -> str:
        return f"10.244.{self.index - 1}.1"

    @property
    def cgroup_root(self) -> str:
        return f"/{CGROUP_PREFIX}{self.index}"

    @property
    def layout(self) -> Layout:
        return Layout(self.root / "nodes" / str(self.index))

    @property
    def kubelet_kubeconfig(self) -> Path:
        return self.layout.config / "kubelet.kubeconfig"

    @property
    def proxy_kubeconfig(self) -> Path:
        return self.layout.config / "kube-proxy.kubeconfig"

    @property
    def server(self) -> str:
        return f"https://{self.host_ip}:{PORTS['kube-apiserver']}"


def extra_nodes(root: Path, count: int) -> list[ExtraNode]:
    """The nodes beyond the first of a cluster of ``count`` nodes (ValueError if not 1..3)."""
    if not 1 <= count <= MAX_NODES:
        raise ValueError(f"a local cluster has 1 to {MAX_NODES} nodes, not {count}")
    return [ExtraNode(root, k) for k in range(2, count + 1)]


# --- files ----------------------------------------------------------------------------------


def client_kubeconfig(server: str, ca: Path, cert: Path, key: Path, user: str) -> str:
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": CLUSTER_NAME, "cluster": {"server": server, "certificate-authority": str(ca)}}
        ],
        "users": [
            {"name": user, "user": {"client-certificate": str(cert), "client-key": str(key)}}
        ],
        "contexts": [{"name": CLUSTER_NAME, "context": {"cluster": CLUSTER_NAME, "user": user}}],
        "current-context": CLUSTER_NAME,
    }
    return yaml.safe_dump(document, sort_keys=False)


def kubelet_config(node: ExtraNode, pki: Pki) -> dict[str, Any]:
    """Node 1's, but listening on the node's address (only the host and the cluster's
    namespaces reach it: the API server does, for logs and exec) and with its cgroups
    under a root of its own (two kubelets' ``/kubepods`` trees would collide)."""
    document = config.kubelet_config(node.layout, pki)
    document["address"] = node.ip
    document["healthzBindAddress"] = node.ip
    document["cgroupRoot"] = node.cgroup_root
    return document


def kube_proxy_config(node: ExtraNode) -> dict[str, Any]:
    document = config.kube_proxy_config(node.layout)
    document["clientConnection"] = {"kubeconfig": str(node.proxy_kubeconfig)}
    document["hostnameOverride"] = node.name
    document["healthzBindAddress"] = f"{node.ip}:{PORTS['kube-proxy-healthz']}"
    return document


def write_files(node: ExtraNode, pki: Pki) -> None:
    """Every file of the node under its layout (private, as node 1's)."""
    layout = node.layout
    for directory in (layout.logs, layout.run, layout.pod_logs, layout.config):
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    cni = config.cni_conflist(layout, node.pod_subnet, node.pod_gateway)
    kubelet = client_kubeconfig(
        node.server, pki.ca, pki.node_cert(node.name), pki.node_key(node.name), node.name
    )
    proxy = client_kubeconfig(node.server, pki.ca, pki.proxy_cert, pki.proxy_key, "kube-proxy")
    config._write(layout.containerd_toml, config.containerd_toml(layout))
    config._write(layout.cni_conf_dir / config.CONFLIST, cni)
    config._write(layout.kubelet_yaml, yaml.safe_dump(kubelet_config(node, pki), sort_keys=False))
    config._write(layout.kube_proxy_yaml, yaml.safe_dump(kube_proxy_config(node), sort_keys=False))
    config._write(node.kubelet_kubeconfig, kubelet)
    config._write(node.proxy_kubeconfig, proxy)


# --- processes ------------------------------------------------------------------------------


def _inside(node: ExtraNode, argv: tuple[str, ...]) -> tuple[str, ...]:
    """``argv`` run in the node's network namespace only (nsenter execs it: same pid)."""
    return (NSENTER, f"--net={NETNS_DIR / node.netns}", "--", *argv)


def components(node: ExtraNode, bin_dir: Path, containerd: str) -> list[Component]:
    """The node's processes in start order, named ``<node>/<component>``."""
    layout = node.layout
    kubelet = (
        str(bin_dir / "kubelet"),
        f"--config={layout.kubelet_yaml}",
        f"--kubeconfig={node.kubelet_kubeconfig}",
        f"--hostname-override={node.name}",
        f"--node-ip={node.ip}",
        f"--root-dir={layout.kubelet_root}",
        f"--cert-dir={layout.kubelet_root / 'pki'}",
        f"--node-labels={MADE_BY_LABEL}=true",
        "--v=1",
    )
    proxy = (str(bin_dir / "kube-proxy"), f"--config={layout.kube_proxy_yaml}")
    healthz = f"http://{node.ip}:{PORTS['kubelet-healthz']}/healthz"
    proxy_healthz = f"http://{node.ip}:{PORTS['kube-proxy-healthz']}/healthz"
    return [
        Component(
            f"{node.name}/containerd",
            _inside(node, (containerd, "--config", str(layout.containerd_toml))),
            f"unix:{layout.socket}",
            30.0,
        ),
        Component(f"{node.name}/kubelet", _inside(node, kubelet), healthz, 90.0),
        Component(f"{node.name}/kube-proxy", _inside(node, proxy), proxy_healthz, 60.0),
    ]


# --- the host's side ------------------------------------------------------------------------


def link_commands(node: ExtraNode) -> list[list[str]]:
    """The namespace, its veth pair, addresses and routes (``ip`` and ``sysctl`` argv)."""
    ns, link = node.netns, node.link
    return [
        ["ip", "netns", "add", ns],
        ["ip", "link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", ns],
        ["ip", "addr", "add", f"{node.host_ip}/24", "dev", link],
        ["ip", "link", "set", link, "up"],
        ["ip", "-n", ns, "link", "set", "lo", "up"],
        ["ip", "-n", ns, "addr", "add", f"{node.ip}/24", "dev", "eth0"],
        ["ip", "-n", ns, "link", "set", "eth0", "up"],
        ["ip", "-n", ns, "route", "add", "default", "via", node.host_ip],
        ["ip", "route", "add", node.pod_subnet, "via", node.ip, "dev", link],
        # the DNAT to the API server on 127.0.0.1: only for what comes in on this link
        ["sysctl", "-q", "-w", f"net.ipv4.conf.{link}.route_localnet=1"],
    ]


def firewall_commands(nodes: list[ExtraNode]) -> list[list[str]]:
    """``iptables`` argv (without the binary): the nodes' links forwarded (docker's FORWARD
    policy is DROP) and each node's way to the API server."""
    api = str(PORTS["kube-apiserver"])
    commands = [
        ["-t", "filter", "-N", CHAIN],
        ["-t", "filter", "-A", CHAIN, "-i", LINKS, "-j", "ACCEPT"],
        ["-t", "filter", "-A", CHAIN, "-o", LINKS, "-j", "ACCEPT"],
        ["-t", "filter", "-A", "FORWARD", "-j", CHAIN],
        ["-t", "nat", "-N", CHAIN],
    ]
    for node in nodes:
        match = ["-i", node.link, "-d", node.host_ip, "-p", "tcp", "--dport", api]
        target = ["-j", "DNAT", "--to-destination", f"{LOOPBACK}:{api}"]
        commands.append(["-t", "nat", "-A", CHAIN, *match, *target])
    commands.append(["-t", "nat", "-I", "PREROUTING", "1", "-j", CHAIN])
    return commands


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip()}")


def node_cpu_shares(cpus: int | None = None) -> int:
    """The CPU weight of a node's cgroup root: what node 1's kubelet gives its ``kubepods``
    (its allocatable CPU, here all of it: 1024 per CPU). Left at the default 1024, all of a
    node's pods together would weigh as one process against the machine's others (half of
    node 1's pods' weight on two CPUs), and be slower whenever the machine is busy."""
    return 1024 * (cpus or os.cpu_count() or 1)


def make_cgroups(node: ExtraNode, cgroup_fs: Path = CGROUP_FS) -> None:
    """The node's cgroup root in every hierarchy (the kubelet wants it to exist); a new
    cpuset gets its parent's CPUs and memory nodes (else no process may join it), the CPU
    weight node 1's pods have (:func:`node_cpu_shares`)."""
    for hierarchy in cgroup_fs.iterdir():
        if hierarchy.is_symlink() or not (hierarchy / "cgroup.procs").exists():
            continue
        folder = hierarchy / node.cgroup_root.lstrip("/")
        folder.mkdir(exist_ok=True)
        for name in ("cpuset.cpus", "cpuset.mems"):
            if (hierarchy / name).exists() and not (folder / name).read_text().strip():
                (folder / name).write_text((hierarchy / name).read_text())
        if (folder / "cpu.shares").exists():
            (folder / "cpu.shares").write_text(str(node_cpu_shares()))


def setup_host(nodes: list[ExtraNode]) -> None:
    """Every node's namespace, link, routes and cgroups, and the host's rules for them
    (RuntimeError naming the command that failed)."""
    for node in nodes:
        for argv in link_commands(node):
            _run(argv)
        make_cgroups(node)
    if nodes:
        for argv in firewall_commands(nodes):
            _run(["iptables", "-w", *argv])


def namespaces(netns_dir: Path = NETNS_DIR) -> list[str]:
    """The nodes' namespaces that exist (this or an earlier cluster's)."""
    if not netns_dir.is_dir():
        return []
    return sorted(p.name for p in netns_dir.iterdir() if p.name.startswith(NETNS_PREFIX))


def remove_all() -> list[str]:
    """Delete every node namespace (its veth, routes, rules and sysctls go with it);
    returns the problems."""
    problems = []
    for ns in namespaces():
        done = subprocess.run(["ip", "netns", "delete", ns], capture_output=True, text=True)
        if done.returncode != 0:
            problems.append(f"ip netns delete {ns}: {done.stderr.strip()}")
    return problems


def node_roots(root: Path) -> list[Path]:
    """The extra nodes' layouts' roots under the cluster's ``root`` that exist."""
    folder = root / "nodes"
    if not folder.is_dir() or folder.is_symlink():
        return []
    return sorted(p for p in folder.iterdir() if p.is_dir() and p.name.isdigit())


def describe(nodes: list[ExtraNode]) -> str:
    """One line per node for ``up``'s output."""
    return json.dumps({n.name: {"ip": n.ip, "pods": n.pod_subnet} for n in nodes})


def nsenter_missing() -> bool:
    return not os.access(NSENTER, os.X_OK)
