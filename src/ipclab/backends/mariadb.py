"""A private MariaDB server (Debian's ``mariadb-server``, 10.11): its own data directory,
port and socket, removed afterwards.

Nothing of the machine's configuration is read: ``mariadb-install-db`` and ``mariadbd`` run
with ``--no-defaults`` (no ``/etc/mysql/my.cnf``, no ``~/.my.cnf`` another local user could
plant), every setting on the command line. The data directory is made by
``mariadb-install-db`` in a private store directory (``ipclab.backends.storedir``); the
server listens on ``127.0.0.1`` only (``--bind-address``), on a port the harness chose, with
its unix socket and pid file in that directory; ``LOAD DATA LOCAL`` is off and server-side
file access is confined to an empty directory (``--secure-file-priv``). A root harness runs
both as the OS user ``mysql`` (made by the package), as PostgreSQL's cluster runs as
``postgres``: the parent-death signal is set after the switch, so the server dies with the
harness either way.

Accounts: the bootstrap's SQL (``--extra-file``, read once and removed) deletes every
account the installer made (root's and the installing user's, whichever authentication)
but ``mariadb.sys`` (the definer of the system views), and creates two, both reachable over
loopback TCP only (``@'127.0.0.1'``) and by password:

- ``ipclab_admin``: the harness's (creating and filling the data), every privilege;
- ``ipclab``: the services', every privilege on the database ``ipclab`` only.

Both passwords are random at every start; they reach the client through a 0600 option file
in the store directory (``--defaults-file``), never a command line. Durability is relaxed
(``innodb_flush_log_at_trx_commit=0``, no binary log, no doublewrite): a benchmark database,
seeded at start and thrown away.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from ipclab.backends import storedir
from ipclab.procs import free_port, kill_group, port_open, server_user, spawn, stop_group, tail

KIND = "mariadb"
USER, ADMIN, DATABASE = "ipclab", "ipclab_admin", "ipclab"
OS_USER_WHEN_ROOT = "mysql"
START_TIMEOUT_S = 60.0
SERVER_SETTINGS = (
    "--skip-name-resolve",
    "--skip-log-bin",
    "--local-infile=0",
    "--innodb-buffer-pool-size=64M",
    "--innodb-log-file-size=16M",
    "--innodb-flush-log-at-trx-commit=0",
    "--innodb-doublewrite=0",
    "--innodb-use-native-aio=0",  # no io_uring/libaio limits in a container
    "--max-connections=200",
    "--character-set-server=utf8mb4",
    "--collation-server=utf8mb4_bin",
    "--performance-schema=0",
)


class MariaDBUnavailable(RuntimeError):
    """MariaDB is not installed here, or did not start."""


def find_binaries() -> dict[str, str]:
    """The server, the installer and the client, from PATH and /usr/sbin."""
    path = f"{os.environ.get('PATH', '')}:/usr/sbin:/usr/bin"
    found = {n: shutil.which(n, path=path) for n in ("mariadbd", "mariadb-install-db", "mariadb")}
    missing = [n for n, p in found.items() if p is None]
    if missing:
        raise MariaDBUnavailable(
            f"MariaDB's {', '.join(missing)} not installed; the stores need them. On Debian: "
            "apt-get install mariadb-server (only the package: ipclab starts its own private "
            "server; scripts/system-deps.sh installs it)"
        )
    return {n: str(p) for n, p in found.items()}


def unavailable() -> str | None:
    try:
        find_binaries()
        os_user()
    except MariaDBUnavailable as e:
        return str(e)
    return None


def os_user() -> str | None:
    """The OS user the server runs as: ``mysql`` when the harness is root, else itself."""
    try:
        return server_user(OS_USER_WHEN_ROOT)
    except KeyError:
        raise MariaDBUnavailable(
            f"the harness runs as root and MariaDB should not; the OS user "
            f"{OS_USER_WHEN_ROOT!r} (made by mariadb-server) is missing"
        ) from None


def version() -> str:
    """The server's version (``mariadbd --version``'s, e.g. ``10.11.19-MariaDB-0+deb12u1``),
    "" when not installed."""
    try:
        line = storedir.version_line([find_binaries()["mariadbd"], "--version"])
    except MariaDBUnavailable:
        return ""
    words = line.split()
    return words[words.index("Ver") + 1] if "Ver" in words[:-1] else line


def bootstrap_sql(
    admin_password: str, password: str, host: str = "127.0.0.1", admin_host: str | None = None
) -> str:
    """The accounts: the installer's removed (but ``mariadb.sys``), the two of ours made,
    the services' from ``host`` (loopback here; a container's: ``%``, its project network)
    and the admin's from ``admin_host`` (by default ``host``)."""
    admin_at = f"'{ADMIN}'@'{admin_host or host}'"
    return (
        "FLUSH PRIVILEGES;\n"  # the bootstrap runs without grant tables: load them
        "DELETE FROM mysql.global_priv WHERE User <> 'mariadb.sys';\n"
        "DELETE FROM mysql.proxies_priv;\n"
        "DELETE FROM mysql.db;\n"
        "DROP DATABASE IF EXISTS test;\n"
        "FLUSH PRIVILEGES;\n"
        f"CREATE USER {admin_at} IDENTIFIED BY '{admin_password}';\n"
        f"GRANT ALL PRIVILEGES ON *.* TO {admin_at} WITH GRANT OPTION;\n"
        f"CREATE DATABASE {DATABASE} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;\n"
        f"CREATE USER '{USER}'@'{host}' IDENTIFIED BY '{password}';\n"
        f"GRANT ALL PRIVILEGES ON {DATABASE}.* TO '{USER}'@'{host}';\n"
    )


