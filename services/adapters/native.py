"""The native protocol adapters, as the thesis ran them: nginx (HTTP/1.1), nghttpx (h2c) and
Eclipse Californium (CoAP: ipclab's adapters on ``californium-core``, services/java).

Contract: ``async def serve(env: Mapping[str, str]) -> None`` runs the adapter role that
``env`` describes (see the package docstring: ``IPCLAB_ROLE`` ``egress`` or
``<service>-ingress``, ``IPCLAB_TRANSPORT`` ``rest``, ``h2c`` or ``coap``, ``IPCLAB_HOST``/
``IPCLAB_PORT``, ``IPCLAB_SERVICES``, ``IPCLAB_ADDR_<ROLE>``; ``IPCLAB_ADAPTER``, when set,
must agree with the role) as a proxy child process in the foreground:

- it writes the proxy's configuration into a private temporary directory
  (``$TMPDIR/ipclab-native-<pid>-*``: config, pid file, nginx's temp paths, nothing else),
  resolves every peer (waiting up to ``IPCLAB_ADAPTER_RESOLVE_TIMEOUT_S``, default 60 s,
  for a peer's name to exist: a container not started yet) and starts the proxy with its
  log on this process's stderr and no access log;
- SIGTERM or SIGINT (handled while it runs), or cancelling ``serve``, stops the proxy
  (SIGTERM, then SIGKILL of the proxy and its workers after 3 s) and removes the
  directory; ``serve`` then returns (signal) or re-raises ``CancelledError`` (cancel);
- if the proxy exits on its own, ``serve`` removes the directory and raises
  ``NativeAdapterError`` with the exit status;
- the proxy dies with this process even when this process is SIGKILLed (parent-death
  signal SIGTERM, set by ``setpriv --pdeathsig`` or, without setpriv, ``prctl`` in the
  child). A directory left by a SIGKILLed adapter is removed by the next adapter started
  on the machine (its pid is in the name), or by the harness's orphan sweep
  (``.ipclab-harness`` mark, written when ``IPCLAB_HARNESS`` is set);
- a missing binary raises ``NativeAdapterError`` naming the Debian package.

Per transport (``IPCLAB_RELAY_TIMEOUT_S``, default 30 s as for the Python adapters, bounds
connect, read and write on the next hop; the gateway's own deadline is shorter). When the
harness is root, the proxy's workers run as :func:`unprivileged` (``nobody``, its group),
never as root (nginx ``user``, nghttpx ``user=``); they need nothing in the private
directory (nginx keeps request bodies in memory, answers are not spooled). The limits are
``ipclab_services.limits``' (the Python relays'): nginx refuses a body over ``MAX_BODY``
(413) and closes a connection whose head is not in within ``HEADER_TIMEOUT_S``; header
names with underscores are dropped (nginx's default: no stack sends one). nghttpx has no
body limit of its own: the service behind the ingress refuses (413).

- ``rest``: nginx, one worker process, HTTP/1.1 keep-alive on both sides
  (``proxy_http_version 1.1``, ``Connection ""``, an upstream block with ``keepalive``),
  the request's Host, the service's Server and Date passed through, no header added. The
  egress routes ``location /<service>/`` to ``IPCLAB_ADDR_<SERVICE>_INGRESS`` and answers
  404 for any other path; the ingress sends everything to ``IPCLAB_ADDR_<SERVICE>``.
- ``h2c``: nghttpx, one worker thread (``workers=1``). The egress has an HTTP/1.1
  cleartext frontend and one HTTP/2 backend per service (``proto=h2``, cleartext, prior
  knowledge: one multiplexed connection while fewer streams than the peer's limit, 100, are
  open), chosen by the path pattern ``/<service>/``; any other path goes to a 404 answerer
  on a unix socket in the temp directory (nghttpx wants a catch-all backend). The ingress
  has a cleartext frontend (it accepts h2c prior knowledge) and an HTTP/1.1 backend: the
  service. No Via, X-Forwarded-For or X-Forwarded-Proto added; Server and Location not
  rewritten. nghttpx's other defaults stay (the thesis's): HTTP/2 windows of 64 KiB per
  stream, Cookie crumbled into one field per cookie on the HTTP/2 hop and joined again
  with ``"; "`` by the ingress.
- ``coap``: the JVM running ``ipclab.coap.Adapter`` (services/java/californium; its jars
  where ``IPCLAB_CALIFORNIUM_CLASSPATH`` says) with the plan on its command line, nothing
  in the private directory. The egress is the JDK's HTTP/1.1 server and a pool of
  Californium client endpoints per service (one per exchange in flight, as the thesis's
  patched Californium and the Python adapters); the ingress a Californium server endpoint
  whose requests go to the service with the JDK's HTTP/1.1 client (keep-alive). The mapping
  is the Python adapters' (services/transports/coap.py): methods, Uri-Path and Uri-Query,
  Content-Format, Cookie and Set-Cookie in options 65000 and 65004, blocks of 1024 bytes;
  Californium's defaults otherwise (services/java/californium/.../Mapping.java says what
  differs). Sockets (``Sockets.java``): TCP_NODELAY on the egress's accepted connections (the
  JDK server's default is Nagle's algorithm, which held every answer's body for the client's
  delayed ACK, 40 ms) and on the ingress's (the JDK client's own); HTTP keep-alive, the
  egress closing a connection idle ``IDLE_TIMEOUT_S``, the ingress one idle
  ``CALIFORNIUM_CLIENT_KEEPALIVE_S``; pools of ``CALIFORNIUM_POOL``. As root, the JVM runs as
  ``nobody`` (it has no workers to drop privileges).

``python -m ipclab_services.adapters.native`` runs ``serve(os.environ)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import grp
import os
import pwd
import re
import resource
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ipclab_services.adapters import EGRESS, INGRESS_SUFFIX, addr_env
from ipclab_services.limits import HEADER_TIMEOUT_S, IDLE_TIMEOUT_S, MAX_BODY, READ_TIMEOUT_S

# program, package; CoAP: the Californium adapters (services/java/californium) on the JVM
TRANSPORTS = {
    "rest": ("nginx", "nginx"),
    "h2c": ("nghttpx", "nghttp2-proxy"),
    "coap": ("java", "openjdk-17-jre-headless"),
}
CALIFORNIUM_CLASSPATH = "IPCLAB_CALIFORNIUM_CLASSPATH"  # the folder of its jars
CALIFORNIUM_MAIN = "ipclab.coap.Adapter"
#: the JVM's flags: G1 whatever the host (the JVM picks the serial collector on a machine or
#: in a container with less than 2 CPUs or 1.75 GiB); the JDK's defaults otherwise (the heap:
#: a quarter of the memory), as the thesis's adapters ran on a JVM's defaults
JVM_FLAGS = ("-XX:+UseG1GC",)
JVM_OPTIONS = "IPCLAB_JVM_OPTIONS"  # more flags, space-separated (the run's knob)
#: the Californium adapters' pool: client endpoints per service (the egress) and idle HTTP
#: connections kept (the ingress), as REST's keep-alive pool (100 connections per service)
CALIFORNIUM_POOL = 100
#: the ingress's HTTP client closes a connection idle this long, before the service's own
#: idle timeout (IDLE_TIMEOUT_S) closes it under a request (nginx's upstream keepalive_timeout)
CALIFORNIUM_CLIENT_KEEPALIVE_S = 60
DIR_PREFIX = "ipclab-native-"
HARNESS_MARK = "IPCLAB_HARNESS"  # the harness's orphan mark (ipclab.orphans), if set
HARNESS_MARK_FILE = ".ipclab-harness"
STOP_GRACE_S = 3.0
NGINX_WORKER_CONNECTIONS = 4096
NGINX_UPSTREAM_KEEPALIVE = 128  # idle connections kept per upstream
NOFILE = 65536
NOT_FOUND = b"no service at this path\n"
UNPRIVILEGED_USER = "nobody"  # a root harness's proxies run their workers as this user
SHARED_TMP = Path("/tmp")  # searchable by everyone (1777)
_PR_SET_PDEATHSIG = 1


class NativeAdapterError(RuntimeError):
    """The adapter cannot run (binary missing, bad environment) or its proxy exited."""


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> Endpoint:
        host, sep, port = text.strip().rpartition(":")
        if not sep or not port.isdigit() or not host:
            raise NativeAdapterError(f"address {text!r} is not host:port")
        return cls(host.strip("[]"), int(port))

    def nginx(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    def nghttpx(self) -> str:
        return f"{self.host},{self.port}"


@dataclass(frozen=True)
class Plan:
    """One adapter: what it runs, where it listens, where each path goes."""

    role: str
    kind: str  # egress | ingress
    transport: str  # rest | h2c
    listen: Endpoint
    routes: tuple[tuple[str, Endpoint], ...]  # (service, next hop); ingress: one, its service
    timeout_s: float

    @property
    def program(self) -> str:
        return TRANSPORTS[self.transport][0]

    @property
    def package(self) -> str:
        return TRANSPORTS[self.transport][1]


def plan_from_env(env: Mapping[str, str]) -> Plan:
    """The adapter ``env`` describes (addresses as given: names not resolved yet)."""
    role = env.get("IPCLAB_ROLE", "")
    transport = env.get("IPCLAB_TRANSPORT", "")
    if transport not in TRANSPORTS:
        raise NativeAdapterError(
            f"no native adapter for IPCLAB_TRANSPORT={transport!r} "
            f"(native: {', '.join(TRANSPORTS)})"
        )
    services = tuple(s for s in env.get("IPCLAB_SERVICES", "").split(",") if s)
    if role == EGRESS:
        kind = EGRESS
        names = [(s, s + INGRESS_SUFFIX) for s in services]
    elif role.endswith(INGRESS_SUFFIX) and role.removesuffix(INGRESS_SUFFIX) in services:
        kind = "ingress"
        service = role.removesuffix(INGRESS_SUFFIX)
        names = [(service, service)]
    else:
        raise NativeAdapterError(
            f"IPCLAB_ROLE={role!r} is no adapter role of services {', '.join(services)}"
        )
    if env.get("IPCLAB_ADAPTER", kind) != kind:
        raise NativeAdapterError(f"IPCLAB_ADAPTER={env['IPCLAB_ADAPTER']!r} but role {role!r}")
    missing = [addr_env(peer) for _, peer in names if addr_env(peer) not in env]
    if missing or not names:
        raise NativeAdapterError(f"{role}: no address for {', '.join(missing) or 'any service'}")
    for service, _ in names:
        if not re.fullmatch(r"[A-Za-z0-9._~-]+", service):
            raise NativeAdapterError(f"service name {service!r} cannot be a path segment")
    port = env.get("IPCLAB_PORT", "")
    if not port.isdigit():
        raise NativeAdapterError(f"IPCLAB_PORT={port!r}: a port to listen on is needed")
    return Plan(
        role=role,
        kind=kind,
        transport=transport,
        listen=Endpoint(env.get("IPCLAB_HOST", "127.0.0.1"), int(port)),
        routes=tuple((s, Endpoint.parse(env[addr_env(peer)])) for s, peer in names),
        timeout_s=float(env.get("IPCLAB_RELAY_TIMEOUT_S", "30")),
    )


def binary(plan: Plan) -> str:
    path = shutil.which(plan.program)
    if path is None:
        raise NativeAdapterError(
            f"{plan.program} is not installed (the native {plan.transport} adapters need it): "
            f"install the Debian package {plan.package}: apt-get install {plan.package} "
            "(scripts/system-deps.sh installs it on the host, the services image has it)"
        )
    return path


# --------------------------------------------------------------------------- configs


def _seconds(t: float) -> str:
    return f"{max(1, round(t * 1000))}ms"


def unprivileged() -> tuple[str, str]:
    """The user and group a proxy's workers run as when the harness is root: ``nobody``
    and its own group (``nogroup`` on Debian), both checked to exist."""
    try:
        user = pwd.getpwnam(UNPRIVILEGED_USER)
        group = grp.getgrgid(user.pw_gid).gr_name
    except KeyError:
        raise NativeAdapterError(
            f"the harness runs as root and there is no user {UNPRIVILEGED_USER!r} (or no "
            "group for its gid) to run the proxy's workers as: the workers will not run as root"
        ) from None
    if user.pw_uid == 0:
        raise NativeAdapterError(f"user {UNPRIVILEGED_USER!r} has uid 0")
    return user.pw_name, group


def nginx_config(plan: Plan, workdir: Path) -> str:
    """nginx.conf: one worker, no daemon, every path in ``workdir``, errors on stderr; as
    root, the worker runs as :func:`unprivileged` (nginx gives it its temporary paths)."""
    t = _seconds(plan.timeout_s)
    user = ""
    if os.geteuid() == 0:
        user = "user {} {};\n".format(*unprivileged())
    upstreams, locations = [], []
    for service, hop in plan.routes:
        upstreams.append(
            f"    upstream svc_{service.replace('-', '_').replace('.', '_')} {{\n"
            f"        server {hop.nginx()};\n"
            f"        keepalive {NGINX_UPSTREAM_KEEPALIVE};\n"
            "        keepalive_requests 1000000;\n"
            "        keepalive_timeout 60s;\n"
            "    }\n"
        )
    if plan.kind == EGRESS:
        for service, _ in plan.routes:
            name = service.replace("-", "_").replace(".", "_")
            locations.append(f"        location /{service}/ {{ proxy_pass http://svc_{name}; }}\n")
        locations.append(
            "        location / {\n"
            "            default_type text/plain;\n"
            f'            return 404 "{NOT_FOUND.decode().strip()}\\n";\n'
            "        }\n"
        )
    else:
        name = plan.routes[0][0].replace("-", "_").replace(".", "_")
        locations.append(f"        location / {{ proxy_pass http://svc_{name}; }}\n")
    return (
        f"# ipclab native {plan.kind} adapter ({plan.role}, {plan.transport}): nginx\n"
        f"{user}"
        "worker_processes 1;\n"
        "daemon off;\n"
        f"pid {workdir}/nginx.pid;\n"
        "error_log stderr notice;\n"
        f"events {{ worker_connections {NGINX_WORKER_CONNECTIONS}; }}\n"
        "http {\n"
        "    access_log off;\n"
        f"    client_body_temp_path {workdir}/client_body;\n"
        f"    proxy_temp_path {workdir}/proxy;\n"
        f"    fastcgi_temp_path {workdir}/fastcgi;\n"
        f"    uwsgi_temp_path {workdir}/uwsgi;\n"
        f"    scgi_temp_path {workdir}/scgi;\n"
        "    server_tokens off;\n"
        f"    client_max_body_size {MAX_BODY};\n"
        f"    client_body_buffer_size {MAX_BODY};\n"  # in memory: no temp file to write
        f"    client_header_timeout {_seconds(HEADER_TIMEOUT_S)};\n"
        f"    client_body_timeout {_seconds(READ_TIMEOUT_S)};\n"
        f"    keepalive_timeout {_seconds(IDLE_TIMEOUT_S)};\n"
        "    keepalive_requests 1000000;\n"
        # nginx's default, stated: TCP_NODELAY once a client connection turns keep-alive;
        # upstream connections keep Nagle on (no directive), each request one writev
        "    tcp_nodelay on;\n"
        "    proxy_http_version 1.1;\n"
        '    proxy_set_header Connection "";\n'
        "    proxy_set_header Host $http_host;\n"
        "    proxy_pass_header Server;\n"
        "    proxy_pass_header Date;\n"
        "    proxy_buffer_size 16k;\n"
        "    proxy_buffers 8 16k;\n"
        "    proxy_max_temp_file_size 0;\n"
        f"    proxy_connect_timeout {t};\n"
        f"    proxy_send_timeout {t};\n"
        f"    proxy_read_timeout {t};\n"
        f"{''.join(upstreams)}"
        "    server {\n"
        f"        listen {plan.listen.nginx()};\n"
        f"{''.join(locations)}"
        "    }\n"
        "}\n"
    )


def nghttpx_config(plan: Plan, workdir: Path, sockets: Path | None = None) -> str:
    """nghttpx.conf (long option names without ``--``); an egress sends the paths that
    name no service to the 404 answerer on ``<sockets>/not-found.sock`` (``sockets``:
    ``workdir`` unless given, see :func:`socket_dir`)."""
    t = _seconds(plan.timeout_s)
    lines = [
        f"# ipclab native {plan.kind} adapter ({plan.role}, {plan.transport}): nghttpx",
        f"frontend={plan.listen.nghttpx()};no-tls",
    ]
    if plan.kind == EGRESS:
        lines += [f"backend={hop.nghttpx()};/{s}/;proto=h2" for s, hop in plan.routes]
        lines.append(f"backend=unix:{sockets or workdir}/not-found.sock;/;proto=http/1.1")
    else:
        lines.append(f"backend={plan.routes[0][1].nghttpx()};/;proto=http/1.1")
    if os.geteuid() == 0:
        lines.append(f"user={unprivileged()[0]}")
    lines += [
        "workers=1",
        "no-via=yes",
        "no-add-x-forwarded-proto=yes",
        "no-strip-incoming-x-forwarded-proto=yes",
        "no-server-rewrite=yes",
        "no-location-rewrite=yes",
        "no-server-push=yes",
        f"backend-connect-timeout={t}",
        f"backend-read-timeout={t}",
        f"backend-write-timeout={t}",
        "backend-keep-alive-timeout=60s",
        f"pid-file={workdir}/nghttpx.pid",
        "errorlog-file=/dev/stderr",
        "log-level=NOTICE",
    ]
    return "\n".join(lines) + "\n"


def californium_command(plan: Plan, program: str) -> list[str]:
    """The Californium adapter's command line (its jars where ``IPCLAB_CALIFORNIUM_CLASSPATH``
    says: the harness's build on the local backend, the Java image's on docker)."""
    jars = os.environ.get(CALIFORNIUM_CLASSPATH, "")
    if not jars or not Path(jars).is_dir():
        raise NativeAdapterError(
            f"{CALIFORNIUM_CLASSPATH}={jars!r} is no folder of the Californium adapters' jars "
            "(the harness builds them: ipclab.javabuild)"
        )
    routes = [a for s, hop in plan.routes for a in ("--route", f"{s}={hop.nginx()}")]
    # e.g. a flight recording per role (profiling): "{role}" names the adapter's role
    extra = [a.replace("{role}", plan.role) for a in os.environ.get(JVM_OPTIONS, "").split()]
    return [
        program, *JVM_FLAGS, *extra, "-cp", f"{jars}/*", CALIFORNIUM_MAIN, "--role", plan.role,
        "--listen", plan.listen.nginx(), *routes,
        "--timeout-ms", str(max(1, round(plan.timeout_s * 1000))), "--max-body", str(MAX_BODY),
        "--pool", str(CALIFORNIUM_POOL), "--server-idle-s", str(round(IDLE_TIMEOUT_S)),
        "--client-keepalive-s", str(CALIFORNIUM_CLIENT_KEEPALIVE_S),
    ]  # fmt: skip


def command(plan: Plan, program: str, workdir: Path, sockets: Path | None = None) -> list[str]:
    """The proxy's command line; writes its configuration into ``workdir``."""
    if plan.transport == "coap":
        return californium_command(plan, program)
    if plan.transport == "rest":
        conf = workdir / "nginx.conf"
        conf.write_text(nginx_config(plan, workdir))
        return [program, "-e", "stderr", "-p", f"{workdir}/", "-c", str(conf)]
    conf = workdir / "nghttpx.conf"
    conf.write_text(nghttpx_config(plan, workdir, sockets))
    return [program, f"--conf={conf}"]


