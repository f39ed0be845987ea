"""The private PostgreSQL cluster (backends/postgres.py) and the bundle domain's seed data.

Tests that start a server are marked slow and skipped, naming the package, when the
PostgreSQL binaries are missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from ipclab_services.domains.bundle import data

from ipclab.backends import postgres
from ipclab.backends.postgres import PidFile, PostgresCluster, PostgresUnavailable, UnsafeState
from ipclab.procs import port_open
from tests.conftest import ipclab_processes

HARNESS = """
import json, sys, time
from pathlib import Path
from ipclab.backends.postgres import PostgresCluster
pg = PostgresCluster(root=Path(sys.argv[1]))
pg.start()
print(json.dumps({"port": pg.port, "dir": str(pg.directory), "pids": pg.pids()}), flush=True)
time.sleep(600)
"""


def _binaries() -> None:
    try:
        postgres.find_bin_dir()
    except PostgresUnavailable as e:
        pytest.skip(f"PostgreSQL binaries missing (apt-get install postgresql): {e}")


@pytest.fixture
def root() -> Iterator[Path]:
    """A cluster root of this test's own (the server user can enter it; the global sweep,
    which looks at ``pg-*`` only, leaves it alone)."""
    _binaries()
    r = postgres.ROOT / f"test-{uuid.uuid4().hex[:8]}"
    yield r
    for d in r.glob("pg-*"):
        postgres._discard(d)
    shutil.rmtree(r, ignore_errors=True)


def _gone(pids: list[int], port: int, shm_id: int | None) -> list[str]:
    left = [f"pid {p}" for p in pids if psutil.pid_exists(p) and _not_zombie(p)]
    if port_open("127.0.0.1", port):
        left.append(f"port {port}")
    if shm_id is not None and _shm_exists(shm_id):
        left.append(f"shm {shm_id}")
    return left


def _not_zombie(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _shm_exists(shm_id: int) -> bool:
    rows = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    return any(int(r.split()[1]) == shm_id for r in rows)


# --- the data (no server) ---------------------------------------------------------------
def test_bundle_data_is_deterministic_fixed_width_and_prefix_closed() -> None:
    b50 = data.bundle(50)
    assert list(b50) == ["person", "animal", "car", "building"]
    assert b50 == data.bundle(50)
    assert data.bundle(25) == {t: r[:25] for t, r in b50.items()}
    assert data.bundle(50, seed=1) != b50
    for table, rows in b50.items():
        assert len(rows) == 50
        assert all(list(r) == list(data.TABLES[table]) for r in rows)
        assert all(len(v) == data.WIDTH and v.isalnum() for r in rows for v in r.values())
    assert [r["id"] for r in b50["person"][:2]] == ["000001", "000002"]


def test_seed_sql_inserts_every_row() -> None:
    sql = data.seed_sql(7)
    assert sql.count("CREATE TABLE") == 4 and sql.count("CHAR(6)") == 8
    for table in data.TABLES:
        for r in data.rows(table, 7):
            assert "('{}', '{}')".format(*r.values()) in sql
    assert "INSERT" not in data.seed_sql(0)


def test_missing_binaries_name_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(postgres, "BIN_GLOB", "/nonexistent/postgresql/*/bin")
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(PostgresUnavailable, match=r"apt-get install postgresql"):
        postgres.find_bin_dir()
    with pytest.raises(PostgresUnavailable, match=r"apt-get install postgresql"):
        PostgresCluster(root=Path("/nonexistent/root")).start()


# --- a real server --------------------------------------------------------------------
@pytest.mark.slow
def test_start_seed_query_stop_leaves_nothing(root: Path) -> None:
    asyncpg = pytest.importorskip("asyncpg")
    pg = PostgresCluster(root=root)
    with pg:
        assert pg.directory is not None and pg.directory.parent == root
        directory, port, pids = pg.directory, pg.port, pg.pids()
        pidfile = PidFile.read(pg.data_dir)
        assert pidfile is not None and pidfile.status == "ready"
        assert len(pids) >= 3  # postmaster, checkpointer, writers...
        seen = {p.pid for p in ipclab_processes()}  # the leak check sees them (short-lived
        # helpers that exited in between are left out)
        assert seen >= {pid for pid in pids if psutil.pid_exists(pid)} and pids[0] in seen
        assert (pg.data_dir / f".s.PGSQL.{port}").is_socket()  # the socket is in the data dir
        assert pg.execute("SHOW listen_addresses; SHOW fsync").split() == ["127.0.0.1", "off"]
        pg.execute(data.seed_sql(25) + "ANALYZE;")

        async def query() -> dict[str, list[dict[str, str]]]:
            conn = await asyncpg.connect(pg.dsn)
            try:
                return {
                    t: [dict(r) for r in await conn.fetch(data.select_sql(t))] for t in data.TABLES
                }
            finally:
                await conn.close()

        got = asyncio.run(query())
        assert got == {t: data.sorted_rows(t, 25) for t in data.TABLES}
    assert not directory.exists()
    assert pg.process is None and pg.directory is None
    assert _gone(pids, port, pidfile.shm_id) == []


@pytest.mark.slow
def test_kill_9_of_the_harness_leaves_nothing_running_and_the_next_start_sweeps(
    root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    harness = subprocess.Popen(
        [sys.executable, "-c", HARNESS, str(root)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert harness.stdout is not None
        started = json.loads(harness.stdout.readline())
    finally:
        harness.kill()  # SIGKILL: no atexit, no finally, no stop()
        harness.wait()
    directory = Path(started["dir"])
    pidfile = PidFile.read(directory / "data")
    assert pidfile is not None and pidfile.pid in started["pids"]

    # the parent-death signal kills the postmaster; its children follow it
    deadline = time.monotonic() + 10
    while (left := _gone(started["pids"], started["port"], None)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert left == [], f"still there 10 s after kill -9 of the harness: {left}"
    assert ipclab_processes() == []

    # what a dead harness cannot remove: its directory and System V segment; the next
    # start sweeps them and says so
    assert directory.is_dir()
    caplog.set_level(logging.WARNING, logger="ipclab.backends.postgres")
    with PostgresCluster(root=root) as pg:
        assert pg.swept == [directory]
        assert any(
            "swept a stale PostgreSQL cluster" in r.message and str(directory) in r.message
            for r in caplog.records
        )
    assert not directory.exists()
    assert _gone([], started["port"], pidfile.shm_id) == []
    assert list(root.glob("pg-*")) == []


@pytest.mark.slow
def test_sweep_kills_a_server_its_dead_owner_left_running(root: Path) -> None:
    """A cluster started detached (no parent-death signal) whose owner is gone: the sweep
    kills it too unless it was meant to outlive its harness (``detached``)."""
    pg = PostgresCluster(root=root)
    pg.start()
    assert pg.directory is not None
    directory, pids, port = pg.directory, pg.pids(), pg.port
    owner = directory / postgres.OWNER_FILE
    owner.write_text(json.dumps({"pid": 2**22 + 1, "started": 0.0, "detached": False}))
    try:
        assert postgres.sweep_stale(root) == [directory]
        assert not directory.exists()
        assert _gone(pids, port, None) == []
    finally:
        pg.stop()


@pytest.mark.slow
def test_the_sweep_spares_a_live_owner_and_a_detached_server(root: Path) -> None:
    with PostgresCluster(root=root) as pg:
        assert postgres.sweep_stale(root) == []  # its owner (this process) is alive
        assert pg.directory is not None
        (pg.directory / postgres.OWNER_FILE).write_text(
            json.dumps({"pid": 2**22 + 1, "started": 0.0, "detached": True})
        )
        assert postgres.sweep_stale(root) == []  # detached and its server runs
        assert pg.running()


# --- authentication: no trust, a non-superuser role for the services (issue 28) ----------
def _psql(
    pg: PostgresCluster, user: str, database: str, password: str | None, host: str = ""
) -> subprocess.CompletedProcess[str]:
    """``SELECT current_user`` by psql, never prompting; ``password`` None: none given."""
    argv = [str(postgres.find_bin_dir() / "psql"), "-X", "-w", "-At", "-c", "SELECT current_user"]
    argv += ["-h", host or pg.host, "-p", str(pg.port), "-U", user, "-d", database]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    if password is not None:
        env["PGPASSWORD"] = password
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=30)


@pytest.fixture(scope="module")
def cluster() -> Iterator[PostgresCluster]:
    """One cluster for the authentication tests, seeded with the bundle tables by the
    harness's own path (``execute``, as the services' role)."""
    _binaries()
    r = postgres.ROOT / f"test-auth-{uuid.uuid4().hex[:8]}"
    pg = PostgresCluster(root=r)
    try:
        pg.start()
        pg.execute(data.seed_sql(5) + "ANALYZE;")
        yield pg
    finally:
        pg.stop()
        shutil.rmtree(r, ignore_errors=True)


@pytest.mark.slow
def test_a_connection_without_the_secret_is_refused(cluster: PostgresCluster) -> None:
    pg = cluster
    for user, db in ((pg.user, pg.database), (pg.admin, "postgres")):
        none = _psql(pg, user, db, None)
        assert none.returncode == 2 and "no password supplied" in none.stderr, none
        wrong = _psql(pg, user, db, "not-the-secret")
        assert wrong.returncode == 2, wrong
        assert f'password authentication failed for user "{user}"' in wrong.stderr
        empty = _psql(pg, user, db, "")
        assert empty.returncode == 2, empty
    # the unix socket (in the data directory) admits no one, not even with the secret
    sock = _psql(pg, pg.user, pg.database, pg.secret, host=str(pg.data_dir))
    assert sock.returncode == 2 and "pg_hba.conf rejects connection" in sock.stderr, sock
    # nor any role but the two, nor the services' role to another database
    for user, db in (("postgres", "postgres"), (OS_USER, "postgres"), (pg.user, "postgres")):
        other = _psql(pg, user, db, pg.secret)
        assert other.returncode == 2 and "pg_hba.conf rejects connection" in other.stderr
    # with the secret: in (the control)
    ok = _psql(pg, pg.user, pg.database, pg.secret)
    assert ok.returncode == 0 and ok.stdout.strip() == pg.user, ok
    asyncpg = pytest.importorskip("asyncpg")
    no_secret = pg.dsn.replace(f":{pg.secret}@", "@")
    with pytest.raises(asyncpg.PostgresError, match="password"):
        asyncio.run(asyncpg.connect(no_secret, timeout=10))


@pytest.mark.slow
def test_pg_hba_has_no_trust_line_and_the_secrets_are_files_private_to_the_cluster(
    cluster: PostgresCluster,
) -> None:
    pg = cluster
    assert pg.directory is not None
    hba = [ln.split() for ln in (pg.data_dir / "pg_hba.conf").read_text().splitlines()]
    rules = [r for r in hba if r and not r[0].startswith("#")]
    assert rules and not any("trust" in r for r in rules)
    assert {r[-1] for r in rules} == {"scram-sha-256", "reject"}
    assert all(r[3] == "127.0.0.1/32" for r in rules if r[-1] == "scram-sha-256")
    assert pg.execute("SHOW password_encryption").strip() == "scram-sha-256"
    for name, secret in ((postgres.SERVICES_SECRET, pg.secret), (postgres.SUPERUSER_SECRET, "")):
        st = (pg.directory / name).lstat()
        assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600, name
        assert len((pg.directory / name).read_text().strip()) >= 40  # 32 random bytes
        if secret:
            assert (pg.directory / name).read_text().strip() == secret
    assert pg.secret != pg.admin_secret and f":{pg.secret}@" in pg.dsn
    assert pg.secret not in repr(pg) and pg.admin_secret not in repr(pg)
    for d in (pg.root, pg.directory, pg.data_dir):
        assert not d.lstat().st_mode & 0o022, d  # no one else writes there
    assert stat.S_IMODE(pg.data_dir.lstat().st_mode) == 0o700
    assert pg.secret not in pg.log.read_text()  # the server got the verifier, not the password


@pytest.mark.slow
def test_the_services_role_is_no_superuser_and_cannot_copy_to_program(
    cluster: PostgresCluster, tmp_path: Path
) -> None:
    asyncpg = pytest.importorskip("asyncpg")
    marker = tmp_path / "copied-to-program"

    async def probe() -> dict[str, Any]:
        conn = await asyncpg.connect(cluster.dsn, timeout=10)  # the services' own URL
        out: dict[str, Any] = {}
        try:
            out["role"] = dict(
                await conn.fetchrow(
                    "SELECT rolname, rolsuper, rolcreaterole, rolcreatedb, rolreplication, "
                    "rolbypassrls FROM pg_roles WHERE rolname = current_user"
                )
            )
            out["tables"] = await conn.fetch(
                "SELECT schemaname, tableowner FROM pg_tables WHERE tablename = 'person'"
            )
            out["db_owner"] = await conn.fetchval(
                "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = current_database()"
            )
            for what, sql in (
                ("copy", f"COPY (SELECT 1) TO PROGRAM 'touch {marker}'"),
                ("copy_from", "COPY person FROM PROGRAM 'id'"),
                ("read_file", "SELECT pg_read_file('/etc/hostname')"),
                ("superuser", f"ALTER ROLE {cluster.user} SUPERUSER"),
                ("create_role", "CREATE ROLE someone LOGIN"),
                ("public_schema", "CREATE TABLE public.t (x int)"),
            ):
                try:
                    await conn.execute(sql)
                    out[what] = "allowed"
                except asyncpg.PostgresError as e:
                    out[what] = f"{type(e).__name__}: {e}"
        finally:
            await conn.close()
        return out

    got = asyncio.run(probe())
    assert got["role"] == {
        "rolname": cluster.user,
        "rolsuper": False,
        "rolcreaterole": False,
        "rolcreatedb": False,
        "rolreplication": False,
        "rolbypassrls": False,
    }
    assert "InsufficientPrivilege" in got["copy"] and "external program" in got["copy"]
    assert "InsufficientPrivilege" in got["copy_from"]
    assert not marker.exists()
    for what in ("read_file", "superuser", "create_role", "public_schema"):
        assert "InsufficientPrivilege" in got[what], (what, got[what])
    # it owns its tables, in its own schema; the database is the bootstrap superuser's
    assert [tuple(r) for r in got["tables"]] == [(cluster.user, cluster.user)]
    assert got["db_owner"] == cluster.admin


# --- the sweep: a private root, exact matching, no symlink followed (issue 28) -----------
def _server_user() -> str:
    """The clusters' OS user's name (this user's unless the harness is root)."""
    with contextlib.suppress(PostgresUnavailable):
        return postgres.os_user() or pwd.getpwuid(os.getuid()).pw_name
    return pwd.getpwuid(os.getuid()).pw_name


OS_USER = _server_user()
TWO_HOURS_AGO = time.time() - 7200


def _bystander(argv: list[str], cwd: Path | None = None) -> subprocess.Popen[bytes]:
    """A live process that is no cluster's server, run as the clusters' OS user (the
    ``postgres`` user when the harness is root), so that only exact matching spares it."""
    return subprocess.Popen(
        argv, cwd=cwd, user=postgres.os_user(), start_new_session=True, stdin=subprocess.DEVNULL
    )


def _mimic(data_dir: str, cwd: Path) -> subprocess.Popen[bytes]:
    """A shell (which stays, waiting for its sleep) whose command line has ``-D data_dir``."""
    return _bystander(["sh", "-c", "sleep 600; exit 0", "sh", "-D", data_dir], cwd=cwd)


def _plant(d: Path, pid: int, data_line: str, owner: dict[str, Any] | None = None) -> None:
    """A cluster directory as a dead harness would leave it (or an attacker would make it):
    ``data/postmaster.pid`` naming ``pid`` with ``data_line``, mtime two hours back."""
    (d / "data").mkdir(parents=True, mode=0o700)
    (d / "data" / "postmaster.pid").write_text(
        f"{pid}\n{data_line}\n{int(TWO_HOURS_AGO)}\n5432\n/tmp\n127.0.0.1\n  1234  5678\nready\n"
    )
    if owner is not None:
        (d / postgres.OWNER_FILE).write_text(json.dumps(owner))
    os.utime(d, (TWO_HOURS_AGO, TWO_HOURS_AGO))


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory outside the sweep root the clusters' OS user can enter (a bystander's
    working directory, a symlink's target)."""
    d = Path(tempfile.mkdtemp(prefix="ipclab-test-outside-"))
    d.chmod(0o755)
    pw = pwd.getpwnam(OS_USER)
    os.chown(d, pw.pw_uid, pw.pw_gid, follow_symlinks=False)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _stop(*procs: subprocess.Popen[bytes]) -> None:
    for p in procs:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=10)


