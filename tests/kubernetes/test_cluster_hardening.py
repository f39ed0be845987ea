"""ipclab's own running cluster, attacked from this machine (issue 48; docs/hardening.md).

Must-show 3: etcd refuses a client without a certificate (plain HTTP, TLS without a client
certificate, the cluster's admin certificate from the other authority), and a write to
``/registry/pods/...`` without one fails, while the API server's etcd certificate reads.
As ``nobody`` (tests/attacker_k8s.py): etcd the same, the keys, the kubeconfig and the
containerd socket out of reach. An L2 neighbour (a network namespace on a veth link that
routes the Service range through this host) reaches a ClusterIP only while the guard is
taken away. A pod's container runs under the runtime's default seccomp profile.

Only on ipclab's own cluster (``ipclab cluster up``); skipped with the reason elsewhere.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import secrets
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ipclab.kubecluster import firewall, layout, pki, sysctls
from ipclab.kubecluster.layout import LOOPBACK, PORTS, Layout
from tests import attacker, attacker_k8s

ETCD = (LOOPBACK, PORTS["etcd"])
POD_KEY = "/registry/pods/default/ipclab-planted"


@pytest.fixture(scope="module")
def local() -> Any:
    from ipclab.backends.kubernetes import cluster

    found = cluster.connect()
    if not found.local:
        pytest.skip("not ipclab's own cluster: its etcd and host are not this machine's")
    return found


@pytest.fixture(scope="module")
def files(local: Any) -> pki.Pki:
    return pki.Pki(Layout(layout.ROOT).pki)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _etcd_post(path: str, body: dict[str, Any], context: ssl.SSLContext | None) -> int:
    """POST to etcd's JSON gateway; the HTTP status (an exception if refused earlier)."""
    if context is None:
        conn: http.client.HTTPConnection = http.client.HTTPConnection(*ETCD, timeout=5)
    else:
        conn = http.client.HTTPSConnection(*ETCD, timeout=5, context=context)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def _context(files: pki.Pki, cert: tuple[Path, Path] | None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(files.etcd_ca))
    if cert is not None:
        context.load_cert_chain(str(cert[0]), str(cert[1]))
    return context


def _planted(files: pki.Pki) -> int:
    """How many keys are at ``POD_KEY`` (read with the API server's etcd certificate)."""
    context = _context(files, (files.etcd_client_cert, files.etcd_client_key))
    conn = http.client.HTTPSConnection(*ETCD, timeout=5, context=context)
    try:
        conn.request("POST", "/v3/kv/range", json.dumps({"key": _b64(POD_KEY)}))
        response = conn.getresponse()
        body = response.read()
        assert response.status == 200, body  # the authorised read works
        return int(json.loads(body).get("count", 0))
    finally:
        conn.close()


def test_etcd_refuses_a_client_without_a_certificate(files: pki.Pki) -> None:
    put = {"key": _b64(POD_KEY), "value": _b64('{"kind":"Pod"}')}
    refused = (OSError, ssl.SSLError, http.client.HTTPException)
    # plain HTTP: etcd speaks TLS only (at most a 400 saying so)
    with contextlib.suppress(*refused):
        assert _etcd_post("/v3/kv/put", put, None) != 200
    # TLS, no client certificate; and the cluster's admin certificate (the other authority)
    for cert in (None, (files.admin_cert, files.admin_key)):
        with pytest.raises(refused):
            _etcd_post("/v3/kv/put", put, _context(files, cert))
    assert _planted(files) == 0
    # the API server's etcd client certificate: the namespace "default" is there
    ok = _context(files, (files.etcd_client_cert, files.etcd_client_key))
    assert _etcd_post("/v3/kv/range", {"key": _b64("/registry/namespaces/default")}, ok) == 200


