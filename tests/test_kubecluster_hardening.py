"""The local Kubernetes cluster as a local-root path (issue 48; docs/hardening.md, "The
local Kubernetes cluster: what a local user and an L2 neighbour reach").

In seconds and without a cluster: a planted kubeconfig whose ``exec:`` plugin would touch a
marker is refused with a clear error and the plugin never runs (planted by ``nobody`` in a
shared folder, in a root of the wrong owner or mode, through links, or with the wrong
content); the containerd socket and the pod logs are opened only through checked
descriptors; a planted state file is never acted on; etcd's command line and certificates
(mutual TLS, its own authority); the sysctls restored with and without a record; the
firewall plan (only the cluster's chains and rules; the guard); the builtin sweeper.
What needs the running cluster (etcd refusing a client without a certificate, the guard
against a neighbour, seccomp in a pod) is tests/kubernetes/test_cluster_hardening.py.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import ssl
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ipclab import orphans
from ipclab.kubecluster import (
    access,
    components,
    config,
    firewall,
    layout,
    node,
    pki,
    readiness,
    state,
    sysctls,
    teardown,
)
from ipclab.kubecluster.layout import API_SERVER, LOOPBACK, PORTS, Layout
from ipclab.private import UnsafeState, check_private, open_private
from tests import attacker_k8s

NOBODY = 65534


@pytest.fixture
def shared() -> Iterator[Path]:
    """A world-writable sticky folder, as /tmp is, that ``nobody`` can plant in."""
    folder = Path(tempfile.mkdtemp(prefix="ipclab-hardening-", dir="/tmp"))
    os.chmod(folder, 0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _genuine(root: Path) -> Layout:
    """A root as ``up`` leaves it: private, the PKI, the configurations, the kubeconfig."""
    where = Layout(root)
    root.mkdir(mode=0o700, parents=True)
    files = pki.make(where.pki)
    config.write_all(where, files)
    return where


def _exec_kubeconfig(marker: Path) -> str:
    """A kubeconfig whose user is an exec credential plugin that touches ``marker``."""
    plugin = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "command": "/bin/sh",
        "args": ["-c", f"touch {marker}; echo '{{}}'"],
        "interactiveMode": "Never",
    }
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "ipclab", "cluster": {"server": API_SERVER}}],
        "users": [{"name": "admin", "user": {"exec": plugin}}],
        "contexts": [{"name": "ipclab", "context": {"cluster": "ipclab", "user": "admin"}}],
        "current-context": "ipclab",
    }
    return yaml.safe_dump(document)


def _connect_refused(root: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """What the backend says when pointed at ``root`` (it must refuse)."""
    from ipclab.backends.kubernetes import cluster

    monkeypatch.delenv(layout.KUBECONFIG_ENV, raising=False)
    monkeypatch.setattr(layout, "ROOT", root)
    with pytest.raises(cluster.ClusterUnavailable) as refused:
        cluster.connect(timeout_s=1.0)
    return str(refused.value)


# --- 1. a planted kubeconfig ------------------------------------------------------------


def test_the_default_root_is_not_in_a_shared_tmp() -> None:
    assert layout.default_root(0) == Path("/var/lib/ipclab-k8s-0")
    assert layout.default_root(1000) == Path(tempfile.gettempdir()) / "ipclab-k8s-1000"


def test_a_kubeconfig_planted_by_nobody_with_an_exec_plugin_is_refused_and_never_run(
    shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Must-show 2: ``nobody`` makes ``ipclab-k8s-0/admin.kubeconfig`` in a shared folder
    (as /tmp) with an exec plugin; the harness (root) pointed at that root refuses, naming
    why, and the plugin never runs. The same file loaded as the backend did before runs it."""
    if why := attacker_k8s.why_not():
        pytest.skip(why)
    root, marker = shared / "ipclab-k8s-0", shared / "marker"
    plant = (
        "import os\n"
        f"os.mkdir({str(root)!r}, 0o755)\n"
        f"open({str(root / 'admin.kubeconfig')!r}, 'w').write({_exec_kubeconfig(marker)!r})\n"
        "print('{}')\n"
    )
    attacker_k8s.probe(plant)
    assert root.stat().st_uid == NOBODY
    said = _connect_refused(root, monkeypatch)
    assert said.startswith("refused:") and f"owned by uid {os.getuid()}" in said, said
    assert not marker.exists()
    with pytest.raises(UnsafeState):
        access.client_configuration(root)
    assert not marker.exists()
    from kubernetes import config as kube_config  # the old path: the plugin runs as root

    kube_config.load_kube_config(config_file=str(root / "admin.kubeconfig"))  # logs, runs
    assert marker.exists() and marker.stat().st_uid == os.getuid()


