"""A stack's Kubernetes objects, generated from its compose document, so that compose, swarm
and Kubernetes run one declaration (``StackSpec``) and cannot drift apart.

The input is what compose itself runs: ``compose_document`` with ``compose/common.yml``'s
``extends`` resolved and ``${...}`` substituted (``resolved_services``, as the swarm backend
reads it). Each compose service becomes:

- a **Deployment** of one pod per host component (a role, the broker, the database); a
  sidecar (``network_mode: service:<host>``, the protocol adapters) is a second container
  in its host's pod, which is what sharing a network namespace means in Kubernetes;
- a **Service** per host with a cluster IP and the ports its containers listen on (a role's
  ``CONTAINER_PORT``, its sidecars' ``SIDECAR_PORT``, over TCP and UDP, for CoAP; an
  infrastructure plugin's ``service_ports``); the gateway's is a NodePort, the address the
  load generator uses;
- the files compose bind-mounts (the broker's users file, the database's files, ``--tls``'s
  folder) as **Secrets** mounted read-only where compose mounts them, and a named volume as
  an ``emptyDir`` (the stack's data lives as long as its pod, as a compose volume lives as
  long as its project);
- the environment (``env_file`` then ``environment``, compose's order) as a Secret each
  container reads (``envFrom``): the stack's passwords stay out of the pod specs.

Names are resolved without a cluster DNS: the Services are made first, and every pod gets
the others' cluster IPs in its ``/etc/hosts`` (``hostAliases``; its own name stays its own
address, which the broker needs for its node name). So the roles reach each other by the
same names as in compose, on any cluster, with or without CoreDNS.

What compose says and Kubernetes does instead: ``init: true`` is a shared process namespace
(the pod's pause process reaps orphans, as docker's init does); ``cap_drop``/``cap_add`` the
container's capabilities; ``cpus``/``mem_limit`` its limits (the CFS quota and memory
limit docker sets), the memory requested as limited and the CPU requested
``CPU_REQUEST_M`` millicores (compose reserves no CPU; a request equal to the limit, 0.5 CPU
for each of a shop's six roles, is more than a 2-core node has, and two of them stayed
Pending; an equal request per container weighs the pods equally, as docker's equal
``cpu.shares`` do; the pods are Burstable); a ``healthcheck`` its readiness probe;
``stop_grace_period`` the pod's termination grace; ``depends_on`` on a healthy
infrastructure component an init container waiting for its Service (``_waits``), any other
``depends_on`` nothing (the roles reconnect, as on swarm).
Images are named as the cluster holds them (``images``): imported into ipclab's own cluster
and never pulled (``imagePullPolicy: Never``), or pulled from the user's registry.

Confinement, as docker gives the same services (issue 48): every pod runs with the
runtime's default seccomp profile (``seccompProfile: RuntimeDefault``, on any cluster), and
with its default AppArmor profile where the node's kernel has AppArmor (``apparmor``: known
for ipclab's own cluster only; a kubelet refuses a pod that asks for AppArmor on a node
without it).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ipclab import infrastructure
from ipclab.backends.docker.compose import CONTAINER_PORT, SIDECAR_PORT
from ipclab.stacks import StackSpec

# a container waiting for one of these will not start by waiting longer
CANNOT_START = (
    "ErrImageNeverPull", "ImagePullBackOff", "CreateContainerConfigError", "InvalidImageName",
)  # fmt: skip
# ...except a kubelet whose informer has not yet synced the pod's secret or config map (a
# node that has just joined): "failed to sync secret cache: timed out waiting for the
# condition"; the kubelet tries again, and the container starts
STILL_SYNCING = "failed to sync"


def cannot_start(reason: str | None, message: str | None) -> bool:
    """Whether a container waiting for ``reason`` (with the kubelet's ``message``) will not
    start by waiting longer."""
    if reason == "CreateContainerConfigError" and STILL_SYNCING in (message or ""):
        return False
    return reason in CANNOT_START


OWNED_LABEL = "ipclab.owned"  # every object the backend makes: "1" (found by selector)
PROJECT_LABEL = "ipclab.project"  # the stack's project, as compose's label
COMPONENT_LABEL = "ipclab.component"  # a pod's host component
ROLE_LABEL = "ipclab.role"  # a node label a user sets to place a role on that node
HARNESS_ANNOTATION = "ipclab.harness"  # the harness mark (orphans.this_harness), or detached
HOST_ANNOTATION = "ipclab.host"  # the machine the harness runs on (a mark is only its own)
SECRET_LIMIT_BYTES = 1_000_000  # a Secret holds at most 1 MiB (etcd's object size)
CPU_REQUEST_M = 100  # a CPU-limited container's request, millicores (module docstring)


class ManifestError(ValueError):
    """A stack the Kubernetes backend cannot express (with the reason)."""


def object_name(name: str) -> str:
    """A DNS-1123 label for ``name`` (roles and components are already; checked)."""
    out = re.sub(r"[^a-z0-9-]", "-", name.lower()).strip("-")[:63]
    if not out:
        raise ManifestError(f"{name!r} gives no Kubernetes object name")
    return out


@dataclass
class Pod:
    """One host component's pod: its containers (the host's first), volumes and Secrets."""

    component: str
    members: list[str] = field(default_factory=list)  # compose services, the host's first
    containers: list[dict[str, Any]] = field(default_factory=list)
    init_containers: list[dict[str, Any]] = field(default_factory=list)  # waits (``_waits``)
    volumes: list[dict[str, Any]] = field(default_factory=list)
    secrets: list[dict[str, Any]] = field(default_factory=list)
    ports: list[int] = field(default_factory=list)
    hostname: str | None = None
    grace_s: int = 5
    init: bool = False
    udp: bool = True  # a role's ports also over UDP (CoAP); an infrastructure's TCP only


@dataclass
class Manifests:
    """Everything a stack needs in its namespace; ``deployments`` once the cluster IPs are
    known (:meth:`deployments`)."""

    namespace: dict[str, Any]
    secrets: list[dict[str, Any]]
    services: list[dict[str, Any]]
    pods: dict[str, Pod]
    gateway: str
    labels: dict[str, str]
    apparmor: bool = False  # the pods ask for the runtime's default AppArmor profile

    def deployments(
        self, cluster_ips: Mapping[str, str], placed: Collection[str] = ()
    ) -> list[dict[str, Any]]:
        """A Deployment per pod, each with the other Services' cluster IPs as host names;
        a component in ``placed`` (some node is labelled ``ipclab.role=<component>``) goes
        to that node."""
        return [
            _deployment(p, self.labels, cluster_ips, p.component in placed, self.apparmor)
            for p in self.pods.values()
        ]


def _seconds(value: Any, default: float) -> float:
    """Compose's durations ("5s", "1m30s", "250ms") in seconds."""
    if value in (None, ""):
        return default
    total = 0.0
    for number, unit in re.findall(r"([\d.]+)(ms|us|s|m|h)", str(value)):
        total += float(number) * {"us": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}[unit]
    return total or default


