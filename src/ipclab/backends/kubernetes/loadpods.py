"""Locust's master and workers as pods beside the stack (``ipclab run --backend kubernetes
--workers N``; docs/distributed.md, "Workers as pods").

A load of N workers on the kubernetes backend runs where a load on a real cluster runs: in
the cluster, next to the system. In the stack's namespace:

- the **master**, a pod ``loadgen`` of the load image (``recipes.LOCUST``: the services image
  with Locust, pyarrow and the harness's user modules), running
  ``python -m ipclab.load.podmaster``: Locust's master, headless, writing the run's CSV files
  and request records (``ipclab.load.recorder``: the workers ship theirs to it) into an
  ``emptyDir``, and serving them to the harness (``/status``, ``/files``, ``/stop``);
- a Service ``loadgen-master`` (ClusterIP, Locust's port 5557), which the workers dial by its
  cluster IP (no cluster DNS is needed), and a Service ``loadgen-results`` (NodePort), which
  the harness reaches where it reaches the gateway (``Cluster.gateway_host``): nothing of the
  cluster's nodes, files or kubelets, so the same on any cluster a kubeconfig names;
- the **workers**, pods ``loadgen-worker-<i>``, each with its own load seed (the run's + 1000
  x i, as on the harness's machine), spread over the nodes (a topology spread of at most one
  worker of difference per node: two workers on two nodes run one on each), all on the
  nodes labelled ``ipclab.role=loadgen`` when some node is.

Every load pod reaches the stack's Services by their names (``hostAliases``, as the stack's
own pods), runs unprivileged with the runtime's seccomp profile and no capabilities, and is
never restarted (``restartPolicy: Never``): a worker that ends early is a lost worker. At
the end the harness copies the master's files into the run directory (the same files as a
Locust of its own machine writes) and each worker's log; the namespace's deletion with the
stack removes the pods.
"""

from __future__ import annotations

import contextlib
import json
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from ipclab.backends.docker.compose import CONTAINER_PORT
from ipclab.backends.kubernetes import cluster as clusters
from ipclab.backends.kubernetes import manifests


class KubernetesStack(Protocol):
    """What the load's pods read of the stack they load (``stack.KubernetesStack``; a
    protocol, so that this module and the stack's do not import each other)."""

    options: Any
    cluster: Any
    namespace: str
    cluster_ips: dict[str, str]
    spec: Any
    manifests: Any
    project: str

    def sample_container(self, container_id: str) -> dict[str, Any]: ...


MASTER = "loadgen"  # the master's pod, Services' prefix and resource rows' component
MASTER_PORT = 5557  # Locust's master/worker port
RESULTS_PORT = 8089  # ipclab.load.podmaster's
RESULTS = "/results"  # the master's emptyDir: the run's files
LOAD_ROLE = "loadgen"  # ``ipclab.role=loadgen`` on a node: the load's pods go there
IMAGE_ROOT = "/opt/ipclab"  # where the load image holds the harness's package
START_TIMEOUT_S = 300.0
_POLL_EVERY_S = 0.5


class LoadPodsError(RuntimeError):
    """The load's pods could not start or be read (with the reason)."""


def worker_name(i: int) -> str:
    return f"{MASTER}-worker-{i}"


def component(i: int) -> str:
    """A load pod's component in resources.csv: ``loadgen`` (0), ``loadgen-worker<i>``."""
    return MASTER if i == 0 else f"{MASTER}-worker{i}"


def locustfile(users_module: str) -> str:
    """The stack's Locust user module as a file in the load image."""
    return f"{IMAGE_ROOT}/{users_module.replace('.', '/')}.py"


def pod_env(env: Mapping[str, str]) -> dict[str, str]:
    """What a load pod's environment gets of the load's: the ``IPCLAB_*`` knobs only (never
    the harness's own environment)."""
    return {k: v for k, v in sorted(env.items()) if k.startswith("IPCLAB_")}


