"""The docker backend: a stack is a compose project (generated from its declaration, see
``compose.py``) on the local engine.

Compose (``docker compose`` v2 or ``docker-compose`` 1.29, whichever exists) creates and
removes the project; docker-py does everything else: container lookup, stats, kill, restart,
logs, netem exec. Every container and network carries ``ipclab.project=<project>`` (unique
per start) and ``ipclab.harness=<mark of the harness that started it>``, so ``stop()`` and
``cleanup_all()`` remove exactly what this harness made and nothing another run made
(``ownership.py``). ``stop()`` is idempotent, shielded from a second Ctrl-C, and also runs at
exit; after a ``kill -9`` a watchdog removes the project within seconds, and the next start
sweeps whatever is still left, saying so. Containers run as an unprivileged user and get
NET_ADMIN/SYS_NICE only when a delay is asked for.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ipclab import infrastructure, orphans
from ipclab.backends.base import LoadHost, RunningStack, StackOptions
from ipclab.backends.docker import dockerguard, netem, offloads
from ipclab.backends.docker.compose import COMPOSE_DIR, image_variables, write_compose
from ipclab.backends.docker.ownership import (
    COMPOSE_PROJECT_LABEL,
    DETACHED,
    PROJECT_LABEL,
    cleanup_own,
    leftovers,
    remove_labelled,
    start_watchdog,
    sweep_orphans,
)
from ipclab.backends.docker.stats import StatsSampler, split_delayer
from ipclab.procs import free_port
from ipclab.stacks import LOADGEN, StackSpec
from ipclab.tls import StackTls
from ipclab.tls import make as make_tls

COMPOSE_SERVICE_LABEL = "com.docker.compose.service"
CONTAINER_PORT = 8000


class DockerUnavailable(RuntimeError):
    """No Docker engine answers (start one with scripts/docker-engine.sh)."""


# what a load host's measurement shares with the gateway's (netem.measure)
_SAME_AS_GATEWAY = ("delay_ms", "method", "device")


class DockerStackError(RuntimeError):
    """A stack did not come up; ``logs`` holds each container's log."""

    def __init__(self, message: str, logs: dict[str, str] | None = None):
        super().__init__(message)
        self.logs = logs or {}


# --------------------------------------------------------------------------- engine, compose


def client() -> Any:
    """A docker-py client whose engine answers, or DockerUnavailable."""
    try:
        import docker

        c = docker.from_env(timeout=120)
        c.ping()
    except Exception as e:  # noqa: BLE001 - any failure means: no usable engine
        raise DockerUnavailable(
            f"no Docker engine answers ({type(e).__name__}: {e}); "
            "start one with scripts/docker-engine.sh (root)"
        ) from None
    return c


def engine_status() -> str | None:
    """None when an engine answers, else the reason (for pytest skips and CLI messages)."""
    try:
        client()
    except DockerUnavailable as e:
        return str(e)
    return None


@functools.cache
def compose_command() -> tuple[str, ...]:
    """``docker compose`` (v2) when the plugin exists, else ``docker-compose`` (v1.29)."""
    if shutil.which("docker"):
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            r = subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=20)
            if r.returncode == 0:
                return ("docker", "compose")
    if shutil.which("docker-compose"):
        return ("docker-compose",)
    raise DockerUnavailable("neither `docker compose` nor `docker-compose` is installed")