def _env_file(path: Any) -> dict[str, str]:
    """An ``env_file`` (KEY=VALUE lines, # comments), as compose reads it."""
    if not path:
        return {}
    env = {}
    for line in Path(str(path)).read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            env[key.strip()] = value
    return env


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _secret(name: str, data: Mapping[str, bytes], labels: Mapping[str, str]) -> dict[str, Any]:
    size = sum(len(v) for v in data.values())
    if size > SECRET_LIMIT_BYTES:
        raise ManifestError(
            f"{name}: {size} bytes of files, more than a Secret holds ({SECRET_LIMIT_BYTES})"
        )
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "labels": dict(labels)},
        "type": "Opaque",
        "data": {k: _b64(v) for k, v in sorted(data.items())},
    }


def _mounts(
    pod: Pod, container: str, volumes: list[str], labels: Mapping[str, str]
) -> list[dict[str, Any]]:
    """Compose's ``volumes`` of one container: a bind-mounted file or folder as a Secret
    (read-only, mode 0444: the container's user may not be the harness's), a named volume
    as an emptyDir."""
    mounts = []
    for i, entry in enumerate(volumes):
        source, target = str(entry).split(":")[:2]  # read-only whatever its mode: a Secret is
        name = object_name(f"{container}-v{i}")
        path = Path(source)
        if not path.is_absolute():  # a named volume
            pod.volumes.append({"name": name, "emptyDir": {}})
            mounts.append({"name": name, "mountPath": target})
            continue
        if path.is_dir():
            files = {f.name: f.read_bytes() for f in sorted(path.iterdir()) if f.is_file()}
            sub = None
        elif path.is_file():
            files, sub = {path.name: path.read_bytes()}, path.name
        else:
            raise ManifestError(f"{container}: {source} (mounted at {target}) does not exist")
        secret = _secret(f"{object_name(container)}-files-{i}", files, labels)
        pod.secrets.append(secret)
        pod.volumes.append(
            {"name": name,
             "secret": {"secretName": secret["metadata"]["name"], "defaultMode": 0o444}}
        )  # fmt: skip
        mount = {"name": name, "mountPath": target, "readOnly": True}
        mounts.append({**mount, "subPath": sub} if sub else mount)
    return mounts


