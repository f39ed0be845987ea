"""A private PostgreSQL cluster: own port, own data directory, removed afterwards.

Uses Debian's ``postgresql`` package (the binaries under ``/usr/lib/postgresql/*/bin``,
newest version first; or ``initdb``/``postgres`` on PATH). The cluster never touches a
system cluster: ``initdb`` makes a fresh data directory under ``ROOT`` (one directory per
cluster), the server listens on ``127.0.0.1`` only, on a port the harness allocated, with
its unix socket inside the data directory. PostgreSQL refuses to run as root: a root
harness runs ``initdb`` and the server as the OS user ``postgres`` (created by the package).

Authentication: nothing is trusted. ``pg_hba.conf`` admits two roles, over loopback TCP
only, by SCRAM-SHA-256 password; the unix socket and every other address are rejected.

- ``ipclab_admin`` (``admin``), the bootstrap superuser: the harness only (it creates the
  database, the services' role and schema); its password is ``superuser.pw``.
- ``ipclab`` (``user``), the services' role: no superuser, no ``CREATEDB``/``CREATEROLE``/
  replication, connects to the database ``ipclab`` only and owns only its schema ``ipclab``
  (its search path) and the tables the domain's SQL makes there. So it cannot ``COPY ... TO
  PROGRAM`` nor read server files. Its password is ``services.pw``; the services get it in
  the database URL (``dsn``, passed as ``IPCLAB_DATABASE_URL``, like the broker's URL).

Both passwords are random (32 bytes, ``secrets``), made at every start, kept in files of
mode 0600 in the cluster's directory; the server is given only their SCRAM verifiers.

``ROOT`` (``$IPCLAB_POSTGRES_ROOT``, default ``<tmp>/ipclab-postgres-<uid>``) is checked
like the local backend's state directory (``ipclab.private``): a real directory owned by
this user and writable by no one else (0700; 0711 for a root harness, so that ``postgres``
can pass through to its data directory), else ``UnsafeState`` and nothing is done.

Durability is off: ``fsync``, ``synchronous_commit`` and ``full_page_writes`` are off and
``initdb --no-sync`` is used. This is a benchmark database, seeded at start and thrown
away; a crash may corrupt it, which does not matter since it is never reused.
``autovacuum`` is off (the tables are static after seeding; ``ANALYZE`` follows the seed),
parallel query is off (2 cores shared with the services), and dynamic shared memory lives
in the data directory (``dynamic_shared_memory_type = mmap``), so nothing of it is left in
``/dev/shm``.

Nothing outlives the harness, by the mechanisms the broker uses (``procs.spawn``):

- the postmaster runs in its own session (process group) with a parent-death signal
  (SIGKILL when the harness dies, even by SIGKILL); its children notice the postmaster's
  death and exit within a second (PostgreSQL's own postmaster-death watch), so the port
  closes and no process is left;
- what a killed harness cannot remove (the data directory; the small System V shared
  memory segment PostgreSQL keeps as an interlock) is swept by the next ``start``: every
  cluster directory under ``ROOT`` whose owner (the harness process that made it, by pid and
  start time) is gone is removed, with its server's processes if any survive and its
  System V segment, and a warning names it. ``sweep_stale()`` does the same on demand.
  The sweep follows no symlink, and kills a process only when it is that directory's
  postmaster: the pid file's data-directory line is exactly the directory it was read from,
  the process runs as the cluster's OS user, its command line has ``-D <that directory>``
  and its working directory is that directory.

    with PostgresCluster() as pg:
        pg.execute("CREATE TABLE t (x int); INSERT INTO t VALUES (1);")
        pg.dsn  # postgresql://ipclab:SECRET@127.0.0.1:PORT/ipclab
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import glob
import hashlib
import hmac
import json
import logging
import os
import pwd
import secrets
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import psutil

from ipclab.private import UnsafeState, owned_alone, private_dir
from ipclab.procs import alive, free_port, kill_group, port_open, server_user, spawn, tail

log = logging.getLogger(__name__)

ROOT = Path(
    os.environ.get(
        "IPCLAB_POSTGRES_ROOT", Path(tempfile.gettempdir()) / f"ipclab-postgres-{os.getuid()}"
    )
)
BIN_GLOB = "/usr/lib/postgresql/*/bin"
START_TIMEOUT_S = 30.0
STOP_GRACE_S = 10.0
OS_USER_WHEN_ROOT = "postgres"
PREFIX = "pg-"  # a cluster directory's name starts with it; the sweep looks at nothing else
OWNER_FILE = "owner.json"
SUPERUSER_SECRET = "superuser.pw"  # the bootstrap superuser's password (initdb --pwfile)
SERVICES_SECRET = "services.pw"  # the services' role's password (in ``dsn``)
UNOWNED_GRACE_S = 60.0  # a directory without an owner file yet: being made, leave it a while
SCRAM_ITERATIONS = 4096  # PostgreSQL's default
_IPC_RMID = 0
_NOFOLLOW = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)

SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "password_encryption": "'scram-sha-256'",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "autovacuum": "off",
    "max_parallel_workers_per_gather": "0",
    "dynamic_shared_memory_type": "mmap",
    "shared_buffers": "32MB",
    "max_connections": "200",
    "logging_collector": "off",
    "log_min_messages": "warning",
    "log_checkpoints": "off",
}

__all__ = [
    "ROOT",
    "PidFile",
    "PostgresCluster",
    "PostgresUnavailable",
    "UnsafeState",
    "find_bin_dir",
    "scram_sha_256",
    "sweep_stale",
]


class PostgresUnavailable(RuntimeError):
    pass


def find_bin_dir() -> Path:
    """The directory holding ``initdb``, ``postgres`` and ``psql`` (newest version first)."""

    def version(d: str) -> tuple[int, ...]:
        ver = Path(d).parent.name
        return tuple(int(x) for x in ver.split(".") if x.isdigit())

    candidates = sorted(glob.glob(BIN_GLOB), key=version, reverse=True)
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(str(Path(on_path).resolve().parent))
    for d in candidates:
        if all(os.access(Path(d) / b, os.X_OK) for b in ("initdb", "postgres", "psql")):
            return Path(d)
    raise PostgresUnavailable(
        "PostgreSQL's server binaries (initdb, postgres) are not installed; the stacks with a "
        f"SQL database need them (looked under {BIN_GLOB} and on PATH). On Debian/Ubuntu: "
        "sudo apt-get install postgresql (only the package is needed: ipclab starts its own "
        "private cluster)"
    )


def os_user() -> str | None:
    """The OS user the server runs as: ``postgres`` when the harness is root, else itself."""
    try:
        return server_user(OS_USER_WHEN_ROOT)
    except KeyError:
        raise PostgresUnavailable(
            "the harness runs as root and PostgreSQL refuses to; the OS user "
            f"{OS_USER_WHEN_ROOT!r} (made by the postgresql package) is missing"
        ) from None


def server_uid() -> int:
    """The uid the cluster's server runs as (-1, matching no process, if it cannot run)."""
    try:
        user = os_user()
    except PostgresUnavailable:
        return -1
    return os.getuid() if user is None else pwd.getpwnam(user).pw_uid


