"""PostgreSQL, the SQL database of the stacks that declare one (the data-bundle stacks): a
private cluster on the local backend (``ipclab.backends.postgres``), and on docker the
``database`` service of the stack's compose project: its own container (the image
``ipclab-postgres``, Debian's postgresql package, ``compose/postgres/``) and its own volume
(removed with the project).

The docker cluster is made as the local one: the bootstrap superuser ``ipclab_admin`` and
the services' role ``ipclab`` (no superuser; its password given to the server only as a
SCRAM verifier), each with a random password; the database ``ipclab`` and the role's own
schema, filled by the domain's SQL for the run's knobs, run as that role: the same tables.
The server listens on the project network only (its port is not published), admits the
services' role from its own subnet (``samenet``) by SCRAM password and nothing else. The
container's first boot loads the data before it serves, so its health check (the port
answers) means the tables are there; the services wait for it.
"""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ipclab.backends import postgres as cluster_module
from ipclab.backends.docker.compose import (
    COMPOSE_DIR,
    DELAY_CAPABILITIES,
    PROJECT_LABELS,
    extends,
)
from ipclab.backends.docker.recipes import ImageRecipe
from ipclab.backends.postgres import SETTINGS, PostgresCluster, scram_sha_256, sweep_stale
from ipclab.infrastructure import FilesLogin, Infrastructure, LocalSite, by_hand_login

PORT = 5432
FILES_TARGET = "/run/ipclab"  # where the container reads the files the harness writes
DATA_TARGET = "/var/lib/ipclab-postgres"  # the volume: the cluster's data directory's parent
VOLUME = "database-data"
# Debian's postgresql package on the Python base (Debian bookworm either way); the default
# network at build: apt-get installs it
IMAGE = ImageRecipe(
    "database", "ipclab-postgres:latest", "IPCLAB_POSTGRES_IMAGE",
    COMPOSE_DIR / "postgres" / "Dockerfile",
)  # fmt: skip
USER, ADMIN, DATABASE = "ipclab", "ipclab_admin", "ipclab"
# the local cluster's settings, but listening on the container's addresses (the project
# network) with no unix socket
DOCKER_SETTINGS = {
    **SETTINGS,
    "listen_addresses": "'*'",
    "port": str(PORT),
    "unix_socket_directories": "''",
}


URL_PATTERN = f"postgresql://{USER}:{{password}}@database:{PORT}/{DATABASE}"  # the services'
BY_HAND_LOGIN = by_hand_login("database", URL_PATTERN)


def hba() -> str:
    """The services' role from the project network by SCRAM password, nothing else."""
    return (
        "# ipclab: SCRAM-SHA-256 passwords from the project network only; nothing is trusted\n"
        "# TYPE  DATABASE  USER  ADDRESS  METHOD\n"
        f"host  {DATABASE}  {USER}  samenet  scram-sha-256\n"
        "local  all  all  reject\n"
        "host  all  all  all  reject\n"
    )


def provision_sql(password: str) -> str:
    """The local cluster's provisioning (``PostgresCluster._provision``), in two files: the
    role and database (run in ``postgres``), then the role's schema (run in ``ipclab``)."""
    return (
        f"CREATE ROLE {USER} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION "
        f"NOBYPASSRLS PASSWORD '{scram_sha_256(password)}';\n"
        f"CREATE DATABASE {DATABASE};\n"
        f"REVOKE ALL ON DATABASE {DATABASE} FROM PUBLIC;\n"
        f"GRANT CONNECT ON DATABASE {DATABASE} TO {USER};\n"
        "REVOKE ALL ON DATABASE postgres FROM PUBLIC;\n"
    )


def schema_sql() -> str:
    return (
        f"CREATE SCHEMA {USER} AUTHORIZATION {USER};\n"
        "REVOKE ALL ON SCHEMA public FROM PUBLIC;\n"
        f"ALTER ROLE {USER} IN DATABASE {DATABASE} SET search_path = {USER};\n"
    )


