"""How the harness opens the local cluster's files: every open checked (issue 48).

The cluster runs as root, and whatever the harness reads from its root it acts on: a
kubeconfig's ``exec:`` credential plugin is a program the Kubernetes client runs, a socket
is where images are sent, a log is copied into a run's results. So every read below goes
through ``ipclab.private``: the root must be a directory of this user's alone under
ancestors nobody else can change, and each file is reached by descriptors opened without
following a link and checked on the descriptor, at every open, not once at ``up``.

- :func:`api_client` / :func:`client_configuration`: the admin kubeconfig, read that way and
  accepted only as :func:`ipclab.kubecluster.config.admin_kubeconfig` writes it (one
  cluster at the loopback API server, one user with a client certificate and key under the
  root's ``pki``; no ``exec``, ``auth-provider``, token or anything else), its certificate
  and key read the same way and given to the client as data: the client never opens a file
  of the root by name. Anything else is :class:`UnsafeState` with what was found.
- :func:`socket`: containerd's socket (``ctr`` connects to it by name): the root and its
  ``run`` folder checked, the socket a socket of this user's, not a link.
- :func:`pod_log`: a container's log files under ``pod-logs``, each opened as above.
"""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path
from typing import Any

import yaml

from ipclab.kubecluster.layout import API_SERVER, Layout
from ipclab.private import UnsafeState, check_private, open_private_dir, read_private

TRUSTS = "the local Kubernetes cluster"
REMEDY = "remove it, or set IPCLAB_K8S_ROOT to a directory of your own"
_USER_KEYS = {"client-certificate", "client-key"}
_CLUSTER_KEYS = {"server", "certificate-authority"}


def read(root: Path, relative: str | Path) -> bytes:
    """A file of the cluster under ``root``, read through a checked descriptor."""
    return read_private(root, relative, TRUSTS, REMEDY)


def check_root(root: Path) -> Path:
    """``root`` if it is the cluster's private directory (UnsafeState if not;
    FileNotFoundError if there is none)."""
    return check_private(root, TRUSTS, REMEDY)


def _below(root: Path, name: object, what: str, path: Path) -> Path:
    """``name`` (a kubeconfig field) as a path relative to ``root``, or UnsafeState."""
    target = Path(os.path.abspath(str(name)))
    if not target.is_relative_to(root):
        raise UnsafeState(f"{path}: its {what} {name} is outside {root}; not the one ipclab wrote")
    return target.relative_to(root)


def _one(document: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    items = document.get(key)
    if not (isinstance(items, list) and len(items) == 1 and isinstance(items[0], dict)):
        raise UnsafeState(f"{path}: not exactly one entry in {key!r}; not the one ipclab wrote")
    return items[0]


def checked_kubeconfig(root: Path) -> dict[str, Any]:
    """The admin kubeconfig under ``root`` as a document the client reads without opening
    any file (certificates inline), after the checks of the module's docstring."""
    root = check_root(root)
    layout = Layout(root)
    path = layout.kubeconfig
    document = yaml.safe_load(read(root, path.relative_to(root)))
    if not isinstance(document, dict):
        raise UnsafeState(f"{path}: not a kubeconfig")
    cluster = _one(document, "clusters", path).get("cluster") or {}
    user = _one(document, "users", path).get("user") or {}
    context = _one(document, "contexts", path)
    if set(user) != _USER_KEYS:
        extra = ", ".join(sorted(set(user) - _USER_KEYS)) or "no client certificate"
        raise UnsafeState(
            f"{path}: its user has {extra}; ipclab's kubeconfig has a client certificate and "
            f"key only (an exec plugin or auth provider would run a program): refused, nothing run"
        )
    if set(cluster) != _CLUSTER_KEYS or cluster.get("server") != API_SERVER:
        raise UnsafeState(f"{path}: its cluster is not {API_SERVER} with a CA file; refused")
    data = {
        "certificate-authority-data": cluster["certificate-authority"],
        "client-certificate-data": user["client-certificate"],
        "client-key-data": user["client-key"],
    }
    for key, name in data.items():
        relative = _below(layout.pki, name, key.removesuffix("-data"), path)
        data[key] = base64.b64encode(read(root, Path("pki") / relative)).decode()
    names = {"cluster": "ipclab", "user": "admin"}
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": names["cluster"], "cluster": {
            "server": API_SERVER,
            "certificate-authority-data": data["certificate-authority-data"]}}],
        "users": [{"name": names["user"], "user": {
            "client-certificate-data": data["client-certificate-data"],
            "client-key-data": data["client-key-data"]}}],
        "contexts": [{"name": str(context.get("name", "ipclab")), "context": names}],
        "current-context": str(context.get("name", "ipclab")),
    }  # fmt: skip


def client_configuration(root: Path) -> Any:
    """A ``kubernetes.client.Configuration`` for the local cluster under ``root``."""
    from kubernetes import client, config

    cfg = client.Configuration()
    config.load_kube_config_from_dict(
        checked_kubeconfig(root), client_configuration=cfg, persist_config=False
    )
    return cfg


def api_client(root: Path) -> Any:
    """A ``kubernetes.client.ApiClient`` for the local cluster under ``root``."""
    from kubernetes import client

    return client.ApiClient(client_configuration(root))


def socket(root: Path) -> Path:
    """containerd's socket under ``root``, checked (see the module's docstring)."""
    layout = Layout(check_root(root))
    check_private(layout.run, TRUSTS, REMEDY)
    st = layout.socket.lstat()
    if not (stat.S_ISSOCK(st.st_mode) and st.st_uid == os.getuid()):
        raise UnsafeState(f"{layout.socket} is not a socket of uid {os.getuid()}; not used")
    return layout.socket


def pod_log(root: Path, folder: str, container: str, limit: int = 200_000) -> str:
    """The last ``limit`` characters of a container's log files
    (``pod-logs/<folder>/<container>/*.log``), each opened through a checked descriptor."""
    layout = Layout(check_root(root))
    relative = layout.pod_logs.relative_to(layout.root) / folder / container
    fd = open_private_dir(layout.root, relative, TRUSTS, REMEDY)
    try:
        names = sorted(n for n in os.listdir(fd) if n.endswith(".log"))
    finally:
        os.close(fd)
    texts = [read(layout.root, relative / n).decode(errors="replace") for n in names]
    return "".join(texts)[-limit:]