def services(labels: Mapping[str, str]) -> list[dict[str, Any]]:
    """The master's Services: Locust's port for the workers (a cluster IP), and the
    results' port for the harness (a NodePort)."""
    selector = {manifests.COMPONENT_LABEL: MASTER, **labels}

    def service(name: str, kind: str, port: int) -> dict[str, Any]:
        ports = [{"name": f"tcp{port}", "port": port, "targetPort": port, "protocol": "TCP"}]
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "labels": dict(labels)},
            "spec": {"type": kind, "selector": selector, "ports": ports},
        }

    return [
        service(f"{MASTER}-master", "ClusterIP", MASTER_PORT),
        service(f"{MASTER}-results", "NodePort", RESULTS_PORT),
    ]


def pod(
    name: str,
    role: str,
    command: Sequence[str],
    env: Mapping[str, str],
    *,
    image: str,
    labels: Mapping[str, str],
    aliases: Mapping[str, str],
    placed: bool = False,
    apparmor: bool = False,
    pull_policy: str = "Never",
) -> dict[str, Any]:
    """A load pod (``role``: ``loadgen`` the master, ``loadgen-worker`` a worker): one
    container running ``command``, never restarted; workers spread over the nodes."""
    selector = {manifests.COMPONENT_LABEL: role, **labels}
    container: dict[str, Any] = {
        "name": name,
        "image": image,
        "imagePullPolicy": pull_policy,
        "command": list(command),
        "env": [{"name": k, "value": v} for k, v in sorted(env.items())],
        "securityContext": {
            "capabilities": {"drop": ["ALL"]},
            "allowPrivilegeEscalation": False,
            "runAsNonRoot": True,
        },
    }
    spec: dict[str, Any] = {
        "containers": [container],
        "restartPolicy": "Never",
        "enableServiceLinks": False,
        "automountServiceAccountToken": False,
        "dnsPolicy": "Default",
        "terminationGracePeriodSeconds": 10,
        "securityContext": manifests.security_context(apparmor),
    }
    if host_aliases := [{"ip": ip, "hostnames": [n]} for n, ip in sorted(aliases.items()) if ip]:
        spec["hostAliases"] = host_aliases
    if placed:
        spec["nodeSelector"] = {manifests.ROLE_LABEL: LOAD_ROLE}
    if role == MASTER:
        container["ports"] = [{"containerPort": p} for p in (MASTER_PORT, RESULTS_PORT)]
        container["volumeMounts"] = [{"name": "results", "mountPath": RESULTS}]
        spec["volumes"] = [{"name": "results", "emptyDir": {}}]
    else:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": selector},
            }
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": selector},
        "spec": spec,
    }


def master_command(locust: Sequence[str]) -> list[str]:
    """The master pod's command: the file server around Locust's master."""
    return ["python", "-m", "ipclab.load.podmaster", RESULTS, str(RESULTS_PORT), "--", *locust]


def load_image(found: clusters.Cluster, build: bool) -> str:
    """The load image (built first when missing or stale), as the cluster runs it: imported
    into ipclab's own cluster, or named in the user's registry (``provide_images``)."""
    from ipclab.backends.docker import images
    from ipclab.backends.docker.recipes import LOCUST

    if build:
        image_id = images.ensure_recipe(LOCUST, images.SERVICES_IMAGE)
    else:
        image_id = images.pinned(LOCUST.image)
    ref = f"{LOCUST.image.rsplit(':', 1)[0]}:{image_id.removeprefix('sha256:')[:12]}"
    return clusters.provide_images(found, {image_id: ref})[image_id]


