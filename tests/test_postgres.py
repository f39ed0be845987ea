"""The private PostgreSQL cluster (backends/postgres.py) and the bundle domain's seed data.

Tests that start a server are marked slow and skipped, naming the package, when the
PostgreSQL binaries are missing.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from ipclab_services.domains.bundle import data

from ipclab.backends import postgres
from ipclab.backends.postgres import PidFile, PostgresCluster, PostgresUnavailable
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
