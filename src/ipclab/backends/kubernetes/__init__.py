"""The kubernetes backend: a stack as Deployments and Services in a namespace of its own, on
ipclab's single-node cluster (``ipclab cluster up``, docs/kubernetes.md) or any cluster a
kubeconfig names (``IPCLAB_KUBECONFIG``). Declared here for the backend registry
(``ipclab.backends``) and made from ``stack.py`` only when used (it imports the
``kubernetes`` client)."""

from __future__ import annotations

from ipclab.backends.base import BackendPlugin


def kubernetes_missing() -> str | None:
    """Why no stack can run on Kubernetes here (None: a cluster answers)."""
    from ipclab.backends.kubernetes import cluster

    return cluster.unavailable()


def down(stack: str) -> list[str]:
    """``ipclab down``: delete the detached namespaces of ``stack``."""
    from ipclab.backends.kubernetes import cluster, ownership

    return ownership.down(cluster.connect().core, stack)


BACKEND = BackendPlugin(
    "kubernetes",
    f"{__name__}.stack:KubernetesBackend",
    order=3,
    description="Deployments and Services on a cluster",
    missing=kubernetes_missing,
    stop_detached=down,
    options=frozenset({"cpus", "memory", "tls", "detach"}),
)