def _plant(where: Layout, how: str, marker: Path) -> None:
    """A kubeconfig with an exec plugin put into ``where`` as ``how`` says."""
    path = where.kubeconfig
    if how == "content":  # ipclab's own private root, another kubeconfig in it
        path.write_text(_exec_kubeconfig(marker))
        return
    planted = where.root.parent / "planted.kubeconfig"
    planted.write_text(_exec_kubeconfig(marker))
    if how == "file-link":
        path.unlink()
        path.symlink_to(planted)
    elif how == "file-mode":
        path.write_text(_exec_kubeconfig(marker))
        os.chmod(path, 0o666)
    elif how == "file-owner":
        path.write_text(_exec_kubeconfig(marker))
        os.chown(path, NOBODY, NOBODY)
    elif how == "root-mode":
        path.write_text(_exec_kubeconfig(marker))
        os.chmod(where.root, 0o777)
    elif how == "root-owner":
        path.write_text(_exec_kubeconfig(marker))
        os.chown(where.root, NOBODY, NOBODY)


@pytest.mark.parametrize(
    "how", ["content", "file-link", "file-mode", "file-owner", "root-mode", "root-owner"]
)
def test_a_planted_kubeconfig_is_refused_whatever_the_plant(
    tmp_path: Path, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if how.endswith("owner") and os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    where, marker = _genuine(tmp_path / "root"), tmp_path / "marker"
    _plant(where, how, marker)
    said = _connect_refused(where.root, monkeypatch)
    assert said.startswith("refused:"), said
    expected = {
        "content": "exec", "file-link": "not a directory or file (not a link)",
        "file-mode": "not a regular file owned by", "file-owner": "not a regular file owned by",
        "root-mode": "not a directory owned by", "root-owner": "not a directory owned by",
    }[how]  # fmt: skip
    assert expected in said, said
    assert not marker.exists()


def test_the_genuine_kubeconfig_is_given_to_the_client_as_data(tmp_path: Path) -> None:
    where = _genuine(tmp_path / "root")
    doc = access.checked_kubeconfig(where.root)
    (cluster,) = doc["clusters"]
    (user,) = doc["users"]
    assert cluster["cluster"]["server"] == API_SERVER
    assert set(user["user"]) == {"client-certificate-data", "client-key-data"}
    assert "certificate-authority" not in cluster["cluster"]  # no path left to open by name
    cfg = access.client_configuration(where.root)
    assert cfg.host == API_SERVER
    assert Path(cfg.cert_file).read_bytes() == where.pki.joinpath("admin.crt").read_bytes()


@pytest.mark.parametrize(
    "change",
    [
        {"users": [{"name": "admin", "user": {"token": "t"}}]},
        {"users": [{"name": "admin", "user": {"auth-provider": {"name": "oidc"}}}]},
        {"clusters": [{"name": "ipclab", "cluster": {"server": "https://192.0.2.9:6443",
                                                     "certificate-authority": "x"}}]},
        {"users": [{"name": "admin", "user": {"client-certificate": "/etc/ssl/certs/a.pem",
                                              "client-key": "/etc/ssl/private/a.key"}}]},
    ],
    ids=["token", "auth-provider", "server", "files-elsewhere"],
)  # fmt: skip
def test_a_kubeconfig_other_than_ipclabs_own_is_refused(tmp_path: Path, change: dict) -> None:
    where = _genuine(tmp_path / "root")
    doc = yaml.safe_load(where.kubeconfig.read_text())
    where.kubeconfig.write_text(yaml.safe_dump({**doc, **change}))
    with pytest.raises(UnsafeState):
        access.checked_kubeconfig(where.root)


def test_an_override_kubeconfig_another_user_can_change_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``$IPCLAB_KUBECONFIG`` naming a file another user can write: refused, not run."""
    folder = tmp_path / "k"
    folder.mkdir(mode=0o700)
    marker, path = tmp_path / "marker", folder / "other.kubeconfig"
    path.write_text(_exec_kubeconfig(marker))
    os.chmod(path, 0o666)
    monkeypatch.setenv(layout.KUBECONFIG_ENV, str(path))
    why = layout.why_no_cluster(tmp_path / "none")
    assert why is not None and "refused" in why
    from ipclab.backends.kubernetes import cluster

    with pytest.raises(cluster.ClusterUnavailable):
        cluster.connect(timeout_s=1.0)
    assert not marker.exists()


def test_the_readiness_checks_read_the_api_through_the_checked_kubeconfig(
    tmp_path: Path,
) -> None:
    where, marker = _genuine(tmp_path / "root"), tmp_path / "marker"
    where.kubeconfig.write_text(_exec_kubeconfig(marker))
    with pytest.raises(UnsafeState):
        readiness.node_ready(where.root)
    assert not marker.exists()


# --- the socket, the logs, the state file -------------------------------------------------


def _listening(path: Path) -> socket.socket:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.listen()
    return s


def test_a_containerd_socket_not_the_clusters_own_is_not_used(tmp_path: Path) -> None:
    where = Layout(tmp_path / "root")
    where.root.mkdir(mode=0o700)
    with _listening(where.socket):
        assert access.socket(where.root) == where.socket
        if os.geteuid() == 0:
            os.chown(where.socket, NOBODY, NOBODY, follow_symlinks=False)
            with pytest.raises(UnsafeState):
                access.socket(where.root)
            os.chown(where.socket, 0, 0, follow_symlinks=False)
        os.chmod(where.run, 0o777)
        with pytest.raises(UnsafeState):
            access.socket(where.root)
    where.socket.unlink()
    where.socket.symlink_to(tmp_path / "elsewhere.sock")
    os.chmod(where.run, 0o700)
    with pytest.raises(UnsafeState):
        access.socket(where.root)


def test_pod_logs_are_read_through_checked_descriptors(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from ipclab.backends.kubernetes import cluster

    where = Layout(tmp_path / "root")
    logs = where.pod_logs / "ns_pod_uid" / "c"
    logs.mkdir(mode=0o755, parents=True)
    os.chmod(where.root, 0o700)
    (logs / "0.log").write_text("first\n")
    (logs / "1.log").write_text("second\n")
    assert access.pod_log(where.root, "ns_pod_uid", "c") == "first\nsecond\n"
    secret = tmp_path / "secret"
    secret.write_text("a key")
    (logs / "2.log").symlink_to(secret)
    with pytest.raises(UnsafeState):
        access.pod_log(where.root, "ns_pod_uid", "c")
    found = SimpleNamespace(local=True)
    pod = SimpleNamespace(metadata=SimpleNamespace(name="pod", uid="uid"))
    original = layout.ROOT
    try:
        layout.ROOT = where.root
        assert cluster._log_files(found, "ns", pod, "c") == ""  # type: ignore[arg-type]
    finally:
        layout.ROOT = original
    with pytest.raises(ValueError):
        access.pod_log(where.root, "..", "c")


def _planted_state(root: Path, victim: int) -> None:
    st = state.State("1:1.00", "starting", processes={"etcd": state.Started(victim, 0.0)})
    (root / "state.json").write_text(json.dumps(st.to_json()))


def test_a_planted_state_file_is_never_acted_on(
    shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``nobody`` plants a root with a state file of a dead harness's half start naming a
    process; the harness's sweep, status and down refuse it, and the process lives."""
    if why := attacker_k8s.why_not():
        pytest.skip(why)
    import subprocess
    import sys

    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    root = shared / "ipclab-k8s-0"
    st = state.State("1:1.00", "starting", processes={"etcd": state.Started(victim.pid, 0.0)})
    plant = (
        "import os\n"
        f"os.mkdir({str(root)!r}, 0o755)\n"
        f"open({str(root / 'state.json')!r}, 'w').write({json.dumps(st.to_json())!r})\n"
        "print('{}')\n"
    )
    try:
        attacker_k8s.probe(plant)
        where = Layout(root)
        assert state.read(where) is None
        assert node.sweep_stale(print, root) == []
        healthy, lines = node.status(root)
        assert not healthy and lines[0].startswith("refused:"), lines
        with pytest.raises(UnsafeState):
            node.down(root)
        assert victim.poll() is None and (root / "state.json").exists()
    finally:
        victim.kill()
        victim.wait()


def test_a_state_file_not_this_users_alone_is_no_state(tmp_path: Path) -> None:
    where = Layout(tmp_path / "root")
    where.root.mkdir(mode=0o700)
    state.write(where, state.State(orphans.this_harness(), "starting"))
    assert state.read(where) is not None
    os.chmod(where.state_file, 0o666)
    assert state.read(where) is None
    os.chmod(where.state_file, 0o600)
    os.chmod(where.root, 0o775)
    assert state.read(where) is None


def test_open_private_follows_no_link_and_trusts_no_shared_folder(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True, mode=0o700)
    os.chmod(root, 0o700)
    (root / "a" / "f").write_text("x")
    os.close(open_private(root, "a/f", "t", "r"))
    (root / "b").symlink_to(root / "a")
    with pytest.raises(UnsafeState):
        open_private(root, "b/f", "t", "r")
    os.chmod(root / "a", 0o770)
    with pytest.raises(UnsafeState):
        open_private(root, "a/f", "t", "r")
    os.chmod(root / "a", 0o700)
    open_dir = tmp_path / "open"
    (open_dir / "root").mkdir(parents=True, mode=0o700)
    os.chmod(open_dir, 0o777)  # writable by others, not sticky: the root could be swapped
    with pytest.raises(UnsafeState, match="may be changed by users other than"):
        check_private(open_dir / "root", "t", "r")
    os.chmod(open_dir, 0o1777)  # sticky, as /tmp: fine
    assert check_private(open_dir / "root", "t", "r") == open_dir / "root"


# --- 2. etcd: mutual TLS with its own authority ------------------------------------------


def _cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_etcd_is_started_with_mutual_tls_on_both_ports(tmp_path: Path) -> None:
    where = Layout(tmp_path / "root")
    files = pki.make(tmp_path / "pki")
    argv = dict(a.partition("=")[::2] for a in components.etcd(where, files).argv[1:])
    assert argv["--listen-client-url"] == f"https://{LOOPBACK}:{PORTS['etcd']}"
    assert argv["--listen-peer-url"] == f"https://{LOOPBACK}:{PORTS['etcd-peer']}"
    assert argv["--cert-file"] == str(files.etcd_server_cert)
    assert argv["--key-file"] == str(files.etcd_server_key)
    assert argv["--trusted-ca-file"] == str(files.etcd_ca)
    assert components.etcd(where, files).ready == f"https://{LOOPBACK}:{PORTS['etcd']}/health"
    api = dict(a.partition("=")[::2] for a in components.apiserver(where, files).argv[1:])
    assert api["--etcd-servers"] == f"https://{LOOPBACK}:{PORTS['etcd']}"
    assert api["--etcd-cafile"] == str(files.etcd_ca)
    assert api["--etcd-certfile"] == str(files.etcd_client_cert)
    assert api["--etcd-keyfile"] == str(files.etcd_client_key)
    every = " ".join(a for c in components.all_components(where, files) for a in c.argv)
    assert "http://" not in every


def test_etcds_authority_signs_only_its_server_and_the_api_servers_client(
    tmp_path: Path,
) -> None:
    files = pki.make(tmp_path / "pki")
    etcd_ca, cluster_ca = _cert(files.etcd_ca), _cert(files.ca)
    assert etcd_ca.subject != cluster_ca.subject
    server, client = _cert(files.etcd_server_cert), _cert(files.etcd_client_cert)
    server.verify_directly_issued_by(etcd_ca)
    client.verify_directly_issued_by(etcd_ca)
    usage = server.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert set(usage) == {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
    sans = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {str(i) for i in sans.get_values_for_type(x509.IPAddress)} == {LOOPBACK}
    assert client.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == (
        "kube-apiserver-etcd-client"
    )
    usage = client.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    for other in (files.admin_cert, files.apiserver_cert):  # the cluster's are not etcd's
        with pytest.raises((ValueError, TypeError, InvalidSignature)):
            _cert(other).verify_directly_issued_by(etcd_ca)
    for key in (files.etcd_server_key, files.etcd_client_key):
        assert stat.S_IMODE(key.stat().st_mode) == 0o600


def test_the_health_check_asks_etcd_with_its_client_certificate(tmp_path: Path) -> None:
    files = pki.make(tmp_path / "pki")
    context = readiness._context(files, f"https://{LOOPBACK}:{PORTS['etcd']}/health")
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    (ca,) = context.get_ca_certs()
    assert dict(x[0] for x in ca["subject"])["commonName"] == "ipclab-etcd-ca"


# --- 3. sysctls, with and without a record -------------------------------------------------


def _proc(tmp_path: Path, values: dict[str, str]) -> Path:
    for name, value in values.items():
        path = sysctls.sysctl_path(name, tmp_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value + "\n")
    return tmp_path


def test_without_any_record_the_clusters_sysctls_go_back_to_the_documented_defaults(
    tmp_path: Path,
) -> None:
    proc = _proc(tmp_path, {**sysctls.CLUSTER_SETS, "kernel.panic": "10"})
    done = sysctls.restore(None, proc, keep_forwarding=False)
    assert sysctls.read(sysctls.CLUSTER_SETS, proc) == sysctls.DEFAULTS
    assert any(d.startswith("net.ipv4.conf.all.route_localnet 1 -> 0") for d in done), done
    # ip_forward stays on while docker needs it; a value the cluster does not set stays
    proc = _proc(tmp_path, {**sysctls.CLUSTER_SETS, "kernel.panic": "1"})
    sysctls.restore(None, proc, keep_forwarding=True)
    now = sysctls.read(sysctls.CLUSTER_SETS, proc)
    assert now["net.ipv4.ip_forward"] == "1" and now["kernel.panic"] == "1"
    assert now["net.ipv4.conf.all.route_localnet"] == "0" and now["vm.overcommit_memory"] == "0"


def test_the_host_record_outlives_the_root_and_belongs_to_one_boot(tmp_path: Path) -> None:
    folder = tmp_path / "run" / "ipclab-k8s-0"
    first = sysctls.keep({"kernel.panic": "1"}, ["CNI-FORWARD"], folder)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / sysctls.RECORD_FILE).stat().st_mode) == 0o600
    again = sysctls.keep({"kernel.panic": "10"}, [], folder)  # a second up: the host's own
    assert again == first and again.sysctls == {"kernel.panic": "1"}
    assert sysctls.load(folder, boot="another boot") is None
    os.chmod(folder, 0o777)
    assert sysctls.load(folder) is None  # a record others could have written: none
    os.chmod(folder, 0o700)
    sysctls.drop(folder)
    assert sysctls.load(folder) is None and not folder.exists()


