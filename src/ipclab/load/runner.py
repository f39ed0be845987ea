"""One run: start a stack, put a Locust load on it, write the run directory, stop the stack.

CLI, notebooks and experiments all go through ``run`` (or ``run_on`` with a stack that is
already up), so every run directory has the same shape (docs/run-directory.md).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil

from ipclab import infrastructure
from ipclab.backends import RunningStack, StackOptions, get_backend
from ipclab.backends.base import LoadHost, LoadPods
from ipclab.backends.described import describe_stack
from ipclab.load import forkserver
from ipclab.procs import Child, free_port, parse_cpus, pin_tree, spawn, stop_group
from ipclab.runs import DEFAULT_ROOT, RESOURCE_COLUMNS, CsvAppender, RunWriter, new_run_dir
from ipclab.stacks import resolve
from ipclab.stackspec import StackSpec
from ipclab.summary import summarize


@dataclass
class LoadProfile:
    """A closed-loop Locust load. Think time is uniform in [think_time_s, think_time_max_s]."""

    users: int = 10
    spawn_rate: float = 10.0
    duration_s: float = 30.0
    think_time_s: float = 0.0
    think_time_max_s: float | None = None
    warmup_s: float = 0.0  # excluded from summary.json (raw records keep everything)
    seed: int = 1
    cpuset: str | None = None  # CPUs Locust (master and workers) runs on, e.g. "1"

    def __post_init__(self) -> None:
        if self.users < 1:
            raise ValueError("users must be at least 1")
        if self.spawn_rate <= 0:
            raise ValueError("spawn rate must be positive")
        if self.duration_s < 1:
            raise ValueError("duration must be at least 1 s")
        if self.think_time_s < 0 or (self.think_time_max_s or 0) < 0:
            raise ValueError("think time must not be negative")
        if self.warmup_s < 0 or self.warmup_s >= self.duration_s:
            raise ValueError("warm-up must be in [0, duration)")
        if self.cpuset is not None:
            parse_cpus(self.cpuset)  # a clear error now, not in the middle of a run


@dataclass(frozen=True)
class Fault:
    """At ``at_s`` seconds after the load starts, ``action`` ("kill"/"restart") ``role``."""

    at_s: float
    role: str
    action: str = "kill"

    @classmethod
    def parse(cls, text: str) -> Fault:
        """``ROLE@SECONDS`` or ``ACTION:ROLE@SECONDS``: ``reviews@5``, ``restart:reviews@9``."""
        action, _, rest = text.rpartition(":")
        role, sep, at = rest.partition("@")
        if not sep or not role:
            raise ValueError(f"fault {text!r}: expected ROLE@SECONDS, e.g. reviews@5")
        try:
            at_s = float(at.rstrip("s"))
        except ValueError:
            raise ValueError(f"fault {text!r}: {at!r} is not a number of seconds") from None
        action = action or "kill"
        if action not in ("kill", "restart"):
            raise ValueError(f"fault {text!r}: action must be kill or restart")
        return cls(at_s, role, action)


def host_usage() -> dict[str, float]:
    """The whole machine since the previous call: busy CPU and the VM's steal time (100 = one
    core), memory in use. Other processes' load and a slower or shared host show up here."""
    n = psutil.cpu_count() or 1
    c = psutil.cpu_times_percent(interval=None)
    steal = float(getattr(c, "steal", 0.0))
    busy = 100.0 - c.idle - getattr(c, "iowait", 0.0) - steal
    return {
        "cpu_percent": round(busy * n, 1),
        "steal_percent": round(steal * n, 1),
        "rss_bytes": psutil.virtual_memory().used,
    }


