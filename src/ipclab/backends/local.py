"""The local backend: every component is a process on this machine (no Docker needed).

Services listen on free loopback ports; amqp stacks get a private RabbitMQ node. Each
process runs in its own session, is sampled with psutil, and is killed with the harness
(unless detached). ``stop`` removes processes, the broker node and its data directory.
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
from typing import Any

import psutil

from ipclab.backends.base import StackOptions
from ipclab.backends.broker import RabbitNode
from ipclab.backends.postgres import PostgresCluster
from ipclab.procs import free_port, kill_group, spawn, stop_group, tail
from ipclab.stacks import StackSpec, resolve

READY_TIMEOUT_S = 60.0
STATE_DIR = Path(os.environ.get("IPCLAB_STATE_DIR", Path(tempfile.gettempdir()) / "ipclab-state"))


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
class LocalStack:
    spec: StackSpec
    options: StackOptions
    workdir: Path
    logs_dir: Path
    detached: bool = False
    backend: str = "local"
    ports: dict[str, int] = field(default_factory=dict)
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    broker: RabbitNode | None = None
    database: PostgresCluster | None = None
    _ps: dict[int, psutil.Process] = field(default_factory=dict)
    _stopped: bool = False
    _command: list[str] = field(default_factory=list)
    _fixture: Path | None = None

    @property
    def gateway_url(self) -> str:
        return f"http://127.0.0.1:{self.ports[self.spec.gateway]}"

    def _env(self, role: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("IPCLAB_")}
        env.update(
            self.spec.role_env(
                role,
                {s: f"127.0.0.1:{self.ports[s]}" for s in self.spec.services},
                self.broker.url if self.broker is not None else "",
                self.options.env(),
                self.database.dsn if self.database is not None else "",
            ),
            IPCLAB_HOST="127.0.0.1",
            IPCLAB_PORT=str(self.ports[role]),
            PYTHONUNBUFFERED="1",
        )
        if self._fixture is not None:
            env["IPCLAB_FIXTURE"] = str(self._fixture)
        return env

    def _spawn(self, role: str) -> None:
        self.procs[role] = spawn(
            self._command,
            self._env(role),
            self.logs_dir / f"{role}.log",
            detached=self.detached,
        )

    def start(self) -> None:
        try:
            self._command = self.spec.runtime.command()  # builds a compiled runtime's binary
            if self.spec.runtime.fixture:
                self._write_fixture()
            if self.spec.needs_broker:
                self.broker = RabbitNode(self.workdir / "broker")
                self.broker.start(detached=self.detached)
            if self.spec.needs_database:
                self._start_database()
            self.ports = {role: free_port() for role in self.spec.roles}
            for role in self.spec.roles:
                self._spawn(role)
            wait_ready(
                self.gateway_url,
                READY_TIMEOUT_S,
                lambda: all(p.poll() is None for p in self.procs.values()),
            )
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

    def _start_database(self) -> None:
        """A private PostgreSQL cluster, created and filled by the domain's SQL for this
        run's knobs (e.g. rows per table)."""
        from ipclab_services import domains

        self.database = PostgresCluster()
        self.database.start(detached=self.detached)
        env = {**os.environ, **self.options.env(), **self.spec.settings}
        self.database.execute(domains.load(self.spec.domain).database_sql(env))

    # --- RunningStack -------------------------------------------------------------------
    def components(self) -> dict[str, tuple[str, int]]:
        """name -> (kind, pid) for every live component."""
        out = {
            role: ("gateway" if role == self.spec.gateway else "service", p.pid)
            for role, p in self.procs.items()
            if p.poll() is None
        }
        if self.broker is not None and self.broker.process is not None:
            out["broker"] = ("broker", self.broker.process.pid)
        if self.database is not None and self.database.process is not None:
            out["database"] = ("database", self.database.process.pid)
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
        if role == "broker":
            if self.broker is not None:
                self.broker.kill()
            return
        proc = self.procs[role]
        kill_group(proc.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)

    def restart(self, role: str) -> None:
        if role == "broker":
            assert self.broker is not None
            self.broker.start(detached=self.detached)
            return
        if self.procs[role].poll() is None:
            stop_group(self.procs[role], grace=0)
        self._spawn(role)

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
        if self.broker is not None:
            self.broker.stop()
        if self.database is not None:
            self.database.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)
        _LIVE.discard(self)

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
            "broker": None
            if self.broker is None
            else {
                "pid": self.broker.process.pid if self.broker.process else None,
                "epmd_port": self.broker.epmd_port,
                "dir": str(self.broker.directory),
            },
            "database": None
            if self.database is None
            else {
                "pid": self.database.process.pid if self.database.process else None,
                "dir": str(self.database.directory),
            },
        }


def process_tree_usage(pid: int, cache: dict[int, psutil.Process]) -> dict[str, Any]:
    """CPU % (100 = one core, since the previous call) and RSS of a process and its children."""
    cpu = 0.0
    rss = 0
    try:
        root = psutil.Process(pid)
        members = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return {"cpu_percent": None, "rss_bytes": None}
    for p in members:
        proc = cache.setdefault(p.pid, p)
        try:
            with proc.oneshot():
                cpu += proc.cpu_percent(None)
                rss += proc.memory_info().rss
        except psutil.NoSuchProcess:
            cache.pop(p.pid, None)
    return {"cpu_percent": round(cpu, 1), "rss_bytes": rss}


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
        workdir = Path(tempfile.mkdtemp(prefix=f"ipclab-{spec.name}-"))
        stack = LocalStack(spec, options, workdir, logs_dir or workdir / "logs", detached)
        if not detached:
            _LIVE.add(stack)
        stack.start()
        return stack


# --- `ipclab up --detach` / `ipclab down` --------------------------------------------------
def state_file(stack: str) -> Path:
    return STATE_DIR / f"{stack}.json"


def save_state(stack: LocalStack) -> Path:
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    path = state_file(stack.spec.name)
    path.write_text(json.dumps(stack.state(), indent=2))
    return path


def down(stack_name: str) -> bool:
    """Stop a detached stack from its state file; False if none was up."""
    resolve(stack_name)
    path = state_file(stack_name)
    if not path.exists():
        return False
    state = json.loads(path.read_text())
    gateway_pid = state["pids"].get("gateway")
    if gateway_pid:
        stop_group(gateway_pid)
    for pid in state["pids"].values():
        stop_group(pid)
    broker = state.get("broker")
    if broker:
        if broker.get("pid"):
            stop_group(broker["pid"], grace=10)
        from ipclab.backends.broker import stop_private_epmd

        stop_private_epmd(broker["epmd_port"])
    database = state.get("database")
    if database:
        if database.get("pid"):
            stop_group(database["pid"], grace=10)
        shutil.rmtree(database["dir"], ignore_errors=True)
    shutil.rmtree(state["workdir"], ignore_errors=True)
    path.unlink()
    return True
