"""Every client and server socket is as ``ipclab.socket_settings`` declares it, read on the
live sockets of running stacks, and no hop stalls a request ~40 ms (issue 46).

How the options are read (``ipclab.sockopts``): a duplicate of each socket descriptor of a
component, taken with ``pidfd_getfd`` and asked with ``getsockopt``: what the kernel applies
to that connection, whoever set it and whenever (nginx sets TCP_NODELAY when a connection
turns keep-alive, an accepted socket inherits its listener's keep-alive), for every runtime
alike (a static Go binary, the JVM). ``strace`` at start-up would miss the options set later
and inherited; ``ss`` shows neither TCP_NODELAY nor keep-alive settings.

Beside it, behaviour (``ipclab.stallprobe``): at one client, on one keep-alive connection, the
minimum latency of a GET, a POST and a POST whose body is a separate write, at every HTTP/1.1
hop, stays far below the 40 ms a Nagle/delayed-ACK stall costs on Linux; and one client's
requests open no new connection inside a stack (every pool reuses its connections). One
stack per runtime and library; the load generator (Locust) too, on one of them.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from ipclab_services.adapters import native
from ipclab_services.transports.rest import POOL_IDLE_S, POOL_PER_HOST

from ipclab import infrastructure, sockopts, stallprobe
from ipclab.backends import StackOptions, get_backend
from ipclab.backends.local import LocalStack
from ipclab.findings import GENERATED
from ipclab.load.runner import LoadProfile, LoadSession
from ipclab.paths import REPO_ROOT
from ipclab.runs import RunWriter, read_run
from ipclab.socket_settings import BLOCK, DOC, SETTINGS, Live, SocketSetting, live_stacks, markdown
from ipclab.stacks import resolve

INFRA = ("broker", "database")


def test_the_doc_table_is_the_declaration() -> None:
    blocks = {m.group("name"): m.group(0) for m in GENERATED.finditer(DOC.read_text())}
    assert BLOCK in blocks, f"{DOC}: no generated block {BLOCK!r}"
    body = blocks[BLOCK].split("\n", 1)[1].rsplit("<!-- /generated -->", 1)[0]
    assert body == markdown(), (
        "run: python -c 'from ipclab.socket_settings import write_doc; write_doc()'"
    )


def test_the_go_gateways_pool_is_the_python_ones() -> None:
    go = (REPO_ROOT / "services" / "go" / "rest.go").read_text()
    assert re.search(r"const poolPerHost = (\d+)\n", go).group(1) == str(POOL_PER_HOST)  # type: ignore[union-attr]
    idle = re.search(r"const poolIdle = (\d+) \* time.Second\n", go)
    assert idle is not None and float(idle.group(1)) == POOL_IDLE_S
    for line in ("MaxIdleConnsPerHost: poolPerHost", "MaxConnsPerHost:     poolPerHost",
                 "IdleConnTimeout:     poolIdle"):  # fmt: skip
        assert line in go, line


def test_the_nginx_config_states_its_socket_options(tmp_path: Path) -> None:
    env = {"IPCLAB_ROLE": "auth-ingress", "IPCLAB_TRANSPORT": "rest", "IPCLAB_SERVICES": "auth",
           "IPCLAB_PORT": "8002", "IPCLAB_ADDR_AUTH": "127.0.0.1:9"}  # fmt: skip
    conf = native.nginx_config(native.plan_from_env(env), tmp_path)
    for line in ("tcp_nodelay on;", f"keepalive {native.NGINX_UPSTREAM_KEEPALIVE};",
                 "keepalive_timeout 60s;", "proxy_http_version 1.1;"):  # fmt: skip
        assert line in conf, line


def test_every_live_row_names_a_role_of_its_stack() -> None:
    for row in SETTINGS:
        assert row.side in ("server", "client"), row
        for live in row.live:
            spec = resolve(live.stack)
            for role in (live.role, live.peer):
                if role in INFRA:
                    assert spec.infrastructure, (live, "declares no infrastructure")
                elif role is not None and role != "loadgen":
                    assert role in spec.roles, (live, spec.roles)
            assert (live.peer is None) == (row.side == "server"), (row.component, live)


CHILD = """
import socket, sys, time
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen()
a = socket.create_connection(srv.getsockname()); b, _ = srv.accept()
a.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
b.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
b.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 33)
print(srv.getsockname()[1], flush=True); time.sleep(30)
"""


def test_sockopts_reads_the_options_of_another_processs_sockets() -> None:
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
    try:
        port = int(child.stdout.readline())  # type: ignore[union-attr]
        found = sockopts.live_sockets(child.pid)
    finally:
        child.kill()
        child.wait()
    client = sockopts.connections(found, port, "client")
    server = sockopts.connections(found, port, "server")
    assert [(s.nodelay, s.keepalive) for s in client] == [(True, False)]
    assert [(s.nodelay, s.keepalive, s.keepidle_s) for s in server] == [(False, True, 33)]
    assert [s.local[1] for s in found if s.listening] == [port]


def _answer_in_two_writes(server: socket.socket, nodelay: bool) -> None:
    """Answer every request on one connection with its head and its body in two writes."""
    conn, _ = server.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, int(nodelay))
    buf = b""
    with conn:
        while True:
            while b"\r\n\r\n" not in buf:
                data = conn.recv(1 << 16)
                if not data:
                    return
                buf += data
            buf = buf.partition(b"\r\n\r\n")[2]
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n")
            conn.sendall(b"ok")


@pytest.mark.parametrize("nodelay", [False, True])
def test_the_probe_sees_a_nagle_stall_where_there_is_one(nodelay: bool) -> None:
    """A server that writes an answer in two pieces with Nagle on stalls every answer by the
    client's delayed ACK (>= 40 ms); with TCP_NODELAY it does not: the probe tells them apart."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        threading.Thread(target=_answer_in_two_writes, args=(server, nodelay), daemon=True).start()
        timing = stallprobe.time_requests(server.getsockname()[1], stallprobe.Ask("GET", "/"), 5)
    assert (timing.min_ms >= stallprobe.STALL_MS) == (not nodelay), timing


