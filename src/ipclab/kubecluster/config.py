"""The local cluster's configuration files, each a pure function of the layout (text out,
nothing written but by :func:`write_all`), so that every setting is unit-tested.

Why each setting, by the machine fact behind it (docs/kubernetes.md has the table):

- containerd (Debian's 1.6.20, a private instance: own root, state, socket, runc root):
  ``restrict_oom_score_adj = true``. The sandbox has no ``CAP_SYS_RESOURCE``, so no process
  may lower an ``oom_score_adj``; runc would fail every pod sandbox setting the pause
  container's -998. containerd 1.6 then keeps the score at or above its own (containerd
  2.x ignores the option for sandboxes, hence 1.6). ``sandbox_image`` is our own pause image,
  imported (no registry). No hugetlb cgroup here: tolerated. Netns mounts under its state.
  AppArmor on where the kernel has it and ``apparmor_parser`` is there to load containerd's
  default profile (:func:`apparmor_available`; this machine's kernel has none).
- kubelet (1.34): cgroup v1 and containerd 1.x (no RuntimeConfig RPC) -> ``cgroupfs`` driver
  and ``failCgroupV1: false``; ``oomScoreAdj: 0`` (-999 cannot be set); every listener on
  127.0.0.1; no cluster DNS (a backend uses fixed ClusterIPs and hostAliases); image GC off
  (imported images cannot be pulled again); ``protectKernelDefaults: false`` (it would exit
  on this host's overcommit and panic sysctls); container logs under the root;
  ``seccompDefault: true``: a container whose pod names no seccomp profile gets the
  runtime's default, as under docker (the backend's pods also ask for it by name).
- CNI (Debian's containernetworking-plugins 1.1.1): a bridge ``ipclab0`` with host-local
  addresses, no masquerade (pods reach each other and nothing off the machine), hairpin
  (a pod reaches itself through its Service), and the ``firewall`` plugin: docker set the
  FORWARD policy to DROP, which would drop bridged pod traffic (its admin chain named
  ``IPCLAB-K8S-CNI-ADMIN``, so that ``down`` can tell it is ours: ``firewall``).
- kube-proxy: iptables mode (no IP_VS in this kernel; no ``nft`` binary); NodePorts on
  127.0.0.1 only; conntrack sysctls left alone (every knob 0).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import yaml

from ipclab.kubecluster.firewall import ADMIN_CHAIN
from ipclab.kubecluster.layout import (
    API_SERVER,
    BRIDGE,
    CLUSTER_DOMAIN,
    CLUSTER_NAME,
    CNI_NETWORK,
    LOOPBACK,
    NODE_NAME,
    POD_CIDR,
    POD_GATEWAY,
    POD_SUBNET,
    PORTS,
    Layout,
)
from ipclab.kubecluster.pki import Pki

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
PAUSE_IMAGE = "ipclab-pause:1"
PAUSE_REF = f"docker.io/library/{PAUSE_IMAGE}"  # as containerd names it once imported
CNI_BIN_DIR = Path(os.environ.get("IPCLAB_K8S_CNI_BIN", "/usr/lib/cni"))  # Debian's
CNI_PLUGINS = ("bridge", "host-local", "loopback", "firewall")
RUNC = Path(os.environ.get("IPCLAB_K8S_RUNC", "/usr/sbin/runc"))
CONFLIST = "10-ipclab.conflist"
APPARMOR_ENABLED = Path("/sys/module/apparmor/parameters/enabled")


def apparmor_available(enabled: Path = APPARMOR_ENABLED) -> bool:
    """The kernel enforces AppArmor and containerd can load its default profile (it needs
    ``apparmor_parser``): only then do containerd and the pods use it."""
    try:
        on = enabled.read_text().strip() == "Y"
    except OSError:
        return False
    return on and shutil.which("apparmor_parser", path=SYSTEM_PATH) is not None


def _q(value: object) -> str:
    """A TOML basic string (JSON's escaping is TOML's for these paths)."""
    return json.dumps(str(value))


CRI = 'plugins."io.containerd.grpc.v1.cri"'  # the CRI plugin's table, and its sub-tables


def containerd_toml(
    layout: Layout, runc: Path = RUNC, cni_bin: Path = CNI_BIN_DIR, apparmor: bool | None = None
) -> str:
    """The private containerd's configuration (version 2 schema, containerd 1.6);
    ``apparmor``: whether to confine containers with it (None: :func:`apparmor_available`)."""
    apparmor = apparmor_available() if apparmor is None else apparmor
    return f"""\
