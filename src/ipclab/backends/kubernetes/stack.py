"""The kubernetes backend: start a stack as Deployments and Services in a namespace of its
own, wait until the gateway answers, sample, kill, restart, log and remove it.

The objects come from the stack's compose document (``manifests``: one declaration for
compose, swarm and Kubernetes); the images are the docker backend's builds, pinned by id and
imported into ipclab's own cluster (``ipclab.kubecluster``) under a tag naming the id, or
pulled from ``$IPCLAB_K8S_REGISTRY`` on another cluster. The gateway's Service is a NodePort
the load generator reaches on this machine's loopback (ipclab's cluster) or at
``$IPCLAB_K8S_GATEWAY_HOST``. Everything lives in the stack's namespace, so removing it is
deleting the namespace; a watchdog deletes it when the harness dies (``ownership``).

What this backend does not do (refused at start, with the reason): a network delay (the
NFQUEUE delayer runs in a container's network namespace, which a pod's is not to the
harness on another cluster), a CPU set (the kubelet's static CPU manager would be needed),
and a stack whose load generator runs in a load host (the AcmeAir stacks).
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from ipclab import infrastructure, orphans
from ipclab.availability.recovery import ready_events
from ipclab.backends.base import RunningStack, StackOptions
from ipclab.backends.docker.compose import (
    CONTAINER_PORT,
    compose_document,
    image_variables,
    resolved_services,
    write_logins,
)
from ipclab.backends.kubernetes import cluster as clusters
from ipclab.backends.kubernetes import manifests, ownership, restarts
from ipclab.backends.kubernetes.sampling import CgroupSampler, pids
from ipclab.kubecluster.config import apparmor_available
from ipclab.stacks import StackSpec
from ipclab.tls import make as make_tls

POD_READY_TIMEOUT_S = 300.0
#: a killed container's restart: the kubelet's back-off reaches 160 s at the fifth restart
#: of one container within 10 min (10 s doubling; docs/availability.md, "On Kubernetes")
RESTART_TIMEOUT_S = 330.0
READY_LINE_WAIT_S = 30.0  # a restarted role's ready line after its pod is Ready


class KubernetesStackError(RuntimeError):
    def __init__(self, message: str, logs: dict[str, str] | None = None):
        super().__init__(message)
        self.logs = logs or {}


def _refused(spec: StackSpec, options: StackOptions) -> str | None:
    if options.delay_ms > 0:
        return "a network delay on the kubernetes backend: not supported (use docker)"
    if options.cpuset:
        return "a CPU set on the kubernetes backend: not supported (the kubelet places pods)"
    if options.tls and (why := spec.tls_unavailable(options.tls_edge)):
        return why
    return None


class KubernetesBackend:
    """Start stacks on a cluster (see the module docstring)."""

    name = "kubernetes"

    def __init__(self, build: bool = True, health_timeout_s: float = POD_READY_TIMEOUT_S):
        self.build = build
        self.health_timeout_s = health_timeout_s

    def start(
        self,
        spec: StackSpec,
        options: StackOptions,
        logs_dir: Path | None = None,
        detached: bool = False,
    ) -> KubernetesStack:
        if why := _refused(spec, options):
            raise ValueError(why)
        found = clusters.connect()
        ids, images = _cluster_images(found, spec, self.build)
        ownership.sweep(found.core)  # what a killed harness left, saying so
        orphans.sweep()  # and its workdirs (the stack's files), saying so
        stack = KubernetesStack(found, spec, options, ids, images, logs_dir, detached)
        stack.build = self.build  # the load image too (``load_pods``)
        try:
            stack.up(self.health_timeout_s)
        except BaseException as e:
            logs = stack.logs()
            stack.stop()
            if isinstance(e, Exception) and not isinstance(e, KubernetesStackError):
                raise KubernetesStackError(f"{spec.name} did not start: {e}", logs) from e
            if isinstance(e, KubernetesStackError):
                e.logs = e.logs or logs
            raise
        return stack


def _cluster_images(
    found: clusters.Cluster, spec: StackSpec, build: bool
) -> tuple[dict[str, str], dict[str, str]]:
    """The docker backend's builds (made if missing), by kind (``services``, ``broker``, ...:
    their ids), and id -> the reference the cluster runs it by: imported into ipclab's
    cluster, or named in the user's registry."""
    from ipclab.backends.docker import images

    infra = images.infrastructure_recipes(spec.infrastructure)
    if build:
        ids = images.ensure_images(runtime=spec.runtime.name, infrastructure=infra)
    else:
        ids = images.pinned_images(spec.runtime.name, infra)
    if spec.adapter_runtime is not None:
        ids["adapters"] = images.ensure_java_image() if build else images.pinned(images.JAVA_IMAGE)
    names = {
        "services": images.runtime_image(spec.runtime.name),
        "adapters": images.JAVA_IMAGE,
        **{recipe.name: recipe.image for recipe in infra},
    }
    refs = {
        image_id: f"{names[kind].rsplit(':', 1)[0]}:{image_id.removeprefix('sha256:')[:12]}"
        for kind, image_id in ids.items()
    }
    return ids, clusters.provide_images(found, refs)


