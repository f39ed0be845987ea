"""PostgreSQL on the docker backend (issue 29): a data-bundle stack comes up with the
database in its own container and volume, filled with the same tables as the local
backend's private cluster, answers a request with the same JSON as on local, and leaves no
container, volume, network or workdir behind."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from ipclab_services.domains.bundle import data

from ipclab.backends import StackOptions, get_backend
from ipclab.backends.docker import execs
from ipclab.backends.docker.backend import DockerBackend, DockerStack
from ipclab.backends.docker.ownership import leftovers, workdirs
from ipclab.backends.local import LocalStack
from ipclab.backends.postgres import PostgresUnavailable, find_bin_dir
from ipclab.infrastructure.postgres import FILES_TARGET
from ipclab.stacks import resolve

STACK = "bundle-rest"
ROWS = 25
OPTIONS = StackOptions(extra_env={"IPCLAB_BUNDLE_ROWS": str(ROWS)})
# every table of the services' schema with its rows, as the services' role sees them
TABLES_SQL = (
    "SELECT table_name FROM information_schema.tables WHERE table_schema = 'ipclab' ORDER BY 1"
)


def _no_local_postgres() -> str | None:
    try:
        find_bin_dir()
    except PostgresUnavailable as e:
        return str(e)
    return None


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.status == 200
        return json.loads(r.read())


def tables_sql() -> str:
    counts = " UNION ALL ".join(f"SELECT '{t}', count(*) FROM {t}" for t in sorted(data.TABLES))
    return f"{TABLES_SQL};\n{counts};\n"


def docker_tables(stack: DockerStack) -> str:
    """The tables and their row counts, read in the database container as the services' role
    (its password from the file the harness mounted there)."""
    sql = tables_sql().replace("'", "'\\''")
    cmd = (
        f"PGPASSWORD=$(cat {FILES_TARGET}/services.pw) psql -X -At -h 127.0.0.1 -U ipclab "
        f"-d ipclab -c '{sql}'"
    )
    done = execs.run(stack.container("database"), ["bash", "-c", cmd], user="")
    assert done.status == 0, done.output
    return done.output


@pytest.fixture(scope="module")
def docker_stack(docker_images: dict[str, str]) -> Iterator[DockerStack]:
    stack = DockerBackend().start(resolve(STACK), OPTIONS)
    try:
        yield stack
    finally:
        stack.stop()


def test_the_database_runs_in_its_own_container_with_a_volume(docker_stack: DockerStack) -> None:
    assert docker_stack.components[0] == "database"
    database = docker_stack.container("database")
    database.reload()
    assert database.status == "running"
    mounts = {m["Type"]: m for m in database.attrs["Mounts"] if m["Destination"] != FILES_TARGET}
    assert mounts["volume"]["Destination"] == "/var/lib/ipclab-postgres"
    assert any(
        docker_stack.project in v for v in leftovers(project=docker_stack.project)["volumes"]
    )
    images = docker_stack.info()["images"]
    assert images["database"]["id"]  # the pinned build, recorded in the manifest


def test_a_request_gets_the_same_json_as_on_local(docker_stack: DockerStack) -> None:
    expected = {t: data.sorted_rows(t, ROWS) for t in data.TABLES}
    on_docker = get_json(f"{docker_stack.gateway_url}/api/Databundle/")
    assert on_docker == expected
    if _no_local_postgres() is not None:
        pytest.skip(f"no local cluster to compare with: {_no_local_postgres()}")
    local = get_backend("local").start(resolve(STACK), OPTIONS)
    try:
        assert isinstance(local, LocalStack) and local.database is not None
        assert get_json(f"{local.gateway_url}/api/Databundle/") == on_docker
        # the same tables with the same rows: the domain's SQL, loaded as the same role
        assert docker_tables(docker_stack) == local.database.execute(tables_sql())
    finally:
        local.stop()


def test_stopping_leaves_no_container_volume_network_or_workdir(
    docker_stack: DockerStack,
) -> None:
    """The module's stack, stopped by its last test (a second start of the same stack would
    cost a stack start for the same check; the fixture's stop afterwards is a no-op)."""
    stack = docker_stack
    project = stack.project
    assert leftovers(project=project)["volumes"]
    stack.stop()
    assert leftovers(project=project) == {"containers": [], "networks": [], "volumes": []}
    assert workdirs(project) == []
