"""What a stack opens to the network: the host's listening sockets a stack brought, and
which of them are reachable beyond loopback (issue 28, must-show 2).

``opened_by`` compares the host's listening sockets (TCP in LISTEN, bound UDP) before and
after a stack started, and keeps those the stack is the cause of: sockets of this process's
descendants (the local backend's services, broker and database), of the Docker daemon and its
port proxy, and the kernel's own (no process: swarm's VXLAN). Other sessions' processes on a
shared machine are left out. Inside a container a service listens in the container's own
network namespace, on its loopback and the stack's network, which the host's table does not
show: on compose and swarm only what Docker publishes or opens itself appears here.

``IMPOSED`` names the listeners beyond loopback Docker gives no choice about, each with the
reason (docs/hardening.md, item 3); ``unexplained`` is what remains, and must be empty.

``python -m ipclab.listeners [--backends local,docker,swarm] [STACK ...]`` starts every
stack on every backend in turn and prints the table docs/hardening.md shows.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import psutil

DOCKER_PROCESSES = ("dockerd", "docker-proxy")
GATEWAY_PORT = -1  # in ``Imposed.port``: the stack's published gateway port, whichever it is


@dataclass(frozen=True)
class Listener:
    """One listening socket of the host: TCP in LISTEN or a bound UDP socket."""

    proto: str  # "tcp" or "udp"
    ip: str
    port: int
    pid: int | None
    process: str  # "" for a socket of the kernel (no process holds it)

    @property
    def address(self) -> str:
        return f"[{self.ip}]:{self.port}" if ":" in self.ip else f"{self.ip}:{self.port}"

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.proto, self.ip, self.port)

    def loopback(self) -> bool:
        ip = ipaddress.ip_address(self.ip.split("%")[0])
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped  # ::ffff:127.0.0.1, a dual-stack socket bound to 127.0.0.1
        return ip.is_loopback


@dataclass(frozen=True)
class Imposed:
    """A listener beyond loopback a backend cannot avoid, and why (named in the docs)."""

    backend: str
    proto: str
    port: int  # GATEWAY_PORT: the stack's published gateway port
    process: str
    reason: str

    def matches(self, backend: str, listener: Listener, gateway_port: int | None) -> bool:
        port = gateway_port if self.port == GATEWAY_PORT else self.port
        return (
            backend == self.backend
            and listener.proto == self.proto
            and listener.port == port
            and listener.process == self.process
        )


IMPOSED = (
    Imposed(
        "swarm",
        "tcp",
        GATEWAY_PORT,
        "docker-proxy",
        "a swarm service's published port has no host address (swarmkit's PortConfig has "
        "none; compose's 127.0.0.1:PORT:8000 form is refused by docker stack deploy): host "
        "mode binds 0.0.0.0 and [::]",
    ),
    Imposed(
        "swarm",
        "udp",
        4789,
        "",
        "the overlay network's VXLAN socket is opened by the kernel's vxlan driver on the "
        "wildcard address; --data-path-addr sets the address VXLAN packets are sent from, not "
        "the bind (a swarm-scoped bridge network, the alternative, has no service DNS)",
    ),
)


def listening() -> set[Listener]:
    """The host's listening sockets (this network namespace), with their processes."""
    names: dict[int, str] = {}
    out: set[Listener] = set()
    for kind, proto in (("tcp", "tcp"), ("udp", "udp")):
        for c in psutil.net_connections(kind):
            if not c.laddr:
                continue
            if proto == "tcp" and c.status != psutil.CONN_LISTEN:
                continue
            if proto == "udp" and c.raddr:  # connected: a client's socket, not a listener
                continue
            name = ""
            if c.pid is not None:
                if c.pid not in names:
                    try:
                        names[c.pid] = psutil.Process(c.pid).name()
                    except psutil.Error:
                        names[c.pid] = "?"
                name = names[c.pid]
            out.add(Listener(proto, c.laddr.ip, c.laddr.port, c.pid, name))
    return out


def _descendants() -> set[int]:
    try:
        return {p.pid for p in psutil.Process(os.getpid()).children(recursive=True)}
    except psutil.Error:
        return set()