# ipclab's private containerd (docs/kubernetes.md); generated, rewritten at every start
version = 2
root = {_q(layout.containerd_root)}
state = {_q(layout.containerd_state)}
oom_score = 0  # no CAP_SYS_RESOURCE here: a lower score cannot be set

[grpc]
  address = {_q(layout.socket)}
[ttrpc]
  address = ""
[debug]
  address = ""
[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = {_q(layout.containerd_root / "opt")}

[{CRI}]
  sandbox_image = {_q(PAUSE_REF)}
  restrict_oom_score_adj = true  # the sandbox cannot lower oom_score_adj (runc would fail)
  tolerate_missing_hugetlb_controller = true
  disable_hugetlb_controller = true
  disable_apparmor = {str(not apparmor).lower()}
  enable_selinux = false
  enable_unprivileged_ports = true  # as docker: a container's user may bind any port
  netns_mounts_under_state_dir = true
  stream_server_address = {_q(LOOPBACK)}
  stream_server_port = "0"
  max_container_log_line_size = 16384
  [{CRI}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [{CRI}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [{CRI}.containerd.runtimes.runc.options]
        BinaryName = {_q(runc)}
        Root = {_q(layout.runc_root)}
        SystemdCgroup = false
  [{CRI}.cni]
    bin_dir = {_q(cni_bin)}
    conf_dir = {_q(layout.cni_conf_dir)}
    max_conf_num = 1
  [{CRI}.registry]
    config_path = ""
"""


def cni_conflist(layout: Layout, subnet: str = POD_SUBNET, gateway: str = POD_GATEWAY) -> str:
    """The pod network: one bridge, host-local addresses, the FORWARD accepts (``subnet``
    and its ``gateway``: the node's share of ``POD_CIDR``)."""
    bridge = {
        "type": "bridge",
        "bridge": BRIDGE,
        "isGateway": True,
        "ipMasq": False,  # pods talk to each other and the host, never off the machine
        "hairpinMode": True,
        "ipam": {
            "type": "host-local",
            "ranges": [[{"subnet": subnet, "gateway": gateway}]],
            "routes": [{"dst": "0.0.0.0/0"}],
            "dataDir": str(layout.cni_ipam),
        },
    }
    firewall = {  # its admin chain named as ours: down deletes it, and no one else's
        "type": "firewall",
        "backend": "iptables",
        "iptablesAdminChainName": ADMIN_CHAIN,
    }
    document = {"cniVersion": "1.0.0", "name": CNI_NETWORK, "plugins": [bridge, firewall]}
    return json.dumps(document, indent=2) + "\n"


def kubelet_config(layout: Layout, pki: Pki) -> dict[str, Any]:
    endpoint = f"unix://{layout.socket}"
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "containerRuntimeEndpoint": endpoint,
        "imageServiceEndpoint": endpoint,
        "cgroupDriver": "cgroupfs",  # containerd 1.6 cannot tell the kubelet its driver
        "failCgroupV1": False,  # this host is cgroup v1 (1.35 refuses it by default)
        "failSwapOn": False,
        "oomScoreAdj": 0,  # -999 needs CAP_SYS_RESOURCE
        "cgroupsPerQOS": True,
        "enforceNodeAllocatable": ["pods"],
        "address": LOOPBACK,
        "port": PORTS["kubelet"],
        "readOnlyPort": 0,
        "healthzBindAddress": LOOPBACK,
        "healthzPort": PORTS["kubelet-healthz"],
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": False},
            "x509": {"clientCAFile": str(pki.ca)},
        },
        "authorization": {"mode": "AlwaysAllow"},  # any client the cluster's CA signed
        "clusterDomain": CLUSTER_DOMAIN,
        "clusterDNS": [],  # no DNS server: pods use dnsPolicy Default and hostAliases
        "resolvConf": "/etc/resolv.conf",
        "podLogsDir": str(layout.pod_logs),
        "imageGCHighThresholdPercent": 100,  # never collect imported images
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {
            "memory.available": "200Mi",
            "nodefs.available": "1%",
            "nodefs.inodesFree": "1%",
            "imagefs.available": "1%",
        },
        "serializeImagePulls": False,
        "protectKernelDefaults": False,
        "seccompDefault": True,  # RuntimeDefault for every container, as docker's default
        "maxPods": 110,
        "shutdownGracePeriod": "0s",  # needs systemd-logind; none here
        "rotateCertificates": False,
        "serverTLSBootstrap": False,
    }


def kubelet_yaml(layout: Layout, pki: Pki) -> str:
    return yaml.safe_dump(kubelet_config(layout, pki), sort_keys=False)


def kube_proxy_config(layout: Layout) -> dict[str, Any]:
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(layout.kubeconfig)},
        "hostnameOverride": NODE_NAME,
        "mode": "iptables",
        "clusterCIDR": POD_CIDR,
        "nodePortAddresses": [f"{LOOPBACK}/32"],  # NodePorts answer on loopback only
        "iptables": {"localhostNodePorts": True, "minSyncPeriod": "1s", "syncPeriod": "30s"},
        # 0 everywhere: leave the kernel's conntrack table size and timeouts as they are
        "conntrack": {
            "maxPerCore": 0,
            "min": 0,
            "tcpEstablishedTimeout": "0s",
            "tcpCloseWaitTimeout": "0s",
        },
        "oomScoreAdj": 0,
        "healthzBindAddress": f"{LOOPBACK}:{PORTS['kube-proxy-healthz']}",
        "metricsBindAddress": f"{LOOPBACK}:{PORTS['kube-proxy-metrics']}",
    }