# --------------------------------------------------------------------------- running


async def resolve(plan: Plan, deadline_s: float) -> Plan:
    """``plan`` with every next hop's name replaced by its address (IPv4 first), waiting up
    to ``deadline_s`` for names that do not resolve yet; the proxies then never resolve."""
    loop = asyncio.get_running_loop()
    end = time.monotonic() + deadline_s
    routes = []
    for service, hop in plan.routes:
        while True:
            try:
                infos = await loop.getaddrinfo(hop.host, hop.port, type=socket.SOCK_STREAM)
                break
            except socket.gaierror as e:
                if time.monotonic() >= end:
                    raise NativeAdapterError(f"{plan.role}: cannot resolve {hop.host}: {e}") from e
                await asyncio.sleep(0.25)
        infos.sort(key=lambda i: i[0] != socket.AF_INET)
        routes.append((service, Endpoint(str(infos[0][4][0]), hop.port)))
    return Plan(plan.role, plan.kind, plan.transport, plan.listen, tuple(routes), plan.timeout_s)


def sweep_stale(tmp: Path | None = None) -> list[Path]:
    """Remove this user's adapter directories whose adapter process is gone (SIGKILLed)."""
    removed = []
    for d in Path(tmp or tempfile.gettempdir()).glob(f"{DIR_PREFIX}*-*"):
        pid = d.name.removeprefix(DIR_PREFIX).partition("-")[0]
        try:
            if not pid.isdigit() or d.is_symlink() or d.lstat().st_uid != os.geteuid():
                continue
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
        except OSError:
            continue
    return removed


