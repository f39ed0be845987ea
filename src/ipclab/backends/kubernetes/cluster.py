"""Which cluster the kubernetes backend deploys to, and the client that reaches it.

The kubeconfig: ``$IPCLAB_KUBECONFIG`` (any cluster: AKS, GKE, a lab's), else ipclab's own
single-node cluster's when it is up (``ipclab cluster up``: ``ipclab.kubecluster``). Never
``$KUBECONFIG`` or ``~/.kube/config``: a shell set up for a production cluster does not get
benchmark stacks by accident. Only ipclab's own cluster is *local*: its images are imported
from this machine's docker engine, its pods' cgroups are read for the resource samples and
its NodePorts answer on 127.0.0.1. Another cluster pulls the images from
``$IPCLAB_K8S_REGISTRY`` (pushed there by the user) and is reached at
``$IPCLAB_K8S_GATEWAY_HOST`` (a node's address); docs/kubernetes.md.

What the harness reads of ipclab's own cluster (its kubeconfig, its containerd socket, its
pods' log files) is read through ``ipclab.kubecluster.access``: checked at every open, a
kubeconfig with anything but the cluster's own client certificate refused (issue 48).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENV_KUBECONFIG = "IPCLAB_KUBECONFIG"
ENV_REGISTRY = "IPCLAB_K8S_REGISTRY"
ENV_GATEWAY_HOST = "IPCLAB_K8S_GATEWAY_HOST"
CLIENT_VERSION = "34.1.0"  # the kubernetes client pinned in pyproject.toml (Kubernetes 1.34)


class ClusterUnavailable(RuntimeError):
    """No cluster to deploy to (with what to do)."""


@dataclass(frozen=True)
class Cluster:
    """A cluster to deploy to: its kubeconfig, whether it is ipclab's own (``local``), the
    API clients and where the gateway's NodePort is reached."""

    kubeconfig: Path
    local: bool
    api: Any  # the ApiClient
    gateway_host: str

    @property
    def core(self) -> Any:
        from kubernetes import client

        return client.CoreV1Api(self.api)

    @property
    def apps(self) -> Any:
        from kubernetes import client

        return client.AppsV1Api(self.api)

    def version(self) -> str:
        from kubernetes import client

        info = client.VersionApi(self.api).get_code()
        return str(info.git_version)


def kubeconfig() -> tuple[Path, bool]:
    """The kubeconfig to use and whether it is ipclab's own cluster's (ClusterUnavailable
    with the reason when there is none, or it is not safe to read)."""
    from ipclab.kubecluster import layout

    if why := layout.why_no_cluster(layout.ROOT):
        raise ClusterUnavailable(why)
    return layout.kubeconfig(layout.ROOT), not os.environ.get(ENV_KUBECONFIG)


def _configuration(path: Path, local: bool) -> Any:
    """The client's configuration: ipclab's own cluster's from its checked kubeconfig
    (``kubecluster.access``), another's from the override file (checked too)."""
    from ipclab.kubecluster import access, layout
    from ipclab.private import UnsafeState
    from kubernetes import client, config

    try:
        if local:
            return access.client_configuration(layout.ROOT)
        cfg = client.Configuration()
        config.load_kube_config(
            config_file=str(layout.check_override(path)), client_configuration=cfg
        )
        return cfg
    except UnsafeState as e:
        raise ClusterUnavailable(f"refused: {e}") from e


def connect(timeout_s: float = 10.0) -> Cluster:
    """The cluster, checked to answer (``/version``)."""
    try:
        from kubernetes import client
    except ImportError as e:
        raise ClusterUnavailable(
            f"the kubernetes client is not installed (pip install kubernetes=={CLIENT_VERSION})"
        ) from e
    path, local = kubeconfig()
    api = client.ApiClient(_configuration(path, local))
    host = os.environ.get(ENV_GATEWAY_HOST) or ("127.0.0.1" if local else "")
    found = Cluster(path, local, api, host)
    try:
        client.VersionApi(api).get_code(_request_timeout=timeout_s)
    except Exception as e:  # noqa: BLE001 - any failure to answer is "unavailable"
        raise ClusterUnavailable(f"the cluster of {path} does not answer: {e}") from e
    if not found.gateway_host:
        raise ClusterUnavailable(
            f"{path} is not ipclab's own cluster: set {ENV_GATEWAY_HOST} to an address of a "
            "node the load generator reaches its NodePorts at (docs/kubernetes.md)"
        )
    return found


@functools.cache
def unavailable() -> str | None:
    """Why no stack can run on Kubernetes here (None: a cluster answers)."""
    try:
        connect(timeout_s=5.0)
    except ClusterUnavailable as e:
        return str(e)
    return None


def provide_images(found: Cluster, refs: dict[str, str]) -> dict[str, str]:
    """Docker image id -> the reference pods run it by: on ipclab's cluster the image,
    imported from this machine's docker engine under ``refs[id]`` (a tag naming the id);
    on another, ``refs[id]`` in ``$IPCLAB_K8S_REGISTRY``, where the user pushed it."""
    if found.local:
        import subprocess

        from ipclab.kubecluster import access, images, layout, nodes
        from ipclab.private import UnsafeState

        try:  # every node's containerd (never a socket someone else planted)
            roots = [layout.ROOT, *nodes.node_roots(layout.ROOT)]
            sockets = [access.socket(root) for root in roots]
        except (OSError, UnsafeState) as e:
            raise ClusterUnavailable(f"refused: containerd's socket: {e}") from e
        for image_id, ref in refs.items():  # a tag naming the id: imported once per build
            subprocess.run(["docker", "tag", image_id, ref], check=True, capture_output=True)
            for socket in sockets:
                images.import_docker_image(socket, ref)
        return dict(refs)
    registry = os.environ.get(ENV_REGISTRY, "").rstrip("/")
    if not registry:
        listed = ", ".join(sorted(refs.values()))
        raise ClusterUnavailable(
            f"{found.kubeconfig} is not ipclab's own cluster, which pulls its images: push "
            f"{listed} (docker tag ID NAME; docker push) to a registry it reaches and set "
            f"{ENV_REGISTRY} to it (docs/kubernetes.md)"
        )
    return {image_id: f"{registry}/{ref}" for image_id, ref in refs.items()}


def pod_logs(found: Cluster, namespace: str, pods: dict[str, Any]) -> dict[str, str]:
    """Container name -> its recent log: from the API, or on ipclab's own cluster (whose
    kubelet answers on loopback only, out of the API server's reach) from the kubelet's
    log files."""
    out: dict[str, str] = {}
    for p in pods.values():
        for s in p.status.container_statuses or []:
            try:
                out[s.name] = found.core.read_namespaced_pod_log(
                    p.metadata.name, namespace, container=s.name, tail_lines=5000
                )
            except Exception:  # noqa: BLE001 - the files instead, where they are
                out[s.name] = _log_files(found, namespace, p, s.name)
    return out


def _log_files(found: Cluster, namespace: str, pod: Any, container: str) -> str:
    if not found.local:
        return ""
    from ipclab.kubecluster import access, layout
    from ipclab.private import UnsafeState

    folder = f"{namespace}_{pod.metadata.name}_{pod.metadata.uid}"
    try:
        return access.pod_log(layout.ROOT, folder, container)
    except (OSError, UnsafeState, ValueError):
        return ""
