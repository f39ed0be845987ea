"""A pre-imported Locust that forks one process per load, so a load starts in a fraction of
a second instead of the 1-2 s it takes Python to import Locust, gevent and pyarrow.

The harness starts the server once (``python -m ipclab.load.forkserver``, with the
parent-death signal like every child of the harness) and asks it, over a pipe, for a Locust
process: argv, environment and log. The server forks; the child starts a session of its
own, dies with the server (its own parent-death signal), takes the environment and the log,
and runs Locust's ``main`` as ``python -m locust`` would. The server reports each child's
pid when it starts and its exit status when it ends; :class:`ForkedLocust` is what the
harness holds in place of a ``subprocess.Popen`` (``pid``, ``poll``, ``wait``).

Where the server cannot serve (a load host's namespace to enter, Locust workers,
``IPCLAB_LOCUST_FORKSERVER=0``, or a server that died), the load runner starts Locust the
usual way: the fork server only ever saves time.

A forked Locust's command line and initial environment are the server's (``/proc`` shows
what the process was executed with): find it as a child of a process running this module.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from ipclab.procs import dies_with_harness, popen

MODULE = "ipclab.load.forkserver"
DISABLE = "IPCLAB_LOCUST_FORKSERVER"  # "0": always start Locust the usual way
_PR_SET_PDEATHSIG = 1


# --------------------------------------------------------------------------- the harness


class ForkedLocust:
    """A Locust process forked by the server: what the load runner needs of a ``Popen``."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._ended = threading.Event()

    def _exited(self, code: int) -> None:
        self.returncode = code
        self._ended.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired(f"locust (pid {self.pid})", timeout or 0)
        assert self.returncode is not None
        return self.returncode


class ForkServer:
    """The harness's end of one server process (see the module docstring)."""

    def __init__(self) -> None:
        # the harness's environment without ipclab's settings: each load brings its own
        env = {k: v for k, v in os.environ.items() if not k.startswith("IPCLAB_")}
        # it dies with the harness, as every child of the harness does (procs.spawn)
        argv, preexec = dies_with_harness([sys.executable, "-m", MODULE])
        self.proc = popen(
            argv,
            preexec_fn=preexec,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C at the harness's terminal is the harness's
        )
        self._lock = threading.Lock()
        self._started: list[int] = []
        self._started_cv = threading.Condition(self._lock)
        self._children: dict[int, ForkedLocust] = {}
        self._early: dict[int, int] = {}  # exits reported before the pid was collected
        self._reader = threading.Thread(target=self._read, name="forkserver", daemon=True)
        self._reader.start()

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None and self._reader.is_alive()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            with self._lock:
                if "started" in msg:
                    self._started.append(int(msg["started"]))
                    self._started_cv.notify_all()
                elif "exited" in msg:
                    pid, code = int(msg["exited"]), int(msg["code"])
                    child = self._children.pop(pid, None)
                    if child is None:
                        self._early[pid] = code
                    else:
                        child._exited(code)
        with self._lock:  # the server is gone: so are its children (parent-death signal)
            for child in self._children.values():
                child._exited(-signal.SIGKILL)
            self._children.clear()
            self._started_cv.notify_all()

    def fork(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        log: Path,
        cpus: frozenset[int] | None = None,
        timeout: float = 10.0,
    ) -> ForkedLocust | None:
        """A Locust process for ``argv`` (Locust's arguments, no interpreter), on ``cpus``
        from its first instruction when given; None when the server did not answer (the
        caller starts Locust the usual way)."""
        log.parent.mkdir(parents=True, exist_ok=True)
        request = {"argv": list(argv), "env": dict(env), "log": str(log)}
        if cpus:
            request["cpus"] = sorted(cpus)
        with self._lock:
            if not self.alive or self.proc.stdin is None:
                return None
            try:
                self.proc.stdin.write(json.dumps(request).encode() + b"\n")
                self.proc.stdin.flush()
            except OSError:
                return None
            deadline = time.monotonic() + timeout
            while not self._started and self._reader.is_alive():
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._started_cv.wait(left)
            if not self._started:
                return None
            child = ForkedLocust(self._started.pop(0))
            if child.pid in self._early:
                child._exited(self._early.pop(child.pid))
            else:
                self._children[child.pid] = child
            return child

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()  # end of input: the server exits
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_server: ForkServer | None = None
_server_lock = threading.Lock()