@contextlib.contextmanager
def _no_sigint() -> Iterator[None]:
    """Let teardown finish even if the user presses Ctrl-C again."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


# --------------------------------------------------------------------------- cleanup


_LIVE: set[DockerStack] = set()
_LIVE_LOCK = threading.Lock()
_HOOKS_INSTALLED = False


def _install_exit_hooks() -> None:
    global _HOOKS_INSTALLED
    if _HOOKS_INSTALLED:
        return
    _HOOKS_INSTALLED = True
    atexit.register(_stop_live)
    # SIGTERM ends Python without atexit; turn it into SystemExit when nobody else handles it.
    if threading.current_thread() is threading.main_thread() and (
        signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    ):
        signal.signal(signal.SIGTERM, _exit_on_sigterm)


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def _stop_live() -> None:
    with _LIVE_LOCK:
        live = list(_LIVE)
    for stack in live:
        with contextlib.suppress(Exception):
            stack.stop()


def cleanup_all() -> dict[str, int]:
    """Stop this process's live stacks and remove whatever else this harness started
    (``ownership.cleanup_own``); stacks of other harnesses and detached ones are untouched."""
    _stop_live()
    return cleanup_own()


def find_running(stack: str) -> str | None:
    """The gateway URL of a running (e.g. detached) project of ``stack``, if any."""
    c = client()
    flt = {"label": [PROJECT_LABEL, f"{COMPOSE_SERVICE_LABEL}=gateway"]}
    for ctr in c.containers.list(filters=flt):
        if ctr.labels.get(COMPOSE_PROJECT_LABEL, "").startswith(f"ipclab-{stack}-"):
            ports = ctr.attrs["NetworkSettings"]["Ports"].get(f"{CONTAINER_PORT}/tcp") or []
            if ports:
                return f"http://127.0.0.1:{ports[0]['HostPort']}"
    return None


# --------------------------------------------------------------------------- backend


class DockerBackend:
    """Start stacks as compose projects. ``base``: image base for builds (see ``images``)."""

    name = "docker"
    stack_class: type[DockerStack]  # DockerStack, set below (SwarmBackend: SwarmStack)

    def __init__(
        self,
        base: str = "auto",
        build: bool = True,
        health_timeout_s: float = 120.0,
        net_admin: bool = False,
    ):
        """``net_admin``: give the containers NET_ADMIN and SYS_NICE so a delay can be set
        later (``set_delay``); without it they get them only when ``options.delay_ms`` asks
        for a delay at start."""
        self.base = base
        self.build = build
        self.health_timeout_s = health_timeout_s
        self.net_admin = net_admin

    def _tls_unavailable(self, detached: bool) -> str | None:
        """Why this backend cannot start a stack with ``--tls`` here (None: it can): a
        detached stack's project folder, the TLS files with it, is removed once it is up."""
        return "--tls with --detach: a detached stack keeps no TLS files" if detached else None

    def start(
        self,
        spec: StackSpec,
        options: StackOptions,
        logs_dir: Path | None = None,
        detached: bool = False,
    ) -> DockerStack:
        """Build images if needed, bring the project up, wait for /healthz, apply the delay.

        ``logs_dir``: where each container's log is written when the stack stops (and when it
        fails to start). ``detached``: leave it running when this process exits (``ipclab up
        --detach``); ``down(stack)`` removes it later."""
        if options.tls:
            why = spec.tls_unavailable(options.tls_edge) or self._tls_unavailable(detached)
            if why:
                raise ValueError(why)
        if options.store and (why := spec.store_unavailable()):
            raise ValueError(why)
        if options.store:  # the stores this backend cannot run (swarm's: not yet)
            for plugin in infrastructure.of(spec.infrastructure_with(options.store)):
                if why := plugin.unavailable(self.name):
                    raise ValueError(f"{spec.name}: {why}")
        c = client()
        from ipclab.backends.docker import images

        runtime = spec.runtime.name
        # the image of each infrastructure plugin the stack runs (its ``recipe``): those it
        # declares, and the stores with --store db
        infra = images.infrastructure_recipes(spec.infrastructure_with(options.store))
        # image ids, pinned when built (images.pinned): a tag moved since is rebuilt or refused
        if self.build:
            imgs = images.ensure_images(base=self.base, runtime=runtime, infrastructure=infra)
        else:
            imgs = images.pinned_images(runtime, infra)
        if spec.adapter_runtime is not None:  # the native adapters' own image (Californium)
            imgs["adapters"] = (
                images.ensure_java_image() if self.build else images.pinned(images.JAVA_IMAGE)
            )
        sweep_orphans(c=c)  # what a killed harness left, saying so
        orphans.sweep()  # and its processes and workdirs (compose files), saying so
        net_admin = self.net_admin or options.delay_ms > 0
        stack = self.stack_class(c, spec, options, imgs, logs_dir, detached, net_admin)
        if not detached:
            _install_exit_hooks()
            with _LIVE_LOCK:
                _LIVE.add(stack)
            stack._watchdog = start_watchdog(stack.project)
        try:
            stack._up(self.health_timeout_s)
        except BaseException as e:
            logs = stack.logs()
            stack.stop()
            if isinstance(e, DockerStackError):
                e.logs = e.logs or logs
                raise
            if isinstance(e, Exception):
                raise DockerStackError(f"{spec.name} did not start: {e}", logs) from e
            raise
        if detached:  # nothing of this process is needed any more; `down(stack)` goes by label
            shutil.rmtree(stack._tmp, ignore_errors=True)
        return stack


