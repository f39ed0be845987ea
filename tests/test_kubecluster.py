"""The local Kubernetes cluster's assembly (ipclab.kubecluster, docs/kubernetes.md).

The pure parts, in seconds and without root: what the configuration files say (every
listener on loopback, containerd's restrict_oom_score_adj, the CNI firewall plugin), the
certificates (the API server's names, the admin's system:masters), the build cache's key,
the state file, the pause image archive, the host clean-up plans. The real start is
one test, skipped with the reason unless the binaries are built, the machine allows it and
``IPCLAB_K8S_TEST=1`` asks for it (a start takes a minute and changes the host until down).
"""

from __future__ import annotations

import io
import ipaddress
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ipclab import orphans
from ipclab.kubecluster import (
    build,
    components,
    config,
    firewall,
    host,
    images,
    layout,
    pki,
    state,
    sysctls,
)
from ipclab.kubecluster.layout import LOOPBACK, PORTS, Layout


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> pki.Pki:
    return pki.make(tmp_path_factory.mktemp("k8s") / "pki")


@pytest.fixture
def where(tmp_path: Path) -> Layout:
    return Layout(tmp_path / "root")


# --- configuration ------------------------------------------------------------------------


def test_containerd_is_private_and_restricts_oom_score_adj(where: Layout) -> None:
    doc = tomllib.loads(config.containerd_toml(where))
    cri = doc["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["restrict_oom_score_adj"] is True  # no CAP_SYS_RESOURCE on this machine
    assert doc["oom_score"] == 0
    assert cri["sandbox_image"] == "docker.io/library/ipclab-pause:1" == config.PAUSE_REF
    assert cri["stream_server_address"] == LOOPBACK
    assert cri["tolerate_missing_hugetlb_controller"] is True
    runc = cri["containerd"]["runtimes"]["runc"]
    assert runc["runtime_type"] == "io.containerd.runc.v2"
    assert runc["options"]["SystemdCgroup"] is False  # cgroupfs, as the kubelet
    own = [doc["root"], doc["state"], doc["grpc"]["address"], runc["options"]["Root"]]
    own += [cri["cni"]["conf_dir"], doc["plugins"]["io.containerd.internal.v1.opt"]["path"]]
    assert all(Path(p).is_relative_to(where.root) for p in own), own
    assert doc["grpc"]["address"] == str(where.socket)
    assert doc["ttrpc"]["address"] == doc["debug"]["address"] == doc["metrics"]["address"] == ""


def test_the_cni_network_accepts_forwarding_and_stays_on_the_machine(where: Layout) -> None:
    doc = json.loads(config.cni_conflist(where))
    bridge, firewall = doc["plugins"]
    assert firewall == {  # docker's FORWARD DROP; its admin chain named as ours
        "type": "firewall",
        "backend": "iptables",
        "iptablesAdminChainName": "IPCLAB-K8S-CNI-ADMIN",
    }
    assert bridge["type"] == "bridge" and bridge["bridge"] == layout.BRIDGE
    assert bridge["ipMasq"] is False and bridge["hairpinMode"] is True
    (subnet,) = bridge["ipam"]["ranges"][0]
    assert ipaddress.ip_network(subnet["subnet"]).subnet_of(ipaddress.ip_network(layout.POD_CIDR))
    assert Path(bridge["ipam"]["dataDir"]).is_relative_to(where.root)
    assert doc["name"] == layout.CNI_NETWORK


def test_the_kubelet_listens_on_loopback_with_cgroupfs_on_cgroup_v1(
    where: Layout, files: pki.Pki
) -> None:
    doc = yaml.safe_load(config.kubelet_yaml(where, files))
    assert doc["address"] == doc["healthzBindAddress"] == LOOPBACK
    assert doc["readOnlyPort"] == 0
    assert doc["cgroupDriver"] == "cgroupfs" and doc["failCgroupV1"] is False
    assert doc["oomScoreAdj"] == 0 and doc["protectKernelDefaults"] is False
    assert doc["authentication"]["anonymous"]["enabled"] is False
    assert doc["authentication"]["x509"]["clientCAFile"] == str(files.ca)
    assert doc["containerRuntimeEndpoint"] == f"unix://{where.socket}"
    assert doc["clusterDNS"] == [] and doc["imageGCHighThresholdPercent"] == 100
    assert Path(doc["podLogsDir"]).is_relative_to(where.root)


def test_kube_proxy_uses_iptables_on_loopback_and_leaves_conntrack_alone(where: Layout) -> None:
    doc = yaml.safe_load(config.kube_proxy_yaml(where))
    assert doc["mode"] == "iptables"
    assert doc["nodePortAddresses"] == ["127.0.0.1/32"]
    assert doc["healthzBindAddress"].startswith(f"{LOOPBACK}:")
    assert doc["metricsBindAddress"].startswith(f"{LOOPBACK}:")
    conntrack = doc["conntrack"]
    assert conntrack["maxPerCore"] == conntrack["min"] == 0
    assert conntrack["tcpEstablishedTimeout"] == conntrack["tcpCloseWaitTimeout"] == "0s"
    assert doc["clientConnection"]["kubeconfig"] == str(where.kubeconfig)


def test_the_admin_kubeconfig_names_the_loopback_server_and_the_pki_files(
    files: pki.Pki,
) -> None:
    doc = yaml.safe_load(config.admin_kubeconfig(files))
    (cluster,) = doc["clusters"]
    assert cluster["cluster"]["server"] == f"https://{LOOPBACK}:{PORTS['kube-apiserver']}"
    assert cluster["cluster"]["certificate-authority"] == str(files.ca)
    (user,) = doc["users"]
    assert user["user"] == {
        "client-certificate": str(files.admin_cert),
        "client-key": str(files.admin_key),
    }
    assert doc["current-context"] == doc["contexts"][0]["name"]


def test_write_all_writes_private_files_under_the_root(where: Layout, files: pki.Pki) -> None:
    config.write_all(where, files)
    written = [where.containerd_toml, where.kubelet_yaml, where.kube_proxy_yaml, where.kubeconfig]
    written.append(where.cni_conf_dir / config.CONFLIST)
    for path in written:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_the_kubeconfig_is_the_local_one_unless_overridden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(layout.KUBECONFIG_ENV, raising=False)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "production"))  # never read
    assert layout.kubeconfig(tmp_path) == tmp_path / "admin.kubeconfig"
    assert "make k8s-cluster" in (layout.why_no_cluster(tmp_path) or "")
    other = tmp_path / "aks.kubeconfig"
    monkeypatch.setenv(layout.KUBECONFIG_ENV, str(other))
    assert layout.kubeconfig(tmp_path) == other
    assert "not a file" in (layout.why_no_cluster(tmp_path) or "")
    other.write_text("apiVersion: v1\n")
    assert layout.why_no_cluster(tmp_path) is None