class KubernetesStack(RunningStack):
    """A stack in its namespace (implements ``RunningStack``)."""

    backend = "kubernetes"

    def __init__(
        self,
        found: clusters.Cluster,
        spec: StackSpec,
        options: StackOptions,
        ids: dict[str, str],
        images: dict[str, str],
        logs_dir: Path | None = None,
        detached: bool = False,
    ) -> None:
        self.cluster = found
        self.ids = ids
        self.spec = spec
        self.options = options
        self.images = images
        self.logs_dir = logs_dir
        self.detached = detached
        self.project = f"ipclab-{spec.name}-{secrets.token_hex(3)}"
        self.namespace = manifests.object_name(self.project)
        self._tmp = Path(tempfile.mkdtemp(prefix=f"{self.project}-"))
        if not detached:
            orphans.mark_workdir(self._tmp)
        self.tls = None
        if options.tls:  # a new authority per start, into the stack's Secrets
            hosts = (*spec.roles, *(p.component for p in infrastructure.of(spec.infrastructure)))
            self.tls = make_tls(self._tmp / "tls", hosts, spec.name, mounted=True)
        self.manifests = self._manifests()
        self.gateway_url = ""
        self.node_port = 0
        self.cluster_ips: dict[str, str] = {}  # component -> its Service's cluster IP
        self.build = True  # build missing images (the backend's flag)
        self._sampler = CgroupSampler()
        self._pods: dict[str, Any] = {}  # host component -> its pod (the API's object)
        self._killed: dict[str, tuple[str, int]] = {}  # role -> its pod's state when killed
        self._recorded: list[dict[str, Any]] = []  # the kubelet's records of restarts
        self._killed_at: dict[str, float] = {}  # role -> when it was last killed
        self._watchdog: subprocess.Popen[bytes] | None = None
        self._stopped = False
        self._stop_lock = threading.Lock()

    def _manifests(self) -> manifests.Manifests:
        env_file = self._tmp / "stack.env"
        env_file.write_text("".join(f"{k}={v}\n" for k, v in self.options.env().items()))
        logins = write_logins(self.spec, self._tmp, self.options.env())
        tls_dir = self.tls.directory if self.tls else None
        edge = self.options.tls_edge
        doc = compose_document(self.spec, logins=logins, tls_dir=tls_dir, tls_edge=edge)
        variables = {
            "IPCLAB_PROJECT": self.project,
            "IPCLAB_ENV_FILE": str(env_file),
            "IPCLAB_IMAGE": self.ids["services"],
            "IPCLAB_ADAPTER_IMAGE": self.ids.get("adapters", ""),
            **image_variables(self.spec, self.ids),
            "IPCLAB_CPUS": f"{self.options.cpus:g}" if self.options.cpus else "0",
            "IPCLAB_MEM_LIMIT": f"{self.options.memory_mb}m" if self.options.memory_mb else "0",
        }
        services = resolved_services(doc, variables)
        return manifests.build(
            self.spec, services, namespace=self.namespace, project=self.project,
            images=self.images, annotations=ownership.annotations(self.spec.name, self.detached),
            pull_policy="Never" if self.cluster.local else "IfNotPresent",
            apparmor=self.cluster.local and apparmor_available(),
        )  # fmt: skip

    # ----------------------------------------------------------------- start

    def up(self, timeout_s: float) -> None:
        core, apps = self.cluster.core, self.cluster.apps
        core.create_namespace(self.manifests.namespace)
        if not self.detached:
            self._watchdog = ownership.start_watchdog(self.namespace)
        _wait_service_account(core, self.namespace)
        for secret in self.manifests.secrets:
            core.create_namespaced_secret(self.namespace, secret)
        ips = {}
        for svc in self.manifests.services:
            made = core.create_namespaced_service(self.namespace, svc)
            ips[self._component_of(made.metadata.name)] = made.spec.cluster_ip
            for port in made.spec.ports:
                if port.node_port and port.port == CONTAINER_PORT and port.protocol == "TCP":
                    self.node_port = int(port.node_port)
        self.cluster_ips = dict(ips)
        labelled = {
            (n.metadata.labels or {}).get(manifests.ROLE_LABEL) for n in core.list_node().items
        }
        for deployment in self.manifests.deployments(ips, labelled - {None}):
            apps.create_namespaced_deployment(self.namespace, deployment)
        scheme = "https" if self.options.tls else "http"
        self.gateway_url = f"{scheme}://{self.cluster.gateway_host}:{self.node_port}"
        self._wait_ready(timeout_s)

    def _component_of(self, object_name: str) -> str:
        for component in self.manifests.pods:
            if manifests.object_name(component) == object_name:
                return component
        return object_name

    def _wait_ready(self, timeout_s: float) -> None:
        """Every pod running and ready, then the gateway's /healthz answering 200."""
        deadline = time.monotonic() + timeout_s
        last = "no answer"
        while time.monotonic() < deadline:
            self._refresh_pods()
            if why := self._failed_pod():
                raise KubernetesStackError(why)
            try:
                with urllib.request.urlopen(self.gateway_url + "/healthz", timeout=2) as resp:
                    if resp.status == 200 and self._all_ready():
                        return
                    last = f"HTTP {resp.status}"
            except urllib.error.HTTPError as e:
                last = f"HTTP {e.code}"
            except (OSError, urllib.error.URLError) as e:
                last = f"{type(e).__name__}: {e}"
            time.sleep(0.5)
        raise KubernetesStackError(
            f"gateway not healthy after {timeout_s:.0f}s at {self.gateway_url} ({last}); "
            f"pods: {self._pod_states()}"
        )

    def _refresh_pods(self) -> None:
        pods = self.cluster.core.list_namespaced_pod(self.namespace).items
        by = {}
        for p in pods:
            comp = (p.metadata.labels or {}).get(manifests.COMPONENT_LABEL)
            if comp and p.metadata.deletion_timestamp is None:
                by[self._component_of(comp)] = p
        self._pods = by

    def _all_ready(self) -> bool:
        if set(self._pods) != set(self.manifests.pods):
            return False
        return all(
            all(s.ready for s in (p.status.container_statuses or []))
            and p.status.phase == "Running"
            for p in self._pods.values()
        )

    def _failed_pod(self) -> str | None:
        """A pod that cannot start (an image the cluster lacks, a bad spec): why."""
        for comp, p in self._pods.items():
            for s in p.status.container_statuses or []:
                waiting = s.state.waiting if s.state else None
                if waiting and manifests.cannot_start(waiting.reason, waiting.message):
                    return f"{comp}: {waiting.reason}: {waiting.message}"
        return None

    def _pod_states(self) -> str:
        return ", ".join(f"{c} {p.status.phase}" for c, p in sorted(self._pods.items())) or "none"

    # ----------------------------------------------------------------- RunningStack

    def _containers(self) -> list[tuple[str, str, str]]:
        """(component, pod, container id) of every container (no id: not running)."""
        members = {
            manifests.object_name(m): m for pod in self.manifests.pods.values() for m in pod.members
        }
        out = []
        for _, p in sorted(self._pods.items()):
            for s in p.status.container_statuses or []:
                cid = (s.container_id or "").split("://")[-1] if s.state and s.state.running else ""
                out.append((members.get(s.name, s.name), p.metadata.name, cid))
        return out

    def sample(self) -> list[dict[str, Any]]:
        """One row per container: CPU % and memory from its cgroup (ipclab's cluster)."""
        now = time.time()
        with contextlib.suppress(Exception):
            self._refresh_pods()
        rows = []
        for comp, pod, cid in self._containers():
            status = "running" if cid else "not running"
            row: dict[str, Any] = {
                "t": now, "component": comp, "kind": "container", "container": pod, "status": status
            }  # fmt: skip
            if cid and self.cluster.local:
                row.update(self._sampler.sample(cid))
            rows.append(row)
        return rows

    def sample_container(self, container_id: str) -> dict[str, Any]:
        """CPU % and memory of one container of this cluster by its id (ipclab's cluster)."""
        return self._sampler.sample(container_id) if self.cluster.local else {}

    def container_status(self, role: str) -> Any:
        """The kubelet's status of ``role``'s container, read now (a ``V1ContainerStatus``;
        None: its pod has none yet). A study's memory runs read it (``podmemory``)."""
        self._refresh_pods()
        host = next((c for c, pod in self.manifests.pods.items() if role in pod.members), role)
        p = self._pods.get(host)
        name = manifests.object_name(role)
        statuses = (p.status.container_statuses or []) if p is not None else []
        return next((s for s in statuses if s.name == name), None)

    def memory_cgroup(self, container_id: str) -> Path | None:
        """The memory cgroup folder of one container of this cluster (ipclab's cluster: the
        sampler's, ``sampling.find_cgroups``; None elsewhere or when not found)."""
        if not self.cluster.local or not container_id:
            return None
        return self._sampler.folders(container_id).get("memory")

    def load_pods(self) -> Any:
        """A distributed load runs as pods in the stack's namespace (``loadpods``)."""
        from ipclab.backends.kubernetes.loadpods import PodLoad

        return PodLoad(self, self.build)

    def kill(self, role: str) -> None:
        """SIGKILL every process of the role's container (ipclab's cluster: its cgroup), or
        delete its pod at once (another cluster); the cluster starts it again."""
        self._refresh_pods()
        ids = [cid for comp, _, cid in self._containers() if comp == role and cid]
        host = next((c for c, pod in self.manifests.pods.items() if role in pod.members), None)
        if host is None:
            known = sorted(m for pod in self.manifests.pods.values() for m in pod.members)
            raise ValueError(f"unknown component {role!r}; components: {', '.join(known)}")
        self._killed[role] = self._restarts(host)
        self._killed_at[role] = time.time()
        if self.cluster.local and ids:
            import os
            import signal

            folder = self._sampler.folders(ids[0]).get("cpu")
            for pid in pids(folder) if folder else []:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            return
        pod = self._pods[host].metadata.name
        self.cluster.core.delete_namespaced_pod(pod, self.namespace, grace_period_seconds=0)

    #: the cluster restarts a killed container by itself (its restart policy); ``restart``
    #: only waits for it (``ipclab.availability.runner`` marks the restart at the kill)
    restarts_itself = True

    def restart(self, role: str) -> None:
        """The cluster restarts a killed container (the kubelet) or replaces a deleted pod
        (the Deployment); wait until the role's pod is ready again, then keep what the
        kubelet recorded of it (:meth:`restart_events`)."""
        host = next((c for c, pod in self.manifests.pods.items() if role in pod.members), role)
        deadline = time.monotonic() + RESTART_TIMEOUT_S
        before = self._killed.pop(role, self._restarts(host))
        since = self._killed_at.pop(role, time.time())
        while time.monotonic() < deadline:
            self._refresh_pods()
            p = self._pods.get(host)
            statuses = (p.status.container_statuses or []) if p else []
            if statuses and all(s.ready for s in statuses) and self._restarts(host) != before:
                self._recorded.extend(restarts.recorded(role, p, manifests.object_name(role)))
                self._recorded.extend(self._process_started(role))
                self._recorded.extend(self._ready_line(role, host, since, deadline))
                return
            time.sleep(0.25)
        raise KubernetesStackError(
            f"the cluster did not bring {role} back within {RESTART_TIMEOUT_S:.0f} s"
        )

    def _process_started(self, role: str) -> list[dict[str, Any]]:
        """When the role's new container's processes started (ipclab's cluster: read from
        its cgroup; ``restarts.process_started``)."""
        if not self.cluster.local:
            return []
        cid = next((c for comp, _, c in self._containers() if comp == role and c), None)
        folder = self._sampler.folders(cid).get("cpu") if cid else None
        return restarts.process_started(role, pids(folder)) if folder else []

    def _ready_line(
        self, role: str, host: str, since: float, deadline: float
    ) -> list[dict[str, Any]]:
        """The restarted role's ``ipclab-ready`` line (a service prints one once it accepts
        calls, which may be after its pod is Ready: a role has no readiness probe), read now,
        while its container's log is kept (the kubelet removes a dead container's but the
        last), as a ``ready`` event; none for a component that prints none (the broker)."""
        if role not in self.spec.roles:
            return []
        wait_until = min(deadline, time.monotonic() + READY_LINE_WAIT_S)
        while True:
            with contextlib.suppress(Exception):
                self._refresh_pods()
                logs = clusters.pod_logs(self.cluster, self.namespace, {host: self._pods[host]})
                text = logs.get(manifests.object_name(role), "")
                found = [e for e in ready_events({role: text}, since, time.time())]
                if found:
                    return [{**found[0], "role": role, "source": "log"}]
            if time.monotonic() >= wait_until:
                return []
            time.sleep(0.25)

    def restart_events(self) -> list[dict[str, Any]]:
        """What the kubelet recorded of the restarts waited for since the last call (the
        container's end, its new start, the pod's readiness: ``restarts.recorded``)."""
        out, self._recorded = self._recorded, []
        return out

    def _restarts(self, role: str) -> tuple[str, int]:
        p = self._pods.get(role)
        if p is None:
            return ("", -1)
        count = sum(s.restart_count for s in p.status.container_statuses or [])
        return (p.metadata.uid, count)

    def logs(self) -> dict[str, str]:
        return clusters.pod_logs(self.cluster, self.namespace, self._pods)

    def write_logs(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        for name, text in self.logs().items():
            (directory / f"{name}.log").write_text(text)

    def stop(self) -> None:
        with self._stop_lock:
            if self._stopped:
                return
            self._stopped = True
        if self.logs_dir is not None:
            with contextlib.suppress(Exception):
                self.write_logs(self.logs_dir)
        if not self.detached:
            ownership.delete(self.cluster.core, self.namespace)
            ownership.wait_gone(self.cluster.core, self.namespace)
            if self._watchdog is not None:
                self._watchdog.terminate()
        shutil.rmtree(self._tmp, ignore_errors=True)

    def info(self) -> dict[str, Any]:
        return {
            "kubernetes": {
                "server": self.cluster.version(),
                "ipclab_cluster": self.cluster.local,
                "namespace": self.namespace,
                "node_port": self.node_port,
                "nodes": {c: p.spec.node_name for c, p in sorted(self._pods.items())},
                "images": dict(self.images),
                "limits": {"cpus": self.options.cpus, "memory_mb": self.options.memory_mb},
                "resources": manifests.resources_of(self.manifests.pods),
                "qos": {c: p.status.qos_class for c, p in sorted(self._pods.items())},
            }
        }


def _wait_service_account(core: Any, namespace: str, timeout_s: float = 30.0) -> None:
    """A new namespace's ``default`` service account (pods are refused until it exists)."""
    from kubernetes.client.rest import ApiException

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            core.read_namespaced_service_account("default", namespace)
            return
        except ApiException as e:
            if e.status != 404:
                raise
        time.sleep(0.2)
    raise KubernetesStackError(f"namespace {namespace}: no default service account in 30 s")
