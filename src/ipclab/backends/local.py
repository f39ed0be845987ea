"""The local backend: every component is a process on this machine (no Docker needed).

Services listen on free loopback ports; the infrastructure a stack declares is a private
instance each, started, stopped and swept through its plugin (``ipclab.infrastructure``: a
RabbitMQ node, a PostgreSQL cluster). Each process runs in its own session, is sampled with
psutil, and is killed with the harness (unless detached). ``stop`` removes processes, the
infrastructure's instances and their data directories.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from ipclab import infrastructure, orphans
from ipclab.atomic import write_json_atomic
from ipclab.backends.base import BackendPlugin, RunningStack, StackOptions, process_tree_usage
from ipclab.infrastructure import Infrastructure, LocalSite
from ipclab.private import UnsafeState, owned_alone, private_dir
from ipclab.procs import free_ports, kill_group, parse_cpus, pin_tree, spawn, stop_group, tail
from ipclab.stacks import BROKER, DATABASE, StackSpec, resolve
from ipclab.stackspec import STORES
from ipclab.tls import StackTls
from ipclab.tls import make as make_tls

if TYPE_CHECKING:
    from ipclab.backends.broker import RabbitNode
    from ipclab.backends.postgres import PostgresCluster

READY_TIMEOUT_S = 60.0
STATE_DIR = Path(
    os.environ.get("IPCLAB_STATE_DIR", Path(tempfile.gettempdir()) / f"ipclab-state-{os.getuid()}")
)
WORKDIR_PREFIX = "ipclab-"  # every local stack's workdir: <tempdir>/ipclab-<stack>-<random>


class StackStartError(RuntimeError):
    pass


def wait_ready(url: str, timeout: float, is_alive: Any = None) -> dict[str, Any]:
    """Poll ``url/healthz`` until it answers 200; return its document."""
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        if is_alive is not None and not is_alive():
            raise StackStartError(f"a component exited while waiting for {url}: {last}")
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as r:
                return dict(json.loads(r.read()))
        except urllib.error.HTTPError as e:
            last = e.read().decode(errors="replace")
        except (OSError, ValueError) as e:
            last = repr(e)
        time.sleep(0.2)
    raise StackStartError(f"{url} not ready after {timeout:.0f}s: {last}")


@dataclass
class LocalStack(RunningStack):
    spec: StackSpec
    options: StackOptions
    workdir: Path
    logs_dir: Path
    detached: bool = False
    backend: str = "local"
    ports: dict[str, int] = field(default_factory=dict)
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    # infrastructure name -> its private instance (the plugin's ``start_local``)
    infra: dict[str, Any] = field(default_factory=dict)
    _ps: dict[int, psutil.Process] = field(default_factory=dict)
    _stopped: bool = False
    _command: list[str] = field(default_factory=list)
    _fixture: Path | None = None
    _adapter_build: Path | None = None  # the native adapters' build (a folder of jars)
    tls: StackTls | None = None  # --tls: the stack's authority, certificate and key

    @property
    def broker(self) -> RabbitNode | None:
        """The stack's RabbitMQ node, if it declares one."""
        return self.infra.get(BROKER)

    @property
    def database(self) -> PostgresCluster | None:
        """The stack's PostgreSQL cluster, if it declares one."""
        return self.infra.get(DATABASE)

    def _plugins(self) -> list[Infrastructure]:
        """The stack's infrastructure, and the stores with ``--store db``."""
        stores = STORES if self.options.store == "db" else ()
        return infrastructure.of((*self.spec.infrastructure, *stores))

    @property
    def gateway_url(self) -> str:
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self.ports[self.spec.gateway]}"

    def _env(self, role: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("IPCLAB_")}
        env.update(
            self.spec.role_env(
                role,
                {r: f"127.0.0.1:{self.ports[r]}" for r in self.spec.roles},
                infrastructure.role_env(
                    tuple(p.name for p in self._plugins()),
                    {name: self._url(name) for name in self.infra},
                    role == self.spec.gateway,
                ),
                self.options.env(),
            ),
            IPCLAB_HOST="127.0.0.1",
            IPCLAB_PORT=str(self.ports[role]),
            **self._mark(),
            PYTHONUNBUFFERED="1",
        )
        if self._fixture is not None:
            env["IPCLAB_FIXTURE"] = str(self._fixture)
        if self.tls is not None:
            edge = self.options.tls_edge
            env.update(self.tls.role_env(role == self.spec.gateway, edge))
        adapter = self.spec.adapter_runtime
        if adapter and self._adapter_build is not None and self.spec.is_sidecar(role):
            env[adapter.env] = str(self._adapter_build)
        return env

    def load_env(self) -> dict[str, str]:
        """``--tls``: the load generator verifies the gateway against the stack's authority."""
        return {"IPCLAB_TLS_CA": str(self.tls.ca)} if self.tls is not None else {}

    def _url(self, name: str) -> str:
        """Where the services reach the infrastructure ``name`` ("" if not declared)."""
        instance = self.infra.get(name)
        return "" if instance is None else infrastructure.get(name).local_url(instance)

    def _mark(self) -> dict[str, str]:
        """A detached stack outlives its harness on purpose: it carries no mark."""
        return {} if self.detached else {orphans.MARK: orphans.this_harness()}

    def _spawn(self, role: str) -> None:
        self.procs[role] = spawn(
            self._command,
            self._env(role),
            self.logs_dir / f"{role}.log",
            detached=self.detached,
        )

    def start(self) -> None:
        if self.options.tls and (why := self.spec.tls_unavailable(self.options.tls_edge)):
            self.stop()
            raise ValueError(why)
        if self.options.store and (why := self.spec.store_unavailable()):
            self.stop()
            raise ValueError(why)
        try:
            if self.options.tls:  # a new authority per start; its files go with the workdir
                self.tls = make_tls(self.workdir / "tls", ("127.0.0.1",), self.spec.name)
            self._command = self.spec.runtime.command()  # builds a compiled runtime's binary
            adapter = self.spec.adapter_runtime  # and the native adapters' build, if any
            self._adapter_build = adapter.build() if adapter else None
            if self.spec.runtime.fixture:
                self._write_fixture()
            # every port of the stack and of its infrastructure chosen at once: distinct by
            # construction (ports chosen one at a time may come back twice)
            roles = self.spec.roles
            plugins = self._plugins()
            ports = free_ports(len(roles) + sum(p.local_ports for p in plugins))
            self.ports = dict(zip(roles, ports[: len(roles)], strict=True))
            rest = ports[len(roles) :]
            env = {**os.environ, **self.options.env(), **self.spec.settings}
            for plugin in plugins:  # each its private instance: a broker node, a cluster
                mine, rest = tuple(rest[: plugin.local_ports]), rest[plugin.local_ports :]
                site = LocalSite(
                    self.workdir, mine, env, self.spec.domain, self._mark(), self.detached,
                    tls=None if self.options.tls_edge else self.tls,
                )  # fmt: skip
                self.infra[plugin.name] = plugin.start_local(site)
            for role in self.spec.roles:
                self._spawn(role)
            wait_ready(
                self.gateway_url,
                READY_TIMEOUT_S,
                lambda: all(p.poll() is None for p in self.procs.values()),
            )
            self._pin()
        except BaseException as e:
            logs = "\n".join(f"--- {r}:\n{tail(self.logs_dir / f'{r}.log', 8)}" for r in self.procs)
            self.stop()
            if isinstance(e, StackStartError):
                raise StackStartError(f"{self.spec.name} did not start: {e}\n{logs}") from None
            raise

    def _write_fixture(self) -> None:
        """The domain's data for this run's knobs, as the file ``IPCLAB_FIXTURE`` names."""
        from ipclab_services import domains

        self._fixture = self.workdir / "fixture.json"
        env = {**self.options.env(), **self.spec.settings}
        domains.load(self.spec.domain).write_fixture(self._fixture, env)

    # --- RunningStack -------------------------------------------------------------------
    def _kind(self, role: str) -> str:
        if role == self.spec.gateway:
            return "gateway"
        return "adapter" if self.spec.is_sidecar(role) else "service"

    def components(self) -> dict[str, tuple[str, int]]:
        """name -> (kind, pid) for every live component."""
        out = {
            role: (self._kind(role), p.pid) for role, p in self.procs.items() if p.poll() is None
        }
        for plugin in self._plugins():  # "broker", "database": kind and name alike
            process = getattr(self.infra.get(plugin.name), "process", None)
            if process is not None:
                out[plugin.component] = (plugin.component, process.pid)
        return out

    def sample(self) -> list[dict[str, Any]]:
        rows = []
        now = time.time()
        for name, (kind, pid) in self.components().items():
            rows.append(
                {
                    "t": now,
                    "component": name,
                    "kind": kind,
                    "pid": pid,
                    **process_tree_usage(pid, self._ps),
                }
            )
        return rows

    def kill(self, role: str) -> None:
        """SIGKILL one component (its whole process group); return once it is gone."""
        if plugin := self._plugin_of(role):
            if plugin.name in self.infra:
                self.infra[plugin.name].kill()
            return
        proc = self.procs[role]
        kill_group(proc.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)

    def restart(self, role: str) -> None:
        if plugin := self._plugin_of(role):
            plugin.restart_local(self.infra[plugin.name], self.detached)
            self._pin()
            return
        if self.procs[role].poll() is None:
            stop_group(self.procs[role], grace=0)
        self._spawn(role)
        self._pin()

    def process_of(self, component: str) -> subprocess.Popen[bytes] | None:
        """The main process of a component: a role's, or its infrastructure's instance's."""
        if plugin := self._plugin_of(component):
            return getattr(self.infra.get(plugin.name), "process", None)
        return self.procs.get(component)

    def _plugin_of(self, component: str) -> Infrastructure | None:
        """The infrastructure whose component is ``component`` (``broker``), if any."""
        return next((p for p in self._plugins() if p.component == component), None)

    def _pin(self) -> None:
        """``options.cpuset``: every process of the stack (broker and database included) on
        those CPUs only, so that a load generator pinned elsewhere does not compete."""
        if not self.options.cpuset:
            return
        cpus = parse_cpus(self.options.cpuset)
        pids = [p.pid for p in self.procs.values() if p.poll() is None]
        for extra in self.infra.values():
            proc = getattr(extra, "process", None)
            if proc is not None and proc.poll() is None:
                pids.append(proc.pid)
        for pid in pids:
            pin_tree(pid, cpus)

    def info(self) -> dict[str, Any] | None:
        """The versions of its infrastructure's instances that record them (the stores),
        in the run's manifest (``stack_info``); None when none does."""
        versions = {
            name: recorded
            for name, instance in self.infra.items()
            if (recorded := infrastructure.get(name).local_versions(instance))
        }
        return {"infrastructure": versions} if versions else None

    def logs(self) -> dict[str, str]:
        return {p.stem: p.read_text(errors="replace") for p in sorted(self.logs_dir.glob("*.log"))}

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        gateway = self.procs.get(self.spec.gateway)
        if gateway is not None:
            stop_group(gateway)  # first, so that clients stop before their services go
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(15)
        for proc in self.procs.values():
            stop_group(proc)
        for instance in self.infra.values():
            instance.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)
        _LIVE.discard(self)

    def _all_procs(self) -> list[subprocess.Popen[bytes]]:
        extra = [x.process for x in self.infra.values() if x.process]
        return [*self.procs.values(), *extra]

    def __hash__(self) -> int:
        return id(self)

    # --- detached mode ------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {
            "stack": self.spec.name,
            "gateway_url": self.gateway_url,
            "workdir": str(self.workdir),
            "logs": str(self.logs_dir),
            "pids": {r: p.pid for r, p in self.procs.items()},
            # a pid names this process only while it lives: its start time tells a reused pid
            "started": {str(p.pid): _started(p.pid) for p in self._all_procs()},
            # each infrastructure plugin's state under its component's name (``broker``,
            # ``database``), None where the stack declares none
            **{
                p.component: None if p.name not in self.infra else p.local_state(self.infra[p.name])
                for p in infrastructure.all_infrastructure().values()
            },
        }