# --- command lines ------------------------------------------------------------------------


def _address_values(argv: tuple[str, ...]) -> list[str]:
    """The values of every flag that sets an address to listen on or advertise."""
    out = []
    for arg in argv:
        name, _, value = arg.partition("=")
        if any(w in name for w in ("bind-address", "listen-", "advertise-address")):
            out.append(value.split("://")[-1].rsplit(":", 1)[0])
    return out


def test_every_component_listens_on_loopback_and_is_ready_on_loopback(
    where: Layout, files: pki.Pki
) -> None:
    every = components.all_components(where, files, advertise=LOOPBACK)
    assert tuple(c.name for c in every) == state.COMPONENTS
    for c in every:
        assert set(_address_values(c.argv)) <= {LOOPBACK}, c.argv
        assert c.ready.startswith(f"unix:{where.root}/") or f"://{LOOPBACK}:" in c.ready
        # every process names the root: that is how down recognises it (state.is_ours)
        assert state.is_ours(list(c.argv), os.getuid(), where.root), c.name
    api = {a.partition("=")[0]: a.partition("=")[2] for a in every[2].argv[1:]}
    assert api["--anonymous-auth"] == "false" and api["--profiling"] == "false"
    assert api["--endpoint-reconciler-type"] == "none"
    assert api["--client-ca-file"] == str(files.ca)


