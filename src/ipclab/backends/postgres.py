"""A private PostgreSQL cluster: own port, own data directory, removed afterwards.

Uses Debian's ``postgresql`` package (the binaries under ``/usr/lib/postgresql/*/bin``,
newest version first; or ``initdb``/``postgres`` on PATH). The cluster never touches a
system cluster: ``initdb`` makes a fresh data directory under ``ROOT`` (one directory per
cluster), the server listens on ``127.0.0.1`` only, on a port the harness allocated, with
its unix socket inside the data directory, and trusts one local role (``ipclab``, owner
of the database ``ipclab``). PostgreSQL refuses to run as root: a root harness runs
``initdb`` and the server as the OS user ``postgres`` (created by the package).

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

    with PostgresCluster() as pg:
        pg.execute("CREATE TABLE t (x int); INSERT INTO t VALUES (1);")
        pg.dsn  # postgresql://ipclab@127.0.0.1:PORT/ipclab
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import json
import logging
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import psutil

from ipclab.procs import alive, free_port, kill_group, port_open, spawn, tail

log = logging.getLogger(__name__)

ROOT = Path(os.environ.get("IPCLAB_POSTGRES_ROOT", Path(tempfile.gettempdir()) / "ipclab-postgres"))
BIN_GLOB = "/usr/lib/postgresql/*/bin"
START_TIMEOUT_S = 30.0
STOP_GRACE_S = 10.0
OS_USER_WHEN_ROOT = "postgres"
PREFIX = "pg-"  # a cluster directory's name starts with it; the sweep looks at nothing else
OWNER_FILE = "owner.json"
UNOWNED_GRACE_S = 60.0  # a directory without an owner file yet: being made, leave it a while
_IPC_RMID = 0

SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
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
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(OS_USER_WHEN_ROOT)
    except KeyError:
        raise PostgresUnavailable(
            "the harness runs as root and PostgreSQL refuses to; the OS user "
            f"{OS_USER_WHEN_ROOT!r} (made by the postgresql package) is missing"
        ) from None
    return OS_USER_WHEN_ROOT


def _me() -> dict[str, float | int]:
    return {"pid": os.getpid(), "started": psutil.Process().create_time()}


def _owner_alive(owner: dict[str, float | int]) -> bool:
    try:
        return abs(psutil.Process(int(owner["pid"])).create_time() - owner["started"]) < 0.01
    except (psutil.NoSuchProcess, KeyError, ValueError, TypeError):
        return False


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
        try:
            lines = (data_dir / "postmaster.pid").read_text().splitlines()
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
        """The postmaster, if it still runs (checked by its command line, not the pid only)."""
        try:
            p = psutil.Process(self.pid)
            return p if self.data_dir in " ".join(p.cmdline()) else None
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return None


def _remove_shm(key: int | None, shm_id: int | None) -> bool:
    """Remove the server's System V segment if it is still there and nobody is attached."""
    if shm_id is None:
        return False
    try:
        rows = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    except OSError:
        return False
    for r in rows:
        cols = r.split()  # key shmid perms size cpid lpid nattch ...
        if int(cols[1]) == shm_id and int(cols[0]) == key and int(cols[6]) == 0:
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            return int(libc.shmctl(shm_id, _IPC_RMID, None)) == 0
    return False


def _kill_server(pidfile: PidFile | None, timeout: float = 5.0) -> bool:
    """SIGKILL a cluster's postmaster and its process group; True if one was running."""
    server = pidfile.server() if pidfile else None
    if server is None:
        return False
    children = server.children(recursive=True)
    kill_group(server.pid, signal.SIGKILL)
    for p in [server, *children]:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()
    psutil.wait_procs([server, *children], timeout=timeout)
    return True


def _discard(directory: Path) -> None:
    """Kill what may run from ``directory``, free its System V segment, remove it."""
    pidfile = PidFile.read(directory / "data")
    _kill_server(pidfile)
    if pidfile is not None:
        _remove_shm(pidfile.shm_key, pidfile.shm_id)
    shutil.rmtree(directory, ignore_errors=True)


def sweep_stale(root: Path = ROOT) -> list[Path]:
    """Remove every cluster directory under ``root`` whose owner is gone (a harness killed
    before it could stop its cluster); returns them, and logs a warning for each."""
    swept: list[Path] = []
    if not root.is_dir():
        return swept
    for d in sorted(root.glob(f"{PREFIX}*")):
        if not d.is_dir():
            continue
        try:
            owner = json.loads((d / OWNER_FILE).read_text())
        except (OSError, ValueError):
            if time.time() - d.stat().st_mtime < UNOWNED_GRACE_S:
                continue
            owner = {}
        if _owner_alive(owner):
            continue
        pidfile = PidFile.read(d / "data")
        if owner.get("detached") and pidfile is not None and pidfile.server() is not None:
            continue  # `up --detach`: it outlives its harness on purpose
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
    user: str = "ipclab"
    database: str = "ipclab"
    directory: Path | None = None
    process: subprocess.Popen[bytes] | None = None
    swept: list[Path] = field(default_factory=list)

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
        return f"postgresql://{self.user}@{self.host}:{self.port}/{self.database}"

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        return {**env, "LC_ALL": "C", "TZ": "UTC"}

    def _make_directory(self, detached: bool) -> Path:
        self.root.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(PermissionError):
            self.root.chmod(0o1777)  # like /tmp: any user's clusters, the server user can enter
        d = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{self.port}-", dir=self.root))
        (d / OWNER_FILE).write_text(json.dumps({**_me(), "detached": detached}))
        d.chmod(0o755)
        return d

    def start(self, timeout: float = START_TIMEOUT_S, detached: bool = False) -> None:
        bins = find_bin_dir()
        user = os_user()
        self.swept = sweep_stale(self.root)
        self.directory = self._make_directory(detached)
        try:
            if user is not None:
                pw = pwd.getpwnam(user)
                os.chown(self.directory, pw.pw_uid, pw.pw_gid)
            self._initdb(bins, user)
            self.process = spawn(
                [str(bins / "postgres"), "-D", str(self.data_dir)],
                self._env(),
                self.log,
                detached=detached,
                user=user,
            )
            self._wait_ready(timeout)
            self.execute(f"CREATE DATABASE {self.database};", database="postgres")
        except BaseException:
            self.stop()
            raise

    def _initdb(self, bins: Path, user: str | None) -> None:
        argv = [
            str(bins / "initdb"),
            *("-D", str(self.data_dir), "-U", self.user, "--auth=trust"),
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
        with open(self.data_dir / "postgresql.conf", "a") as f:
            f.write("\n# ipclab: a private benchmark cluster (durability off on purpose)\n")
            f.writelines(f"{k} = {v}\n" for k, v in conf.items())

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

    def execute(self, sql: str, database: str | None = None, timeout: float = 60.0) -> str:
        """Run ``sql`` with ``psql`` (stops at the first error); return its output."""
        psql = find_bin_dir() / "psql"
        argv = [str(psql), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-At"]
        argv += ["-h", self.host, "-p", str(self.port), "-U", self.user]
        argv += ["-d", database or self.database]
        proc = subprocess.run(
            argv, input=sql, capture_output=True, text=True, env=self._env(), timeout=timeout
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
