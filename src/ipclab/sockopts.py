"""The options of another process's live TCP sockets, read from the sockets themselves.

``ss -tie`` and ``/proc/net/tcp`` show a connection's addresses, state and timers, but not
whether TCP_NODELAY is set on it, nor a socket's keep-alive settings. This module takes a
duplicate of each socket descriptor of a process with ``pidfd_getfd(2)`` (Linux 5.6;
allowed where ptrace is: the same user and, under Yama's ptrace_scope 1, a descendant of
the caller, which every component the harness starts is) and asks it with
``getsockopt``: the option the kernel applies to that connection, whatever library set it
and whenever. The duplicate is closed at once; the socket itself is not touched.

Why not the alternatives: ``strace -e setsockopt`` at start-up sees only what a process
sets, not what it inherits (an accepted socket takes a listener's keep-alive) nor what a
library sets later (nginx sets TCP_NODELAY when a connection turns keep-alive), and a
traced process runs slower; an LD_PRELOAD shim misses static binaries (Go) and the JVM's
own calls. A behavioural check (no ~40 ms stall on a request with a body,
``tests/test_socket_options.py``) goes beside this one, not instead of it.
"""

from __future__ import annotations

import contextlib
import ctypes
import ipaddress
import os
import socket
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

_SYS_PIDFD_GETFD = 438  # the same number on every architecture (Linux 5.6's new table)
#: /proc/net/tcp's state column (include/net/tcp_states.h)
_STATES = {1: "ESTABLISHED", 6: "TIME_WAIT", 8: "CLOSE_WAIT", 10: "LISTEN"}


class SockoptsError(RuntimeError):
    """A process's sockets cannot be read (no such process, not allowed, old kernel)."""


@dataclass(frozen=True)
class LiveSocket:
    """One TCP socket of a process, as the kernel has it now."""

    pid: int
    fd: int
    local: tuple[str, int]  # IPv4-mapped IPv6 addresses are given as IPv4
    remote: tuple[str, int]
    state: str  # LISTEN, ESTABLISHED, ...
    nodelay: bool
    keepalive: bool  # SO_KEEPALIVE: probes on an idle connection
    keepidle_s: int  # TCP_KEEPIDLE: idle time before the first probe (when keepalive)
    keepintvl_s: int
    keepcnt: int

    @property
    def listening(self) -> bool:
        return self.state == "LISTEN"


def _address(hex_addr: str) -> tuple[str, int]:
    """``0100007F:1F90`` (or 32 hex digits for IPv6) -> ("127.0.0.1", 8080)."""
    host, port = hex_addr.split(":")
    raw = bytes.fromhex(host)
    if len(raw) == 4:
        ip: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.IPv4Address(raw[::-1])
    else:  # four 32-bit words, each in host (little-endian) order
        words = struct.unpack("<4I", raw)
        ip = ipaddress.IPv6Address(struct.pack(">4I", *words))
        ip = ip.ipv4_mapped or ip
    return str(ip), int(port, 16)


def tcp_table(pid: int) -> dict[int, tuple[tuple[str, int], tuple[str, int], str]]:
    """inode -> (local, remote, state) of every TCP socket in ``pid``'s network namespace."""
    out = {}
    for name in ("tcp", "tcp6"):
        path = Path(f"/proc/{pid}/net/{name}")
        with contextlib.suppress(FileNotFoundError):
            for line in path.read_text().splitlines()[1:]:
                f = line.split()
                state = _STATES.get(int(f[3], 16), f"0x{f[3]}")
                out[int(f[9])] = (_address(f[1]), _address(f[2]), state)
    return out


def socket_fds(pid: int) -> dict[int, int]:
    """fd -> socket inode, for every socket descriptor ``pid`` holds now."""
    out = {}
    with contextlib.suppress(FileNotFoundError, ProcessLookupError):
        for entry in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(entry)
                if target.startswith("socket:["):
                    out[int(entry.name)] = int(target[8:-1])
    return out


def _getfd(pidfd: int, fd: int) -> int | None:
    """A duplicate of ``fd`` of the process behind ``pidfd``, or None if it is gone."""
    libc = ctypes.CDLL(None, use_errno=True)
    dup = int(libc.syscall(_SYS_PIDFD_GETFD, pidfd, fd, 0))
    if dup >= 0:
        return dup
    err = ctypes.get_errno()
    if err == 9:  # EBADF: the descriptor was closed meanwhile
        return None
    raise SockoptsError(f"pidfd_getfd on fd {fd}: {os.strerror(err)}")


def _options(dup: int) -> tuple[bool, bool, int, int, int]:
    s = socket.socket(fileno=dup)
    try:
        return (
            bool(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)),
            bool(s.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE)),
            s.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE),
            s.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL),
            s.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT),
        )
    finally:
        s.close()  # the duplicate only: the process's own descriptor stays open


def live_sockets(pid: int) -> list[LiveSocket]:
    """Every TCP socket ``pid`` holds now, with its options (not its threads' children)."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        raise SockoptsError(f"no process {pid}") from None
    try:
        table = tcp_table(pid)
        out = []
        for fd, inode in sorted(socket_fds(pid).items()):
            if inode not in table:  # a unix or UDP socket, or closed meanwhile
                continue
            dup = _getfd(pidfd, fd)
            if dup is None:
                continue
            local, remote, state = table[inode]
            out.append(LiveSocket(pid, fd, local, remote, state, *_options(dup)))
        return out
    finally:
        os.close(pidfd)


def descendants(pid: int) -> list[int]:
    """``pid`` and every live process below it (a proxy's master and its workers)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in Path(f"/proc/{p}/task").glob("*"):
            with contextlib.suppress(OSError, ValueError):
                todo += [int(k) for k in (task / "children").read_text().split()]
    return sorted(set(out))


def tree_sockets(pid: int) -> list[LiveSocket]:
    """The TCP sockets of ``pid`` and of every process below it."""
    out = []
    for p in descendants(pid):
        with contextlib.suppress(SockoptsError):
            out += live_sockets(p)
    return out


def connections(sockets: Iterable[LiveSocket], port: int, side: str) -> list[LiveSocket]:
    """The established connections among ``sockets`` that a server on ``port`` accepted
    (``side="server"``: local port is ``port``) or that a client opened to it
    (``side="client"``: remote port is ``port``)."""
    if side not in ("server", "client"):
        raise ValueError(f"side {side!r}: server or client")
    return [
        s
        for s in sockets
        if s.state == "ESTABLISHED" and (s.local if side == "server" else s.remote)[1] == port
    ]