def test_a_socket_unlike_its_row_is_a_fault() -> None:
    row = next(r for r in SETTINGS if r.runtime == "Go" and r.side == "client")
    ok = sockopts.LiveSocket(1, 3, ("127.0.0.1", 5), ("127.0.0.1", 6), "ESTABLISHED",
                             True, True, 15, 15, 9)  # fmt: skip
    assert check(row, [ok]) == []
    assert check(row, []) == [f"{row.component}: no socket to read"]
    for wrong in (replace(ok, nodelay=False), replace(ok, keepidle_s=7200)):
        assert len(check(row, [ok, wrong])) == 1


# --------------------------------------------------------------------------- live stacks


def _why_not(name: str) -> str | None:
    spec = resolve(name)
    why = spec.unavailable()
    for plugin in infrastructure.of(spec.infrastructure):
        why = why or plugin.unavailable("local")
    if spec.adapters == "native" and spec.transport in ("rest", "h2c"):
        program, package = native.TRANSPORTS[spec.transport]
        if shutil.which(program) is None:
            why = why or f"{program} missing: apt-get install {package}"
    return why


def _port(stack: LocalStack, role: str) -> int:
    if role == "broker":
        return stack.broker.port  # type: ignore[union-attr]
    if role == "database":
        return stack.database.port  # type: ignore[union-attr]
    return stack.ports[role]


def _kernel(name: str) -> int:
    return int(Path(f"/proc/sys/net/ipv4/tcp_keepalive_{name}").read_text())


def check(row: SocketSetting, found: list[sockopts.LiveSocket]) -> list[str]:
    """What differs between ``row`` and the sockets ``found`` for it (none found: a fault)."""
    if not found:
        return [f"{row.component}: no socket to read"]
    probes = row.keepalive
    want = (
        row.nodelay,
        probes is not None,
        *(
            (probes.idle_s or _kernel("time"), probes.interval_s or _kernel("intvl"),
             probes.count or _kernel("probes"))
            if probes else ()
        ),
    )  # fmt: skip
    out = []
    for s in found:
        got = (
            s.nodelay,
            s.keepalive,
            *((s.keepidle_s, s.keepintvl_s, s.keepcnt) if probes else ()),
        )
        if got != want:
            out.append(f"{row.component} ({row.side}), {s.local}->{s.remote}: {got} != {want}")
    return out


