"""A private RabbitMQ node for one stack: own ports, own data directory, removed afterwards.

Uses Debian's ``rabbitmq-server`` package (3.10). The node never touches a system node: it
has its own node name, AMQP port, distribution port, epmd port, data and log directories
and Erlang cookie (HOME points into the node's directory).

Its only AMQP user is ``ipclab`` with a password generated for each node (32 hex digits,
``secrets``), as the docker backends' broker (``infrastructure.rabbitmq.BrokerLogin``):
``rabbitmq.conf`` names it as the default user, so ``guest`` is never created (RabbitMQ
makes its default user on an empty database only, which every start of the node has). The
password is in ``url`` (the services' ``IPCLAB_AMQP_URL``, the harness's clients) and in the
node's ``rabbitmq.conf`` (0600, in the node's directory under the stack's 0700 workdir);
never in a state file, a manifest or a command line. It lasts as long as the node object: a
restart of the node (the availability experiments) keeps it, so the services' URL holds.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import importlib.util
import os
import secrets
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from ipclab.paths import REPO_ROOT
from ipclab.procs import free_ports, port_open, spawn, stop_group, tail

SERVER_CANDIDATES = ("/usr/lib/rabbitmq/bin/rabbitmq-server", "rabbitmq-server")
START_TIMEOUT_S = 60.0
USER = "ipclab"  # the node's only AMQP user (as infrastructure.rabbitmq.BROKER_USER)
CORE_PLUGINS = REPO_ROOT / "compose" / "broker" / "core_plugins.py"


class BrokerUnavailable(RuntimeError):
    pass


def find_server() -> str:
    for candidate in SERVER_CANDIDATES:
        path = shutil.which(candidate) if "/" not in candidate else candidate
        if path and os.access(path, os.X_OK):
            return path
    raise BrokerUnavailable(
        "rabbitmq-server is not installed; the AMQP stacks need it. "
        "On Debian/Ubuntu: sudo apt-get install rabbitmq-server "
        "(only the package is needed: ipclab starts its own private node)"
    )


@functools.cache
def _core_plugins() -> ModuleType:
    """``compose/broker/core_plugins.py`` (stdlib only; the broker image's build runs it too),
    loaded once."""
    spec = importlib.util.spec_from_file_location("ipclab_core_plugins", CORE_PLUGINS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def core_apps(plugins: Path) -> list[Path]:
    """The ``rabbit`` application's folder in ``plugins`` and those of every application it
    needs: the private node's plugins folder holds these only."""
    return list(_core_plugins().core_apps(plugins))


@dataclass
class RabbitNode:
    directory: Path
    host: str = "127.0.0.1"
    port: int = 0  # AMQP, Erlang distribution, epmd: 0 = chosen together in __post_init__
    dist_port: int = 0
    epmd_port: int = 0
    process: subprocess.Popen[bytes] | None = None
    extra_env: dict[str, str] = field(default_factory=dict)  # e.g. the harness mark
    # --tls: the AMQPS listener's port and the stack's files (ipclab.tls.StackTls); the
    # services then connect there (``url``), the plain listener only answers the harness's
    # readiness check (on loopback, like every port of the node)
    tls_port: int = 0
    tls: Any = None
    # the AMQP user's password: new for each node, kept across its restarts
    password: str = field(default_factory=lambda: secrets.token_hex(16), repr=False)

    def __post_init__(self) -> None:
        if not (self.port and self.dist_port and self.epmd_port):
            self.port, self.dist_port, self.epmd_port = free_ports(3, self.host)
        if len({self.port, self.dist_port, self.epmd_port}) != 3:
            raise ValueError(
                f"broker ports must differ: amqp {self.port}, "
                f"distribution {self.dist_port}, epmd {self.epmd_port}"
            )

    @property
    def url(self) -> str:
        if self.tls is not None:
            return f"amqps://{USER}:{self.password}@{self.host}:{self.tls_port}/"
        return f"amqp://{USER}:{self.password}@{self.host}:{self.port}/"

    def _login_config(self) -> str:
        """rabbitmq.conf's users: ``ipclab`` is the default user, so ``guest`` is never
        made; were it ever made, loopback only (RabbitMQ's own default, stated)."""
        return (
            f"default_user = {USER}\n"
            f"default_pass = {self.password}\n"
            "default_permissions.configure = .*\n"
            "default_permissions.read = .*\n"
            "default_permissions.write = .*\n"
            "loopback_users.guest = true\n"
        )

    def _tls_config(self) -> str:
        """rabbitmq.conf's AMQPS listener: the stack's certificate, TLS 1.3 only, no client
        certificate asked for (the clients authenticate with the broker's login)."""
        if self.tls is None:
            return ""
        if not self.tls_port:
            raise ValueError("a TLS broker needs its AMQPS port (tls_port)")
        return (
            f"listeners.ssl.default = {self.host}:{self.tls_port}\n"
            f"ssl_options.cacertfile = {self.tls.ca}\n"
            f"ssl_options.certfile = {self.tls.cert}\n"
            f"ssl_options.keyfile = {self.tls.key}\n"
            "ssl_options.versions.1 = tlsv1.3\n"
            "ssl_options.verify = verify_none\n"
            "ssl_options.fail_if_no_peer_cert = false\n"
        )

    @property
    def log(self) -> Path:
        return self.directory / "broker.log"

    def _plugins_dir(self) -> dict[str, str]:
        """``RABBITMQ_PLUGINS_DIR``: a folder of links to :func:`core_apps` only (none when
        the server's own plugins folder is not where Debian's package puts it)."""
        plugins = Path(os.path.realpath(find_server())).parent.parent / "plugins"
        apps = core_apps(plugins) if plugins.is_dir() else []
        if not apps:
            return {}
        folder = self.directory / "plugins"
        shutil.rmtree(folder, ignore_errors=True)
        _core_plugins().link_core(plugins, folder)
        return {"RABBITMQ_PLUGINS_DIR": str(folder)}

    def _env(self) -> dict[str, str]:
        d = self.directory
        (d / "enabled_plugins").write_text("[].\n")
        conf = d / "rabbitmq.conf"  # it holds the password: this user's alone
        fd = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(
                f"listeners.tcp.default = {self.host}:{self.port}\n"
                + self._login_config()
                + self._tls_config()
                + "log.console = true\nlog.console.level = warning\nlog.file = false\n"
            )
        return {
            **{k: v for k, v in os.environ.items() if not k.startswith("RABBITMQ_")},
            "HOME": str(d),
            "RABBITMQ_NODENAME": f"ipclab{self.port}@localhost",
            "RABBITMQ_NODE_IP_ADDRESS": self.host,
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_DIST_PORT": str(self.dist_port),
            "ERL_EPMD_PORT": str(self.epmd_port),
            "ERL_EPMD_ADDRESS": self.host,  # epmd on loopback only, not 0.0.0.0
            "RABBITMQ_MNESIA_BASE": str(d / "mnesia"),
            "RABBITMQ_LOG_BASE": str(d / "log"),
            "RABBITMQ_CONFIG_FILE": str(d / "rabbitmq.conf"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(d / "enabled_plugins"),
            "RABBITMQ_PID_FILE": str(d / "rabbit.pid"),
            **self._plugins_dir(),
            **self.extra_env,
            # no scheduler busy-waiting: on 2 cores it would steal CPU from the services
            # the distribution port on loopback only (it would listen on 0.0.0.0)
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "+sbwt none +sbwtdcpu none +sbwtdio none "
            + f"-kernel inet_dist_use_interface {{{self.host.replace('.', ',')}}}",
        }

    def start(self, timeout: float = START_TIMEOUT_S, detached: bool = False) -> None:
        server = find_server()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.process = spawn([server], self._env(), self.log, detached=detached)
        deadline = time.monotonic() + timeout
        ports = (self.port, self.tls_port) if self.tls is not None else (self.port,)
        while not all(port_open(self.host, p) for p in ports):  # the TLS listener comes last
            if self.process.poll() is not None or time.monotonic() > deadline:
                why = "exited" if self.process.poll() is not None else f"not up after {timeout}s"
                self.stop()
                raise BrokerUnavailable(f"RabbitMQ node {why}:\n{tail(self.log)}")
            time.sleep(0.2)

    def pids(self) -> list[int]:
        """The node's OS processes (beam.smp and helpers, epmd), for sampling and cleanup."""
        import psutil

        if self.process is None:
            return []
        try:
            root = psutil.Process(self.process.pid)
            return [root.pid, *(c.pid for c in root.children(recursive=True))]
        except psutil.NoSuchProcess:
            return []

    def kill(self, timeout: float = 15.0) -> None:
        """SIGKILL the node (a crash), keep its data; return once its port is closed."""
        import psutil

        for pid in self.pids():
            with contextlib.suppress(psutil.NoSuchProcess):
                psutil.Process(pid).kill()
        if self.process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=timeout)
        deadline = time.monotonic() + timeout
        while port_open(self.host, self.port) and time.monotonic() < deadline:
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None:
            stop_group(self.process, grace=10)
        stop_private_epmd(self.epmd_port)
        shutil.rmtree(self.directory, ignore_errors=True)
        self.process = None


def _epmd_binaries() -> set[str]:
    """The real paths of Erlang's own epmd binaries on this machine (root's, in the
    installation; the one on PATH)."""
    found = {os.path.realpath(p) for p in glob.glob("/usr/lib/erlang/erts-*/bin/epmd")}
    on_path = shutil.which("epmd")
    return found | ({os.path.realpath(on_path)} if on_path else set())


def erlang_epmd() -> str | None:
    """Erlang's own epmd (the one the broker's Erlang starts), or None."""
    usable = sorted(p for p in _epmd_binaries() if os.access(p, os.X_OK))
    return usable[0] if usable else None


def private_epmd(p: Any, port: int) -> bool:
    """``p`` (a psutil.Process) is the private epmd of ``port`` a node of this user started:
    Erlang's own epmd binary, run by this uid, with exactly the argv Erlang gives it
    (``epmd -daemon`` with ``ERL_EPMD_PORT=<port>`` in its environment) or an explicit
    ``-port <port>``. Not a name, nor a substring of some command line: another user's
    process called epmd, or one whose arguments hold ``-port 4369`` among others, is not
    ours."""
    import psutil

    try:
        if p.uids().real != os.getuid() or p.exe() not in _epmd_binaries():
            return False
        args = p.cmdline()[1:]
        if args in (["-port", str(port)], ["-port", str(port), "-daemon"],
                    ["-daemon", "-port", str(port)]):  # fmt: skip
            return True
        return args == ["-daemon"] and (p.environ() or {}).get("ERL_EPMD_PORT") == str(port)
    except (psutil.Error, OSError):
        return False


def stop_private_epmd(port: int) -> None:
    """epmd daemonises itself out of the node's process group: find it by what it is
    (:func:`private_epmd`) and kill it alone."""
    import psutil

    for p in psutil.process_iter(["name"]):
        if p.info["name"] != "epmd" or not private_epmd(p, port):
            continue
        with contextlib.suppress(psutil.Error):
            p.kill()