class ResourceSampler(threading.Thread):
    """Samples every component of the stack, the load generator and the host at 1 Hz into
    resources.csv."""

    def __init__(
        self,
        stack: RunningStack,
        out: CsvAppender,
        extra: Callable[[], dict[str, int]],
        more: Callable[[], list[dict[str, Any]]] | None = None,
    ):
        """``extra``: the load generator's processes of this machine; ``more``: the rows of
        a load that runs elsewhere (``LoadPods.sample``)."""
        super().__init__(daemon=True, name="resource-sampler")
        self.stack, self.out, self.extra, self.more = stack, out, extra, more
        self.halt = threading.Event()
        self._ps: dict[int, psutil.Process] = {}
        self._names: set[str] = set()  # the load generator's processes seen so far

    def _rows(self) -> list[dict[str, Any]]:
        procs = self.extra()
        self._names.update(procs)
        rows = []
        # a stack component named as a load generator process is its load host (a container
        # that runs nothing but owns the network namespace the process runs in): its network
        # counters go into the process's row, the only row of that component (after the
        # process ended, in the last sample, a row of the counters alone)
        load_hosts: dict[str, dict[str, Any]] = {}
        for row in self.stack.sample():
            if row.get("component") in self._names:
                load_hosts[row["component"]] = row
            else:
                rows.append(row)
        now = time.time()
        rows.append({"t": now, "component": "host", "kind": "host", **host_usage()})
        gone = [n for n in sorted(self._names) if n not in procs and n in load_hosts]
        for name in [*procs, *gone]:
            row: dict[str, Any] = {"t": now, "component": name, "kind": "loadgen"}
            if name in procs:
                row.update(pid=procs[name], **self.stack.process_usage(procs[name], self._ps))
            host = load_hosts.get(name, {})
            row.update({k: v for k, v in host.items() if k.startswith("net_") or k == "container"})
            rows.append(row)
        if self.more is not None:
            rows.extend(self.more())
        return rows

    def run(self) -> None:
        host_usage()  # the first call only sets the reference point
        with contextlib.suppress(Exception):  # so for every process: the first second counts
            self.stack.sample()
            for pid in self.extra().values():
                self.stack.process_usage(pid, self._ps)
        while not self.halt.wait(1.0):
            try:
                self.out.write(self._rows())
            except Exception:  # noqa: BLE001 - a failed sample must not end the run
                continue

    def final(self) -> None:
        """One more sample after the thread stopped: the last part-second (a CPU % over the
        time since the previous sample, as every row)."""
        with contextlib.suppress(Exception):
            self.out.write(self._rows())


def locustfile(users_module: str) -> Path:
    """The file of a stack's Locust user module (``StackSpec.users``); Locust takes a path."""
    found = importlib.util.find_spec(users_module)
    if found is None or found.origin is None:
        raise ValueError(f"no Locust user module {users_module!r}")
    return Path(found.origin)


def worker_argv(
    users_module: str, master: str, python: str = sys.executable, path: str | None = None
) -> list[str]:
    """A Locust worker of ``master`` (``host:port``), running the stack's user module (its
    file ``path`` where the worker runs, by default this machine's)."""
    host, port = master.rsplit(":", 1)
    path = path or str(locustfile(users_module))
    return [
        python, "-m", "locust", "-f", path, "--worker",
        "--master-host", host, "--master-port", port, "--loglevel", "WARNING",
    ]  # fmt: skip


def _locust_argv(
    profile: LoadProfile,
    url: str,
    csv_prefix: Path | str,
    path: Path | str,
    master: tuple[int, int] = (0, 0),
    python: str = sys.executable,
    bind: str = "127.0.0.1",
) -> list[str]:
    """Locust on its own (the default), or the master of ``master = (port, workers)``
    bound to ``bind``; the user module's file ``path``, the CSV files at ``csv_prefix``."""
    port, workers = master
    distributed = (
        ["--master", "--master-bind-host", bind, "--master-bind-port", str(port),
         "--expect-workers", str(workers), "--expect-workers-max-wait", "60"]
        if workers else []
    )  # fmt: skip
    return [
        python,
        "-m",
        "locust",
        "-f",
        str(path),
        *distributed,
        "--headless",
        "--host",
        url,
        "--users",
        str(profile.users),
        "--spawn-rate",
        str(profile.spawn_rate),
        "--run-time",
        f"{round(profile.duration_s)}s",
        "--stop-timeout",
        "5",
        "--csv",
        str(csv_prefix),
        "--csv-full-history",
        "--only-summary",
        "--loglevel",
        "WARNING",
        "--exit-code-on-error",
        "0",
    ]