@dataclass
class MariaDBServer:
    """A private MariaDB: ``start()``, ``url``, ``execute()``, ``stop()``."""

    port: int = field(default_factory=free_port)
    host: str = "127.0.0.1"
    mark: dict[str, str] = field(default_factory=dict)  # the harness's ownership mark
    directory: Path | None = None
    process: subprocess.Popen[bytes] | None = None
    secret: str = field(default="", repr=False)  # the services' password
    admin_secret: str = field(default="", repr=False)

    @property
    def url(self) -> str:
        return f"mysql://{USER}:{self.secret}@{self.host}:{self.port}/{DATABASE}"

    @property
    def log(self) -> Path:
        assert self.directory is not None, "not started"
        return self.directory / "mariadb.log"

    @property
    def socket(self) -> Path:
        assert self.directory is not None, "not started"
        return self.directory / "run" / "mariadb.sock"

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MYSQL")}
        return {**env, **self.mark, "LC_ALL": "C", "TZ": "UTC"}

    def start(self, detached: bool = False, timeout: float = START_TIMEOUT_S) -> None:
        bins, user = find_binaries(), os_user()
        self.directory = storedir.make(KIND, self.port, user, detached)
        try:
            self.secret, self.admin_secret = secrets.token_hex(24), secrets.token_hex(24)
            self._install(bins, user)
            self.process = spawn(self.server_argv(bins), self._env(), self.log, user=user,
                                 detached=detached)  # fmt: skip
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise

    def _install(self, bins: dict[str, str], user: str | None) -> None:
        assert self.directory is not None
        sql = self.directory / "bootstrap.sql"
        storedir.write_private(sql, bootstrap_sql(self.admin_secret, self.secret), user)
        for name in ("tmp", "files", "run"):  # the server's own
            (self.directory / name).mkdir(mode=0o700)
            if (ids := storedir.ids_of(user)) is not None:
                os.chown(self.directory / name, *ids)
        argv = [
            bins["mariadb-install-db"], "--no-defaults", f"--datadir={self.directory / 'data'}",
            "--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve",
            f"--extra-file={sql}", f"--tmpdir={self.directory / 'tmp'}",
        ]  # fmt: skip
        try:
            proc = spawn(argv, self._env(), self.log, user=user)
            if proc.wait(timeout=180) != 0:
                raise MariaDBUnavailable(f"mariadb-install-db failed:\n{tail(self.log)}")
        finally:
            sql.unlink(missing_ok=True)
        admin_cnf = (
            f"[client]\nuser={ADMIN}\npassword={self.admin_secret}\nhost={self.host}\n"
            f"port={self.port}\nprotocol=TCP\n"
        )
        storedir.write_private(self.directory / "admin.cnf", admin_cnf)

    def server_argv(self, bins: dict[str, str]) -> list[str]:
        d = self.directory
        assert d is not None
        return [
            bins["mariadbd"], "--no-defaults", f"--datadir={d / 'data'}",
            f"--port={self.port}", f"--bind-address={self.host}", f"--socket={self.socket}",
            f"--pid-file={d / 'run' / 'mariadb.pid'}", f"--tmpdir={d / 'tmp'}",
            f"--secure-file-priv={d / 'files'}", *SERVER_SETTINGS,
        ]  # fmt: skip

    def _wait_ready(self, timeout: float) -> None:
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while not (port_open(self.host, self.port) and self._answers()):
            if self.process.poll() is not None or time.monotonic() > deadline:
                why = "exited" if self.process.poll() is not None else f"not up after {timeout}s"
                raise MariaDBUnavailable(f"MariaDB {why}:\n{tail(self.log)}")
            time.sleep(0.1)

    def _answers(self) -> bool:
        try:
            return self.execute("SELECT 1;", admin=True, timeout=10).strip() == "1"
        except (RuntimeError, subprocess.TimeoutExpired):
            return False

    def execute(self, sql: str, admin: bool = False, timeout: float = 60.0) -> str:
        """Run ``sql`` with the ``mariadb`` client over loopback TCP (stops at the first
        error), as ``ipclab_admin`` if ``admin`` else the services' user in ``ipclab``;
        the password from an option file, never the command line."""
        assert self.directory is not None, "not started"
        cnf = self.directory / "admin.cnf"
        if not admin:
            cnf = self.directory / "services.cnf"
            if not cnf.exists():
                text = f"[client]\nuser={USER}\npassword={self.secret}\nhost={self.host}\n"
                storedir.write_private(cnf, text + f"port={self.port}\nprotocol=TCP\n")
        argv = [find_binaries()["mariadb"], f"--defaults-file={cnf}", "--batch",
                "--skip-column-names", DATABASE]  # fmt: skip
        proc = subprocess.run(argv, input=sql, capture_output=True, text=True,
                              env=self._env(), timeout=timeout, check=False)  # fmt: skip
        if proc.returncode != 0:
            raise RuntimeError(f"mariadb failed ({proc.returncode}): {proc.stderr.strip()}")
        return proc.stdout

    def kill(self) -> None:
        """SIGKILL the server (a crash); its data stays."""
        if self.process is not None:
            kill_group(self.process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=5)

    def stop(self) -> None:
        if self.process is not None:
            stop_group(self.process, grace=10)  # SIGTERM: a clean shutdown
            self.process = None
        storedir.remove(self.directory, KIND)
        self.directory = None

    def __enter__(self) -> MariaDBServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