def kube_proxy_yaml(layout: Layout) -> str:
    return yaml.safe_dump(kube_proxy_config(layout), sort_keys=False)


def admin_kubeconfig(pki: Pki, server: str = API_SERVER) -> str:
    """The one identity's kubeconfig (files by path: they sit beside it, mode 0600)."""
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": CLUSTER_NAME,
                "cluster": {"server": server, "certificate-authority": str(pki.ca)},
            }
        ],
        "users": [
            {
                "name": "admin",
                "user": {
                    "client-certificate": str(pki.admin_cert),
                    "client-key": str(pki.admin_key),
                },
            }
        ],
        "contexts": [{"name": CLUSTER_NAME, "context": {"cluster": CLUSTER_NAME, "user": "admin"}}],
        "current-context": CLUSTER_NAME,
    }
    return yaml.safe_dump(document, sort_keys=False)


def _write(path: Path, text: str) -> None:
    """``path`` with ``text``, mode 0600, never through a symlink."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
    with os.fdopen(os.open(path, flags, 0o600), "w", encoding="utf-8") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(text)


def write_all(layout: Layout, pki: Pki) -> None:
    """Every configuration file of the cluster, into ``layout``."""
    _write(layout.containerd_toml, containerd_toml(layout))
    _write(layout.cni_conf_dir / CONFLIST, cni_conflist(layout))
    _write(layout.kubelet_yaml, kubelet_yaml(layout, pki))
    _write(layout.kube_proxy_yaml, kube_proxy_yaml(layout))
    _write(layout.kubeconfig, admin_kubeconfig(pki))
