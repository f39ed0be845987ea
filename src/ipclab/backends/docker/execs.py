"""Commands run in a container (``docker exec``) with their exit status and all their output,
or an error that says what was lost.

The engine's exec stream loses output. With another test worker beside a stack's start,
``tc`` twice failed with no text at all, where it always says "qdisc kind is unknown" on this
kernel; with the status line below, 7 execs of one such run came back with their exit status
and 0 bytes, in 0.2-0.3 s, several containers of one stack at once (docs/docker.md, "Network
delay"). An exec the runtime fails to start ("OCI runtime exec failed", status 126) happens
under load too.

So a waited command runs under ``sh``, with its stderr in its stdout (one stream, copied in
order) and a last line of its own that carries the command's exit status: output that ends
with that line is whole, and the status is the command's own, whatever the engine reported.
Output without it was cut (or the command never started), and the command is run again, up
to :data:`TRIES` times, then :class:`ExecError` says what came back. Every command run so
must therefore be safe to run twice (idempotent). Each is bounded by ``timeout(1)``
(:data:`TIMEOUT_S`): an exec that never ended once hung a test session.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any

TIMEOUT_S = 60
TRIES = 4
END = "ipclab-exec-status="


def _wrapper(timeout_s: int) -> str:
    """$@ is the command: its stderr joins its stdout, then the status line (on a line of
    its own)."""
    return (
        f'exec 2>&1; timeout -k 5 {timeout_s} "$@"; rc=$?; printf "\\n{END}%d\\n" "$rc"; exit "$rc"'
    )


class ExecError(RuntimeError):
    pass


@dataclass(frozen=True)
class Done:
    """A command that ran to its end: its exit status and its whole output."""

    status: int
    output: str


def wrapped(cmd: list[str], timeout_s: int = TIMEOUT_S) -> list[str]:
    """``cmd`` as the exec runs it: under ``sh``, output and status line as described above."""
    return ["sh", "-c", _wrapper(timeout_s), "sh", *cmd]


def parse(raw: bytes | None) -> Done | None:
    """The command's status and output from what the exec returned; None when the status
    line is not its last line (the output was cut, or the command never ran)."""
    text = (raw or b"").decode(errors="replace")
    body, sep, tail = text.rpartition(f"\n{END}")
    if not sep or not tail.endswith("\n") or not tail[:-1].isdigit():
        return None  # no status line, or one cut short
    return Done(int(tail[:-1]), body)


def run(container: Any, cmd: list[str], user: str = "root", timeout_s: int = TIMEOUT_S) -> Done:
    """Run ``cmd`` (safe to run twice) in ``container`` as ``user`` ("": the container's
    own) and wait for it, at most ``timeout_s``: its exit status and whole output (stderr
    joined to stdout), tried again while what came back is not whole."""
    raw: bytes | None = None
    code: int | None = None
    for attempt in range(TRIES):
        t0 = time.monotonic()
        res = container.exec_run(wrapped(cmd, timeout_s), user=user)
        code, raw = res.exit_code, res.output
        done = parse(raw)
        if done is not None:
            return done
        print(
            f"ipclab: {container.name}: {cmd[0]}: the exec's output was not whole (exit "
            f"status {code}, {len(raw or b'')} bytes, {time.monotonic() - t0:.2f} s): run again",
            file=sys.stderr,
        )
        time.sleep(0.2 * (attempt + 1))
    shown = (raw or b"").decode(errors="replace").strip()[-300:]
    raise ExecError(
        f"{container.name}: {' '.join(cmd)}: no whole output in {TRIES} tries (the engine "
        f"drops what it has not copied 2 s after the exit); last: exit status {code}, "
        f"output {shown!r}"
    )


def start(container: Any, cmd: list[str]) -> None:
    """Start ``cmd`` in ``container`` as root and leave it running (detached)."""
    container.exec_run(cmd, user="root", detach=True)