def test_the_node_binary_is_linked_under_each_component_name(tmp_path: Path) -> None:
    where = Layout(tmp_path)
    binary = tmp_path / "ipclab-k8s"
    binary.write_text("")
    components.link_binary(where, binary)
    components.link_binary(where, binary)  # again: replaced, not an error
    assert sorted(p.name for p in where.bin.iterdir()) == sorted(components.NODE_COMPONENTS)
    assert all(os.readlink(p) == str(binary) for p in where.bin.iterdir())


# --- PKI ----------------------------------------------------------------------------------


def _cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_the_apiserver_certificate_names_every_way_it_is_reached(files: pki.Pki) -> None:
    cert = _cert(files.apiserver_cert)
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(sans.get_values_for_type(x509.DNSName)) == {
        "localhost",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
    }
    ips = {str(i) for i in sans.get_values_for_type(x509.IPAddress)}
    assert ips == {LOOPBACK, layout.API_SERVICE_IP}
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.SERVER_AUTH]
    cert.verify_directly_issued_by(_cert(files.ca))


def test_the_admin_is_in_system_masters_and_a_client_only(files: pki.Pki) -> None:
    cert = _cert(files.admin_cert)
    orgs = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    assert orgs == ["system:masters"]
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "ipclab-admin"
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    cert.verify_directly_issued_by(_cert(files.ca))