def _die_with_parent() -> None:  # in the child, between fork and exec
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for task in Path(f"/proc/{p}/task").glob("*"):
            with contextlib.suppress(OSError):
                kids = [int(k) for k in (task / "children").read_text().split()]
                out += kids
                todo += kids
    return out


def _raise_nofile() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = NOFILE if hard == resource.RLIM_INFINITY else min(NOFILE, hard)
    if soft != resource.RLIM_INFINITY and soft < want:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


async def _not_found(path: Path) -> asyncio.AbstractServer:
    """A 404 answerer for nghttpx's catch-all backend (paths naming no service), on a unix
    socket (a loopback port of its own could take one the harness chose for a role)."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            await reader.readuntil(b"\r\n\r\n")
            writer.write(
                b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n"
                b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(NOT_FOUND), NOT_FOUND)
            )
            await writer.drain()
        writer.close()

    server = await asyncio.start_unix_server(answer, path=str(path))
    if os.geteuid() == 0:
        path.chmod(0o666)  # nghttpx's unprivileged worker connects to it
    return server


def socket_dir(workdir: Path) -> Path:
    """Where the 404 answerer's socket goes: ``workdir``, or, when the harness is root,
    a directory of its own under ``/tmp`` (0711, named as ``workdir`` is, so the sweep
    finds it): nghttpx's worker then runs as nobody, who must search every directory
    above the socket, and those above ``workdir`` (``$TMPDIR``) may be private."""
    if os.geteuid() != 0:
        return workdir
    sockets = Path(tempfile.mkdtemp(prefix=f"{DIR_PREFIX}{os.getpid()}-", dir=SHARED_TMP))
    sockets.chmod(0o711)
    if os.environ.get(HARNESS_MARK):
        (sockets / HARNESS_MARK_FILE).write_text(os.environ[HARNESS_MARK])
    return sockets


async def _stop(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM the proxy; SIGKILL it and its workers if it is not gone after the grace."""
    if proc.returncode is not None:
        return
    workers = _descendants(proc.pid)
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        await asyncio.wait_for(asyncio.shield(proc.wait()), STOP_GRACE_S)
    except TimeoutError:
        for pid in [proc.pid, *workers, *_descendants(proc.pid)]:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        await proc.wait()