def _sockets(stack: LocalStack, live: Live) -> list[sockopts.LiveSocket]:
    pid = stack.components()[live.role][1]
    found = sockopts.tree_sockets(pid)
    if live.peer is None:
        return sockopts.connections(found, _port(stack, live.role), "server")
    return sockopts.connections(found, _port(stack, live.peer), "client")


def _inner(stack: LocalStack) -> set[tuple[int, int]]:
    """(local port, remote port) of every connection open to the stack's inner roles."""
    inner = {p for r, p in stack.ports.items() if r != stack.spec.gateway}
    pid = stack.components()[stack.spec.gateway][1]  # its table is the namespace's
    return {
        (local[1], remote[1])
        for local, remote, state in sockopts.tcp_table(pid).values()
        if state == "ESTABLISHED" and remote[1] in inner
    }


def _reused(stack: LocalStack) -> list[str]:
    """Connections opened inside the stack by 40 more requests at one client: none, where
    every pool reuses its connections (a pool may close an idle one meanwhile: no fault)."""
    before = _inner(stack)
    get, post = stallprobe.asks(stack.spec, stack.spec.gateway, b"{}")
    for ask in (get, post):
        stallprobe.time_requests(stack.ports[stack.spec.gateway], ask, n=20, warm=0)
    opened = _inner(stack) - before
    return [
        f"a connection opened to port {remote} for one client's requests" for _, remote in opened
    ]


def _load(stack: LocalStack, tmp: Path, rows: list[tuple[SocketSetting, Live]]) -> list[str]:
    """One Locust user for 4 s: its sockets as declared, and no request it made stalled."""
    profile = LoadProfile(users=1, spawn_rate=1, duration_s=4)
    session = LoadSession(stack, profile, RunWriter(tmp / "run", "load", {}), StackOptions())
    gateway = stack.ports[stack.spec.gateway]
    session.start()
    try:
        found: list[sockopts.LiveSocket] = []
        while not found and session.running and session.elapsed < profile.duration_s - 1:
            time.sleep(0.5)  # past Locust's start and its first requests
            found = sockopts.connections(sockopts.tree_sockets(session.proc.pid), gateway, "client")
        faults = [f for row, _ in rows for f in check(row, found)]
        session.wait(30)
    finally:
        session.stop()
    served = read_run(tmp / "run").requests()
    assert served["ok"].all() and len(served) > 20, served
    fastest = served.groupby("name")["latency_ms"].min()
    stalled = fastest[fastest >= stallprobe.STALL_MS]
    return faults + [f"Locust: {n} min {ms:.1f} ms" for n, ms in stalled.items()]


@pytest.mark.slow
@pytest.mark.parametrize("name", live_stacks())
def test_live_sockets_are_as_declared_and_no_hop_stalls(name: str, tmp_path: Path) -> None:
    if why := _why_not(name):
        pytest.skip(f"{name} not tested: {why}")
    rows = [(row, live) for row in SETTINGS for live in row.live if live.stack == name]
    stack = get_backend("local").start(resolve(name), StackOptions(), logs_dir=tmp_path / "logs")
    try:
        timings = stallprobe.survey(stack.spec, stack.ports)
        print(name, *stallprobe.table(timings), sep="\n  ")
        # the gateway's accepted connections: one kept open, past its first answer
        held = socket.create_connection(("127.0.0.1", stack.ports[stack.spec.gateway]))
        get = stallprobe.asks(stack.spec, stack.spec.gateway)[0]
        held.sendall(get.head("127.0.0.1") + get.body)
        held.recv(1 << 16)
        faults = [f"{t.role} {t.ask}: min {t.min_ms:.1f} ms" for t in stallprobe.stalled(timings)]
        for row, live in rows:
            if live.role != "loadgen":
                faults += [f"{live.role}: {f}" for f in check(row, _sockets(stack, live))]
        held.close()
        faults += _reused(stack)
        loadgen = [(row, live) for row, live in rows if live.role == "loadgen"]
        if loadgen:
            faults += _load(stack, tmp_path, loadgen)
    finally:
        stack.stop()
    assert not faults, "\n".join(faults)
