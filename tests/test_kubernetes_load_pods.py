"""Locust's master and workers as pods (``--workers N`` on the kubernetes backend:
``ipclab.backends.kubernetes.loadpods``, ``ipclab.load.podmaster``; docs/distributed.md):
the pods' manifests, the master's file server and the load runner's pod path without a
cluster; and, when ``IPCLAB_K8S_TEST=1`` asks for it (root; a few minutes), a real run on a
two-node cluster with a worker on each node, then a run on a second ipclab cluster (another
root) reached through nothing but a self-contained kubeconfig, its images imported under a
registry's names as a user pushes them to one."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from ipclab.backends.kubernetes import loadpods
from ipclab.backends.kubernetes.manifests import COMPONENT_LABEL, ROLE_LABEL
from ipclab.load import podmaster
from ipclab.paths import REPO_ROOT

LABELS = {"ipclab.owned": "1", "ipclab.project": "ipclab-shop-rest-abc123"}


def _pod(role: str, placed: bool = False, **kw: Any) -> dict[str, Any]:
    name = loadpods.MASTER if role == loadpods.MASTER else loadpods.worker_name(1)
    env = {"IPCLAB_LOAD_SEED": "1001", "IPCLAB_THINK_TIME_S": "0"}
    return loadpods.pod(
        name, role, ["python", "-m", "locust"], env, image="ipclab-locust:abc", labels=LABELS,
        aliases={"gateway": "10.96.0.20", "reviews": "10.96.0.21"}, placed=placed, **kw,
    )  # fmt: skip


def test_workers_spread_over_the_nodes_and_are_never_restarted() -> None:
    worker = _pod("loadgen-worker")
    spec = worker["spec"]
    (spread,) = spec["topologySpreadConstraints"]
    assert spread["topologyKey"] == "kubernetes.io/hostname" and spread["maxSkew"] == 1
    assert spread["whenUnsatisfiable"] == "DoNotSchedule"
    assert spread["labelSelector"]["matchLabels"] == worker["metadata"]["labels"]
    assert worker["metadata"]["labels"][COMPONENT_LABEL] == "loadgen-worker"
    assert spec["restartPolicy"] == "Never" and "nodeSelector" not in spec
    assert spec["hostAliases"][0] == {"ip": "10.96.0.20", "hostnames": ["gateway"]}
    (container,) = spec["containers"]
    assert container["imagePullPolicy"] == "Never"
    assert container["env"][0] == {"name": "IPCLAB_LOAD_SEED", "value": "1001"}
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert container["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
    assert spec["automountServiceAccountToken"] is False


def test_the_load_goes_to_nodes_labelled_for_it_and_pulls_from_a_registry_elsewhere() -> None:
    worker = _pod("loadgen-worker", placed=True, pull_policy="IfNotPresent", apparmor=True)
    assert worker["spec"]["nodeSelector"] == {ROLE_LABEL: loadpods.LOAD_ROLE}
    assert worker["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert worker["spec"]["securityContext"]["appArmorProfile"] == {"type": "RuntimeDefault"}


def test_the_master_keeps_the_runs_files_and_serves_them_on_a_nodeport() -> None:
    master = _pod(loadpods.MASTER)
    spec = master["spec"]
    assert "topologySpreadConstraints" not in spec
    assert spec["volumes"] == [{"name": "results", "emptyDir": {}}]
    (container,) = spec["containers"]
    assert container["volumeMounts"] == [{"name": "results", "mountPath": loadpods.RESULTS}]
    ports = sorted(p["containerPort"] for p in container["ports"])
    assert ports == [loadpods.MASTER_PORT, loadpods.RESULTS_PORT]
    command = loadpods.master_command(["python", "-m", "locust", "--master"])
    assert command[:5] == ["python", "-m", "ipclab.load.podmaster", "/results", "8089"]
    assert command[5:] == ["--", "python", "-m", "locust", "--master"]
    workers, results = loadpods.services(LABELS)
    assert (workers["spec"]["type"], results["spec"]["type"]) == ("ClusterIP", "NodePort")
    assert workers["spec"]["ports"][0]["port"] == loadpods.MASTER_PORT
    assert results["spec"]["ports"][0]["port"] == loadpods.RESULTS_PORT
    assert results["spec"]["selector"] == {COMPONENT_LABEL: "loadgen", **LABELS}


def test_a_load_pod_gets_the_runs_knobs_and_nothing_else_of_the_harness() -> None:
    env = {"IPCLAB_LOAD_SEED": "1", "HOME": "/root", "PATH": "/usr/bin", "AWS_SECRET": "x"}
    assert loadpods.pod_env(env) == {"IPCLAB_LOAD_SEED": "1"}


def test_the_user_module_is_named_by_its_file_in_the_load_image() -> None:
    path = loadpods.locustfile("ipclab.studies.shafabakhsh.users")
    assert path == "/opt/ipclab/ipclab/studies/shafabakhsh/users.py"
    here = REPO_ROOT / "src" / path.removeprefix(loadpods.IMAGE_ROOT + "/")
    assert here.is_file()


def test_the_load_image_is_built_offline_on_the_services_image() -> None:
    from ipclab.backends.docker.recipes import LOCUST, locust_requirements

    assert (LOCUST.base, LOCUST.network, LOCUST.name) == ("services", "none", "locust")
    assert [r.split("==")[0] for r in locust_requirements()] == ["locust", "pyarrow"]
    assert "ipclab.load.podmaster" in LOCUST.dockerfile.read_text()


# --- the master's file server -------------------------------------------------------------


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, podmaster.Master]]:
    script = (
        "import pathlib, sys, time, signal\n"
        "signal.signal(signal.SIGTERM, lambda *_: sys.exit(3))\n"
        f"out = pathlib.Path({str(tmp_path / 'results')!r})\n"
        "(out / 'requests').mkdir(parents=True, exist_ok=True)\n"
        "(out / 'requests' / 'part-00000.parquet').write_bytes(bytes(range(256)))\n"
        "(out / 'locust_stats.csv').write_text('Type,Name\\n')\n"
        "print('master up', flush=True)\n"
        "time.sleep(60)\n"
    )
    master = podmaster.Master(tmp_path / "results", [sys.executable, "-c", script])
    (tmp_path / "secret.txt").write_text("not for the harness")
    server = ThreadingHTTPServer(("127.0.0.1", 0), podmaster.handler(master))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    master.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", master
    finally:
        master.stop()
        assert master.proc is not None
        master.proc.wait(10)
        server.shutdown()


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return bytes(resp.read())


def test_the_master_serves_its_files_its_status_and_stops_on_request(
    served: tuple[str, podmaster.Master],
) -> None:
    url, master = served
    deadline = time.monotonic() + 20
    while "locust_stats.csv" not in json.loads(_get(url + "/files")):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert json.loads(_get(url + "/status")) == {"exit_code": None}
    files = json.loads(_get(url + "/files"))
    assert files == ["locust.log", "locust_stats.csv", "requests/part-00000.parquet"]
    assert _get(url + "/files/requests/part-00000.parquet") == bytes(range(256))
    for outside in ("/files/../secret.txt", "/files/%2e%2e/secret.txt", "/files/nothing"):
        with pytest.raises(urllib.error.HTTPError) as e:
            _get(url + outside)
        assert e.value.code == 404
    stop = urllib.request.Request(url + "/stop", method="POST")
    urllib.request.urlopen(stop, timeout=5).close()
    assert master.proc is not None and master.proc.wait(10) == 3
    assert json.loads(_get(url + "/status")) == {"exit_code": 3}
    assert b"master up" in _get(url + "/files/locust.log")


# --- the load runner's pod path, with a stand-in for the pods ------------------------------


class FakePods:
    url = "http://10.96.0.20:8000"
    results = "/results"
    master_address = "10.96.0.30:5557"
    master_port = 5557
    image = "ipclab-locust:abc"

    def __init__(self) -> None:
        self.started: dict[str, Any] = {}
        self.polls = 0
        self.collected: Path | None = None

    def locustfile(self, users_module: str) -> str:
        return loadpods.locustfile(users_module)

    def prepare(self) -> None:
        self.started["prepared"] = True

    def start(
        self,
        master: Sequence[str],
        env: Mapping[str, str],
        workers: Sequence[Sequence[str]],
        worker_envs: Sequence[Mapping[str, str]],
    ) -> None:
        self.started.update(master=master, env=env, workers=workers, worker_envs=worker_envs)

    def poll(self) -> int | None:
        self.polls += 1
        return 0 if self.polls > 20 else None

    def worker_exits(self) -> list[int | None]:
        return [None, None]

    def stop(self) -> None:
        raise AssertionError("Locust ended by itself: nothing to stop")

    def nodes(self) -> dict[str, str]:
        return {"loadgen": "n1", "loadgen-worker1": "n1", "loadgen-worker2": "n2"}

    def sample(self) -> list[dict[str, Any]]:
        return [{"t": time.time(), "component": "loadgen-worker1", "kind": "loadgen"}]

    def collect(self, run_dir: Path) -> list[str]:
        self.collected = run_dir
        return []


class FakeStack:
    backend = "kubernetes"
    gateway_url = "http://127.0.0.1:30001"

    def __init__(self, pods: FakePods) -> None:
        from ipclab.stacks import resolve

        self.spec = resolve("shop-rest")
        self.pods = pods

    def sample(self) -> list[dict[str, Any]]:
        return []

    def load_env(self) -> dict[str, str]:
        return {}

    def load_host(self) -> None:
        return None

    def load_pods(self) -> FakePods:
        return self.pods


def test_a_run_puts_locust_in_the_stacks_pods_and_collects_its_files(tmp_path: Path) -> None:
    from ipclab.backends import StackOptions
    from ipclab.load.runner import LoadProfile, run_on
    from ipclab.runs import RunWriter

    pods = FakePods()
    writer = RunWriter(tmp_path / "run", "load", {}, stack="shop-rest", backend="kubernetes")
    profile = LoadProfile(users=4, duration_s=1, seed=7)
    run_on(FakeStack(pods), profile, writer, StackOptions(), workers=2)  # type: ignore[arg-type]
    master = list(pods.started["master"])
    users = loadpods.locustfile("ipclab.studies.shafabakhsh.users")
    assert master[:5] == ["python", "-m", "locust", "-f", users]
    assert master[master.index("--master-bind-host") + 1] == "0.0.0.0"
    assert master[master.index("--host") + 1] == FakePods.url
    assert master[master.index("--csv") + 1] == "/results/locust"
    assert master[master.index("--expect-workers") + 1] == "2"
    assert pods.started["env"]["IPCLAB_REQUESTS_DIR"] == "/results/requests"
    worker = list(pods.started["workers"][0])
    assert worker[worker.index("--master-host") + 1] == "10.96.0.30"
    seeds = [e["IPCLAB_LOAD_SEED"] for e in pods.started["worker_envs"]]
    assert seeds == ["1007", "2007"]
    assert pods.collected == tmp_path / "run"
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["load_generator"]["nodes"]["loadgen-worker2"] == "n2"
    events = [json.loads(x)["event"] for x in (tmp_path / "run" / "events.jsonl").open()]
    assert "load_pods" in events and "load_collected" in events
    resources = (tmp_path / "run" / "resources.csv").read_text()
    assert "loadgen-worker1,loadgen" in resources


# --- a real two-node cluster, then a second cluster by its kubeconfig alone -----------------

REGISTRY = "registry.ipclab.test"  # a registry's name the second cluster holds images under


def _why_not_start() -> str | None:
    if os.environ.get("IPCLAB_K8S_TEST") != "1":
        return "set IPCLAB_K8S_TEST=1 to run a load on real clusters (a few minutes; root)"
    from tests.test_kubecluster_nodes import _why_not_start as cluster_reason

    return cluster_reason()


def _self_contained(kubeconfig: Path, dest: Path) -> Path:
    """A copy of ``kubeconfig`` with its certificates inside (as a cloud hands one out),
    mode 0600 in a folder of this user's: nothing of the cluster's root is named."""
    doc = yaml.safe_load(kubeconfig.read_text())
    for entry, keys in (("clusters", ("certificate-authority",)),
                        ("users", ("client-certificate", "client-key"))):  # fmt: skip
        for item in doc[entry]:
            body = item["cluster" if entry == "clusters" else "user"]
            for key in keys:
                body[f"{key}-data"] = base64.b64encode(Path(body.pop(key)).read_bytes()).decode()
    dest.mkdir(mode=0o700)
    path = dest / "second.kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    path.chmod(0o600)
    return path


def _registry_images(stack: str) -> list[str]:
    """The images a run of ``stack`` with pods asks the second cluster for, tagged under
    the registry's name in docker (what a user pushes): returns the names."""
    from ipclab.backends.docker import images
    from ipclab.backends.docker.recipes import LOCUST
    from ipclab.stacks import resolve

    spec = resolve(stack)
    ids = images.ensure_images(runtime=spec.runtime.name)
    ids["locust"] = images.ensure_recipe(LOCUST, images.SERVICES_IMAGE)
    names = {"services": images.runtime_image(spec.runtime.name), "locust": LOCUST.image}
    out = []
    for kind, image_id in ids.items():
        ref = f"{REGISTRY}/{names[kind].rsplit(':', 1)[0]}:{image_id.removeprefix('sha256:')[:12]}"
        subprocess.run(["docker", "tag", image_id, ref], check=True, capture_output=True)
        out.append(ref)
    return out


