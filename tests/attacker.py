"""Run a probe as an unprivileged local user (``nobody``): the local attacker of issue 48's
tests (tests/test_local_attacker.py, the broker's and the PDF's tests, and the Kubernetes
backend's through ``tests/attacker_k8s.py``, which this generalises).

A probe is Python source run as ``nobody``/``nogroup`` with no supplementary groups
(``setpriv``), by the system's interpreter (``/usr/bin/python3``: the harness's may sit in
root's home, which ``nobody`` cannot enter), so with the standard library only, in an
environment of ``PATH`` alone, from ``/``. It prints one JSON document on its last line,
which :func:`probe` returns. :func:`spawn_as_nobody` starts any command so. Skipped
(:func:`why_not`) where the harness is not root, ``nobody`` does not exist, or ``setpriv``
or the interpreter is missing.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import pwd
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

USER = "nobody"
PYTHON = "/usr/bin/python3"
PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


def ids() -> tuple[int, int]:
    """``nobody``'s uid and gid."""
    user = pwd.getpwnam(USER)
    return user.pw_uid, user.pw_gid


def _setpriv() -> list[str]:
    uid, gid = ids()
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups"]


@functools.cache
def why_not() -> str | None:
    """Why no probe can run as ``nobody`` here, or None."""
    if os.geteuid() != 0:
        return "the local-attacker probes need root, to become nobody"
    try:
        pwd.getpwnam(USER)
    except KeyError:
        return f"no user {USER!r} here"
    if shutil.which("setpriv") is None:
        return "setpriv (util-linux) is missing"
    if not Path(PYTHON).exists():
        return f"no {PYTHON} for the probes"
    done = run_as_nobody("import os; print(os.getuid())", check=False)
    if done.returncode != 0 or done.stdout.strip() != str(ids()[0]):
        return f"a probe does not run as {USER}: {done.stderr.strip()[-300:]}"
    return None


def run_as_nobody(
    source: str, timeout: float = 60.0, check: bool = True, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``source`` as ``nobody``; ``check``: its exit status must be 0 (else
    AssertionError with its stderr)."""
    done = subprocess.run(
        [*_setpriv(), PYTHON, "-I", "-c", source],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd="/",
        env={"PATH": PATH, **(env or {})},
    )
    if check:
        assert done.returncode == 0, f"probe failed ({done.returncode}): {done.stderr[-2000:]}"
    return done


def probe(source: str, timeout: float = 60.0, env: dict[str, str] | None = None) -> Any:
    """Run ``source`` as ``nobody`` (``env`` added to its environment) and return the JSON
    document of its last line."""
    done = run_as_nobody(source, timeout, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


def spawn_as_nobody(argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start ``argv`` as ``nobody`` (setpriv execs it: the pid is the command's own, once
    exec'd); the caller kills and waits for it."""
    return subprocess.Popen(
        [*_setpriv(), *argv],
        cwd="/",
        env={"PATH": PATH, **(env or {})},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


# --- an L2 neighbour: another machine on this host's network -------------------------------


@contextlib.contextmanager
def l2_neighbour(routes: tuple[str, ...] = (), subnet: str = "192.168.232") -> Iterator[str]:
    """A network namespace on a veth link to this host (``<subnet>.1``, the neighbour
    ``<subnet>.2``), as a machine on the same L2 network; ``routes`` sent through this host.
    Yields the namespace's name; root only (``ip netns``)."""
    tag = secrets.token_hex(3)
    ns, host_if, ns_if = f"ipclab-l2-{tag}", f"vl2h{tag}", f"vl2n{tag}"
    steps = [
        ["ip", "netns", "add", ns],
        ["ip", "link", "add", host_if, "type", "veth", "peer", "name", ns_if],
        ["ip", "link", "set", ns_if, "netns", ns],
        ["ip", "addr", "add", f"{subnet}.1/30", "dev", host_if],
        ["ip", "link", "set", host_if, "up"],
        ["ip", "-n", ns, "addr", "add", f"{subnet}.2/30", "dev", ns_if],
        ["ip", "-n", ns, "link", "set", ns_if, "up"],
        ["ip", "-n", ns, "link", "set", "lo", "up"],
        *(["ip", "-n", ns, "route", "add", r, "via", f"{subnet}.1"] for r in routes),
    ]
    try:
        for step in steps:
            subprocess.run(step, check=True, capture_output=True)
        yield ns
    finally:
        subprocess.run(["ip", "link", "delete", host_if], capture_output=True)
        subprocess.run(["ip", "netns", "delete", ns], capture_output=True)


def in_namespace(ns: str, source: str, timeout: float = 30.0) -> str:
    """Run Python ``source`` in network namespace ``ns`` (as root); its stdout, stripped."""
    done = subprocess.run(
        ["ip", "netns", "exec", ns, PYTHON, "-I", "-c", source],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    return done.stdout.strip()


def connects(ns: str, ip: str, port: int, timeout: float = 3.0) -> bool:
    """A TCP connection from namespace ``ns`` to ``ip:port`` opens."""
    source = (
        "import socket\n"
        f"try:\n    socket.create_connection(({ip!r}, {port}), timeout={timeout}).close()\n"
        "    print('yes')\nexcept OSError:\n    print('no')\n"
    )
    return in_namespace(ns, source) == "yes"


def send_udp(ns: str, ip: str, port: int, count: int = 5) -> None:
    """``count`` datagrams from namespace ``ns`` to ``ip:port``."""
    in_namespace(ns, (
        "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        f"for _ in range({count}):\n    s.sendto(b'ipclab', ({ip!r}, {port}))\n"
    ))  # fmt: skip