class LoadSession:
    """Locust against a running stack: ``start``, then ``wait`` for its run time (or
    ``stop`` it early), with resources sampled at 1 Hz; ``stop`` writes summary.json.

    Every load of ipclab goes through this class (``run_on`` and the availability runners).
    """

    def __init__(
        self,
        stack: RunningStack,
        profile: LoadProfile,
        writer: RunWriter,
        options: StackOptions,
        workers: int = 0,
    ):
        """``workers``: 0 runs Locust as one process; N runs a master and N worker processes
        on this machine (Locust's master/worker protocol; docs/distributed.md)."""
        if workers < 0:
            raise ValueError("workers must be 0 (one process) or more")
        self.stack, self.profile, self.writer, self.options = stack, profile, writer, options
        self.workers = workers
        self.worker_procs: list[subprocess.Popen[bytes]] = []
        self.lost_workers: list[int] = []
        self.proc: Child | None = None
        self.pods: LoadPods | None = None  # the load's pods (``RunningStack.load_pods``)
        self._pods_running = False
        self._resources: CsvAppender | None = None
        self._sampler: ResourceSampler | None = None
        self.started = 0.0
        self.forked = False
        self.summary: dict[str, Any] = {}

    def _env(self) -> dict[str, str]:
        """The load's environment: this machine's (no ``IPCLAB_*`` of the harness's own),
        the run's knobs, and what the stack adds (``load_env``)."""
        run_dir, p = self.writer.path, self.profile
        env = {k: v for k, v in os.environ.items() if not k.startswith("IPCLAB_")}
        env.update(
            IPCLAB_REQUESTS_DIR=str(run_dir / "requests"),
            IPCLAB_THINK_TIME_S=str(p.think_time_s),
            IPCLAB_THINK_TIME_MAX_S=str(p.think_time_max_s or p.think_time_s),
            IPCLAB_CATALOGUE_SIZE=str(self.options.catalogue_size),
            IPCLAB_CUSTOMERS=str(self.options.customers),
            IPCLAB_LOAD_SEED=str(p.seed),
            PYTHONUNBUFFERED="1",
        )
        # a stack may give its load generator more to read (a group: every target's address)
        env.update(self.stack.load_env())
        return env

    def _worker_envs(self, env: dict[str, str]) -> list[dict[str, str]]:
        """Each worker's users draw their own ids: seed + 1000 x worker number."""
        seed = self.profile.seed
        return [
            {**env, "IPCLAB_LOAD_SEED": str(seed + 1000 * i)} for i in range(1, self.workers + 1)
        ]

    def start(self) -> LoadSession:
        run_dir, p = self.writer.path, self.profile
        env = self._env()
        # the load's own pods where the stack runs them (kubernetes), made before the clock
        # starts (the load image may be imported first)
        self.pods = self.stack.load_pods() if self.workers else None
        if self.pods is not None:
            self.pods.prepare()
        # ... or a host of its own: a network namespace to run in, the gateway as seen there
        host: LoadHost | None = self.stack.load_host()
        enter, url = (host.enter(), host.url) if host else ([], self.stack.gateway_url)
        self._resources = CsvAppender(run_dir / "resources.csv", RESOURCE_COLUMNS)
        rows = self.pods.sample if self.pods is not None else None
        self._sampler = ResourceSampler(self.stack, self._resources, self._loadgen_pids, rows)
        self._sampler.start()
        where = {"load_host": url} if host else {}  # the gateway as the load host sees it
        if self.pods is not None:
            where = {"load_pods": self.pods.url}  # the gateway as the load's pods reach it
        self.writer.event(
            "load_start", users=p.users, duration_s=p.duration_s, workers=self.workers, **where
        )
        self.started = time.monotonic()
        if self.pods is not None:
            self._start_pods(self.pods, env)
            return self
        port = free_port() if self.workers else 0
        users = self.stack.spec.users
        argv = _locust_argv(p, url, run_dir / "locust", locustfile(users), (port, self.workers))
        log = run_dir / "logs" / "locust.log"
        # a pre-imported Locust forked in a fraction of a second where it can serve
        cpus = parse_cpus(p.cpuset) if p.cpuset else None
        forked = None if enter or self.workers else forkserver.fork_locust(argv[3:], env, log, cpus)
        self.proc = forked or spawn([*enter, *argv], env, log)
        self.forked = forked is not None
        for i, worker_env in enumerate(self._worker_envs(env), 1):
            log = run_dir / "logs" / f"locust-worker{i}.log"
            argv = worker_argv(users, f"127.0.0.1:{port}")
            self.worker_procs.append(spawn([*enter, *argv], worker_env, log))
        if cpus:  # before Locust starts its users: what it starts later inherits it
            for proc in (self.proc, *self.worker_procs):
                pin_tree(proc.pid, cpus)
        return self

    def _start_pods(self, pods: LoadPods, env: dict[str, str]) -> None:
        """Locust's master and workers as the stack's pods: the same arguments as on this
        machine, with the pods' paths and addresses; where each ran is recorded."""
        path = pods.locustfile(self.stack.spec.users)
        requests = f"{pods.results}/requests"
        master = _locust_argv(
            self.profile, pods.url, f"{pods.results}/locust", path,
            (pods.master_port, self.workers), python="python", bind="0.0.0.0",
        )  # fmt: skip
        worker = worker_argv(self.stack.spec.users, pods.master_address, "python", path)
        envs = self._worker_envs(env)
        pods.start(master, {**env, "IPCLAB_REQUESTS_DIR": requests}, [worker] * len(envs), envs)
        self.started = time.monotonic()  # Locust's master runs from here
        self._pods_running = True
        nodes = pods.nodes()
        self.writer.event("load_pods", nodes=nodes)
        self.writer.update_manifest(
            load_generator={"where": "pods", "nodes": nodes, "image": getattr(pods, "image", "")}
        )

    def _stop_pods(self, pods: LoadPods) -> None:
        """End the master's Locust unless it ended by itself, then copy the run's files
        from its pod (before the summary reads them)."""
        self._pods_running = False
        ended_itself = pods.poll() is not None
        if not ended_itself:
            pods.stop()
        self.writer.event(
            "load_stop", exit_code=pods.poll(), ended_itself=ended_itself, where="pods"
        )
        try:
            copied = pods.collect(self.writer.path)
            self.writer.event("load_collected", files=len(copied))
        except Exception as e:  # noqa: BLE001 - the run is failed by its missing records
            self.writer.event("load_collect_failed", error=f"{type(e).__name__}: {e}")

    def _loadgen_pids(self) -> dict[str, int]:
        """The load generator's processes to sample: ``loadgen`` (alone, or the master) and
        ``loadgen-worker<i>``."""
        out = {"loadgen": self.proc.pid} if self.proc else {}
        for i, w in enumerate(self.worker_procs, 1):
            if w.poll() is None:
                out[f"loadgen-worker{i}"] = w.pid
        return out

    def check_workers(self) -> list[int]:
        """Workers that died before the load's run time was over (recorded once each, as
        ``worker_lost`` events); the run is then degraded, never silently complete. At the
        end the master tells every worker to quit: those exits are not losses."""
        if not self.running or self.elapsed >= self.profile.duration_s:
            return self.lost_workers
        if self.pods is not None:
            exits = self.pods.worker_exits()
        else:
            exits = [w.poll() for w in self.worker_procs]
        for i, code in enumerate(exits, 1):
            if code is not None and i not in self.lost_workers:
                self.lost_workers.append(i)
                self.writer.event("worker_lost", worker=i, exit_code=code)
        return self.lost_workers

    @property
    def running(self) -> bool:
        if self.pods is not None:
            return self._pods_running and self.pods.poll() is None
        return self.proc is not None and self.proc.poll() is None

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def wait(self, timeout: float) -> bool:
        """Wait for Locust to end by itself (its run time); True if it did."""
        deadline = time.monotonic() + timeout
        while self.running and time.monotonic() < deadline:
            self.check_workers()
            time.sleep(0.05)
        return not self.running

    def stop(self) -> dict[str, Any]:
        """End Locust (SIGTERM: it flushes its records) unless it ended by itself."""
        if self.pods is not None and self._pods_running:
            self._stop_pods(self.pods)
        if self.proc is not None:
            ended_itself = self.proc.poll() is not None
            if not ended_itself:
                stop_group(self.proc, grace=10)
            self.writer.event(
                "load_stop",
                exit_code=self.proc.poll(),
                ended_itself=ended_itself,
                forked=self.forked,  # Locust from the fork server (load/forkserver.py)
            )
            self.proc = None
        for w in self.worker_procs:  # the master told them to quit; stop any that did not
            with contextlib.suppress(subprocess.TimeoutExpired):
                w.wait(timeout=10)
            if w.poll() is None:
                stop_group(w, grace=5)
        if self._sampler is not None:
            self._sampler.halt.set()
            self._sampler.join(timeout=5)
            if not self._sampler.is_alive():
                self._sampler.final()
            self._sampler = None
        if self._resources is not None:
            self._resources.close()
            self._resources = None
            self.summary = summarize(self.writer.path, warmup_s=self.profile.warmup_s)
            if self.workers:
                self.summary["workers"] = self.workers
                self.summary["workers_lost"] = list(self.lost_workers)
        return self.summary