def _is_cluster_dir(p: Path) -> bool:
    """A directory ``PostgresCluster`` made under its root (read at call time: a test may
    move the root), not reached through a symlink."""
    return (
        p.parent.resolve() == Path(cluster_module.ROOT).resolve()
        and p.name.startswith(cluster_module.PREFIX)
        and not p.is_symlink()
    )


def _write(path: Path, text: str) -> None:
    """0644: the server's own user in the container reads it through the bind mount."""
    path.write_text(text)
    path.chmod(0o644)


class Postgres(Infrastructure):
    name = "postgres"
    component = "database"
    backends = ("local", "docker")  # swarm: a bind mount of its files reaches one node only
    recipe = IMAGE
    url_env = "IPCLAB_DATABASE_URL"
    gateway_reaches = False  # the services' data; the gateway only calls them

    def unavailable(self, backend: str) -> str | None:
        if backend != "local":  # the database image is built at the stack's start
            return super().unavailable(backend)
        from ipclab.backends.postgres import PostgresUnavailable, find_bin_dir

        try:
            find_bin_dir()
        except PostgresUnavailable as e:
            return str(e)
        return None

    local_ports = 1

    def start_local(self, site: LocalSite) -> PostgresCluster:
        """A private cluster, created and filled by the domain's SQL for this run's knobs
        (e.g. rows per table)."""
        from ipclab_services import domains

        cluster = PostgresCluster(port=site.ports[0])
        cluster.start(detached=site.detached)
        try:
            cluster.execute(domains.load(site.domain).database_sql(site.env))
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def local_url(self, instance: PostgresCluster) -> str:
        return instance.dsn

    def local_state(self, instance: PostgresCluster) -> dict[str, Any]:
        return {
            "pid": instance.process.pid if instance.process else None,
            "dir": str(instance.directory),
        }

    def local_down(self, state: dict[str, Any], alive: Callable[[Any], bool], ours: bool) -> None:
        from ipclab.procs import stop_group

        if alive(state.get("pid")):
            stop_group(state["pid"], grace=10)
        directory = state.get("dir")
        if isinstance(directory, str) and _is_cluster_dir(Path(directory)):
            shutil.rmtree(directory, ignore_errors=True)

    def sweep_local(self) -> list[Path]:
        return sweep_stale()

    def write_files(self, directory: Path, env: dict[str, str], domain: str) -> FilesLogin:
        """``directory/database/``: the passwords, settings, pg_hba.conf and the SQL (the
        domain's ``database_sql`` for ``env``, as the local backend runs it)."""
        from ipclab_services import domains

        files = directory / "database"
        files.mkdir(mode=0o755)
        files.chmod(0o755)
        password, admin = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        conf = "".join(f"{k} = {v}\n" for k, v in DOCKER_SETTINGS.items())
        _write(files / "postgresql.conf", "\n# ipclab: a benchmark cluster\n" + conf)
        _write(files / "pg_hba.conf", hba())
        _write(files / "superuser.pw", admin + "\n")
        _write(files / "services.pw", password + "\n")
        _write(files / "provision.sql", provision_sql(password))
        _write(files / "schema.sql", schema_sql())
        _write(files / "data.sql", domains.load(domain).database_sql(env))
        return FilesLogin(password, str(files), URL_PATTERN)

    def by_hand(self) -> FilesLogin:
        return BY_HAND_LOGIN

    def url(self, login: FilesLogin) -> str:
        return login.url

    def compose_service(self, login: FilesLogin, net_admin: bool) -> dict[str, Any]:
        svc: dict[str, Any] = {
            **extends(self.component),
            "volumes": [f"{VOLUME}:{DATA_TARGET}", f"{login.files}:{FILES_TARGET}:ro"],
        }
        if net_admin:
            svc["cap_add"] = DELAY_CAPABILITIES
        return svc

    def service_ports(self) -> tuple[int, ...]:
        return (PORT,)

    def compose_volumes(self) -> dict[str, Any]:
        return {VOLUME: {"labels": dict(PROJECT_LABELS)}}


PLUGIN = Postgres()