def test_down_without_a_state_file_or_root_restores_the_sysctls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``down --force`` after /tmp was cleaned: no root, no state file, no host record; the
    cluster's values go back to the defaults (before: 'left as is')."""
    proc = _proc(tmp_path / "proc", dict(sysctls.CLUSTER_SETS))
    monkeypatch.setattr(sysctls, "PROC_SYS", proc)
    monkeypatch.setattr(sysctls, "RECORD_DIR", tmp_path / "no-record")
    monkeypatch.setattr(sysctls, "forwarding_needed", lambda: False)
    monkeypatch.setattr(teardown, "stop_processes", lambda *a: None)
    monkeypatch.setattr(teardown, "undo_host", lambda *a: ([], []))
    said: list[str] = []
    problems = teardown.teardown(Layout(tmp_path / "gone"), None, said.append, force=True)
    assert problems == []
    assert sysctls.read(sysctls.CLUSTER_SETS, proc) == sysctls.DEFAULTS, said


def test_down_restores_the_host_records_values_when_the_state_file_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc = _proc(tmp_path / "proc", dict(sysctls.CLUSTER_SETS))
    monkeypatch.setattr(sysctls, "PROC_SYS", proc)
    monkeypatch.setattr(sysctls, "RECORD_DIR", tmp_path / "record")
    monkeypatch.setattr(teardown, "stop_processes", lambda *a: None)
    monkeypatch.setattr(teardown, "undo_host", lambda *a: ([], []))
    before = {**sysctls.DEFAULTS, "kernel.panic": "1", "net.ipv4.ip_forward": "1"}
    sysctls.keep(before, [])
    assert teardown.evidence(Layout(tmp_path / "gone"))  # the record is evidence
    assert teardown.teardown(Layout(tmp_path / "gone"), None, print) == []
    assert sysctls.read(sysctls.CLUSTER_SETS, proc) == before
    assert sysctls.load() is None  # everything back: the record is gone