def scram_sha_256(password: str, salt: bytes | None = None) -> str:
    """The SCRAM-SHA-256 verifier PostgreSQL stores for ``password`` (RFC 5803's form):
    given to ``CREATE ROLE ... PASSWORD``, so that the password itself never reaches the
    server (nor its log)."""
    salt = salt if salt is not None else secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, SCRAM_ITERATIONS)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    stored_key = hashlib.sha256(client_key).digest()
    server_key = hmac.new(salted, b"Server Key", "sha256").digest()

    def b64(b: bytes) -> str:
        return base64.b64encode(b).decode()

    return f"SCRAM-SHA-256${SCRAM_ITERATIONS}:{b64(salt)}${b64(stored_key)}:{b64(server_key)}"


def _absolute(root: Path) -> Path:
    return Path(os.path.abspath(root))


def _cluster_root(root: Path, user: str | None) -> Path:
    """``root`` (absolute) as a directory this user alone can write, made if new, else
    ``UnsafeState``: the guard of the local backend's state directory. A root harness's
    server runs as ``user``, which must pass through it to its data directory: 0711."""
    root = _absolute(root)
    mode = 0o700 if user is None else 0o711
    private_dir(root, "the PostgreSQL clusters", "remove it or set IPCLAB_POSTGRES_ROOT", mode)
    current = root.lstat().st_mode
    if user is not None and not current & 0o001:
        os.chmod(root, stat.S_IMODE(current) | 0o011)
    return root