EARLY_TOLERANCE_S = 2.0  # Locust ending this much before its run time died early


def run_on(
    stack: RunningStack,
    profile: LoadProfile,
    writer: RunWriter,
    options: StackOptions,
    faults: Sequence[Fault] = (),
    workers: int = 0,
) -> dict[str, Any]:
    """Put the load on a running stack, recording into ``writer``'s directory. A run whose
    Locust workers did not all last ends ``degraded``."""
    session = LoadSession(stack, profile, writer, options, workers)
    pending = sorted(faults, key=lambda f: f.at_s)
    status = "failed"
    try:
        session.start()
        while session.running:
            while pending and pending[0].at_s <= session.elapsed:
                fault = pending.pop(0)
                getattr(stack, fault.action)(fault.role)
                writer.event(fault.action, role=fault.role, at_s=round(session.elapsed, 3))
            if session.elapsed > profile.duration_s + 60:
                writer.event("load_overrun", note="Locust did not stop in time; stopped")
                break
            session.wait(0.05)
        ran = session.elapsed
        if ran < profile.duration_s - EARLY_TOLERANCE_S:
            # Locust ended by itself before its run time: a crash, not a measurement
            writer.event("load_ended_early", after_s=round(ran, 3), wanted_s=profile.duration_s)
            status = "failed"
        else:
            status = "degraded" if session.check_workers() else "complete"
    except KeyboardInterrupt:
        status = "interrupted"
        writer.event("interrupted")
        raise
    finally:
        summary = session.stop()
        summary["status"] = status
        writer.write_json("summary.json", summary)
        writer.update_manifest(status=status)
    return summary