def warm() -> ForkServer | None:
    """This process's server, started now if it is not running (its imports then overlap
    whatever the harness does next, e.g. starting a stack); None where it is turned off."""
    global _server
    if os.environ.get(DISABLE) == "0":
        return None
    with _server_lock:
        if _server is not None and not _server.alive:
            _server = None
        if _server is None:
            with contextlib.suppress(OSError):
                _server = ForkServer()
        return _server


def fork_locust(
    argv: Sequence[str], env: Mapping[str, str], log: Path, cpus: frozenset[int] | None = None
) -> ForkedLocust | None:
    """Locust (``argv`` without the interpreter and ``-m locust``) forked by this process's
    server, started on first use; None where the server cannot serve (module docstring)."""
    server = warm()
    return server.fork(argv, env, log, cpus) if server is not None else None


def close() -> None:
    """Stop this process's server (at exit; also for a test that wants none running)."""
    global _server
    with _server_lock:
        if _server is not None:
            _server.close()
            _server = None


# ------------------------------------------------------------------------------ the server


def _say(out: IO[bytes], msg: dict[str, Any]) -> None:
    out.write(json.dumps(msg).encode() + b"\n")
    out.flush()


def _child(request: dict[str, Any], server_pid: int, server_out: int, ready: int) -> None:
    """In the forked child: become ``python -m locust`` with the request's arguments."""
    code = 1
    try:
        os.setsid()
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != server_pid:  # the server died before the signal was set
            os._exit(1)
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.close(null)
        os.close(server_out)  # the server's reports are the server's
        if request.get("cpus"):  # before Locust starts a thread (each inherits it), and
            # before the harness hears of the child: its pid is on its CPUs when fork returns
            os.sched_setaffinity(0, request["cpus"])
        os.write(ready, b"1")  # a session of its own, dies with the server: say so
        os.close(ready)
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = ["locust", *request["argv"]]
        import random

        import gevent

        random.seed()  # as a fresh interpreter: no two loads share the server's random state
        gevent.reinit()
        # the loop's clock is cached: as of the server's import, not of this fork (a 3 s
        # --run-time would end at once after a server idle for 3 s)
        gevent.get_hub().loop.update_now()
        import locust.main

        try:
            locust.main.main()
            code = 0
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:  # noqa: BLE001 - the child must never return into the server
        import traceback

        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def serve() -> None:
    """Import what every Locust process imports, then fork one per request until stdin ends."""
    import gevent.monkey
    import locust.main  # noqa: F401 - imported once here (gevent's patching included)
    import pyarrow.parquet  # noqa: F401 - the recorder's writer

    # the server's own loop must not start gevent's hub: the unpatched calls
    select = gevent.monkey.get_original("select", "select")
    fork = gevent.monkey.get_original("os", "fork")
    waitpid = gevent.monkey.get_original("os", "waitpid")
    read = gevent.monkey.get_original("os", "read")
    out = os.fdopen(os.dup(1), "wb")
    pending = b""
    children: set[int] = set()
    me = os.getpid()
    open_input = True
    while open_input or children:
        if open_input:
            ready, _, _ = select([0], [], [], 0.05)
            if ready:
                chunk = read(0, 65536)
                if not chunk:
                    open_input = False
                pending += chunk
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    request = json.loads(line)
                    ready_r, ready_w = os.pipe()
                    pid = fork()
                    if pid == 0:
                        os.close(ready_r)
                        _child(request, me, out.fileno(), ready_w)
                    os.close(ready_w)
                    # reported once it has its own session (the harness signals its group)
                    with contextlib.suppress(OSError):
                        read(ready_r, 1)
                    os.close(ready_r)
                    children.add(pid)
                    _say(out, {"started": pid})
        else:
            time.sleep(0.05)
        while children:
            try:
                pid, status = waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                children.clear()
                break
            if pid == 0:
                break
            children.discard(pid)
            _say(out, {"exited": pid, "code": os.waitstatus_to_exitcode(status)})


if __name__ == "__main__":
    serve()