def _read_nofollow(name: str | Path, dir_fd: int | None = None) -> str:
    """A file's text, refusing a symlink as its last component (``O_NOFOLLOW``)."""
    fd = os.open(name, os.O_RDONLY | _NOFOLLOW, dir_fd=dir_fd)
    with os.fdopen(fd, encoding="utf-8", errors="replace") as f:
        return f.read(1 << 16)


def _write_private(path: Path, text: str, owner: tuple[int, int] | None = None) -> None:
    """A new file of mode 0600 (never an existing one, never through a symlink), given to
    ``owner`` (uid, gid) if set."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        if owner is not None:
            os.fchown(f.fileno(), *owner)
        f.write(text)


def _me() -> dict[str, float | int]:
    return {"pid": os.getpid(), "started": psutil.Process().create_time()}


def _owner_alive(owner: dict[str, Any]) -> bool:
    try:
        return abs(psutil.Process(int(owner["pid"])).create_time() - owner["started"]) < 0.01
    except (psutil.NoSuchProcess, KeyError, ValueError, TypeError):
        return False


def _names_data_dir(argv: list[str], data_dir: str) -> bool:
    """``argv`` has ``-D <data_dir>`` exactly (as ``PostgresCluster`` starts the server)."""
    return any(a == "-D" and b == data_dir for a, b in zip(argv, argv[1:], strict=False))


@dataclass(frozen=True)
class PidFile:
    """What the postmaster writes to ``postmaster.pid``: pid, data dir, ..., shm key/id,
    status (``ready`` once it accepts connections)."""

    pid: int
    data_dir: str
    shm_key: int | None
    shm_id: int | None
    status: str

    @classmethod
    def read(cls, data_dir: Path) -> PidFile | None:
        """The pid file of ``data_dir``, or None: none, unreadable, reached through a
        symlink (``data_dir`` or the file), or naming another data directory than the
        one it was read from (then neither its pid nor its shared memory is ours)."""
        try:
            dir_fd = os.open(data_dir, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW)
            try:
                lines = _read_nofollow("postmaster.pid", dir_fd=dir_fd).splitlines()
            finally:
                os.close(dir_fd)
            if len(lines) < 2 or lines[1] != str(data_dir):
                return None
            shm = lines[6].split() if len(lines) > 6 else []
            return cls(
                pid=int(lines[0]),
                data_dir=lines[1],
                shm_key=int(shm[0]) if len(shm) == 2 else None,
                shm_id=int(shm[1]) if len(shm) == 2 else None,
                status=lines[7].strip() if len(lines) > 7 else "",
            )
        except (OSError, ValueError, IndexError):
            return None

    def server(self) -> psutil.Process | None:
        """The postmaster of this data directory, if it still runs. Only an absolute
        (non-empty) data directory can match; the pid must run as the cluster's OS user
        with ``-D <exactly that directory>`` on its command line and that directory (the
        same inode, not reached through a symlink) as its working directory."""
        if self.pid <= 1 or not os.path.isabs(self.data_dir):
            return None
        try:
            p = psutil.Process(self.pid)
            if p.uids().real != server_uid() or not _names_data_dir(p.cmdline(), self.data_dir):
                return None
            here, there = os.stat(f"/proc/{self.pid}/cwd"), os.lstat(self.data_dir)
        except (psutil.Error, OSError):
            return None
        same = (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)
        return p if same and stat.S_ISDIR(there.st_mode) else None


def _remove_shm(key: int | None, shm_id: int | None) -> bool:
    """Remove the server's System V segment if it is still there, is the cluster's OS
    user's and nobody is attached."""
    if shm_id is None:
        return False
    try:
        rows = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    except OSError:
        return False
    for r in rows:
        cols = r.split()  # key shmid perms size cpid lpid nattch uid ...
        if int(cols[1]) == shm_id and int(cols[0]) == key and int(cols[6]) == 0:
            if int(cols[7]) != server_uid():
                return False
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            return int(libc.shmctl(shm_id, _IPC_RMID, None)) == 0
    return False