def _resources(svc: Mapping[str, Any]) -> dict[str, Any]:
    """Compose's ``cpus`` and ``mem_limit`` as the container's limits (the same cgroup
    settings docker writes: a CFS quota, a memory limit); the memory requested as limited,
    the CPU requested ``CPU_REQUEST_M`` (or the limit, if smaller): see the module's
    docstring."""
    limits: dict[str, str] = {}
    requests: dict[str, str] = {}
    cpus = str(svc.get("cpus", "0") or "0")
    if cpus not in ("0", "0.0", ""):
        milli = round(float(cpus) * 1000)
        limits["cpu"] = f"{milli}m"
        requests["cpu"] = f"{min(milli, CPU_REQUEST_M)}m"
    mem = str(svc.get("mem_limit", "0") or "0")
    if mem not in ("0", ""):
        number, unit = re.fullmatch(r"(\d+)([bkmg]?)", mem.lower()).groups()  # type: ignore[union-attr]
        limits["memory"] = number + {"": "", "b": "", "k": "Ki", "m": "Mi", "g": "Gi"}[unit]
        requests["memory"] = limits["memory"]
    return {"limits": limits, "requests": requests} if limits else {}


def resources_of(pods: Mapping[str, Pod]) -> dict[str, dict[str, Any]]:
    """Every container's resources as the pods declare them (``{}``: none), by compose
    service: what a run's manifest states."""
    return {
        member: dict(c.get("resources") or {})
        for pod in pods.values()
        for member, c in zip(pod.members, pod.containers, strict=True)
    }