def run_parameters(stack: str, profile: LoadProfile, options: StackOptions) -> dict[str, Any]:
    """A run's parameters every load run records: the headline knobs flat, for analysis,
    and the profile and stack options in full (the reuse check compares them)."""
    return {
        "stack": stack,
        "users": profile.users,
        "spawn_rate": profile.spawn_rate,
        "duration_s": profile.duration_s,
        "think_time": {
            "min": profile.think_time_s,
            "max": profile.think_time_max_s or profile.think_time_s,
        },
        "profile": asdict(profile),
        "options": options.as_dict(),
    }


def run(
    stack_name: str,
    profile: LoadProfile,
    *,
    backend: str = "local",
    options: StackOptions | None = None,
    out: Path | None = None,
    root: Path | None = None,
    faults: Sequence[Fault] = (),
    label: str = "",
    extra: dict[str, Any] | None = None,
    workers: int = 0,
    stack: RunningStack | None = None,
) -> Path:
    """Start ``stack_name``, run ``profile`` against it, stop it; return the run directory.
    ``workers``: Locust as one process (0) or a master with that many workers. ``stack``: a
    running stack of ``stack_name`` to put the load on instead, left running (its owner
    started it and stops it, e.g. an experiment's cells sharing one stack).

    ``out`` is the run directory itself (must not hold a run yet); otherwise a new one is
    made under ``root`` (default data/runs).
    """
    spec = resolve(stack_name)
    options = options or StackOptions()
    components = (*spec.roles, *infrastructure.fault_components(spec.infrastructure))
    for f in faults:
        if f.role not in components:
            raise ValueError(
                f"fault names {f.role!r}, not a component of {spec.name} ({', '.join(components)})"
            )
    if root is not None and Path(root).exists() and not Path(root).is_dir():
        raise ValueError(f"--runs-root {root} is a file, not a directory")
    if out is not None:
        out = Path(out)
        if (out / "manifest.json").exists():
            raise FileExistsError(f"{out} already holds a run; choose another --out")
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise FileExistsError(
                f"{out} exists and is not an empty directory; --out names a new run directory"
            )
        out.mkdir(parents=True, exist_ok=True)
        run_dir = out
    else:
        run_dir = new_run_dir(
            root or DEFAULT_ROOT, label or f"{spec.name}-{backend}-u{profile.users}"
        )
    parameters = {
        **run_parameters(spec.name, profile, options),
        "faults": [asdict(f) for f in faults],
        **({"workers": workers} if workers else {}),
        **(extra or {}),
    }
    writer = RunWriter(
        run_dir,
        "load",
        parameters,
        stack=spec.name,
        style=spec.style,
        stack_spec=spec.declaration(),
        backend=backend,
        users=profile.users,
    )
    with writer.guard(), _stack_of_run(spec, backend, options, writer, stack) as up:
        writer.update_manifest(**describe_stack(up))
        summary = run_on(up, profile, writer, options, faults, workers)
    writer.finish(summary.get("status", "complete"))
    return run_dir


@contextlib.contextmanager
def _stack_of_run(
    spec: StackSpec,
    backend: str,
    options: StackOptions,
    writer: RunWriter,
    shared: RunningStack | None,
) -> Iterator[RunningStack]:
    """The run's own stack, started into its directory's logs and stopped after the run
    whatever happens; or ``shared``, lent for the run (its events say which)."""
    if shared is not None:
        writer.event("stack_shared", gateway_url=shared.gateway_url)
        yield shared
        return
    writer.event("stack_starting")
    forkserver.warm()  # Locust's imports overlap the stack's start
    stack = get_backend(backend).start(spec, options, logs_dir=writer.path / "logs")
    try:
        writer.event("stack_up", gateway_url=stack.gateway_url)
        yield stack
    finally:
        stack.stop()
        writer.event("stack_down")


__all__ = ["Fault", "LoadProfile", "run", "run_on"]