def _check_run(run_dir: Path) -> dict[str, Any]:
    summary = json.loads((run_dir / "summary.json").read_text())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert summary["status"] == "complete", summary
    assert summary["requests"] > 0 and summary["failures"] == 0, summary
    assert sorted(p.name for p in run_dir.glob("locust_stats*.csv"))
    assert list((run_dir / "requests").glob("part-*.parquet"))
    assert (run_dir / "logs" / "locust.log").exists()
    assert (run_dir / "logs" / "locust-worker2.log").exists()
    keep = ("requests", "failures", "rps", "loadgen_cpu_percent_by_process")
    print(run_dir.name, {k: summary.get(k) for k in keep}, manifest.get("load_generator"))
    return {"summary": summary, "manifest": manifest}


def _left(root: Path) -> list[str]:
    """What of the cluster under ``root`` is left on the host (the docker backend's guard
    rules, ``IPCLAB-DOCKER``, of stacks running beside the test are not the cluster's)."""
    from tests.test_kubecluster_nodes import _left as left

    return [x for x in left(root) if "IPCLAB-DOCKER" not in x and "ipclab-docker" not in x]


def _load_run(runs: Path, label: str) -> Path:
    from ipclab.backends.kubernetes import cluster
    from ipclab.load.runner import LoadProfile, run

    cluster.unavailable.cache_clear()
    profile = LoadProfile(users=10, spawn_rate=10, duration_s=15)
    return run("shop-rest", profile, backend="kubernetes", workers=2, root=runs, label=label)