# --- 7. the firewall: only what is the cluster's; the guard --------------------------------

_PODMAN_AND_OURS = """\
-P FORWARD DROP
-N CNI-ADMIN
-N CNI-FORWARD
-N DOCKER-USER
-N IPCLAB-K8S-CNI-ADMIN
-N KUBE-FORWARD
-A FORWARD -m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD
-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
-A FORWARD -j DOCKER-USER
-A CNI-FORWARD -m comment --comment "CNI firewall plugin admin overrides" -j IPCLAB-K8S-CNI-ADMIN
-A CNI-FORWARD -m comment --comment "CNI firewall plugin admin overrides" -j CNI-ADMIN
-A CNI-FORWARD -d 10.88.0.5/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
-A CNI-FORWARD -s 10.88.0.5/32 -j ACCEPT
-A CNI-FORWARD -d 10.244.0.7/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
-A CNI-FORWARD -s 10.244.0.7/32 -j ACCEPT
-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP
"""


def test_down_leaves_another_runtimes_cni_chains_and_rules() -> None:
    """podman's pod (10.88.0.5) in the shared CNI-FORWARD: only our pod's rules, our admin
    chain and kube-proxy's chain go; CNI-FORWARD, CNI-ADMIN and podman's rules stay."""
    plan = firewall.cleanup_plan(_PODMAN_AND_OURS)
    deleted = [" ".join(c) for c in plan]
    assert "-X CNI-FORWARD" not in deleted and "-X CNI-ADMIN" not in deleted
    assert "-X IPCLAB-K8S-CNI-ADMIN" in deleted and "-X KUBE-FORWARD" in deleted
    assert not any("10.88.0.5" in d for d in deleted)
    assert sum("10.244.0.7" in d for d in deleted) == 2
    assert not any("DOCKER" in d for d in deleted)