_NOBODY_PROBE = """
import json, os, socket, ssl, http.client
root, key = {root!r}, {key!r}
out = {{}}
def attempt(name, f):
    try:
        out[name] = "reached: " + repr(f())[:80]
    except Exception as e:
        out[name] = "refused: " + type(e).__name__
body = json.dumps({{"key": key, "value": "e30="}})
def plain():
    c = http.client.HTTPConnection("127.0.0.1", {port}, timeout=5)
    c.request("POST", "/v3/kv/put", body)
    r = c.getresponse()
    if r.status != 200:
        raise OSError(r.status)
    return r.status
def tls():
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    c = http.client.HTTPSConnection("127.0.0.1", {port}, timeout=5, context=context)
    c.request("POST", "/v3/kv/put", body)
    return c.getresponse().status
def get(port, path):
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    c = http.client.HTTPSConnection("127.0.0.1", port, timeout=5, context=context)
    c.request("GET", path)
    r = c.getresponse()
    if r.status != 200:
        raise OSError(r.status)
    return r.status
attempt("etcd over plain HTTP", plain)
attempt("etcd over TLS without a certificate", tls)
attempt("the API server's secrets without a certificate", lambda: get({api}, "/api/v1/secrets"))
attempt("the kubelet's pods without a certificate", lambda: get({kubelet}, "/pods"))
attempt("the cluster's root", lambda: os.listdir(root))
attempt("the etcd client key", lambda: open(root + "/pki/apiserver-etcd-client.key").read())
attempt("the admin kubeconfig", lambda: open(root + "/admin.kubeconfig").read())
attempt("write a kubeconfig into the root", lambda: open(root + "/admin.kubeconfig", "a"))
def containerd():
    s = socket.socket(socket.AF_UNIX)
    s.connect(root + "/run/containerd.sock")
    return "connected"
attempt("containerd's socket", containerd)
print(json.dumps(out))
"""


def test_nobody_reaches_neither_etcd_nor_the_clusters_files(files: pki.Pki) -> None:
    if why := attacker_k8s.why_not():
        pytest.skip(why)
    source = _NOBODY_PROBE.format(
        root=str(layout.ROOT), key=_b64(POD_KEY), port=PORTS["etcd"],
        api=PORTS["kube-apiserver"], kubelet=PORTS["kubelet"],
    )  # fmt: skip
    found = attacker_k8s.probe(source)
    assert all(v.startswith("refused") for v in found.values()), found
    assert _planted(files) == 0


# --- the guard against an L2 neighbour ------------------------------------------------------


@contextlib.contextmanager
def _neighbour() -> Iterator[tuple[str, str]]:
    """A network namespace on a veth link to this host that routes the Service and pod
    ranges through it, as a machine on the same L2 network could: (netns, host address)."""
    routes = (layout.SERVICE_CIDR, layout.POD_CIDR)
    with attacker.l2_neighbour(routes=routes, subnet="192.168.231") as ns:
        yield ns, "192.168.231.1"