def test_the_default_sweep_root_is_per_user_and_private(tmp_path: Path) -> None:
    if "IPCLAB_POSTGRES_ROOT" not in os.environ:
        assert postgres.ROOT.name == f"ipclab-postgres-{os.getuid()}"
    made = postgres._cluster_root(tmp_path / "new-root", postgres.os_user())
    st = made.lstat()
    assert st.st_uid == os.getuid() and not st.st_mode & 0o066  # nobody else lists or writes
    expected = 0o711 if postgres.os_user() else 0o700  # root: postgres passes through
    assert stat.S_IMODE(st.st_mode) == expected
    real = postgres._cluster_root(postgres.ROOT, postgres.os_user())  # the one `up` uses
    assert real.lstat().st_uid == os.getuid() and not real.lstat().st_mode & 0o066
    if os.geteuid() == 0:  # another local user can neither plant nor list there
        for argv in (["mkdir", str(real / "pg-2-planted")], ["ls", str(real)]):
            other = subprocess.run(argv, user="nobody", capture_output=True, text=True)
            assert other.returncode != 0 and "Permission denied" in other.stderr, other


def test_a_sweep_root_others_can_write_or_own_is_refused(
    tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    victim = _bystander(["sleep", "600"])
    try:
        world = tmp_path / "world"
        world.mkdir()
        world.chmod(0o1777)  # as the old shared root was
        _plant(world / "pg-2-planted", victim.pid, "")
        link = tmp_path / "link"
        link.symlink_to(outside)
        refused = [world, link]
        if os.geteuid() == 0:  # a root harness and a root owned by someone else
            other = tmp_path / "other"
            other.mkdir(mode=0o755)
            os.chown(other, pwd.getpwnam("nobody").pw_uid, -1)
            refused.append(other)
        for r in refused:
            with pytest.raises(UnsafeState, match=r"IPCLAB_POSTGRES_ROOT") as e:
                postgres.sweep_stale(r)
            assert f"uid {os.getuid()}" in str(e.value)
        assert (world / "pg-2-planted").is_dir()  # nothing in a refused root is touched
        assert victim.poll() is None
        # `ipclab up` of a PostgreSQL stack says so and starts nothing
        _binaries()
        monkeypatch.setenv("IPCLAB_POSTGRES_ROOT", str(world))
        monkeypatch.setenv("IPCLAB_STATE_DIR", str(tmp_path / "state"))
        up = subprocess.run(
            [sys.executable, "-m", "ipclab.cli", "up", "bundle-rest", "--detach"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert up.returncode != 0 and "will not trust the PostgreSQL clusters" in up.stderr, up
        assert victim.poll() is None
    finally:
        _stop(victim)


def test_pidfile_server_matches_only_the_exact_data_directory(outside: Path) -> None:
    data_dir = outside / "data"
    data_dir.mkdir()
    pw = pwd.getpwnam(OS_USER)
    os.chown(data_dir, pw.pw_uid, pw.pw_gid)
    exact = _mimic(str(data_dir), cwd=data_dir)  # -D <dir> and in it: as a postmaster is
    elsewhere = _mimic(str(data_dir), cwd=outside)  # -D <dir>, working elsewhere
    as_arg = _bystander(["sh", "-c", "sleep 600; exit 0", "sh", str(data_dir)], cwd=data_dir)
    try:
        time.sleep(0.3)
        pid = exact.pid
        assert PidFile(pid, str(data_dir), None, None, "ready").server() is not None
        for line in ("", "data", str(outside), f"{data_dir}/", str(data_dir)[:-1], "/"):
            assert PidFile(pid, line, None, None, "ready").server() is None, line
        for p in (elsewhere, as_arg):
            assert PidFile(p.pid, str(data_dir), None, None, "ready").server() is None
        if os.geteuid() == 0:  # the same command line run by another user than the server's
            root_mimic = subprocess.Popen(
                ["sh", "-c", "sleep 600; exit 0", "sh", "-D", str(data_dir)],
                cwd=data_dir,
                start_new_session=True,
            )
            try:
                time.sleep(0.3)
                assert PidFile(root_mimic.pid, str(data_dir), None, None, "").server() is None
            finally:
                _stop(root_mimic)
        assert all(p.poll() is None for p in (exact, elsewhere, as_arg))
    finally:
        _stop(exact, elsewhere, as_arg)


@pytest.mark.slow
def test_a_planted_cluster_directory_naming_a_live_process_survives_ipclab_up(
    tmp_path: Path, outside: Path
) -> None:
    """The issue's attack: under the sweep root `ipclab up` uses, directories whose
    ``postmaster.pid`` names a live process (empty data-directory line, a foreign one whose
    process looks like a postmaster there, its own with the path as a mere argument or with
    ``-D`` but working elsewhere), no owner, mtime two hours back. `ipclab up bundle-rest`
    sweeps them and kills none."""
    _binaries()
    root = postgres._cluster_root(postgres.ROOT, postgres.os_user())
    tag = uuid.uuid4().hex[:8]
    planted = {k: root / f"pg-2-planted-{tag}-{k}" for k in ("empty", "foreign", "arg", "cwd")}
    (outside / "data").mkdir()
    pw = pwd.getpwnam(OS_USER)
    os.chown(outside / "data", pw.pw_uid, pw.pw_gid)
    procs = {
        "empty": _bystander(["sleep", "600"]),
        "foreign": _mimic(str(outside / "data"), cwd=outside / "data"),
        "arg": _bystander(["sh", "-c", "sleep 600; exit 0", "sh", str(planted["arg"] / "data")]),
        "cwd": _mimic(str(planted["cwd"] / "data"), cwd=outside),
    }
    lines = {
        "empty": "",
        "foreign": str(outside / "data"),
        "arg": str(planted["arg"] / "data"),
        "cwd": str(planted["cwd"] / "data"),
    }
    env = {**os.environ, "IPCLAB_STATE_DIR": str(tmp_path / "state")}
    try:
        for k, d in planted.items():
            _plant(d, procs[k].pid, lines[k])
        up = subprocess.run(
            [sys.executable, "-m", "ipclab.cli", "up", "bundle-rest", "--detach"],
            capture_output=True,
            text=True,
            timeout=180,
            env=env,
        )
        assert up.returncode == 0, up.stderr
        alive = {k: p.poll() is None for k, p in procs.items()}
        assert alive == dict.fromkeys(procs, True), up.stderr
        assert "was killed" not in up.stderr
        gateway = up.stdout.splitlines()[0]
        with urllib.request.urlopen(f"{gateway}/api/person/", timeout=10) as r:
            assert r.status == 200  # the stack itself, on its non-superuser role, answers
    finally:
        down = subprocess.run(
            [sys.executable, "-m", "ipclab.cli", "down", "bundle-rest"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        _stop(*procs.values())
        for d in planted.values():
            shutil.rmtree(d, ignore_errors=True)
    assert down.returncode == 0 and "stopped" in down.stdout, down.stderr


def test_the_sweep_follows_no_symlink(root: Path, outside: Path) -> None:
    """A planted ``pg-*`` symlink to a directory elsewhere, and a real ``pg-*`` directory
    whose ``data`` is a symlink, each naming (through the link) a process that looks like
    that directory's postmaster: the sweep follows neither, kills nothing, removes nothing
    outside the root."""
    root = postgres._cluster_root(root, postgres.os_user())
    pw = pwd.getpwnam(OS_USER)
    link, via_data = root / "pg-9-link", root / "pg-8-datalink"
    for target in (outside / "a", outside / "b"):
        (target / "data").mkdir(parents=True)
        os.chown(target / "data", pw.pw_uid, pw.pw_gid)
    link.symlink_to(outside / "a")
    via_data.mkdir()
    (via_data / "data").symlink_to(outside / "b" / "data")
    procs = [
        _mimic(str(link / "data"), cwd=outside / "a" / "data"),
        _mimic(str(via_data / "data"), cwd=outside / "b" / "data"),
    ]
    try:
        for target, d, p in ((outside / "a", link, procs[0]), (outside / "b", via_data, procs[1])):
            (target / "data" / "postmaster.pid").write_text(f"{p.pid}\n{d / 'data'}\n0\n")
            os.utime(target, (TWO_HOURS_AGO, TWO_HOURS_AGO))
            os.utime(d, (TWO_HOURS_AGO, TWO_HOURS_AGO), follow_symlinks=False)
        time.sleep(0.3)
        swept = postgres.sweep_stale(root)
        assert swept == [via_data]  # a real stale directory of ours: removed, link and all
        assert all(p.poll() is None for p in procs)
        assert link.is_symlink() and (outside / "a" / "data" / "postmaster.pid").is_file()
        assert (outside / "b" / "data" / "postmaster.pid").is_file()
    finally:
        _stop(*procs)
        link.unlink(missing_ok=True)