def _probe(health: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not health or health.get("disable"):
        return None
    test = health.get("test")
    if isinstance(test, str):
        command = ["/bin/sh", "-c", test]
    elif test and test[0] == "CMD":
        command = list(test[1:])
    elif test and test[0] == "CMD-SHELL":
        command = ["/bin/sh", "-c", " ".join(test[1:])]
    else:
        return None
    return {
        "exec": {"command": command},
        "periodSeconds": max(1, round(_seconds(health.get("interval"), 30))),
        "timeoutSeconds": max(1, round(_seconds(health.get("timeout"), 30))),
        "failureThreshold": int(health.get("retries", 3)),
    }


def _container(
    pod: Pod,
    name: str,
    svc: Mapping[str, Any],
    image: str,
    labels: Mapping[str, str],
    pull_policy: str = "Never",
) -> dict[str, Any]:
    env = {**_env_file(svc.get("env_file")), **(svc.get("environment") or {})}
    env_secret = _secret(
        f"{object_name(name)}-env", {k: str(v).encode() for k, v in env.items()}, labels
    )
    pod.secrets.append(env_secret)
    c: dict[str, Any] = {
        "name": object_name(name),
        "image": image,
        "imagePullPolicy": pull_policy,
        "envFrom": [{"secretRef": {"name": env_secret["metadata"]["name"]}}],
        "securityContext": {
            "capabilities": {
                "drop": list(svc.get("cap_drop") or []),
                "add": list(svc.get("cap_add") or []),
            },
            "allowPrivilegeEscalation": bool(svc.get("cap_add")),
        },
    }
    if svc.get("command"):
        command = svc["command"]
        c["args"] = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
    if resources := _resources(svc):
        c["resources"] = resources
    if probe := _probe(svc.get("healthcheck")):
        c["readinessProbe"] = probe
    if mounts := _mounts(pod, name, list(svc.get("volumes") or []), labels):
        c["volumeMounts"] = mounts
    return c


def build(
    spec: StackSpec,
    services: Mapping[str, Mapping[str, Any]],
    *,
    namespace: str,
    project: str,
    images: Mapping[str, str],
    annotations: Mapping[str, str] | None = None,
    node_port: int | None = None,
    pull_policy: str = "Never",
    apparmor: bool = False,
) -> Manifests:
    """The stack's objects from its resolved compose ``services`` (``resolved_services``).

    ``images``: a compose image name (``ipclab-services:latest``) -> the reference the
    cluster holds it under; ``annotations``: the namespace's (the harness mark, the
    machine); ``node_port``: the gateway's, or None for the cluster to choose;
    ``pull_policy``: ``Never`` where the images were imported into the cluster,
    ``IfNotPresent`` where it pulls them from a registry."""
    if spec.load_host:
        raise ManifestError(
            f"{spec.name}: its load generator runs in a load host's network namespace, which "
            "the kubernetes backend does not make; use the docker (compose) backend"
        )
    labels = {OWNED_LABEL: "1", PROJECT_LABEL: project}
    pods: dict[str, Pod] = {}
    plugins = {p.component: p for p in infrastructure.of(spec.infrastructure)}
    for name, svc in services.items():  # hosts first: a sidecar joins its host's pod
        if str(svc.get("network_mode", "")).startswith("service:"):
            continue
        pod = pods[name] = Pod(name, hostname=svc.get("hostname"), init=bool(svc.get("init")))
        pod.grace_s = round(_seconds(svc.get("stop_grace_period"), 10))
        pod.ports = list(plugins[name].service_ports()) if name in plugins else [CONTAINER_PORT]
        pod.udp = name not in plugins
    for name, svc in services.items():
        mode = str(svc.get("network_mode", ""))
        host = mode.removeprefix("service:") if mode.startswith("service:") else name
        if host not in pods:
            raise ManifestError(f"{name}: shares the network of {host!r}, which is not a service")
        pod = pods[host]
        image = images.get(str(svc["image"]), str(svc["image"]))
        pod.members.append(name)
        pod.containers.append(_container(pod, name, svc, image, labels, pull_policy))
        pod.init_containers += _waits(svc, services, plugins, images, pull_policy)
        if host != name and SIDECAR_PORT not in pod.ports:
            pod.ports.append(SIDECAR_PORT)
    services_ = [_service(p, labels, p.component == spec.gateway, node_port) for p in pods.values()]
    ns = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": namespace, "labels": dict(labels),
                     "annotations": dict(annotations or {})},
    }  # fmt: skip
    secrets = [s for p in pods.values() for s in p.secrets]
    return Manifests(ns, secrets, services_, pods, spec.gateway, labels, apparmor)


