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

import functools
import json
import os
import pwd
import shutil
import subprocess
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


def probe(source: str, timeout: float = 60.0) -> Any:
    """Run ``source`` as ``nobody`` and return the JSON document of its last line."""
    done = run_as_nobody(source, timeout)
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