def _kill_server(pidfile: PidFile | None, timeout: float = 5.0) -> bool:
    """SIGKILL a cluster's postmaster (``PidFile.server``: exactly that cluster's) and its
    process group and descendants; True if one was running."""
    server = pidfile.server() if pidfile else None
    if server is None:
        return False
    children = server.children(recursive=True)
    with contextlib.suppress(OSError):
        if os.getpgid(server.pid) == server.pid:  # its own group (spawn's new session)
            kill_group(server.pid, signal.SIGKILL)
    for p in [server, *children]:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()
    psutil.wait_procs([server, *children], timeout=timeout)
    return True


def _discard(directory: Path) -> None:
    """Kill what may run from ``directory``, free its System V segment, remove it
    (``shutil.rmtree`` follows no symlink inside it)."""
    pidfile = PidFile.read(directory / "data")
    _kill_server(pidfile)
    if pidfile is not None:
        _remove_shm(pidfile.shm_key, pidfile.shm_id)
    shutil.rmtree(directory, ignore_errors=True)


def _read_owner(directory: Path) -> dict[str, Any] | None:
    try:
        owner = json.loads(_read_nofollow(directory / OWNER_FILE))
    except (OSError, ValueError):
        return None
    return owner if isinstance(owner, dict) else None


def _stale(directory: Path) -> dict[str, Any] | None:
    """The owner record (``{}`` if none) of ``directory`` if it is a cluster directory to
    sweep, else None. Only a real directory of this user's counts: a symlink or another's
    entry is never followed nor removed."""
    try:
        st = directory.lstat()
    except OSError:
        return None
    if not (stat.S_ISDIR(st.st_mode) and owned_alone(st)):
        return None
    owner = _read_owner(directory)
    if owner is None:
        if time.time() - st.st_mtime < UNOWNED_GRACE_S:
            return None
        owner = {}
    if _owner_alive(owner):
        return None
    pidfile = PidFile.read(directory / "data")
    if owner.get("detached") and pidfile is not None and pidfile.server() is not None:
        return None  # `up --detach`: it outlives its harness on purpose
    return owner


def sweep_stale(root: Path = ROOT) -> list[Path]:
    """Remove every cluster directory under ``root`` whose owner is gone (a harness killed
    before it could stop its cluster); returns them, and logs a warning for each.
    ``UnsafeState`` if ``root`` is not this user's alone (nothing is looked at)."""
    try:
        user = os_user()
    except PostgresUnavailable:
        user = None
    root = _cluster_root(root, user)
    swept: list[Path] = []
    for d in sorted(root.glob(f"{PREFIX}*")):
        owner = _stale(d)
        if owner is None:
            continue
        pidfile = PidFile.read(d / "data")
        running = pidfile is not None and pidfile.server() is not None
        _discard(d)
        swept.append(d)
        log.warning(
            "swept a stale PostgreSQL cluster %s (owner pid %s gone%s)",
            d,
            owner.get("pid", "?"),
            "; its server was still running and was killed" if running else "",
        )
    return swept


