"""Child processes the harness owns: started in their own session, stopped as a group."""

from __future__ import annotations

import contextlib
import ctypes
import os
import pwd
import random
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

_PR_SET_PDEATHSIG = 1
_SETPRIV = shutil.which("setpriv")  # util-linux


def server_user(name: str) -> str | None:
    """The OS user a private server (PostgreSQL, MariaDB) runs as: ``name`` when the harness
    is root, None (the harness's own user) otherwise; KeyError when root and ``name`` is
    missing (the caller says which package makes it)."""
    if os.geteuid() != 0:
        return None
    pwd.getpwnam(name)
    return name


PORT_RANGE_ENV = "IPCLAB_PORT_RANGE"
_LOWEST_PORT = 20000  # below it: the well-known ranges of databases, brokers and dev servers


def port_range() -> range:
    """Where the harness's listening ports come from: ``IPCLAB_PORT_RANGE`` ("low-high"),
    else from 20000 to just below the kernel's ephemeral range. Outside that range on
    purpose: the kernel gives its ports to every outgoing connection (a Locust client, a
    service calling the next), and one of them may take a port between its choice here
    and the server's bind (EADDRINUSE at start-up, seen under two test workers). Empty
    when the ephemeral range starts too low to leave room (then the kernel chooses)."""
    text = os.environ.get(PORT_RANGE_ENV, "").strip()
    if text:
        low, sep, high = text.partition("-")
        valid = sep and low.isdigit() and high.isdigit()
        if not (valid and 1024 <= int(low) <= int(high) <= 65535):
            raise ValueError(
                f"{PORT_RANGE_ENV}={text!r}: expected LOW-HIGH, two ports from 1024 to 65535, "
                "LOW not above HIGH (for example 20000-32767)"
            )
        return range(int(low), int(high) + 1)
    try:
        ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return range(0)
    return range(_LOWEST_PORT, ephemeral_low) if ephemeral_low - _LOWEST_PORT >= 1000 else range(0)