_LIVE: set[LocalStack] = set()


@atexit.register
def _stop_live() -> None:
    for stack in list(_LIVE):
        stack.stop()


class LocalBackend:
    name = "local"

    def start(
        self,
        spec: StackSpec,
        options: StackOptions,
        logs_dir: Path | None = None,
        detached: bool = False,
    ) -> LocalStack:
        """Start ``spec``'s processes; ``detached``: they outlive this process, and the
        stack's state file (``state_file``) tells ``down`` what to stop (a stack already
        up detached is refused)."""
        if detached and state_file(spec.name).exists():
            raise FileExistsError(f"{spec.name} is already up (ipclab down {spec.name} first)")
        orphans.sweep()  # what a killed harness left (epmd, workdirs), saying so
        for plugin in infrastructure.of(spec.infrastructure):  # and of its instances
            plugin.sweep_local()
        workdir = Path(tempfile.mkdtemp(prefix=f"{orphans.WORKDIR_PREFIX}{spec.name}-"))
        if not detached:
            orphans.mark_workdir(workdir)
        stack = LocalStack(spec, options, workdir, logs_dir or workdir / "logs", detached)
        if not detached:
            _LIVE.add(stack)
        stack.start()
        if detached:  # what ``down`` stops it by
            try:
                save_state(stack)
            except BaseException:
                stack.stop()
                raise
        return stack