def _reaches(ns: str, ip: str, port: int) -> bool:
    probe = (
        "import socket\n"
        f"try:\n    socket.create_connection(({ip!r}, {port}), timeout=3).close(); print('yes')\n"
        "except OSError:\n    print('no')\n"
    )
    done = subprocess.run(
        ["ip", "netns", "exec", ns, attacker_k8s.PYTHON, "-c", probe],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    return done.stdout.strip() == "yes"


@contextlib.contextmanager
def _service_to(local: Any, address: str, port: int) -> Iterator[str]:
    """A Service whose endpoint is ``address:port`` (no selector): its ClusterIP."""
    from kubernetes import client

    name = f"ipclab-guard-{secrets.token_hex(3)}"
    core = local.core
    core.create_namespace({"metadata": {"name": name}})
    try:
        svc = core.create_namespaced_service(name, {
            "metadata": {"name": "target"},
            "spec": {"ports": [{"name": "tcp", "port": 80, "protocol": "TCP"}]},
        })  # fmt: skip
        client.DiscoveryV1Api(local.api).create_namespaced_endpoint_slice(name, {
            "metadata": {"name": "target-1", "labels": {"kubernetes.io/service-name": "target"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [address]}],
            "ports": [{"name": "tcp", "port": port, "protocol": "TCP"}],
        })  # fmt: skip
        yield str(svc.spec.cluster_ip)
    finally:
        core.delete_namespace(name)


def _raw_rules() -> str:
    return subprocess.run(
        ["iptables", "-w", "-t", "raw", "-S"], capture_output=True, text=True, check=True
    ).stdout


def test_an_l2_neighbour_reaches_no_cluster_ip_while_the_guard_is_there(local: Any) -> None:
    """The neighbour's connection to a ClusterIP is DNATed by kube-proxy and accepted
    when the guard's jump is taken away (the path is real), dropped with it; the host
    reaches the same ClusterIP throughout."""
    assert firewall.guarded(_raw_rules())
    with _neighbour() as (ns, host_ip), socket.create_server((host_ip, 0)) as server:
        port = server.getsockname()[1]
        stop = threading.Event()

        def serve() -> None:
            server.settimeout(0.5)
            while not stop.is_set():
                with contextlib.suppress(OSError):
                    server.accept()[0].close()

        threading.Thread(target=serve, daemon=True).start()
        try:
            with _service_to(local, host_ip, port) as cluster_ip:
                deadline = time.monotonic() + 30  # kube-proxy writes the rules within 1 s
                while not _host_reaches(cluster_ip) and time.monotonic() < deadline:
                    time.sleep(0.5)
                assert _host_reaches(cluster_ip)
                assert not _reaches(ns, cluster_ip, 80)
                jump = ["PREROUTING", *firewall.GUARD_JUMP]
                subprocess.run(["iptables", "-w", "-t", "raw", "-D", *jump], check=True)
                try:
                    without_guard = _reaches(ns, cluster_ip, 80)
                finally:
                    firewall.install_guard()
                assert without_guard, "the neighbour's path to the ClusterIP is not real"
                assert firewall.guarded(_raw_rules()) and not _reaches(ns, cluster_ip, 80)
        finally:
            stop.set()


def _host_reaches(ip: str) -> bool:
    try:
        socket.create_connection((ip, 80), timeout=2).close()
        return True
    except OSError:
        return False


def test_the_host_record_is_kept_while_the_cluster_is_up(local: Any) -> None:
    record = sysctls.load()
    assert record is not None and record.sysctls
    assert sysctls.read(["net.ipv4.conf.all.route_localnet"]) == {
        "net.ipv4.conf.all.route_localnet": "1"
    }  # kube-proxy's, put back at down from the record


# --- seccomp in a pod -----------------------------------------------------------------------


def _seccomp_of(container_id: str) -> str:
    """The ``Seccomp`` mode of the container's process (found by its cgroup)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        with contextlib.suppress(OSError):
            if container_id in Path(f"/proc/{pid}/cgroup").read_text():
                status = Path(f"/proc/{pid}/status").read_text()
                return next(
                    line.split()[1] for line in status.splitlines() if line.startswith("Seccomp:")
                )
    raise AssertionError(f"no process of container {container_id}")


def test_a_pods_container_runs_under_the_runtimes_default_seccomp_profile(local: Any) -> None:
    from ipclab.backends.kubernetes.manifests import security_context
    from ipclab.kubecluster.config import PAUSE_IMAGE, apparmor_available

    name = f"ipclab-seccomp-{secrets.token_hex(3)}"
    core = local.core
    core.create_namespace({"metadata": {"name": name}})
    try:
        for pod, context in (("asked", security_context(apparmor_available())), ("plain", None)):
            spec: dict[str, Any] = {
                "containers": [{"name": "c", "image": PAUSE_IMAGE, "imagePullPolicy": "Never"}],
                "automountServiceAccountToken": False,
            }
            if context:
                spec["securityContext"] = context
            core.create_namespaced_pod(name, {"metadata": {"name": pod}, "spec": spec})
        for pod in ("asked", "plain"):  # the kubelet's seccompDefault covers the second
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                status = core.read_namespaced_pod(pod, name).status
                running = [s for s in status.container_statuses or [] if s.state.running]
                if running:
                    break
                time.sleep(0.5)
            assert running, f"{pod}: {status}"
            assert _seccomp_of(running[0].container_id.split("://")[-1]) == "2", pod
    finally:
        core.delete_namespace(name)