def opened_by(before: set[Listener], after: set[Listener] | None = None) -> list[Listener]:
    """Listeners in ``after`` (now, by default) that were not in ``before`` and that a stack
    started by this process is the cause of (see the module docstring)."""
    after = listening() if after is None else after
    mine = _descendants()
    old = {x.key for x in before}
    return sorted(
        (
            x
            for x in after
            if x.key not in old
            and (x.pid in mine or x.process in DOCKER_PROCESSES or x.pid is None)
        ),
        key=lambda x: (x.proto, x.port, x.ip),
    )


def beyond_loopback(listeners: Iterable[Listener]) -> list[Listener]:
    return [x for x in listeners if not x.loopback()]


def imposed_by(backend: str, listener: Listener, gateway_port: int | None) -> Imposed | None:
    return next((i for i in IMPOSED if i.matches(backend, listener, gateway_port)), None)


def unexplained(
    backend: str, listeners: Iterable[Listener], gateway_port: int | None
) -> list[Listener]:
    """Listeners beyond loopback that no entry of ``IMPOSED`` explains: must be empty."""
    return [x for x in beyond_loopback(listeners) if not imposed_by(backend, x, gateway_port)]


def gateway_port(stack: Any) -> int | None:
    url = getattr(stack, "gateway_url", "")
    try:
        return int(url.rsplit(":", 1)[1].split("/", 1)[0])
    except (IndexError, ValueError):
        return None


# --------------------------------------------------------------------------- survey


def survey_one(backend: str, stack_name: str, settle_s: float = 2.0) -> dict[str, Any]:
    """Start ``stack_name`` on ``backend``, list what it opened, stop it: one table row."""
    from ipclab.backends import StackOptions, get_backend
    from ipclab.stacks import resolve

    spec = resolve(stack_name)
    before = listening()
    t0 = time.monotonic()
    try:
        stack = get_backend(backend).start(spec, StackOptions())
    except ValueError as e:  # the backend refuses this stack (say why)
        return {"backend": backend, "stack": stack_name, "refused": str(e).split(";")[0]}
    try:
        time.sleep(settle_s)  # a listener opened just after the gateway answered
        opened = opened_by(before)
        port = gateway_port(stack)
    finally:
        stack.stop()
    wide = beyond_loopback(opened)
    return {
        "backend": backend,
        "stack": stack_name,
        "up_s": round(time.monotonic() - t0, 1),
        "opened": len(opened),
        "loopback": len(opened) - len(wide),
        "beyond": [
            f"{x.proto} {x.address} {x.process or 'kernel'}"
            + ("" if imposed_by(backend, x, port) else " UNEXPLAINED")
            for x in wide
        ],
        "unexplained": len(unexplained(backend, opened, port)),
    }


def _cell(r: dict[str, Any]) -> str:
    if "refused" in r:
        why = r["refused"].removeprefix(f"{r['stack']}:").removeprefix(r["stack"])
        return "refused (" + why.split(",")[0].strip() + ")"
    head = f"{r['opened']} opened, {r['loopback']} on loopback"
    return head + ("; beyond: " + ", ".join(r["beyond"]) if r["beyond"] else "; none beyond")


def table(rows: list[dict[str, Any]]) -> str:
    """One row per stack, one column per backend (markdown)."""
    backends = list(dict.fromkeys(r["backend"] for r in rows))
    cells = {(r["stack"], r["backend"]): _cell(r) for r in rows}
    lines = ["| stack | " + " | ".join(backends) + " |", "|---" * (len(backends) + 1) + "|"]
    for stack in dict.fromkeys(r["stack"] for r in rows):
        row = [cells.get((stack, b), "") for b in backends]
        lines.append(f"| {stack} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from ipclab.stacks import all_stacks

    p = argparse.ArgumentParser(prog="python -m ipclab.listeners", description=__doc__)
    p.add_argument("stacks", nargs="*", help="default: every stack of the registry")
    p.add_argument("--backends", default="local,docker,swarm")
    a = p.parse_args(argv)
    names = a.stacks or sorted(all_stacks())
    rows = []
    for backend in a.backends.split(","):
        for name in names:
            try:
                row = survey_one(backend, name)
            except Exception as e:  # noqa: BLE001 - one failed start is a row, not the end
                row = {"backend": backend, "stack": name, "refused": f"failed: {e}"[:200]}
            rows.append(row)
            print(row, file=sys.stderr, flush=True)
    print(table(rows))
    return 1 if any(r.get("unexplained") for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
