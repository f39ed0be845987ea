"""The local cluster's processes: how each is started (argv) and when it counts as ready.

Pure functions of the layout, the PKI's files and the binaries' paths, so that the flags
(every listener on 127.0.0.1, no profiling, no leader election on one node) are
unit-tested. Each component is started through a symlink named after it to the one node
binary (``<root>/bin/kube-apiserver`` -> ``ipclab-k8s``), so ``ps`` and ``status`` show
which is which. The readiness check of each is a URL (:mod:`ipclab.kubecluster.readiness`):
``unix:`` a socket that accepts, ``http``/``https`` an endpoint that answers 200.

The API server advertises 127.0.0.1 with ``--endpoint-reconciler-type=none``: the
reconciler would write the advertise address into the ``kubernetes`` Endpoints, which
refuse loopback, and nothing here reaches the API server from a pod. UNVERIFIED: whether
1.34's API server accepts a loopback ``--advertise-address`` with that reconciler; if it
refuses, set ``IPCLAB_K8S_ADVERTISE`` to this machine's address (e.g. eth0's), which is
then also in the serving certificate; the API server still listens on 127.0.0.1 only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ipclab.kubecluster.layout import (
    LOOPBACK,
    MADE_BY_LABEL,
    NODE_NAME,
    NODEPORT_RANGE,
    POD_CIDR,
    PORTS,
    SERVICE_CIDR,
    Layout,
)
from ipclab.kubecluster.pki import Pki

ADVERTISE = os.environ.get("IPCLAB_K8S_ADVERTISE", LOOPBACK)
CONTAINERD = os.environ.get("IPCLAB_K8S_CONTAINERD", "/usr/bin/containerd")
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
NODE_COMPONENTS = (  # what the node binary runs (kubernetes/node/main.go)
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubelet",
    "kube-proxy",
)


@dataclass(frozen=True)
class Component:
    name: str
    argv: tuple[str, ...]
    ready: str  # the readiness URL
    timeout: float  # seconds from its start to ready


def _url(scheme: str, port_name: str, path: str) -> str:
    return f"{scheme}://{LOOPBACK}:{PORTS[port_name]}{path}"


def _kubeconfigs(layout: Layout) -> list[str]:
    k = str(layout.kubeconfig)
    return [
        f"--kubeconfig={k}",
        f"--authentication-kubeconfig={k}",
        f"--authorization-kubeconfig={k}",
    ]


def containerd(layout: Layout) -> Component:
    return Component(
        "containerd",
        (CONTAINERD, "--config", str(layout.containerd_toml)),
        f"unix:{layout.socket}",
        30.0,
    )


def etcd(layout: Layout, pki: Pki) -> Component:
    """etcd with mutual TLS on both its ports: its own authority's certificate, and a
    client certificate of that authority required (the node binary refuses to start etcd
    any other way: kubernetes/node/etcd.go)."""
    argv = (
        str(layout.bin / "etcd"),
        f"--data-dir={layout.etcd_data}",
        f"--listen-client-url=https://{LOOPBACK}:{PORTS['etcd']}",
        f"--listen-peer-url=https://{LOOPBACK}:{PORTS['etcd-peer']}",
        f"--cert-file={pki.etcd_server_cert}",
        f"--key-file={pki.etcd_server_key}",
        f"--trusted-ca-file={pki.etcd_ca}",
    )
    return Component("etcd", argv, _url("https", "etcd", "/health"), 60.0)


def apiserver(layout: Layout, pki: Pki, advertise: str = ADVERTISE) -> Component:
    argv = (
        str(layout.bin / "kube-apiserver"),
        f"--etcd-servers=https://{LOOPBACK}:{PORTS['etcd']}",
        f"--etcd-cafile={pki.etcd_ca}",
        f"--etcd-certfile={pki.etcd_client_cert}",
        f"--etcd-keyfile={pki.etcd_client_key}",
        f"--bind-address={LOOPBACK}",
        f"--secure-port={PORTS['kube-apiserver']}",
        f"--advertise-address={advertise}",
        "--endpoint-reconciler-type=none",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        f"--service-node-port-range={NODEPORT_RANGE}",
        f"--cert-dir={layout.apiserver_certs}",
        f"--tls-cert-file={pki.apiserver_cert}",
        f"--tls-private-key-file={pki.apiserver_key}",
        f"--client-ca-file={pki.ca}",
        f"--kubelet-client-certificate={pki.admin_cert}",
        f"--kubelet-client-key={pki.admin_key}",
        # an extra node's kubelet is reached at its address (no DNS knows its name)
        "--kubelet-preferred-address-types=InternalIP,Hostname",
        f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
        f"--service-account-key-file={pki.sa_pub}",
        f"--service-account-signing-key-file={pki.sa_key}",
        "--authorization-mode=Node,RBAC",
        "--anonymous-auth=false",
        "--allow-privileged=true",  # as docker allows: the harness's own cluster
        "--profiling=false",
        "--event-ttl=1h",
    )
    return Component("kube-apiserver", argv, _url("https", "kube-apiserver", "/readyz"), 120.0)


def controller_manager(layout: Layout, pki: Pki) -> Component:
    argv = (
        str(layout.bin / "kube-controller-manager"),
        *_kubeconfigs(layout),
        f"--bind-address={LOOPBACK}",
        f"--secure-port={PORTS['kube-controller-manager']}",
        "--leader-elect=false",
        f"--service-account-private-key-file={pki.sa_key}",
        f"--root-ca-file={pki.ca}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        f"--cluster-cidr={POD_CIDR}",
        "--allocate-node-cidrs=false",
        "--use-service-account-credentials=false",
        "--profiling=false",
    )
    ready = _url("https", "kube-controller-manager", "/healthz")
    return Component("kube-controller-manager", argv, ready, 60.0)


def scheduler(layout: Layout) -> Component:
    argv = (
        str(layout.bin / "kube-scheduler"),
        *_kubeconfigs(layout),
        f"--bind-address={LOOPBACK}",
        f"--secure-port={PORTS['kube-scheduler']}",
        "--leader-elect=false",
        "--profiling=false",
    )
    return Component("kube-scheduler", argv, _url("https", "kube-scheduler", "/healthz"), 60.0)


def kubelet(layout: Layout) -> Component:
    argv = (
        str(layout.bin / "kubelet"),
        f"--config={layout.kubelet_yaml}",
        f"--kubeconfig={layout.kubeconfig}",
        f"--hostname-override={NODE_NAME}",
        f"--root-dir={layout.kubelet_root}",
        f"--cert-dir={layout.kubelet_root / 'pki'}",
        f"--node-labels={MADE_BY_LABEL}=true",
        "--v=1",
    )
    return Component("kubelet", argv, _url("http", "kubelet-healthz", "/healthz"), 90.0)


def kube_proxy(layout: Layout) -> Component:
    argv = (str(layout.bin / "kube-proxy"), f"--config={layout.kube_proxy_yaml}")
    return Component("kube-proxy", argv, _url("http", "kube-proxy-healthz", "/healthz"), 60.0)


def all_components(layout: Layout, pki: Pki, advertise: str = ADVERTISE) -> list[Component]:
    """Every process of the cluster, in start order (``state.COMPONENTS``)."""
    return [
        containerd(layout),
        etcd(layout, pki),
        apiserver(layout, pki, advertise),
        controller_manager(layout, pki),
        scheduler(layout),
        kubelet(layout),
        kube_proxy(layout),
    ]


def link_binary(layout: Layout, binary: Path) -> None:
    """``<root>/bin/<component>`` -> the node binary, for every component it holds."""
    layout.bin.mkdir(mode=0o700, parents=True, exist_ok=True)
    for name in NODE_COMPONENTS:
        _link(layout.bin / name, binary)


def _link(path: Path, target: Path) -> None:
    if path.is_symlink() or path.exists():
        path.unlink()
    path.symlink_to(target)
