"""When each part of the local cluster counts as started, and the wait for it.

A component is ready when its readiness URL answers (``components.Component.ready``):
``unix:<path>`` a socket that accepts a connection (containerd), ``http(s)://...`` an
endpoint that answers 200 (etcd's ``/health`` must also say ``"health":"true"``). HTTPS
requests present the admin client certificate, verified against the cluster's CA for the
API server (the controller-manager's and scheduler's serving certificates are self-signed
in memory at each start, so not verified); etcd is asked with the API server's etcd client
certificate and verified against etcd's own authority (mutual TLS, ``pki``). Health
endpoints are asked over plain HTTP(S); what asks the API itself (the node's ``Ready``
condition, the default service account) goes through the official ``kubernetes`` client,
configured from the checked kubeconfig (``access``), as the backend does.

:func:`wait` polls a check until it passes, the process exits, or its timeout: then a
``ClusterError`` names the component, what happened, and the tail of its log.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ipclab.kubecluster import access
from ipclab.kubecluster.layout import NODE_NAME, PORTS
from ipclab.kubecluster.pki import Pki
from ipclab.procs import tail

POLL_S = 0.25
CLIENT_MISSING = (
    "the Python kubernetes client is not installed: pip install -e '.[k8s]' (or `make k8s-deps`)"
)


class ClusterError(RuntimeError):
    """The local cluster could not be started, checked or stopped; the message says which
    part, why, and the end of its log."""


def _context(pki: Pki, url: str) -> ssl.SSLContext:
    """The TLS client for ``url``: etcd's (its authority, the etcd client certificate),
    the API server's (the cluster's CA, the admin's), or a self-signed health endpoint's."""
    if f":{PORTS['etcd']}/" in url:
        context = ssl.create_default_context(cafile=str(pki.etcd_ca))
        context.load_cert_chain(str(pki.etcd_client_cert), str(pki.etcd_client_key))
        return context
    if f":{PORTS['kube-apiserver']}/" in url:
        context = ssl.create_default_context(cafile=str(pki.ca))
    else:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    context.load_cert_chain(str(pki.admin_cert), str(pki.admin_key))
    return context


def _socket_accepts(path: str, timeout: float) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        try:
            s.connect(path)
        except OSError:
            return False
        return True


def answers(url: str, pki: Pki | None = None, timeout: float = 2.0) -> bool:
    """``url`` is ready (see the module's docstring)."""
    if url.startswith("unix:"):
        return _socket_accepts(url.removeprefix("unix:"), timeout)
    handlers: list[urllib.request.BaseHandler] = [urllib.request.ProxyHandler({})]
    if url.startswith("https:"):
        if pki is None:
            return False
        try:
            context = _context(pki, url)
        except (OSError, ssl.SSLError):
            return False  # the files are not there (yet, or any more)
        handlers.append(urllib.request.HTTPSHandler(context=context))
    opener = urllib.request.build_opener(*handlers)  # never through an http(s)_proxy
    try:
        with opener.open(url, timeout=timeout) as response:
            body = response.read(4096).decode(errors="replace")
            if response.status != 200:
                return False
    except (OSError, urllib.error.URLError, ssl.SSLError):
        return False
    if url.endswith(f":{PORTS['etcd']}/health"):
        with contextlib.suppress(ValueError):
            return json.loads(body).get("health") == "true"
        return False
    return True


def _client(root: Path) -> Any:
    """The API client of the cluster under ``root``, from its checked kubeconfig."""
    try:
        from kubernetes import client  # noqa: F401 - installed?
    except ImportError:
        raise ClusterError(CLIENT_MISSING) from None
    return access.api_client(root)


def _unanswered() -> tuple[type[BaseException], ...]:
    """What the client raises when the API server does not answer or refuses."""
    import urllib3
    from kubernetes.client.rest import ApiException

    return (ApiException, OSError, urllib3.exceptions.HTTPError)


def node_ready(root: Path, name: str = NODE_NAME) -> bool:
    """The node has registered and its ``Ready`` condition is ``True`` (the kubelet, the
    container runtime and the pod network all report ready)."""
    from kubernetes import client

    with _client(root) as api:
        try:
            node = client.CoreV1Api(api).read_node(name, _request_timeout=5)
        except _unanswered():
            return False
    conditions = (node.status.conditions if node.status else None) or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


def node_lines(root: Path) -> list[str]:
    """The cluster's nodes as the API server lists them, one line each, as ``kubectl get
    nodes -o wide`` would: name, Ready condition, ``ipclab.role`` label, kubelet version,
    internal address (``ipclab cluster status``)."""
    try:
        api_client = _client(root)
    except ClusterError as e:
        return [f"  {e}"]
    from kubernetes import client

    with api_client as api:
        try:
            found = client.CoreV1Api(api).list_node(_request_timeout=5).items
        except _unanswered() as e:
            return [f"  the API server did not list the nodes ({type(e).__name__})"]
    lines = [f"  {'NAME':<16} {'STATUS':<9} {'ROLE':<10} {'VERSION':<9} INTERNAL-IP"]
    for n in sorted(found, key=lambda n: n.metadata.name):
        conditions = (n.status.conditions if n.status else None) or []
        ready = any(c.type == "Ready" and c.status == "True" for c in conditions)
        role = (n.metadata.labels or {}).get("ipclab.role", "-")
        addresses = (n.status.addresses if n.status else None) or []
        ip = next((a.address for a in addresses if a.type == "InternalIP"), "-")
        version = n.status.node_info.kubelet_version if n.status and n.status.node_info else "-"
        status = "Ready" if ready else "NotReady"
        lines.append(f"  {n.metadata.name:<16} {status:<9} {role:<10} {version:<9} {ip}")
    return lines


def service_account_ready(root: Path, namespace: str = "default") -> bool:
    """The controller-manager made the namespace's ``default`` service account (until it
    has, the API server refuses pods there)."""
    from kubernetes import client

    with _client(root) as api:
        try:
            client.CoreV1Api(api).read_namespaced_service_account(
                "default", namespace, _request_timeout=5
            )
        except _unanswered():
            return False
    return True


def wait(
    name: str,
    check: Callable[[], bool],
    timeout: float,
    log: Path,
    process: subprocess.Popen[bytes] | None = None,
) -> None:
    """Return once ``check()`` passes; ``ClusterError`` if ``process`` exits first or
    ``timeout`` seconds pass, naming ``name`` with the tail of ``log``."""
    deadline = time.monotonic() + timeout
    while True:
        if check():
            return
        if process is not None and process.poll() is not None:
            why = f"exited with code {process.returncode}"
            break
        if time.monotonic() > deadline:
            why = f"not ready after {timeout:.0f} s"
            break
        time.sleep(POLL_S)
    raise ClusterError(f"{name} {why} (log {log}):\n{tail(log, 30)}")
