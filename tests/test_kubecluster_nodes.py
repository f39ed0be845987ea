"""The local cluster's extra nodes (``ipclab cluster up --nodes N``; docs/kubernetes.md,
"Several nodes"): the files and commands of a node as pure functions, and, when
``IPCLAB_K8S_TEST=1`` asks for it (root; about two minutes), a real two-node cluster: both
nodes Ready, a pod on each (one placed by an ``ipclab.role`` label), calls across the nodes
both ways (to the pod and to its Service), then nothing left after ``down`` and after a
kill -9 of the harness mid-start."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import NameOID

from ipclab.kubecluster import firewall, host, nodes, pki, sysctls
from ipclab.kubecluster.layout import ROLE_LABEL, Layout

IMAGE = "ipclab-base:bookworm"  # python3, the project's base image
NS = "ipclab-nodes-test"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> pki.Pki:
    folder = tmp_path_factory.mktemp("pki") / "pki"
    return pki.make(folder, ["10.245.2.1"], ["ipclab-node-2"])


def test_a_cluster_has_one_to_three_nodes(tmp_path: Path) -> None:
    assert nodes.extra_nodes(tmp_path, 1) == []
    names = [n.name for n in nodes.extra_nodes(tmp_path, 3)]
    assert names == ["ipclab-node-2", "ipclab-node-3"]
    for bad in (0, 4):
        with pytest.raises(ValueError):
            nodes.extra_nodes(tmp_path, bad)


def test_each_node_has_its_own_addresses_pods_and_cgroups(tmp_path: Path) -> None:
    two, three = nodes.extra_nodes(tmp_path, 3)
    assert (two.ip, two.host_ip, two.pod_subnet) == ("10.245.2.2", "10.245.2.1", "10.244.1.0/24")
    assert three.pod_subnet == "10.244.2.0/24" and three.link == "ipclabn3"
    assert two.layout.root == tmp_path / "nodes" / "2" and two.cgroup_root == "/ipclab-node-2"


def _subject(path: Path) -> tuple[str, str]:
    name = x509.load_pem_x509_certificate(path.read_bytes()).subject
    cn = name.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
    orgs = name.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    return str(cn), str(orgs[0].value) if orgs else ""


def test_a_node_is_a_real_node_and_its_proxy_a_real_proxy(files: pki.Pki) -> None:
    node = _subject(files.node_cert("ipclab-node-2"))
    assert node == ("system:node:ipclab-node-2", "system:nodes")
    assert _subject(files.proxy_cert) == ("system:kube-proxy", "")
    assert files.node_key("ipclab-node-2").stat().st_mode & 0o077 == 0
    server = x509.load_pem_x509_certificate(files.apiserver_cert.read_bytes())
    names = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "10.245.2.1" in [str(ip) for ip in names.get_values_for_type(x509.IPAddress)]


def test_a_nodes_files_name_its_identity_address_and_subnet(tmp_path: Path, files: pki.Pki) -> None:
    (node,) = nodes.extra_nodes(tmp_path, 2)
    nodes.write_files(node, files)
    kubelet = yaml.safe_load(node.layout.kubelet_yaml.read_text())
    assert kubelet["address"] == node.ip and kubelet["cgroupRoot"] == "/ipclab-node-2"
    config = yaml.safe_load(node.kubelet_kubeconfig.read_text())
    assert config["clusters"][0]["cluster"]["server"] == "https://10.245.2.1:6443"
    user = config["users"][0]["user"]
    assert user["client-certificate"] == str(files.node_cert(node.name))
    proxy = yaml.safe_load(node.layout.kube_proxy_yaml.read_text())
    assert proxy["hostnameOverride"] == node.name
    conflist = json.loads((node.layout.cni_conf_dir / "10-ipclab.conflist").read_text())
    ranges = conflist["plugins"][0]["ipam"]["ranges"]
    assert ranges == [[{"subnet": "10.244.1.0/24", "gateway": "10.244.1.1"}]]


def test_a_nodes_processes_run_in_its_namespace_and_are_the_clusters(tmp_path: Path) -> None:
    from ipclab.kubecluster import state

    (node,) = nodes.extra_nodes(tmp_path, 2)
    for c in nodes.components(node, tmp_path / "bin", "/usr/bin/containerd"):
        assert c.argv[:3] == ("/usr/bin/nsenter", "--net=/run/netns/ipclab-k8s-node-2", "--")
        assert state.is_ours(list(c.argv[3:]), os.getuid(), tmp_path)


def test_the_host_forwards_the_nodes_links_and_dnats_only_their_api_traffic(
    tmp_path: Path,
) -> None:
    two, three = nodes.extra_nodes(tmp_path, 3)
    commands = nodes.firewall_commands([two, three])
    assert all(c[3] == nodes.CHAIN or c[3] in ("FORWARD", "PREROUTING") for c in commands)
    dnat = [c for c in commands if "DNAT" in c]
    assert [c[c.index("-i") + 1] for c in dnat] == ["ipclabn2", "ipclabn3"]
    assert all(c[-1] == "127.0.0.1:6443" for c in dnat)
    guard = ["-A", firewall.GUARD_CHAIN, "-i", "ipclabn+", "-j", "RETURN"]
    assert firewall.guard_rules()[2] == guard
    routes = nodes.link_commands(two)
    assert ["ip", "route", "add", "10.244.1.0/24", "via", "10.245.2.2", "dev", "ipclabn2"] in routes


def test_the_extra_nodes_cgroup_trees_are_removed_too(tmp_path: Path) -> None:
    (tmp_path / "memory" / "ipclab-node-2" / "kubepods" / "pod1").mkdir(parents=True)
    found = host.kubepods_cgroups(tmp_path)
    assert found[-1] == tmp_path / "memory" / "ipclab-node-2"
    assert host.remove_cgroups(tmp_path) == []
    assert not (tmp_path / "memory" / "ipclab-node-2").exists()


# --- the real cluster -------------------------------------------------------------------------


def _why_not_start() -> str | None:
    from ipclab.kubecluster import build, node

    if os.environ.get("IPCLAB_K8S_TEST") != "1":
        return "set IPCLAB_K8S_TEST=1 to start a real two-node cluster (about two minutes; root)"
    if problems := node.preflight(Layout(Path("/tmp/none"))):
        return "; ".join(problems)
    try:
        build.binaries(False)
    except build.NotBuilt as e:
        return str(e)
    return None


def _left(root: Path) -> list[str]:
    """What of a cluster under ``root`` is still on the host (empty: nothing)."""
    from ipclab.kubecluster import state

    left = [f"namespace {ns}" for ns in nodes.namespaces()]
    links = os.listdir("/sys/class/net")
    left += [f"link {x}" for x in links if x.startswith((nodes.LINK_PREFIX, "ipclab0"))]
    rules = subprocess.run(["iptables-save"], capture_output=True, text=True).stdout
    left += [f"rule {r}" for r in rules.splitlines() if "IPCLAB" in r or "KUBE-" in r]
    routes = subprocess.run(["ip", "route"], capture_output=True, text=True).stdout
    left += [f"route {r}" for r in routes.splitlines() if "10.244." in r or "10.245." in r]
    mounts = host.mounts_under(root, Path("/proc/self/mountinfo").read_text())
    left += [f"mount {m}" for m in mounts]
    left += [f"process {p.pid}" for p in state.processes(root)]
    left += [f"cgroup {c}" for c in host.kubepods_cgroups()]
    return left + ([f"root {root}"] if root.exists() else [])


def _pod(name: str, selector: dict[str, str], command: list[str]) -> dict[str, Any]:
    container = {"name": "main", "image": IMAGE, "imagePullPolicy": "Never", "command": command}
    spec = {"nodeSelector": selector, "containers": [container], "restartPolicy": "Never"}
    spec["dnsPolicy"] = "Default"
    return {"metadata": {"name": name, "labels": {"app": name}}, "spec": spec}


SERVE = ["python3", "-m", "http.server", "8080"]
CALL = (
    "import sys, urllib.request as u\n"
    "for url in sys.argv[1:]:\n"
    "    for attempt in range(30):\n"
    "        try:\n"
    "            u.urlopen(url, timeout=3).read(); print('ok', url); break\n"
    "        except OSError as e:\n"
    "            import time; print(url, e); time.sleep(1)\n"
    "    else:\n"
    "        sys.exit(1)\n"
)


def _wait(api: Any, name: str, phases: tuple[str, ...], timeout: float = 120.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pod = api.read_namespaced_pod(name, NS)
        if pod.status.phase in phases:
            return pod
        time.sleep(1.0)
    raise AssertionError(f"pod {name} not {phases} in {timeout} s: {pod.status}")


def _serve(api: Any, name: str, selector: dict[str, str]) -> tuple[str, str]:
    """A server pod on the selected node and its Service; (pod IP, ClusterIP)."""
    api.create_namespaced_pod(NS, _pod(name, selector, SERVE))
    service = {
        "metadata": {"name": name},
        "spec": {"selector": {"app": name}, "ports": [{"port": 80, "targetPort": 8080}]},
    }
    cluster_ip = api.create_namespaced_service(NS, service).spec.cluster_ip
    pod = _wait(api, name, ("Running",))
    return pod.status.pod_ip, cluster_ip


def _calls_across_nodes(root: Path) -> None:
    from kubernetes import client, config

    config.load_kube_config(str(Layout(root).kubeconfig))
    api = client.CoreV1Api()
    ready = {n.metadata.name for n in api.list_node().items if _ready(n)}
    assert ready == {"ipclab-node", "ipclab-node-2"}
    api.patch_node("ipclab-node-2", {"metadata": {"labels": {ROLE_LABEL: "far"}}})
    api.create_namespace({"metadata": {"name": NS}})
    one = _serve(api, "one", {"kubernetes.io/hostname": "ipclab-node"})
    two = _serve(api, "two", {ROLE_LABEL: "far"})
    assert one[0].startswith("10.244.0.") and two[0].startswith("10.244.1.")
    urls = {  # each node's client calls the other node's pod and its Service
        "from-1": ({"kubernetes.io/hostname": "ipclab-node"}, two),
        "from-2": ({ROLE_LABEL: "far"}, one),
    }
    for name, (selector, (pod_ip, cluster_ip)) in urls.items():
        targets = [f"http://{pod_ip}:8080/", f"http://{cluster_ip}/"]
        api.create_namespaced_pod(NS, _pod(name, selector, ["python3", "-c", CALL, *targets]))
    for name in urls:
        pod = _wait(api, name, ("Succeeded", "Failed"))
        log = api.read_namespaced_pod_log(name, NS) if name == "from-2" else ""
        assert pod.status.phase == "Succeeded", f"{name}: {log}"
    placed = {p.metadata.name: p.spec.node_name for p in api.list_namespaced_pod(NS).items}
    assert placed == {
        "one": "ipclab-node",
        "two": "ipclab-node-2",
        "from-1": "ipclab-node",
        "from-2": "ipclab-node-2",
    }


def _ready(node: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])


@pytest.mark.slow
def test_two_nodes_call_each_other_and_leave_nothing(tmp_path: Path) -> None:
    from ipclab.kubecluster import node

    if why := _why_not_start():
        pytest.skip(why)
    root = Path("/tmp") / f"ipclab-k8s-nodes-{os.getpid()}"
    before = sysctls.read()
    try:
        node.up(root, extra_images=[IMAGE], node_count=2)
        _calls_across_nodes(root)
    finally:
        problems = node.down(root)
    assert problems == []
    assert _left(root) == []
    assert sysctls.read() == before


@pytest.mark.slow
def test_a_killed_start_of_two_nodes_is_swept_away(tmp_path: Path) -> None:
    from ipclab.kubecluster import node

    if why := _why_not_start():
        pytest.skip(why)
    root = Path("/tmp") / f"ipclab-k8s-nodes-k-{os.getpid()}"
    env = {**os.environ, "IPCLAB_K8S_ROOT": str(root)}
    argv = [sys.executable, "-m", "ipclab.cli", "cluster", "up", "--nodes", "2"]
    starting = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        kubelet = root / "logs" / "ipclab-node-2" / "kubelet.log"
        while not kubelet.exists() and time.monotonic() < deadline:  # node 2 half started
            time.sleep(0.2)
        assert kubelet.exists(), "node 2's kubelet never started"
    finally:
        os.killpg(starting.pid, signal.SIGKILL)
        starting.wait()
    assert nodes.namespaces() == ["ipclab-k8s-node-2"]
    assert node.sweep_stale(say=lambda _: None, root=root)
    assert _left(root) == []


def test_a_nodes_cgroup_root_weighs_as_node_1s_pods_and_may_hold_processes(
    tmp_path: Path,
) -> None:
    for hierarchy, files in {
        "cpu": {"cpu.shares": "1024"},
        "cpuset": {"cpuset.cpus": "0-1"},
    }.items():
        (tmp_path / hierarchy).mkdir()
        (tmp_path / hierarchy / "cgroup.procs").write_text("")
        for name, value in files.items():
            (tmp_path / hierarchy / name).write_text(value)
    (tmp_path / "cpu" / "ipclab-node-2").mkdir()  # the kernel makes a cgroup's files
    (tmp_path / "cpu" / "ipclab-node-2" / "cpu.shares").write_text("1024")
    (tmp_path / "cpuset" / "ipclab-node-2").mkdir()
    (tmp_path / "cpuset" / "ipclab-node-2" / "cpuset.cpus").write_text("\n")
    (node,) = nodes.extra_nodes(tmp_path, 2)
    nodes.make_cgroups(node, tmp_path)
    shares = (tmp_path / "cpu" / "ipclab-node-2" / "cpu.shares").read_text()
    assert shares == str(nodes.node_cpu_shares()) and nodes.node_cpu_shares(2) == 2048
    assert (tmp_path / "cpuset" / "ipclab-node-2" / "cpuset.cpus").read_text() == "0-1"