class PodLoad:
    """A distributed load's pods in a stack's namespace (``RunningStack.load_pods``): made by
    :meth:`prepare` (image, Services) and :meth:`start` (pods), read by :meth:`poll`,
    :meth:`worker_exits`, :meth:`sample`, ended by :meth:`stop`, copied back by
    :meth:`collect`."""

    results = RESULTS
    master_port = MASTER_PORT

    def __init__(self, stack: KubernetesStack, build: bool = True) -> None:
        if stack.options.tls:
            raise LoadPodsError(
                "a --tls stack's authority is not given to the load's pods: run its load "
                "from this machine (--workers 0)"
            )
        self.stack, self.build = stack, build
        self.cluster = stack.cluster
        self.namespace = stack.namespace
        # the gateway as the load's pods reach it: its Service's cluster IP (no DNS needed)
        self.url = f"http://{stack.cluster_ips.get(stack.spec.gateway, '')}:{CONTAINER_PORT}"
        self.master_address = ""
        self.results_url = ""
        self.image = ""
        self.workers = 0
        self._pods: dict[str, Any] = {}  # pod name -> the API's pod, refreshed
        self._read = 0.0
        self._status: int | None = None
        self._polled = 0.0

    def locustfile(self, users_module: str) -> str:
        return locustfile(users_module)

    def prepare(self) -> None:
        """The image in the cluster, the master's Services (their addresses known)."""
        self.image = load_image(self.cluster, self.build)
        labels = self.stack.manifests.labels
        for svc in services(labels):
            made = self.cluster.core.create_namespaced_service(self.namespace, svc)
            if made.spec.type == "NodePort":
                port = made.spec.ports[0].node_port
                self.results_url = f"http://{self.cluster.gateway_host}:{port}"
            else:
                self.master_address = f"{made.spec.cluster_ip}:{MASTER_PORT}"

    def _pod(self, name: str, role: str, command: Sequence[str], env: Mapping[str, str]) -> Any:
        placed = any(
            (n.metadata.labels or {}).get(manifests.ROLE_LABEL) == LOAD_ROLE
            for n in self.cluster.core.list_node().items
        )
        body = pod(
            name, role, command, pod_env(env), image=self.image,
            labels=self.stack.manifests.labels, aliases=self.stack.cluster_ips, placed=placed,
            apparmor=self.stack.manifests.apparmor,
            pull_policy="Never" if self.cluster.local else "IfNotPresent",
        )  # fmt: skip
        return self.cluster.core.create_namespaced_pod(self.namespace, body)

    def start(
        self,
        master: Sequence[str],
        env: Mapping[str, str],
        workers: Sequence[Sequence[str]],
        worker_envs: Sequence[Mapping[str, str]],
    ) -> None:
        """The master's pod, then the workers'; returns once the master serves (Locust
        started) and every worker runs."""
        self._pod(MASTER, MASTER, master_command(master), env)
        self.workers = len(workers)
        for i, (command, worker_env) in enumerate(zip(workers, worker_envs, strict=True), 1):
            self._pod(worker_name(i), f"{MASTER}-worker", command, worker_env)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            self._refresh(force=True)
            if why := self._cannot_start():
                raise LoadPodsError(why)
            running = [p for p in self._pods.values() if p.status.phase == "Running"]
            if len(running) == self.workers + 1 and self._get("/status") is not None:
                return
            time.sleep(0.5)
        raise LoadPodsError(f"the load's pods did not start in {START_TIMEOUT_S:.0f} s: {self}")

    def __str__(self) -> str:
        return ", ".join(f"{n} {p.status.phase}" for n, p in sorted(self._pods.items()))

    def _refresh(self, force: bool = False) -> None:
        if not force and time.monotonic() - self._read < 1.0:
            return
        selector = f"{manifests.PROJECT_LABEL}={self.stack.project}"
        found = self.cluster.core.list_namespaced_pod(self.namespace, label_selector=selector)
        names = {MASTER, *(worker_name(i) for i in range(1, self.workers + 1))}
        self._pods = {p.metadata.name: p for p in found.items if p.metadata.name in names}
        self._read = time.monotonic()

    def _cannot_start(self) -> str | None:
        for name, p in sorted(self._pods.items()):
            for s in p.status.container_statuses or []:
                waiting = s.state.waiting if s.state else None
                if waiting and manifests.cannot_start(waiting.reason, waiting.message):
                    return f"{name}: {waiting.reason}: {waiting.message}"
            if p.status.phase == "Failed" and name == MASTER:
                return f"{name} failed: {p.status.reason or ''} {p.status.message or ''}"
        return None

    def _get(self, path: str, timeout: float = 5.0) -> Any:
        try:
            with urllib.request.urlopen(self.results_url + path, timeout=timeout) as resp:
                return json.loads(resp.read())
        except (OSError, urllib.error.URLError, ValueError):
            return None

    def poll(self) -> int | None:
        """Locust's exit status once the master ended (None while it runs); checked at most
        twice a second. A master pod that ended without an answer: its container's status."""
        if self._status is not None or time.monotonic() - self._polled < _POLL_EVERY_S:
            return self._status
        self._polled = time.monotonic()
        answer = self._get("/status", timeout=2.0)
        if answer is not None:
            self._status = answer.get("exit_code")
            return self._status
        self._refresh()
        master = self._pods.get(MASTER)
        if master is None or master.status.phase in ("Succeeded", "Failed"):
            self._status = _exit_code(master) if master is not None else -1
        return self._status

    def worker_exits(self) -> list[int | None]:
        """Each worker's exit status (None: still running)."""
        self._refresh()
        return [_exit_code(self._pods.get(worker_name(i))) for i in range(1, self.workers + 1)]

    def stop(self, timeout_s: float = 15.0) -> None:
        """End Locust (SIGTERM through the master's server: it flushes its records)."""
        with contextlib.suppress(OSError, urllib.error.URLError):
            request = urllib.request.Request(self.results_url + "/stop", method="POST")
            urllib.request.urlopen(request, timeout=5).close()
        deadline = time.monotonic() + timeout_s
        while self.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)

    def nodes(self) -> dict[str, str]:
        """Each load pod's component -> the node it ran on."""
        self._refresh(force=True)
        names = {MASTER: component(0)}
        names.update({worker_name(i): component(i) for i in range(1, self.workers + 1)})
        return {names[n]: p.spec.node_name for n, p in sorted(self._pods.items())}

    def sample(self) -> list[dict[str, Any]]:
        """One resources.csv row per load pod (kind ``loadgen``): its container's CPU % and
        memory from its cgroup on ipclab's own cluster; the pod alone on another."""
        self._refresh()
        names = {MASTER: component(0)}
        names.update({worker_name(i): component(i) for i in range(1, self.workers + 1)})
        now, rows = time.time(), []
        for name, p in sorted(self._pods.items()):
            status = (p.status.container_statuses or [None])[0]
            running = status is not None and status.state and status.state.running
            row: dict[str, Any] = {"t": now, "component": names[name], "kind": "loadgen",
                                   "container": name, "status": p.status.phase}  # fmt: skip
            if running and self.cluster.local:
                row.update(self.stack.sample_container(status.container_id.split("://")[-1]))
            rows.append(row)
        return rows

    def collect(self, run_dir: Path) -> list[str]:
        """The master's files into ``run_dir`` (Locust's CSV files, ``requests/``, its log as
        ``logs/locust.log``) and each worker's log (``logs/locust-worker<i>.log``); returns
        the files copied."""
        listed = self._get("/files", timeout=10.0) or []
        copied = []
        for rel in listed:
            if rel.startswith("/") or ".." in Path(rel).parts:
                continue
            target = run_dir / ("logs/locust.log" if rel == "locust.log" else rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            url = f"{self.results_url}/files/{rel}"
            with urllib.request.urlopen(url, timeout=30) as resp:
                target.write_bytes(resp.read())
            copied.append(rel)
        self._refresh(force=True)
        logs = clusters.pod_logs(self.cluster, self.namespace, self._pods)
        for i in range(1, self.workers + 1):
            text = logs.get(worker_name(i), "")
            (run_dir / "logs").mkdir(parents=True, exist_ok=True)
            (run_dir / "logs" / f"locust-worker{i}.log").write_text(text)
        return copied


def _exit_code(p: Any) -> int | None:
    """A pod's container's exit status once it ended (None while it runs or waits)."""
    if p is None:
        return -1
    for s in p.status.container_statuses or []:
        if s.state and s.state.terminated:
            return int(s.state.terminated.exit_code)
    return -1 if p.status.phase in ("Succeeded", "Failed") else None