@pytest.mark.slow
def test_workers_as_pods_on_two_nodes_then_a_second_cluster_by_kubeconfig(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ipclab.kubecluster import layout, node

    if why := _why_not_start():
        pytest.skip(why)
    for name in ("IPCLAB_KUBECONFIG", "IPCLAB_K8S_REGISTRY", "IPCLAB_K8S_GATEWAY_HOST"):
        monkeypatch.delenv(name, raising=False)
    first = Path("/tmp") / f"ipclab-k8s-load-{os.getpid()}"
    monkeypatch.setattr(layout, "ROOT", first)
    monkeypatch.setenv("IPCLAB_K8S_ROOT", str(first))  # the stack's watchdog's too
    try:
        node.up(first, node_count=2)
        on_two = _check_run(_load_run(tmp_path / "runs", "two-nodes"))
    finally:
        problems = node.down(first)
    assert problems == [] and _left(first) == []
    placed = on_two["manifest"]["load_generator"]["nodes"]
    workers = {placed["loadgen-worker1"], placed["loadgen-worker2"]}
    assert workers == {"ipclab-node", "ipclab-node-2"}, placed
    assert on_two["summary"]["loadgen_cpu_percent_by_process"].keys() >= {"loadgen-worker1"}

    second = Path("/tmp") / f"ipclab-k8s-second-{os.getpid()}"
    absent = tmp_path / "no-local-cluster"  # the first cluster is gone: nothing local to use
    monkeypatch.setattr(layout, "ROOT", absent)
    monkeypatch.setenv("IPCLAB_K8S_ROOT", str(absent))
    tags: list[str] = []
    try:
        tags += _registry_images("shop-rest")
        node.up(second, extra_images=tags, node_count=1)
        kubeconfig = _self_contained(layout.Layout(second).kubeconfig, tmp_path / "kube")
        monkeypatch.setenv("IPCLAB_KUBECONFIG", str(kubeconfig))
        monkeypatch.setenv("IPCLAB_K8S_GATEWAY_HOST", "127.0.0.1")
        monkeypatch.setenv("IPCLAB_K8S_REGISTRY", REGISTRY)
        on_second = _check_run(_load_run(tmp_path / "runs", "second-cluster"))
    finally:
        problems = node.down(second)
        for tag in tags:  # the registry's names were the test's (the images keep theirs)
            subprocess.run(["docker", "rmi", tag], check=False, capture_output=True)
    assert problems == [] and _left(second) == []
    info = on_second["manifest"]["stack_info"]["kubernetes"]
    assert info["ipclab_cluster"] is False
    assert all(ref.startswith(REGISTRY + "/") for ref in info["images"].values())
    assert on_second["manifest"]["load_generator"]["image"].startswith(REGISTRY + "/")