def _waits(
    svc: Mapping[str, Any],
    services: Mapping[str, Mapping[str, Any]],
    plugins: Mapping[str, Any],
    images: Mapping[str, str],
    pull_policy: str,
) -> list[dict[str, Any]]:
    """Compose's ``depends_on: {X: {condition: service_healthy}}`` on an infrastructure
    component: an init container (in X's image, which has bash: its healthcheck's) that
    waits until X's Service accepts a connection, which it does once X's pod is Ready (its
    readiness probe is the healthcheck). Without it a role that starts before the broker
    exits, and the kubelet's back-off for its container, counted from those exits, delays
    its first restarts in a run by 10 s and more."""
    depends = svc.get("depends_on") or {}
    if not isinstance(depends, Mapping):
        return []
    out = []
    for dep, condition in depends.items():
        healthy = isinstance(condition, Mapping) and condition.get("condition") == "service_healthy"
        if not healthy or dep not in plugins or dep not in services:
            continue
        port = plugins[dep].service_ports()[0]
        image = images.get(str(services[dep]["image"]), str(services[dep]["image"]))
        wait = f"until (exec 3<>/dev/tcp/{dep}/{port}) 2>/dev/null; do sleep 0.2; done"
        out.append(
            {
                "name": f"wait-{object_name(dep)}",
                "image": image,
                "imagePullPolicy": pull_policy,
                "command": ["bash", "-c", wait],
                "securityContext": {
                    "capabilities": {"drop": ["ALL"]},
                    "allowPrivilegeEscalation": False,
                },
            }
        )
    return out


def _service(
    pod: Pod, labels: Mapping[str, str], gateway: bool, node_port: int | None
) -> dict[str, Any]:
    ports = []
    for port in pod.ports:
        for protocol in ("TCP", "UDP") if pod.udp else ("TCP",):
            p: dict[str, Any] = {
                "name": f"{protocol.lower()}{port}", "port": port, "targetPort": port,
                "protocol": protocol,
            }  # fmt: skip
            if gateway and port == CONTAINER_PORT and protocol == "TCP" and node_port:
                p["nodePort"] = node_port
            ports.append(p)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": object_name(pod.component), "labels": dict(labels)},
        "spec": {
            "type": "NodePort" if gateway else "ClusterIP",
            "selector": {COMPONENT_LABEL: object_name(pod.component), **labels},
            "ports": ports,
        },
    }


def security_context(apparmor: bool) -> dict[str, Any]:
    """A pod's: the runtime's default seccomp profile, and its AppArmor one if ``apparmor``."""
    context: dict[str, Any] = {"seccompProfile": {"type": "RuntimeDefault"}}
    if apparmor:
        context["appArmorProfile"] = {"type": "RuntimeDefault"}
    return context


def _deployment(
    pod: Pod,
    labels: Mapping[str, str],
    cluster_ips: Mapping[str, str],
    placed: bool = False,
    apparmor: bool = False,
) -> dict[str, Any]:
    """One replica of ``pod``; the other Services' names in its /etc/hosts; on the node
    labelled for it when ``placed``; confined (:func:`security_context`)."""
    selector = {COMPONENT_LABEL: object_name(pod.component), **labels}
    aliases = [
        {"ip": ip, "hostnames": [name]}
        for name, ip in sorted(cluster_ips.items())
        if name != pod.component and ip and ip != "None"
    ]
    spec: dict[str, Any] = {
        "containers": pod.containers,
        **({"initContainers": pod.init_containers} if pod.init_containers else {}),
        "enableServiceLinks": False,  # no *_SERVICE_HOST variables: the roles' env is compose's
        "automountServiceAccountToken": False,
        "dnsPolicy": "Default",
        "terminationGracePeriodSeconds": pod.grace_s,
        "restartPolicy": "Always",
        "securityContext": security_context(apparmor),
        **({"hostAliases": aliases} if aliases else {}),
        **({"hostname": object_name(pod.hostname)} if pod.hostname else {}),
        **({"shareProcessNamespace": True} if pod.init else {}),
        **({"volumes": pod.volumes} if pod.volumes else {}),
        **({"nodeSelector": {ROLE_LABEL: pod.component}} if placed else {}),
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": object_name(pod.component), "labels": dict(labels)},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": selector},
            "strategy": {"type": "Recreate"},
            "template": {"metadata": {"labels": selector}, "spec": spec},
        },
    }