def test_down_removes_the_shared_chains_only_when_nothing_else_is_in_them() -> None:
    ours_alone = "\n".join(
        line for line in _PODMAN_AND_OURS.splitlines() if "10.88.0.5" not in line
    )
    deleted = [" ".join(c) for c in firewall.cleanup_plan(ours_alone)]
    assert "-X CNI-FORWARD" in deleted and "-X CNI-ADMIN" in deleted
    assert any(d.startswith("-D FORWARD") and d.endswith("-j CNI-FORWARD") for d in deleted)
    kept = [" ".join(c) for c in firewall.cleanup_plan(ours_alone, keep=["CNI-FORWARD"])]
    assert "-X CNI-FORWARD" not in kept  # there before the first up: left, empty of ours
    assert "-X CNI-ADMIN" not in kept  # still jumped to from CNI-FORWARD
    assert sum("10.244.0.7" in d for d in kept) == 2


def test_the_guard_drops_what_does_not_come_from_the_host_or_the_pods() -> None:
    install = firewall.guard_commands("-P PREROUTING ACCEPT\n")
    assert install[0] == ["-N", "IPCLAB-K8S-GUARD"]
    assert install[-1][:3] == ["-I", "PREROUTING", "1"]
    rules = [" ".join(c) for c in firewall.guard_rules()]
    assert rules == [
        "-A IPCLAB-K8S-GUARD -i lo -j RETURN",
        "-A IPCLAB-K8S-GUARD -i ipclab0 -j RETURN",
        "-A IPCLAB-K8S-GUARD -i ipclabn+ -j RETURN",  # the extra nodes' links (nodes)
        "-A IPCLAB-K8S-GUARD -d 10.96.0.0/16 -j DROP",
        "-A IPCLAB-K8S-GUARD -d 10.244.0.0/16 -j DROP",
        "-A IPCLAB-K8S-GUARD -d 127.0.0.0/8 -j DROP",
    ]
    installed = "\n".join(
        [
            "-P PREROUTING ACCEPT",
            "-N IPCLAB-K8S-GUARD",
            '-A PREROUTING -m comment --comment "ipclab: only the host and the pods reach '
            'the cluster" -j IPCLAB-K8S-GUARD',
            *rules,
        ]
    )
    assert firewall.guarded(installed)
    again = firewall.guard_commands(installed)
    assert again[0] == ["-F", "IPCLAB-K8S-GUARD"] and again[-1][0] == "-A"  # no second jump
    removed = [" ".join(c) for c in firewall.cleanup_plan(installed)]
    assert removed[0].startswith("-D PREROUTING") and removed[-1] == "-X IPCLAB-K8S-GUARD"


# --- 6. confinement ------------------------------------------------------------------------


def test_containers_get_the_runtimes_default_seccomp_and_apparmor_where_there_is_one(
    tmp_path: Path,
) -> None:
    where = Layout(tmp_path / "root")
    assert config.kubelet_config(where, pki.Pki(tmp_path))["seccompDefault"] is True
    import tomllib

    for apparmor in (True, False):
        doc = tomllib.loads(config.containerd_toml(where, apparmor=apparmor))
        cri = doc["plugins"]["io.containerd.grpc.v1.cri"]
        assert cri["disable_apparmor"] is (not apparmor)
    enabled = tmp_path / "enabled"
    enabled.write_text("N\n")
    assert not config.apparmor_available(enabled)
    assert not config.apparmor_available(tmp_path / "none")