class _PortCursor:
    """Walks :func:`port_range` from a random start, one port after another, shared by every
    caller in the process: a port handed out comes back only after the whole range (so a
    stack starting beside another never gets its sibling's ports, and a stopped stack's
    port has long left TIME_WAIT)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._range = range(0)
        self._next = 0

    def take(self) -> int:
        """The next candidate, or 0 (the kernel's choice) when the range is empty."""
        with self._lock:
            ports = port_range()
            if not ports:
                return 0
            if ports != self._range:
                self._range, self._next = ports, random.randrange(len(ports))
            port = ports[self._next % len(ports)]
            self._next = (self._next + 1) % len(ports)
            return port


_CURSOR = _PortCursor()


def _held(host: str, port: int) -> list[socket.socket] | None:
    """A TCP and a UDP socket bound to ``port`` (a role may listen on either: CoAP is UDP),
    or None when either is busy. ``port`` 0: the kernel's choice, its UDP twin if free."""
    held: list[socket.socket] = []
    try:
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        held.append(tcp)
        tcp.bind((host, port))
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        held.append(udp)
        udp.bind((host, int(tcp.getsockname()[1])))
        return held
    except OSError:
        for sock in held:
            sock.close()
        return None


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """``n`` distinct ports nobody uses now, over TCP nor UDP, from :func:`port_range`: each
    is held bound until all are chosen, then released for the servers to bind."""
    held: list[socket.socket] = []
    ports: list[int] = []
    try:
        tries = len(port_range())  # each candidate of the range once, then the kernel's
        while len(ports) < n:
            port, tries = (_CURSOR.take() if tries > 0 else 0), tries - 1
            sockets = _held(host, port)
            if sockets is not None:
                held.extend(sockets)
                ports.append(int(sockets[0].getsockname()[1]))
        return ports
    finally:
        for sock in held:
            sock.close()


def free_port(host: str = "127.0.0.1") -> int:
    """One port as :func:`free_ports` chooses them."""
    return free_ports(1, host)[0]


def port_open(host: str, port: int, timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _die_with_parent() -> None:
    """In the child: receive SIGKILL when the harness dies, even by SIGKILL."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def dies_with_harness(argv: Sequence[str]) -> tuple[list[str], Callable[[], None] | None]:
    """``argv`` and a ``preexec_fn`` for ``subprocess.Popen`` such that the child receives
    SIGKILL when the harness dies, even by SIGKILL. The signal is set by setpriv(1) in the
    child where it exists, not by a ``preexec_fn``: a ``preexec_fn`` is unsafe while other
    threads (samplers, probes) run in the harness."""
    if _SETPRIV:
        return [_SETPRIV, "--pdeathsig", "KILL", "--", *argv], None
    return list(argv), _die_with_parent


def spawn(
    argv: Sequence[str],
    env: Mapping[str, str],
    log: Path,
    *,
    detached: bool = False,
    cwd: Path | None = None,
    user: str | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a new session with output to ``log``.

    Unless ``detached``, the child is killed if the harness dies, so a crashed harness
    leaves no service behind. ``user`` (the harness must be root): run as that OS user,
    with its primary group and no supplementary groups; the parent-death signal is set after
    the switch (subprocess changes ids before ``preexec_fn``), so it survives it.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    ids: dict[str, Any] = {}
    preexec = None
    if not detached:
        argv, preexec = dies_with_harness(argv)
    if user is not None:
        ids = {"user": user, "group": pwd.getpwnam(user).pw_gid, "extra_groups": []}
    with open(log, "ab") as out:
        return popen(
            list(argv),
            env=dict(env),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=cwd,
            preexec_fn=preexec,
            **ids,
        )


_spawner: ThreadPoolExecutor | None = None
_spawner_lock = threading.Lock()


def popen(argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen`` from a thread that lives as long as the harness.

    Linux delivers the parent-death signal when the *thread* that forked the child ends, not
    the process: a service started from a short-lived thread (a pool starting two stacks at
    once) would be killed as soon as that thread finished. The main thread starts its
    children itself; any other thread hands the start to one long-lived spawner thread."""
    global _spawner
    if threading.current_thread() is threading.main_thread():
        return subprocess.Popen(list(argv), **kwargs)
    with _spawner_lock:
        if _spawner is None:
            _spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ipclab-spawner")
        spawner = _spawner
    return spawner.submit(subprocess.Popen, list(argv), **kwargs).result()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie still answers kill(0); treat it as gone
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            return False
    return True


def kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


class Child(Protocol):
    """A process the harness started and can wait for: a ``subprocess.Popen``, or a Locust
    forked by the load runner's fork server (``load/forkserver.py``)."""

    pid: int

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


def stop_group(proc: Child | int, grace: float = 5.0) -> None:
    """SIGTERM the process group, wait up to ``grace`` seconds, then SIGKILL it."""
    pid = proc if isinstance(proc, int) else proc.pid
    kill_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not isinstance(proc, int):
            if proc.poll() is not None:
                break
        elif not alive(pid):
            break
        time.sleep(0.05)
    kill_group(pid, signal.SIGKILL)
    if not isinstance(proc, int):
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)


def tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


# --------------------------------------------------------------------------- CPU pinning


def parse_cpus(text: str) -> frozenset[int]:
    """``"0"``, ``"0,2"``, ``"0-3"`` -> the set of CPU numbers; each must be one this process
    may run on (``os.sched_getaffinity``)."""
    cpus: set[int] = set()
    try:
        for part in text.split(","):
            lo, _, hi = part.strip().partition("-")
            cpus.update(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        raise ValueError(f"{text!r} is not a CPU list such as 0, 0,2 or 0-3") from None
    allowed = os.sched_getaffinity(0)
    if not cpus or not cpus <= allowed:
        raise ValueError(f"CPUs {text!r}: this machine offers {format_cpus(allowed)}")
    return frozenset(cpus)


def format_cpus(cpus: frozenset[int] | set[int]) -> str:
    return ",".join(str(c) for c in sorted(cpus))


def pin_tree(pid: int, cpus: frozenset[int]) -> int:
    """Pin every thread of ``pid`` and of its descendants to ``cpus``; threads and processes
    they start later inherit it. Returns the number of threads pinned."""
    import psutil

    n = 0
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            for thread in proc.threads():
                with contextlib.suppress(OSError):
                    os.sched_setaffinity(thread.id, cpus)
                    n += 1
    return n
