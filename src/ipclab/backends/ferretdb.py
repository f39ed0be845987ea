"""FerretDB, the MongoDB wire protocol over SQLite (or PostgreSQL): built once from its Go
module, run privately.

**Build** (``ferretdb_binary``): the module ``github.com/FerretDB/FerretDB`` at ``VERSION``
comes through the Go module proxy (``go mod download``, checked against the checksum
database as every module is); its source is copied to ``build/ferretdb/<version>/src``,
where ``build/version/version.txt`` gets the version (the module's zip leaves it empty, and
a binary without it refuses to start), and ``go build -trimpath`` with ``CGO_ENABLED=0``
(SQLite is modernc's pure Go) makes ``build/ferretdb/<version>/ferretdb``: built once, kept
while the version is (a few minutes of CPU). The module's ``h1:`` sum is kept beside it and
recorded with the version (``versions``).

**Run** (``FerretServer``): in a private store directory (``ipclab.backends.storedir``),
listening on ``127.0.0.1`` only, on a port the harness chose; the debug HTTP listener
(127.0.0.1:8088 by default) is off (``--debug-addr=-``), telemetry is off
(``--telemetry=disable``, and ``DO_NOT_TRACK``) and no OpenTelemetry endpoint is set, so it
opens no outbound connection. Its state file and, on SQLite, its databases live in the
store directory. Authentication is FerretDB's own (``--test-enable-new-auth``): one user,
``ipclab``, with a password generated at every start, created at the backend's setup
(``--setup-*``, the password in the server's environment, never on its command line), in
the database ``ipclab``; a client without it, or with another, is refused.

On PostgreSQL (``handler="pg"``) FerretDB keeps its data in a private PostgreSQL cluster of
its own (``ipclab.backends.postgres.PostgresCluster``: loopback, generated passwords),
connecting as the cluster's services' role, which may create schemas in its database.

**Lookups by _id** (``index_ids``): FerretDB 1.24 hands a ``find`` whose filter is one
``_id`` to SQLite only when that ``_id`` is a string or an ObjectId (a number: every document
of the collection is read and decoded in Go until one matches, so a lookup's cost grows with
the document's place), and then filters on ``_ferretdb_sjson->'$._id'``, an expression its
own ``_id_`` index (on ``_ferretdb_sjson->"_id"``) does not match: SQLite scans the table.
So the shop's documents have string ``_id``s, and after seeding ``index_ids`` gives each
collection's table an index on exactly that expression: a lookup is then an index search,
flat in the collection's size. On PostgreSQL FerretDB filters with ``@>``, which no index
serves (a sequential scan in PostgreSQL's C, flat over the shop's 1000 documents but
growing with a collection); ``index_ids`` leaves it as it is.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ipclab import buildlock, gobuild
from ipclab.backends import mongowire, storedir
from ipclab.paths import REPO_ROOT
from ipclab.procs import free_port, kill_group, port_open, spawn, stop_group, tail

MODULE = "github.com/FerretDB/FerretDB"
VERSION = "v1.24.2"
BUILD_DIR = Path(os.environ.get("IPCLAB_FERRETDB_BUILD_DIR", REPO_ROOT / "build" / "ferretdb"))
BUILD_ENV = {"CGO_ENABLED": "0", "GOFLAGS": "-buildvcs=false -mod=readonly"}
KIND = "ferretdb"
USER, DATABASE = "ipclab", "ipclab"
HANDLERS = ("sqlite", "pg")
#: what FerretDB 1.24's SQLite backend filters on for a string ``_id`` (``metadata.IDColumn``)
SQLITE_ID = "_ferretdb_sjson->'$._id'"
SQLITE_COLLECTIONS = "_ferretdb_collections"  # its table of collections and their tables
ID_INDEX = "ipclab_id"  # the suffix of the index ``index_ids`` adds to a collection's table
START_TIMEOUT_S = 30.0


class FerretUnavailable(RuntimeError):
    """FerretDB cannot be built or started here."""


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        raise FerretUnavailable(
            "FerretDB is built from its Go module and needs the Go toolchain (`go`) on PATH"
        )
    return go


def _download(go: str) -> dict[str, Any]:
    """The module's source in the module cache (``Dir``) and its checksum (``Sum``)."""
    res = subprocess.run(
        [go, "mod", "download", "-json", f"{MODULE}@{VERSION}"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    try:
        info = json.loads(res.stdout)
    except ValueError:
        info = {}
    if res.returncode != 0 or not info.get("Dir") or info.get("Error"):
        why = info.get("Error") or res.stderr.strip()
        raise FerretUnavailable(f"go mod download {MODULE}@{VERSION} failed: {why}")
    return info


def binary_path() -> Path:
    return BUILD_DIR / VERSION / "ferretdb"


def module_sum() -> str:
    """The built module's ``h1:`` checksum ("" before the build)."""
    with contextlib.suppress(OSError):
        return (BUILD_DIR / VERSION / "module.sum").read_text().strip()
    return ""


def ferretdb_binary() -> Path:
    """The FerretDB binary of ``VERSION``, built first when missing."""
    out = binary_path()
    if out.exists():
        return out
    go = _go()
    with buildlock.held(BUILD_DIR):  # another harness may be building it: once is enough
        if not out.exists():
            _build(go, out)
    return out


def _build(go: str, out: Path) -> None:
    """The build of :func:`ferretdb_binary`: the module's source copied, ``go build``."""
    info = _download(go)
    src = out.parent / "src"
    shutil.rmtree(src, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(info["Dir"], src)  # the module cache's copy is read-only
    for path in [src, *src.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | 0o200)
    (src / "build" / "version" / "version.txt").write_text(VERSION + "\n")
    (src / "build" / "version" / "package.txt").write_text("ipclab\n")
    print(f"building FerretDB {VERSION}: go build -> {out}", file=sys.stderr, flush=True)
    if (
        error := gobuild.build(go, ["-trimpath", "./cmd/ferretdb"], src, out, BUILD_ENV)
    ) is not None:
        raise FerretUnavailable(f"go build of FerretDB failed:\n{error}")
    (out.parent / "module.sum").write_text(str(info.get("Sum", "")) + "\n")
    shutil.rmtree(src, ignore_errors=True)


def unavailable() -> str | None:
    """Why FerretDB cannot run here (None when built, or buildable: ``go`` is on PATH)."""
    if binary_path().exists():
        return None
    try:
        _go()
    except FerretUnavailable as e:
        return str(e)
    return None


def versions() -> dict[str, str]:
    """What a run records of it: FerretDB's version and module checksum."""
    return {"ferretdb": VERSION, "ferretdb_module_sum": module_sum()}


def _env(extra: dict[str, str]) -> dict[str, str]:
    """The harness's environment without any FERRETDB_* setting (nothing overrides the
    flags), telemetry refused, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FERRETDB_")}
    return {**env, "DO_NOT_TRACK": "1", **extra}


@dataclass
class FerretServer:
    """A private FerretDB: ``start()``, ``url``, ``stop()`` (the directory removed)."""

    port: int = field(default_factory=free_port)
    handler: str = "sqlite"
    host: str = "127.0.0.1"
    mark: dict[str, str] = field(default_factory=dict)  # the harness's ownership mark
    directory: Path | None = None
    process: subprocess.Popen[bytes] | None = None
    secret: str = field(default="", repr=False)
    postgres: Any = None  # handler "pg": its PostgresCluster

    @property
    def url(self) -> str:
        """The services' URL: the user, its password, loopback, the database."""
        return (
            f"mongodb://{USER}:{self.secret}@{self.host}:{self.port}/{DATABASE}"
            f"?authSource={DATABASE}&authMechanism=SCRAM-SHA-256&directConnection=true"
        )

    @property
    def log(self) -> Path:
        assert self.directory is not None, "not started"
        return self.directory / "ferretdb.log"

    def argv(self, binary: Path) -> list[str]:
        assert self.directory is not None
        argv = [
            str(binary),
            f"--listen-addr={self.host}:{self.port}",
            "--listen-unix=",
            "--debug-addr=-",
            "--telemetry=disable",
            f"--state-dir={self.directory / 'state'}",
            "--test-enable-new-auth",
            f"--setup-database={DATABASE}",
            f"--setup-username={USER}",
            "--log-level=warn",
        ]
        if self.handler == "sqlite":
            return [*argv, "--handler=sqlite", f"--sqlite-url=file:{self.directory}/data/"]
        return [*argv, "--handler=postgresql", f"--postgresql-url={self.postgres.dsn}"]

    def start(self, detached: bool = False, timeout: float = START_TIMEOUT_S) -> None:
        if self.handler not in HANDLERS:
            raise ValueError(f"FerretDB handler {self.handler!r}: one of {', '.join(HANDLERS)}")
        binary = ferretdb_binary()
        self.directory = storedir.make(KIND, self.port, None, detached)
        self.secret = secrets.token_urlsafe(32)
        try:
            (self.directory / "state").mkdir(mode=0o700)
            if self.handler == "pg":
                self._start_postgres(detached)
            env = _env({**self.mark, "FERRETDB_SETUP_PASSWORD": self.secret})
            self.process = spawn(self.argv(binary), env, self.log, detached=detached)
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise

    def _start_postgres(self, detached: bool) -> None:
        from ipclab.backends.postgres import PostgresCluster

        self.postgres = PostgresCluster()
        self.postgres.start(detached=detached)
        role, db = self.postgres.user, self.postgres.database
        self.postgres.execute(f"GRANT CREATE ON DATABASE {db} TO {role};", admin=True)

    def _wait_ready(self, timeout: float) -> None:
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while not self.answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                why = "exited" if self.process.poll() is not None else f"not up after {timeout}s"
                raise FerretUnavailable(f"FerretDB {why}:\n{tail(self.log)}")
            time.sleep(0.05)

    def answers(self) -> bool:
        """It listens and its user logs in (the setup made it) and pings."""
        if not port_open(self.host, self.port):
            return False
        try:
            mongowire.ping(self.host, self.port, USER, self.secret, DATABASE)
        except (OSError, mongowire.CommandError):
            return False
        return True

    def index_ids(self) -> list[str]:
        """SQLite: index every collection's table of the database on ``SQLITE_ID`` (what a
        lookup by a string ``_id`` filters on; FerretDB's own ``_id_`` index is on another
        expression), so that lookup is a search, not a scan; the tables indexed. Nothing on
        PostgreSQL. Run after seeding (a collection made later is not indexed)."""
        if self.handler != "sqlite":
            return []
        assert self.directory is not None, "not started"
        path = self.directory / "data" / f"{DATABASE}.sqlite"
        if sqlite3.sqlite_version_info < (3, 38):  # the -> operator
            raise FerretUnavailable(
                f"indexing {path} needs SQLite 3.38, not {sqlite3.sqlite_version}"
            )
        db = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=30)
        try:
            tables = [t for (t,) in db.execute(f'SELECT table_name FROM "{SQLITE_COLLECTIONS}"')]
            for table in tables:
                db.execute(
                    f'CREATE INDEX IF NOT EXISTS "{table}_{ID_INDEX}" ON "{table}" ({SQLITE_ID})'
                )
            db.commit()
        finally:
            db.close()
        return tables

    def kill(self) -> None:
        """SIGKILL the server (a crash); its data stays."""
        if self.process is not None:
            kill_group(self.process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=5)

    def stop(self) -> None:
        if self.process is not None:
            stop_group(self.process, grace=5)
            self.process = None
        if self.postgres is not None:
            self.postgres.stop()
            self.postgres = None
        storedir.remove(self.directory, KIND)
        self.directory = None

    def __enter__(self) -> FerretServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