async def run(plan: Plan) -> None:
    """Run ``plan``'s proxy until cancelled (see the module docstring)."""
    program = binary(plan)
    sweep_stale()
    if os.geteuid() == 0:
        sweep_stale(SHARED_TMP)
    workdir = Path(tempfile.mkdtemp(prefix=f"{DIR_PREFIX}{os.getpid()}-"))
    sockets = workdir
    server: asyncio.AbstractServer | None = None
    proc: asyncio.subprocess.Process | None = None
    try:
        if os.environ.get(HARNESS_MARK):
            (workdir / HARNESS_MARK_FILE).write_text(os.environ[HARNESS_MARK])
        deadline = float(os.environ.get("IPCLAB_ADAPTER_RESOLVE_TIMEOUT_S", "60"))
        plan = await resolve(plan, deadline)
        if plan.transport == "h2c" and plan.kind == EGRESS:
            sockets = socket_dir(workdir)
            server = await _not_found(sockets / "not-found.sock")
        argv = command(plan, program, workdir, sockets)
        setpriv = shutil.which("setpriv")
        preexec = None
        cwd = workdir
        if setpriv:  # no preexec_fn: unsafe while other threads run in this process
            # the JVM is the proxy itself (no workers to drop privileges): as root, it runs
            # as nobody, from a directory nobody may enter
            drop: list[str] = []
            if plan.transport == "coap" and os.geteuid() == 0:
                user, group = unprivileged()
                drop, cwd = ["--reuid", user, "--regid", group, "--clear-groups"], SHARED_TMP
            argv = [setpriv, *drop, "--pdeathsig", "TERM", "--", *argv]
        else:
            preexec = _die_with_parent
        _raise_nofile()
        print(f"ipclab native {plan.role}: {' '.join(argv)}", file=sys.stderr, flush=True)
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=sys.stderr.fileno(),
            stderr=sys.stderr.fileno(),
            preexec_fn=preexec,
            cwd=cwd,
        )
        code = await proc.wait()
        raise NativeAdapterError(f"{plan.role}: {plan.program} exited with status {code}")
    finally:
        try:
            if proc is not None:
                await asyncio.shield(_stop(proc))
        finally:
            if server is not None:
                server.close()
            shutil.rmtree(workdir, ignore_errors=True)
            shutil.rmtree(sockets, ignore_errors=True)


async def serve(env: Mapping[str, str]) -> None:
    """Run the native adapter role ``env`` describes until SIGTERM/SIGINT or cancelled."""
    plan = plan_from_env(env)
    binary(plan)  # fail before anything else when the proxy is missing
    task = asyncio.ensure_future(run(plan))
    loop = asyncio.get_running_loop()
    signalled = False

    def stop() -> None:
        nonlocal signalled
        signalled = True
        task.cancel()

    sigs = (signal.SIGINT, signal.SIGTERM)
    for sig in sigs:
        loop.add_signal_handler(sig, stop)
    try:
        await task  # cancelling serve cancels task, whose cleanup ends before this returns
    except asyncio.CancelledError:
        if not signalled:
            raise
    finally:
        for sig in sigs:
            loop.remove_signal_handler(sig)


def main() -> None:
    import uvloop

    try:
        uvloop.run(serve(os.environ))
    except NativeAdapterError as e:
        sys.exit(f"ipclab native adapter: {e}")


if __name__ == "__main__":
    main()