class DockerStack(RunningStack):
    """A running compose project (implements ``RunningStack``)."""

    backend = "docker"

    def __init__(
        self,
        c: Any,
        spec: StackSpec,
        options: StackOptions,
        imgs: dict[str, str],
        logs_dir: Path | None = None,
        detached: bool = False,
        net_admin: bool = False,
    ):
        self.client = c
        self.net_admin = net_admin
        self._watchdog: subprocess.Popen[bytes] | None = None
        self.logs_dir = logs_dir
        self.spec = spec
        self.options = options
        # the infrastructure plugins it runs: its declaration's, and the stores with --store db
        self.infrastructure = spec.infrastructure_with(options.store)
        self.images = imgs
        self.project = f"ipclab-{spec.name}-{secrets.token_hex(3)}"
        self.port = free_port()
        self.gateway_url = f"{'https' if options.tls else 'http'}://127.0.0.1:{self.port}"
        self.delay_ms = options.delay_ms
        self.delay_method = "none"
        self.netem: dict[str, Any] | None = None
        self._tmp = Path(tempfile.mkdtemp(prefix=f"{self.project}-"))
        if not detached:  # kill -9: the watchdog, or the next start, removes it (orphans.sweep)
            orphans.mark_workdir(self._tmp)
        self.tls: StackTls | None = None
        if options.tls:  # a new authority per start, in the private project folder
            hosts = (*spec.roles, *(p.component for p in infrastructure.of(self.infrastructure)))
            self.tls = make_tls(self._tmp / "tls", hosts, spec.name, mounted=True)
        tls_dir = self.tls.directory if self.tls else None
        self.compose_path = write_compose(
            spec, self._tmp, net_admin, options.env(), tls_dir, options.tls_edge,
            self.infrastructure,
        )  # fmt: skip
        self._containers: dict[str, Any] = {}
        self._sampler = StatsSampler(c.api)
        self._delayers: dict[str, int] = {}  # component -> its delayer's host PID
        self._delayer_retry: dict[str, float] = {}  # component -> when to look again
        # packets counted as on the wire (offloads.py) where a study measures them: the
        # stacks with a load host (the AcmeAir ones); the others keep the kernel's defaults
        self.wire_packets = spec.load_host
        self.offloads: dict[str, Any] = {
            "device": offloads.DEV,
            "segmentation_offloads": "off" if self.wire_packets else "kernel defaults",
            "containers": {},
        }
        self._stopped = False
        self._stop_lock = threading.Lock()
        env_file = self._tmp / "stack.env"
        env_file.write_text("".join(f"{k}={v}\n" for k, v in options.env().items()))
        self.env = {
            **os.environ,
            "IPCLAB_PROJECT": self.project,
            "IPCLAB_HARNESS": DETACHED if detached else orphans.this_harness(),
            "IPCLAB_IMAGE": imgs["services"],
            "IPCLAB_ADAPTER_IMAGE": imgs.get("adapters", ""),
            **image_variables(spec, imgs, self.infrastructure),
            "IPCLAB_ENV_FILE": str(env_file),
            "IPCLAB_GATEWAY_PORT": str(self.port),
            "IPCLAB_CPUS": f"{options.cpus:g}" if options.cpus else "0",
            "IPCLAB_MEM_LIMIT": f"{options.memory_mb}m" if options.memory_mb else "0",
        }

    def __hash__(self) -> int:
        return hash(self.project)

    # ----------------------------------------------------------------- compose

    def _compose(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        cmd = [*compose_command(), "-p", self.project, "-f", str(self.compose_path), *args]
        return subprocess.run(
            cmd,
            env=self.env,
            cwd=COMPOSE_DIR,
            capture_output=True,
            text=True,
            timeout=timeout,
            start_new_session=True,  # a Ctrl-C meant for the harness does not kill teardown
        )

    def _up(self, health_timeout_s: float) -> None:
        r = self._compose("up", "-d", "--no-color")
        if r.returncode != 0:
            raise DockerStackError(f"compose up failed:\n{r.stderr.strip()[-3000:]}")
        self._refresh_containers()
        missing = set(self.components) - set(self._containers)
        if missing:
            raise DockerStackError(f"compose created no container for {sorted(missing)}")
        self.guard = self._guard()
        self.sample()  # the stats followers start now: dockerd's first readings (about a
        # second each) arrive while the stack gets healthy, not after it
        self._wait_healthy(health_timeout_s)
        if self.wire_packets:
            for comp in self.components:
                if not self.spec.is_sidecar(comp):
                    self._offloads_off(comp)
        if self.delay_ms > 0:
            self.set_delay(self.delay_ms)
        else:
            self.netem = self._measure_undelayed()
        # Start the stats followers and give each a first reading, so run samples have values.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if all(r.get("status") != "starting" for r in self.sample()):
                break
            time.sleep(0.2)

    @property
    def components(self) -> tuple[str, ...]:
        """The infrastructure's containers (each plugin's component: ``broker``,
        ``database``), the roles', and the load host's."""
        infra = tuple(p.component for p in infrastructure.of(self.infrastructure))
        return infra + self.spec.roles + ((LOADGEN,) if self.spec.load_host else ())

    def _refresh_containers(self) -> None:
        flt = {"label": f"{COMPOSE_PROJECT_LABEL}={self.project}"}
        self._containers = {
            ctr.labels.get(COMPOSE_SERVICE_LABEL, ctr.name): ctr
            for ctr in self.client.containers.list(all=True, filters=flt)
        }

    def container(self, component: str) -> Any:
        """The container of ``component`` (docker SDK object), e.g. for its state or cgroup."""
        return self._container(component)

    def _container(self, component: str) -> Any:
        if component not in self._containers:
            self._refresh_containers()
        try:
            return self._containers[component]
        except KeyError:
            raise ValueError(
                f"unknown component {component!r}; components: {', '.join(self.components)}"
            ) from None

    def _wait_healthy(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        last = "no answer"
        next_check = 0.0
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.gateway_url + "/healthz", timeout=2) as resp:
                    if resp.status == 200:
                        return
                    last = f"HTTP {resp.status}"
            except urllib.error.HTTPError as e:
                last = f"HTTP {e.code}"
            except (OSError, urllib.error.URLError) as e:
                last = f"{type(e).__name__}: {e}"
            if time.monotonic() >= next_check:
                next_check = time.monotonic() + 1.0
                for comp in self.components:
                    ctr = self._containers[comp]
                    ctr.reload()
                    if ctr.status in ("exited", "dead"):
                        code = ctr.attrs.get("State", {}).get("ExitCode")
                        raise DockerStackError(f"{comp} exited (code {code}) during start")
            time.sleep(0.25)
        raise DockerStackError(
            f"gateway not healthy after {timeout_s:.0f}s at {self.gateway_url} ({last})"
        )

    # ----------------------------------------------------------------- RunningStack

    def sample(self) -> list[dict[str, Any]]:
        """One row per container and one per NFQUEUE delayer (``<host>-delayer``, kind
        ``delayer``), whose CPU is taken off its container's (``stats.split_delayer``)."""
        now = time.time()
        raw = self._sampler.sample(
            {comp: (ctr.id, ctr.name) for comp, ctr in self._containers.items()},
            self.delayers(),
        )
        rows = []
        for row in raw:
            row["t"] = now
            if self.spec.is_sidecar(row["component"]):  # its host's interface: counted there
                for key in [k for k in row if k.startswith("net_")]:
                    row[key] = None
            rows += split_delayer(row)
        return rows

    DELAYER_RETRY_S = 2.0

    def delayers(self) -> dict[str, int]:
        """Component -> the host PID of the NFQUEUE delayer in its container (a host process
        in the container's PID namespace and cgroup, found by its command line: see
        ``netem.find_delayer``); empty without a delay or with netem. Looked up again when a
        delayer is gone (a restart starts a new one), at most every DELAYER_RETRY_S."""
        if "nfqueue" not in self.delay_method.split(","):
            self._delayers.clear()
            return {}
        now = time.monotonic()
        for comp, ctr in list(self._containers.items()):
            pid = self._delayers.get(comp)
            if self.spec.is_sidecar(comp) or (pid and netem.is_delayer(pid, ctr.id)):
                continue
            self._delayers.pop(comp, None)
            if now < self._delayer_retry.get(comp, 0.0):
                continue
            found = netem.find_delayer(ctr.id)
            if found is None:
                self._delayer_retry[comp] = now + self.DELAYER_RETRY_S
            else:
                self._delayers[comp] = found
        return dict(self._delayers)

    def kill(self, role: str) -> None:
        self._container(role).kill()

    def restart(self, role: str) -> None:
        ctr = self._container(role)
        ctr.reload()
        if ctr.status == "running":
            ctr.restart(timeout=5)
        else:
            ctr.start()
        if self.wire_packets and not self.spec.is_sidecar(role):  # a fresh network namespace
            self._offloads_off(role)
        if self.delay_ms > 0 and not self.spec.is_sidecar(role):
            netem.set_delay(ctr, self.delay_ms)
        self._wait_container_healthy(ctr, role)

    def _offloads_off(self, component: str) -> None:
        """TSO, GSO and GRO off on the host container's eth0 (``offloads.turn_off``), its
        state read back into ``self.offloads`` (the manifest's ``stack_info.offloads``)."""
        ctr = self._container(component)
        ctr.reload()
        pid = int((ctr.attrs.get("State") or {}).get("Pid") or 0)
        if not pid:
            raise DockerStackError(f"{ctr.name} is not running: its offloads cannot be set")
        try:
            self.offloads["containers"][component] = offloads.turn_off(pid)
        except offloads.OffloadError as e:
            raise DockerStackError(
                f"{ctr.name}: {e} (a stack with a load host counts its packets as on the wire)"
            ) from None

    @staticmethod
    def _wait_container_healthy(ctr: Any, role: str, timeout_s: float = 60.0) -> None:
        """Block until a restarted container with a healthcheck (the broker) is healthy, as
        compose's ``depends_on: service_healthy`` does at start and the local backend's broker
        start does: services started before the broker answers would exit at once."""
        deadline = time.monotonic() + timeout_s
        while True:
            ctr.reload()
            health = (ctr.attrs.get("State") or {}).get("Health")
            if health is None or health.get("Status") == "healthy":
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{role} not healthy {timeout_s:.0f}s after its restart")
            time.sleep(0.1)

    def logs(self, tail: int | str = 5000) -> dict[str, str]:
        """Each container's log, its last ``tail`` lines (``"all"``: whole). The default
        tail is for error messages (``DockerStackError.logs``); the run's ``logs/`` are
        written whole (``write_logs``)."""
        out: dict[str, str] = {}
        for comp, ctr in list(self._containers.items()):
            try:
                out[comp] = ctr.logs(tail=tail, timestamps=True).decode(errors="replace")
            except Exception as e:  # noqa: BLE001
                out[comp] = f"<no log: {type(e).__name__}: {e}>"
        return out

    def write_logs(self, directory: Path) -> None:
        """Each container's whole log into ``directory/<component>.log``: a chatty role's
        early lines (its ``ipclab-gc`` events among them) are kept, not cut to a tail."""
        directory.mkdir(parents=True, exist_ok=True)
        for comp, text in self.logs(tail="all").items():
            (directory / f"{comp}.log").write_text(text)

    def _networks(self) -> tuple[dockerguard.Network, ...]:
        """The project's networks: (bridge, subnet) each."""
        out = []
        for net in self.client.networks.list(
            filters={"label": f"{COMPOSE_PROJECT_LABEL}={self.project}"}
        ):
            net.reload()
            bridge = (net.attrs.get("Options") or {}).get("com.docker.network.bridge.name")
            for config in (net.attrs.get("IPAM") or {}).get("Config") or []:
                if ":" not in config.get("Subnet", ":"):  # IPv4
                    out.append((bridge or f"br-{net.id[:12]}", config["Subnet"]))
        return tuple(out)

    def _guard(self) -> str:
        """The filter against other machines (``dockerguard``: no new connection into the
        project's network from anywhere but this host and the network itself): what the
        manifest says of it."""
        why = dockerguard.install(self.project, networks=self._networks())
        if why is None:
            return "installed"
        print(f"ipclab: the docker filter is not installed ({why}): a machine routing the "
              "stack's network through this host reaches its published containers",
              file=sys.stderr)  # fmt: skip
        return f"not installed: {why}"

    def stop(self) -> None:
        with self._stop_lock:
            if self._stopped:
                return
            self._stopped = True
        with _no_sigint():
            try:
                if self.logs_dir is not None and self._containers:
                    with contextlib.suppress(Exception):
                        self.write_logs(self.logs_dir)
                with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                    self._compose("down", "-v", "--remove-orphans", "-t", "3", timeout=120)
                with contextlib.suppress(Exception):
                    dockerguard.remove([self.project])
                # Whatever compose left (or never knew about): remove by label.
                with contextlib.suppress(Exception):
                    remove_labelled(self.client, f"{PROJECT_LABEL}={self.project}")
                    remove_labelled(self.client, f"{COMPOSE_PROJECT_LABEL}={self.project}")
            finally:
                self._sampler.close()
                shutil.rmtree(self._tmp, ignore_errors=True)
                if self._watchdog is not None:  # it would exit by itself within a second
                    with contextlib.suppress(OSError):
                        self._watchdog.kill()
                        self._watchdog.wait(5)
                with _LIVE_LOCK:
                    _LIVE.discard(self)

    # ----------------------------------------------------------------- extras

    def set_delay(self, delay_ms: float) -> dict[str, Any]:
        """netem delay on every container's eth0, then measured between containers."""
        if not self.net_admin:
            raise DockerStackError(
                f"{self.project} was started without NET_ADMIN, which setting a delay needs: "
                "start it with a delay (StackOptions.delay_ms, --delay-ms) or "
                "DockerBackend(net_admin=True)"
            )
        # one delay per network namespace: an adapter sidecar shares its host's
        ctrs = [self._container(c) for c in self.components if not self.spec.is_sidecar(c)]
        with ThreadPoolExecutor(max_workers=len(ctrs)) as pool:
            methods = set(pool.map(lambda ctr: netem.set_delay(ctr, delay_ms), ctrs))
        self.delay_method = ",".join(sorted(methods))
        self.delay_ms = delay_ms
        self._delayers.clear()  # new delayers (or none): look them up, and tell the stats
        self._delayer_retry.clear()  # followers, so their next readings split them off
        self.sample()
        self.netem = self.measure_delay()
        return self.netem

    def measure_delay(self) -> dict[str, Any]:
        """Measure the current inter-container delay without changing it: round trips over
        TCP and UDP from the gateway to its peers (the services' hosts, or the broker) and,
        for a stack with a load host, from the load host to the gateway (``load_host``)."""
        gateway = self._container(self.spec.gateway)
        # the infrastructure that carries the gateway's calls (the broker), else the services
        carriers = [
            f"{p.component}:{p.service_ports()[0]}"
            for p in infrastructure.of(self.infrastructure)
            if p.carries_calls
        ]
        targets = carriers or [f"{s}:{CONTAINER_PORT}" for s in self.spec.services]
        out = netem.measure(gateway, targets, self.delay_ms, self.delay_method)
        if self.spec.load_host:
            target = [f"{self.spec.gateway}:{CONTAINER_PORT}"]
            loadgen = netem.measure(self._container(LOADGEN), target, self.delay_ms, "")
            out["load_host"] = {k: v for k, v in loadgen.items() if k not in _SAME_AS_GATEWAY}
        return out

    def _measure_undelayed(self) -> dict[str, Any]:
        """The round trips of a stack started without a delay (the floor the delays add to);
        a failed measurement is recorded, not raised: nothing depends on it."""
        try:
            return self.measure_delay()
        except Exception as e:  # noqa: BLE001 - a probe exec failing on a loaded machine
            return {"delay_ms": 0.0, "method": "none", "error": f"{type(e).__name__}: {e}"}

    def load_env(self) -> dict[str, str]:
        """``--tls``: the load generator verifies the gateway against the stack's authority."""
        return {"IPCLAB_TLS_CA": str(self.tls.ca)} if self.tls is not None else {}

    def load_host(self) -> LoadHost | None:
        """Where the load generator runs (``ipclab.load.runner`` asks): for a stack with a
        load host, in the network namespace of its ``loadgen`` container, aiming at the
        gateway's address on the project network; otherwise None (this machine, at
        ``gateway_url``)."""
        if not self.spec.load_host:
            return None
        loadgen, gateway = self._container(LOADGEN), self._container(self.spec.gateway)
        loadgen.reload()
        gateway.reload()
        pid = int((loadgen.attrs.get("State") or {}).get("Pid") or 0)
        if not pid:
            raise DockerStackError(f"{loadgen.name} is not running: no load host to enter")
        nets = (gateway.attrs.get("NetworkSettings") or {}).get("Networks") or {}
        ips = [n["IPAddress"] for n in nets.values() if n.get("IPAddress")]
        if not ips:
            raise DockerStackError(f"{gateway.name} has no address on the project network")
        return LoadHost(netns=f"/proc/{pid}/ns/net", url=f"http://{ips[0]}:{CONTAINER_PORT}")

    def info(self) -> dict[str, Any]:
        """What a run manifest should record about this stack."""
        return {
            "project": self.project,
            "compose": " ".join(compose_command()),
            "compose_file": f"generated from the {self.spec.name} declaration (ipclab compose)",
            # id, tag, base, wheel lock and Debian packages of each image (pins.image_record)
            "images": {k: self._image_record(v) for k, v in self.images.items()},
            "containers": {c: ctr.name for c, ctr in self._containers.items()},
            "limits": {"cpus": self.options.cpus, "memory_mb": self.options.memory_mb},
            "netem": self.netem,
            "offloads": self.offloads,
            "delayers": {
                "host_pids": self.delayers(),
                "accounting": "each NFQUEUE delayer's CPU is a row of its own "
                "(<host>-delayer, kind delayer), taken off its container's cpu_percent",
            },
            **({"load_host": self._load_host_info()} if self.spec.load_host else {}),
            "capabilities": ["NET_ADMIN", "SYS_NICE"] if self.net_admin else [],
            "filter": getattr(self, "guard", "not installed"),  # dockerguard's
            "engine": self.client.version().get("Version"),
        }

    def _load_host_info(self) -> dict[str, Any]:
        with contextlib.suppress(Exception):
            host = self.load_host()
            if host is not None:
                return {
                    "container": self._container(LOADGEN).name,
                    "load_generator": "a harness process in the container's network namespace "
                    "(nsenter --net)",
                    "gateway_url": host.url,
                }
        return {"container": None}

    def _image_record(self, name: str) -> dict[str, Any]:
        from ipclab.backends.docker import pins

        with contextlib.suppress(Exception):
            return pins.image_record(name)
        return {"name": name, "id": None}

    def __repr__(self) -> str:
        return f"DockerStack({self.spec.name}, project={self.project}, url={self.gateway_url})"


DockerBackend.stack_class = DockerStack


def _main() -> None:  # python -m ipclab.backends.docker.backend cleanup | leftovers
    import sys

    cmd = sys.argv[1] if len(sys.argv) > 1 else "leftovers"
    if cmd == "cleanup":
        print(json.dumps(sweep_orphans()))
    else:
        print(json.dumps(leftovers()))


if __name__ == "__main__":
    _main()