@dataclass
class PostgresCluster:
    root: Path = ROOT
    host: str = "127.0.0.1"
    port: int = field(default_factory=free_port)
    user: str = "ipclab"  # the services' role (no superuser)
    database: str = "ipclab"
    admin: str = "ipclab_admin"  # the bootstrap superuser, the harness's only
    directory: Path | None = None
    process: subprocess.Popen[bytes] | None = None
    swept: list[Path] = field(default_factory=list)
    secret: str = field(default="", repr=False)  # the services' role's password
    admin_secret: str = field(default="", repr=False)

    @property
    def data_dir(self) -> Path:
        assert self.directory is not None, "not started"
        return self.directory / "data"

    @property
    def log(self) -> Path:
        assert self.directory is not None, "not started"
        return self.directory / "postgres.log"

    @property
    def dsn(self) -> str:
        """The services' URL: their role, its password, loopback, the database."""
        return f"postgresql://{self.user}:{self.secret}@{self.host}:{self.port}/{self.database}"

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        return {**env, "LC_ALL": "C", "TZ": "UTC"}

    def _make_directory(self, detached: bool, user: str | None) -> Path:
        """``<root>/pg-<port>-<random>/``, this user's (0700; 0711 for a root harness, whose
        server user enters it but lists nothing): the owner record, both passwords (0600;
        the superuser's given to the server user, whose initdb reads it), the log (0600) and
        an empty ``data/`` (0700, the server user's)."""
        d = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{self.port}-", dir=self.root))
        ids = None if user is None else (pwd.getpwnam(user).pw_uid, pwd.getpwnam(user).pw_gid)
        if ids is not None:
            d.chmod(0o711)
        self.secret, self.admin_secret = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        _write_private(d / OWNER_FILE, json.dumps({**_me(), "detached": detached}))
        _write_private(d / SERVICES_SECRET, self.secret + "\n")
        _write_private(d / SUPERUSER_SECRET, self.admin_secret + "\n", ids)
        _write_private(d / "postgres.log", "")
        (d / "data").mkdir(mode=0o700)
        if ids is not None:
            os.chown(d / "data", *ids, follow_symlinks=False)
        return d

    def start(self, timeout: float = START_TIMEOUT_S, detached: bool = False) -> None:
        bins = find_bin_dir()
        user = os_user()
        self.root = _cluster_root(self.root, user)
        self.swept = sweep_stale(self.root)
        self.directory = self._make_directory(detached, user)
        try:
            self._initdb(bins, user)
            self.process = spawn(
                [str(bins / "postgres"), "-D", str(self.data_dir)],
                self._env(),
                self.log,
                detached=detached,
                user=user,
            )
            self._wait_ready(timeout)
            self._provision()
        except BaseException:
            self.stop()
            raise

    def _initdb(self, bins: Path, user: str | None) -> None:
        assert self.directory is not None
        argv = [
            str(bins / "initdb"),
            *("-D", str(self.data_dir), "-U", self.admin, "--auth=scram-sha-256"),
            f"--pwfile={self.directory / SUPERUSER_SECRET}",
            *("--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions"),
        ]
        proc = spawn(argv, self._env(), self.log, user=user)
        if proc.wait(timeout=120) != 0:
            raise PostgresUnavailable(f"initdb failed:\n{tail(self.log)}")
        conf = {
            **SETTINGS,
            "port": str(self.port),
            "unix_socket_directories": f"'{self.data_dir}'",
        }
        text = "\n# ipclab: a private benchmark cluster (durability off on purpose)\n"
        text += "".join(f"{k} = {v}\n" for k, v in conf.items())
        self._write_conf("postgresql.conf", text, append=True)
        self._write_conf("pg_hba.conf", self._hba())

    def _hba(self) -> str:
        """Two roles, each by SCRAM password over loopback TCP; nothing else, no trust."""
        return (
            "# ipclab: SCRAM-SHA-256 passwords over loopback only; nothing is trusted\n"
            "# TYPE  DATABASE  USER  ADDRESS  METHOD\n"
            f"host  {self.database}  {self.user}  127.0.0.1/32  scram-sha-256\n"
            f"host  all  {self.admin}  127.0.0.1/32  scram-sha-256\n"
            "local  all  all  reject\n"
            "host  all  all  all  reject\n"
        )

    def _write_conf(self, name: str, text: str, append: bool = False) -> None:
        """Write a file initdb made in the data directory (keeping its owner and mode),
        never through a symlink."""
        flags = os.O_WRONLY | _NOFOLLOW | (os.O_APPEND if append else os.O_TRUNC)
        with os.fdopen(os.open(self.data_dir / name, flags), "w", encoding="utf-8") as f:
            f.write(text)

    def _provision(self) -> None:
        """The services' role (no superuser, its password's SCRAM verifier only), the
        database (the superuser's; only that role may connect) and the role's own schema,
        first on its search path, where the domain's SQL makes its tables."""
        role, db = self.user, self.database
        self.execute(
            f"CREATE ROLE {role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION "
            f"NOBYPASSRLS PASSWORD '{scram_sha_256(self.secret)}';\n"
            f"CREATE DATABASE {db};\n"
            f"REVOKE ALL ON DATABASE {db} FROM PUBLIC;\n"
            f"GRANT CONNECT ON DATABASE {db} TO {role};\n"
            "REVOKE ALL ON DATABASE postgres FROM PUBLIC;\n",
            database="postgres",
            admin=True,
        )
        self.execute(
            f"CREATE SCHEMA {role} AUTHORIZATION {role};\n"
            "REVOKE ALL ON SCHEMA public FROM PUBLIC;\n"
            f"ALTER ROLE {role} IN DATABASE {db} SET search_path = {role};\n",
            admin=True,
        )

    def _wait_ready(self, timeout: float) -> None:
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while True:
            pidfile = PidFile.read(self.data_dir)
            ready = pidfile is not None and pidfile.status == "ready"
            if ready and port_open(self.host, self.port):
                return
            if self.process.poll() is not None or time.monotonic() > deadline:
                why = "exited" if self.process.poll() is not None else f"not up after {timeout}s"
                raise PostgresUnavailable(f"PostgreSQL server {why}:\n{tail(self.log)}")
            time.sleep(0.05)

    def execute(
        self, sql: str, database: str | None = None, timeout: float = 60.0, admin: bool = False
    ) -> str:
        """Run ``sql`` with ``psql`` (stops at the first error); return its output. As the
        services' role (its tables land in its schema), or the superuser if ``admin``; the
        password goes in psql's environment, never on a command line."""
        user, secret = (self.admin, self.admin_secret) if admin else (self.user, self.secret)
        psql = find_bin_dir() / "psql"
        argv = [str(psql), "-X", "-q", "-w", "-v", "ON_ERROR_STOP=1", "-At"]
        argv += ["-h", self.host, "-p", str(self.port), "-U", user]
        argv += ["-d", database or self.database]
        proc = subprocess.run(
            argv,
            input=sql,
            capture_output=True,
            text=True,
            env={**self._env(), "PGPASSWORD": secret},
            timeout=timeout,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"psql failed ({proc.returncode}): {proc.stderr.strip()}")
        return proc.stdout

    def pids(self) -> list[int]:
        """The server's OS processes (postmaster and children), for sampling and cleanup."""
        if self.process is None:
            return []
        try:
            root = psutil.Process(self.process.pid)
            return [root.pid, *(c.pid for c in root.children(recursive=True))]
        except psutil.NoSuchProcess:
            return []

    def kill(self) -> None:
        """SIGKILL the server (a crash), keep its data directory."""
        if self.process is not None:
            _kill_server(PidFile.read(self.data_dir))
            kill_group(self.process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=5)

    def stop(self, grace: float = STOP_GRACE_S) -> None:
        """Fast shutdown (SIGINT: abort sessions, checkpoint, exit); after ``grace`` seconds,
        SIGKILL the process group; then remove the directory."""
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                log.warning("PostgreSQL on port %s ignored a fast shutdown; killed", self.port)
            kill_group(self.process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=5)
            self.process = None
        if self.directory is not None:
            _discard(self.directory)  # a server left by a kill, its shared memory, the files
            self.directory = None

    def running(self) -> bool:
        return self.process is not None and alive(self.process.pid)

    def __enter__(self) -> PostgresCluster:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