def test_keys_are_private_and_the_authority_key_is_not_kept(files: pki.Pki) -> None:
    for key in files.key_files():
        assert stat.S_IMODE(key.stat().st_mode) == 0o600, key
    assert stat.S_IMODE(files.directory.stat().st_mode) == 0o700
    assert sorted(p.name for p in files.directory.iterdir()) == sorted(
        ["ca.crt", "apiserver.crt", "apiserver.key", "admin.crt", "admin.key", "sa.key", "sa.pub",
         "etcd-ca.crt", "etcd-server.crt", "etcd-server.key",
         "apiserver-etcd-client.crt", "apiserver-etcd-client.key"]
    )  # fmt: skip
    ca = _cert(files.ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca


def test_an_advertise_address_is_added_to_the_serving_certificate(tmp_path: Path) -> None:
    made = pki.make(tmp_path / "pki", extra_ips=["192.0.2.2"])
    sans = _cert(made.apiserver_cert).extensions.get_extension_for_class(
        x509.SubjectAlternativeName
    )
    assert "192.0.2.2" in {str(i) for i in sans.value.get_values_for_type(x509.IPAddress)}


# --- build cache --------------------------------------------------------------------------


def _module(tmp_path: Path) -> Path:
    module = tmp_path / "node"
    module.mkdir()
    shutil.copy(build.NODE_MODULE / "go.mod", module / "go.mod")
    (module / "main.go").write_text("package main\n\nfunc main() {}\n")
    return module


def test_the_build_hash_follows_the_go_sources_and_nothing_else(tmp_path: Path) -> None:
    module = _module(tmp_path)
    target = build.node_target(module)
    first = build.sources_hash(target)
    (module / "README.md").write_text("not a source")
    assert build.sources_hash(target) == first
    (module / "main.go").write_text("package main\n\nfunc main() { println() }\n")
    changed = build.sources_hash(target)
    assert changed != first
    (module / "go.sum").write_text("example.com/x v1.0.0 h1:x=\n")
    assert build.sources_hash(target) != changed
    assert (
        build.cached(target, tmp_path / "cache")
        == tmp_path / "cache" / build.sources_hash(target) / "ipclab-k8s"
    )


def test_the_build_flags_are_part_of_the_key(tmp_path: Path) -> None:
    module = _module(tmp_path)
    plain = build.Target(module, "ipclab-k8s")
    tagged = build.Target(module, "ipclab-k8s", tags="providerless")
    assert build.sources_hash(plain) != build.sources_hash(tagged)


def test_the_version_is_stamped_from_go_mod() -> None:
    text = (build.NODE_MODULE / "go.mod").read_text()
    assert build.kubernetes_version(text) == "v1.34.4"
    flags = build.version_ldflags("v1.34.4")
    assert "-X k8s.io/component-base/version.gitVersion=v1.34.4" in flags
    assert "-X k8s.io/client-go/pkg/version.gitMinor=34" in flags
    args = build.node_target().go_build_args(Path("/out"))
    assert args[:3] == ["build", "-p", "1"] and "providerless" in args
    with pytest.raises(ValueError):
        build.kubernetes_version("module x\n")


def test_tidy_is_needed_only_for_a_module_with_requirements_and_no_go_sum(
    tmp_path: Path,
) -> None:
    module = _module(tmp_path)
    assert build.needs_tidy(module)
    (module / "go.sum").write_text("")
    assert not build.needs_tidy(module)
    assert not build.needs_tidy(build.PAUSE_MODULE)  # no requirements: no go.sum ever


# --- state and ownership ------------------------------------------------------------------


def test_the_state_file_round_trips_and_is_private(where: Layout) -> None:
    where.root.mkdir()
    st = state.State(orphans.this_harness(), "starting", "/bin/ipclab-k8s", {"kernel.panic": "0"})
    st.processes["etcd"] = state.Started.of(os.getpid())
    st.steps["etcd"] = 1.25
    state.write(where, st)
    assert stat.S_IMODE(where.state_file.stat().st_mode) == 0o600
    again = state.read(where)
    assert again == st
    assert again is not None and again.processes["etcd"].process() is not None


def test_a_bad_or_linked_state_file_is_no_state(where: Layout, tmp_path: Path) -> None:
    where.root.mkdir()
    assert state.read(where) is None
    where.state_file.write_text('{"owner": "1:2", "phase": "exploded"}')
    assert state.read(where) is None
    elsewhere = tmp_path / "planted.json"
    elsewhere.write_text(json.dumps(state.State("1:2", "up").to_json()))
    where.state_file.unlink()
    where.state_file.symlink_to(elsewhere)
    assert state.read(where) is None


def test_a_process_is_ours_only_by_program_and_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    me = os.getuid()
    assert state.is_ours([str(root / "bin/kubelet"), f"--config={root}/config/k.yaml"], me, root)
    shim = ["/usr/bin/containerd-shim-runc-v2", "-address", f"{root}/run/containerd.sock"]
    assert state.is_ours(shim, me, root)
    assert not state.is_ours(["/usr/bin/less", f"{root}/logs/kubelet.log"], me, root)
    assert not state.is_ours(["/usr/bin/containerd", "--config", "/etc/containerd.toml"], me, root)
    assert not state.is_ours([str(root / "bin/kubelet"), f"--config={root}x/k"], me, root)
    assert not state.is_ours(shim, me + 1, root)


def test_a_dead_owners_recorded_pid_is_not_taken_for_another_process() -> None:
    gone = state.Started(os.getpid(), 1.0)  # this pid, another start time
    assert gone.process() is None


# --- images -------------------------------------------------------------------------------


def test_image_names_normalise_as_containerd_spells_them() -> None:
    assert images.normalized("ipclab-pause:1") == "docker.io/library/ipclab-pause:1"
    assert images.normalized("ipclab-services") == "docker.io/library/ipclab-services:latest"
    assert images.normalized("user/app:2") == "docker.io/user/app:2"
    assert images.normalized("registry.example:5000/a/b") == "registry.example:5000/a/b:latest"
    assert images.normalized("localhost/x@sha256:ab") == "localhost/x@sha256:ab"


def test_the_pause_archive_is_a_reproducible_docker_archive() -> None:
    archive = images.pause_archive(b"\x7fELF pause")
    assert archive == images.pause_archive(b"\x7fELF pause")
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        (manifest,) = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
        assert manifest["RepoTags"] == ["ipclab-pause:1"]
        config_bytes = tar.extractfile(manifest["Config"]).read()  # type: ignore[union-attr]
        (layer_name,) = manifest["Layers"]
        layer = tar.extractfile(layer_name).read()  # type: ignore[union-attr]
    image = json.loads(config_bytes)
    assert image["config"]["Entrypoint"] == ["/pause"]  # CRI refuses a sandbox image without
    assert image["os"] == "linux" and image["architecture"] == "amd64"
    import hashlib

    assert image["rootfs"]["diff_ids"] == [f"sha256:{hashlib.sha256(layer).hexdigest()}"]
    assert manifest["Config"] == f"{hashlib.sha256(config_bytes).hexdigest()}.json"
    with tarfile.open(fileobj=io.BytesIO(layer)) as tar:
        (member,) = tar.getmembers()
        assert member.name == "pause" and member.mode == 0o755 and member.uid == 0
        assert tar.extractfile(member).read() == b"\x7fELF pause"  # type: ignore[union-attr]


def test_the_image_list_is_read_by_its_first_and_last_columns() -> None:
    text = (
        "REF TYPE DIGEST SIZE PLATFORMS LABELS\n"
        "docker.io/library/ipclab-pause:1 application/vnd.docker.distribution.manifest.v2+json "
        "sha256:ab 1.2 MiB linux/amd64 -\n"
        "docker.io/library/ipclab-services:latest application/vnd.oci.image.manifest.v1+json "
        "sha256:cd 95.0 MiB linux/amd64 "
        "io.cri-containerd.image=managed,ipclab.docker-id=sha256:ef\n"
    )
    listed = images.parse_image_list(text)
    assert listed["docker.io/library/ipclab-pause:1"] == {}
    assert listed["docker.io/library/ipclab-services:latest"][images.DOCKER_ID_LABEL] == "sha256:ef"


# --- the host -----------------------------------------------------------------------------


_CNI_JUMP = '-A FORWARD -m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD'
_KUBE_JUMP = (
    "-A FORWARD -m conntrack --ctstate NEW -m comment --comment "
    '"kubernetes service portals" -j KUBE-SERVICES'
)


def test_the_cni_jump_goes_after_kube_proxys_so_a_service_without_endpoints_refuses() -> None:
    """As this machine first had it: the plugin's jump first, so a pod's connection to a
    Service with no endpoints was accepted there, routed away and timed out (130 s)."""
    cni_first = "\n".join(["-P FORWARD DROP", "-N CNI-FORWARD", _CNI_JUMP, _KUBE_JUMP])
    jump = [
        "FORWARD",
        "-m",
        "comment",
        "--comment",
        "CNI firewall plugin rules",
        "-j",
        "CNI-FORWARD",
    ]
    assert firewall.forward_order_commands(cni_first) == [["-D", *jump], ["-A", *jump]]
    # before any pod: no chain and no jump yet, so both are made, the jump after kube-proxy's
    fresh = "\n".join(["-P FORWARD DROP", _KUBE_JUMP])
    assert firewall.forward_order_commands(fresh) == [["-N", "CNI-FORWARD"], ["-A", *jump]]
    # already in order, or kube-proxy not there yet: nothing to do
    in_order = "\n".join(["-N CNI-FORWARD", _KUBE_JUMP, _CNI_JUMP])
    assert firewall.forward_order_commands(in_order) == []
    assert firewall.forward_order_commands("\n".join(["-N CNI-FORWARD", _CNI_JUMP])) == []
    assert firewall.kube_proxy_forwards(fresh) and not firewall.kube_proxy_forwards(_CNI_JUMP)


def test_the_iptables_plan_removes_only_our_chains_and_the_jumps_to_them() -> None:
    rules = "\n".join(
        [
            "-P FORWARD DROP",
            "-N CNI-FORWARD",
            "-N DOCKER",
            "-N KUBE-FORWARD",
            '-A FORWARD -m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD',
            "-A FORWARD -j DOCKER-USER",
            '-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD',
            "-A CNI-FORWARD -s 10.244.0.5/32 -j ACCEPT",
            "-A DOCKER -d 172.17.0.2/32 -j ACCEPT",
        ]
    )
    plan = firewall.cleanup_plan(rules)
    assert plan == [
        ["-D", "FORWARD", "-m", "comment", "--comment", "CNI firewall plugin rules", "-j",
         "CNI-FORWARD"],
        ["-D", "FORWARD", "-m", "comment", "--comment", "kubernetes forwarding rules", "-j",
         "KUBE-FORWARD"],
        ["-F", "CNI-FORWARD"],
        ["-F", "KUBE-FORWARD"],
        ["-X", "CNI-FORWARD"],
        ["-X", "KUBE-FORWARD"],
    ]  # fmt: skip
    assert not any("DOCKER" in word for command in plan for word in command)


def test_mounts_under_the_root_come_deepest_first_and_unescaped(tmp_path: Path) -> None:
    root = tmp_path / "root"
    info = "\n".join(
        [
            f"30 1 0:5 / {root}/kubelet rw shared:1 - none none rw",
            f"31 30 0:6 / {root}/kubelet/pods/a/volumes/x rw - tmpfs tmpfs rw",
            f"32 1 0:7 / {root}/run/containerd/task/k8s.io/b/rootfs rw - overlay overlay rw",
            f"33 1 0:8 / {root}x/other rw - tmpfs tmpfs rw",
            f"34 1 0:9 / {root}/pod\\040logs rw - tmpfs tmpfs rw",
            f"35 1 0:10 / {root} rw - tmpfs tmpfs rw",
        ]
    )  # fmt: skip
    found = host.mounts_under(root, info)
    assert found[0].endswith("/k8s.io/b/rootfs")
    assert found.index(f"{root}/kubelet/pods/a/volumes/x") < found.index(f"{root}/kubelet")
    assert f"{root}/pod logs" in found
    assert f"{root}x/other" not in found and str(root) not in found


def test_sysctls_are_recorded_and_only_changed_ones_restored(tmp_path: Path) -> None:
    for name, value in {"vm.overcommit_memory": "0", "kernel.panic": "0"}.items():
        path = sysctls.sysctl_path(name, tmp_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value + "\n")
    recorded = sysctls.read(("vm.overcommit_memory", "kernel.panic", "no.such"), tmp_path)
    assert recorded == {"vm.overcommit_memory": "0", "kernel.panic": "0"}
    sysctls.sysctl_path("vm.overcommit_memory", tmp_path).write_text("1\n")  # as the kubelet
    restored = sysctls.restore(recorded, tmp_path, keep_forwarding=False)
    assert restored == ["vm.overcommit_memory 1 -> 0"]
    assert sysctls.sysctl_path("vm.overcommit_memory", tmp_path).read_text() == "0\n"
    assert sysctls.restore(recorded, tmp_path, keep_forwarding=False) == []


def test_the_kubelets_cgroups_are_removed_children_first(tmp_path: Path) -> None:
    for hierarchy in ("memory", "cpu"):
        (tmp_path / hierarchy / "kubepods" / "besteffort" / "pod1" / "c1").mkdir(parents=True)
    (tmp_path / "memory" / "docker").mkdir()
    found = host.kubepods_cgroups(tmp_path)
    assert found[0].name == "c1" and found[-1].name == "kubepods"
    assert host.remove_cgroups(tmp_path) == []
    assert sorted(p.name for p in (tmp_path / "memory").iterdir()) == ["docker"]


def test_a_killed_shims_socket_is_found_from_its_command_line(tmp_path: Path) -> None:
    import hashlib

    shim = ["/usr/bin/containerd-shim-runc-v2", "-namespace", "k8s.io", "-id", "abc"]
    shim += ["-address", "/tmp/r/run/containerd.sock"]
    want = hashlib.sha256(b"/tmp/r/run/containerd.sock/k8s.io/abc").hexdigest()
    assert host.shim_socket(shim, tmp_path) == tmp_path / want
    assert host.shim_socket(shim[:3], tmp_path) is None


def test_teardown_of_a_root_with_no_trace_of_a_cluster_touches_nothing_else(
    tmp_path: Path,
) -> None:
    from ipclab.kubecluster.teardown import evidence, teardown

    where = Layout(tmp_path / "root")
    (where.root / "logs").mkdir(parents=True)
    if Path("/sys/class/net", layout.BRIDGE).exists() or evidence(where):
        pytest.skip("a local cluster's bridge or processes are here: not a clean host")
    said: list[str] = []
    assert teardown(where, None, said.append) == []
    assert not where.root.exists() and said == []


# --- ownership after a kill ---------------------------------------------------------------


def test_sweep_runs_registered_sweepers_once_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(orphans.psutil, "process_iter", lambda *a, **k: iter(()))
    monkeypatch.setattr(orphans.tempfile, "gettempdir", lambda: str(tmp_path))
    monkeypatch.setattr(orphans, "_sweepers", [])
    monkeypatch.setattr(orphans, "BUILTIN_SWEEPERS", ())
    calls: list[str] = []

    def sweeper(say: object) -> list[str]:
        calls.append("ran")
        return ["the thing"]

    orphans.register(sweeper)
    orphans.register(sweeper)
    said: list[str] = []
    assert orphans.sweep(said.append) == ["the thing"] and calls == ["ran"]
    assert "the thing" in said[0]


def test_every_sweep_runs_the_clusters_sweeper_without_the_package_imported() -> None:
    """Issue 48: it was registered only when ``ipclab.kubecluster`` was imported, so a run
    of the docker or local backend never swept a cluster a killed ``up`` left half done."""
    probe = (
        "import sys; from ipclab import orphans; "
        "assert 'ipclab.kubecluster' not in sys.modules; "
        "print([f'{s.__module__}.{s.__name__}' for s in orphans.sweepers()])"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert "ipclab.kubecluster.sweep" in done.stdout


def test_a_cluster_that_is_up_or_whose_harness_lives_is_never_swept(where: Layout) -> None:
    from ipclab.kubecluster.node import sweep_stale

    where.root.mkdir(mode=0o700)
    state.write(where, state.State("1:1.00", "up"))  # its starter is long gone: still kept
    assert sweep_stale(print, where.root) == []
    state.write(where, state.State(orphans.this_harness(), "starting"))  # being started now
    assert sweep_stale(print, where.root) == []
    assert where.state_file.exists()


# --- the real cluster ---------------------------------------------------------------------


def _why_not_start(where: Layout) -> str | None:
    from ipclab.kubecluster.node import preflight

    if os.environ.get("IPCLAB_K8S_TEST") != "1":
        return "set IPCLAB_K8S_TEST=1 to start the real cluster (about a minute; root)"
    try:
        build.binaries(build_missing=False)
    except (build.NotBuilt, ValueError) as e:
        return str(e)
    problems = preflight(where)
    return "; ".join(problems) if problems else None


@pytest.mark.slow
def test_the_local_cluster_starts_runs_a_node_and_leaves_nothing(tmp_path: Path) -> None:
    """To be filled at the first start: up on a fresh root, the node Ready, status healthy,
    then down: no process, bridge, chain, mount or root left, the sysctls as before."""
    from ipclab.kubecluster import node, readiness, teardown

    where = Layout(Path("/tmp") / f"ipclab-k8s-test-{os.getpid()}")
    if why := _why_not_start(where):
        pytest.skip(why)
    before = sysctls.read()
    try:
        node.up(where.root)
        healthy, lines = node.status(where.root)
        assert healthy, "\n".join(lines)
        assert readiness.node_ready(where.root)
        listed = subprocess.run(["iptables", "-w", "-S"], capture_output=True, text=True)
        assert firewall.kube_proxy_forwards(listed.stdout)
        assert firewall.forward_order_commands(listed.stdout) == []  # CNI's jump after kube's
    finally:
        problems = node.down(where.root)
    assert problems == []
    assert not teardown.evidence(where) and not where.root.exists()
    assert sysctls.read() == before