BACKEND = BackendPlugin(
    "local",
    LocalBackend,
    order=0,
    description="processes on this machine",
    stop_detached=f"{__name__}:down",
    options=frozenset({"pin", "tls", "detach", "store"}),
)


# --- `ipclab up --detach` / `ipclab down` --------------------------------------------------
def state_file(stack: str) -> Path:
    return STATE_DIR / f"{stack}.json"


def _private_dir(path: Path) -> Path:
    """``path`` as a directory only this user can write (made so if new), or UnsafeState."""
    return private_dir(path, "the stack state", "remove it or set IPCLAB_STATE_DIR")


def _started(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def save_state(stack: LocalStack) -> Path:
    _private_dir(STATE_DIR)
    path = state_file(stack.spec.name)
    write_json_atomic(path, stack.state(), mode=0o600)
    return path


def read_state(path: Path) -> dict[str, Any]:
    _private_dir(path.parent)
    if not owned_alone(path.lstat()):
        raise UnsafeState(f"{path}: not a file owned by uid {os.getuid()} alone; not trusted")
    state: dict[str, Any] = json.loads(path.read_text())
    return state


def _same_process(pid: Any, started: dict[str, Any]) -> bool:
    """The pid still names the process the state file recorded (same start time)."""
    if not isinstance(pid, int) or pid <= 1 or pid == os.getpid():
        return False
    recorded = started.get(str(pid))
    now = _started(pid)
    return recorded is not None and now is not None and abs(now - recorded) < 0.01


def _is_our_workdir(path: Any, stack: str) -> bool:
    """A directory this module made for ``stack`` (<tempdir>/ipclab-<stack>-...), ours."""
    if not isinstance(path, str):
        return False
    p = Path(path)
    try:
        st = p.lstat()
    except OSError:
        return False
    return (
        p.parent.resolve() == Path(tempfile.gettempdir()).resolve()
        and p.name.startswith(f"{WORKDIR_PREFIX}{stack}-")
        and not p.is_symlink()
        and p.is_dir()
        and st.st_uid == os.getuid()
    )


def down(stack_name: str) -> bool:
    """Stop a detached stack from its state file; False if none was up.

    The file is trusted only when this user alone can write it and its directory; a pid is
    signalled only while it names the process recorded (same start time), and only the
    stack's own temporary workdir is removed: a stale or planted file kills or deletes
    nothing else."""
    resolve(stack_name)
    path = state_file(stack_name)
    if not path.exists():
        return False
    state = read_state(path)
    started = state.get("started") or {}
    pids = state.get("pids") or {}
    gateway_pid = pids.get("gateway")
    if _same_process(gateway_pid, started):
        stop_group(gateway_pid)
    for pid in pids.values():
        if _same_process(pid, started):
            stop_group(pid)
    workdir = state.get("workdir")
    ours = _is_our_workdir(workdir, stack_name)
    for plugin in infrastructure.all_infrastructure().values():
        recorded = state.get(plugin.component)
        if isinstance(recorded, dict):
            plugin.local_down(recorded, lambda pid: _same_process(pid, started), ours)
    if ours:
        shutil.rmtree(workdir, ignore_errors=True)
    path.unlink()
    return True
