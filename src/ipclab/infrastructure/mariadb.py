"""MariaDB, the SQL store of the shop's shipping service (MySQL in the shop's published system): a
private server on the local backend (``ipclab.backends.mariadb``: Debian's
``mariadb-server``, no system option file read, loopback only, generated passwords). The
services find it at ``IPCLAB_MYSQL_URL`` (``mysql://ipclab:<password>@127.0.0.1:<port>/ipclab``).

It is seeded from the stack's domain when the domain defines ``store_sql(env)`` (the
tables and rows, from the same generator as the in-memory data), run as the services'
user; otherwise it starts with an empty database.

On docker it is the ``sqlstore`` service of the stack's compose project: the image
``ipclab-mariadb`` (``compose/mariadb/``: Debian's mariadb-server on the local Debian base or
python:3.11-slim), its data in the container's filesystem (removed with the container),
listening on the project network only (no published port), with the local server's settings.
The harness writes its files into the stack's private folder (the accounts' SQL with two
passwords generated per start: the services' user from the project network, the admin's
from the container's socket alone; the domain's SQL); the first boot runs them on a server
with no network before it listens, so the health check (the port answers) means the data is
there. Swarm: not yet (a bind mount reaches one node only).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ipclab.backends.docker.compose import COMPOSE_DIR, whole_service
from ipclab.backends.docker.recipes import ImageRecipe
from ipclab.infrastructure import FilesLogin, LocalSite, MountedStore

PORT = 3306  # the docker service's
# Debian's mariadb-server on the Python base (Debian bookworm either way): apt-get installs
# it, so the build has the default network
IMAGE = ImageRecipe(
    "sqlstore", "ipclab-mariadb:latest", "IPCLAB_MARIADB_IMAGE",
    COMPOSE_DIR / "mariadb" / "Dockerfile",
)  # fmt: skip


def _url_pattern() -> str:
    """The services' URL of the sqlstore, ``{password}`` for the password."""
    from ipclab.backends.mariadb import DATABASE, USER

    return f"mysql://{USER}:{{password}}@sqlstore:{PORT}/{DATABASE}"


def _write(path: Path, text: str) -> None:
    """0644: the server's own user in the container reads it through the bind mount."""
    path.write_text(text)
    path.chmod(0o644)


class MariaDB(MountedStore):
    port = PORT
    name = "mariadb"
    component = "sqlstore"
    backends = ("local", "docker")
    recipe = IMAGE
    url_env = "IPCLAB_MYSQL_URL"
    gateway_reaches = False  # the services' data; the gateway only calls them
    local_ports = 1

    def unavailable(self, backend: str) -> str | None:
        if backend != "local":  # docker: the image is built at the stack's start
            return super().unavailable(backend)
        from ipclab.backends import mariadb

        return mariadb.unavailable()

    def start_local(self, site: LocalSite) -> Any:
        from ipclab_services import domains

        from ipclab.backends.mariadb import MariaDBServer

        server = MariaDBServer(port=site.ports[0], mark=site.mark)
        server.start(detached=site.detached)
        try:
            sql = getattr(domains.load(site.domain), "store_sql", None)
            if sql is not None:
                server.execute(sql(site.env), timeout=600)
        except BaseException:
            server.stop()
            raise
        return server

    def local_url(self, instance: Any) -> str:
        return str(instance.url)

    def local_versions(self, instance: Any) -> dict[str, str]:
        from ipclab.backends import mariadb

        return {"mariadb": mariadb.version()}

    def local_state(self, instance: Any) -> dict[str, Any]:
        return {
            "pid": instance.process.pid if instance.process else None,
            "dir": str(instance.directory),
        }

    def local_down(self, state: dict[str, Any], alive: Callable[[Any], bool], ours: bool) -> None:
        from ipclab.backends import mariadb, storedir
        from ipclab.procs import stop_group

        if alive(state.get("pid")):
            stop_group(state["pid"], grace=10)
        if isinstance(directory := state.get("dir"), str):
            storedir.remove(Path(directory), mariadb.KIND)

    # --- docker: the ``sqlstore`` service ------------------------------------------------
    def write_files(self, directory: Path, env: dict[str, str], domain: str) -> FilesLogin:
        """``directory/sqlstore/``: the accounts (new passwords), the server's settings and
        the domain's SQL for ``env`` (none: an empty database), as the local plugin runs it."""
        from ipclab_services import domains

        from ipclab.backends import mariadb

        files = directory / "sqlstore"
        files.mkdir(mode=0o755)
        files.chmod(0o755)
        password, admin = secrets.token_hex(24), secrets.token_hex(24)
        accounts = mariadb.bootstrap_sql(admin, password, host="%", admin_host="localhost")
        _write(files / "bootstrap.sql", accounts)
        _write(files / "services.pw", password + "\n")
        _write(files / "server.args", "".join(f"{a}\n" for a in mariadb.SERVER_SETTINGS))
        sql = getattr(domains.load(domain), "store_sql", None)
        _write(files / "data.sql", sql(env) if sql is not None else "")
        return FilesLogin(password, str(files), self.url_pattern())

    def url_pattern(self) -> str:
        return _url_pattern()

    def compose_service(self, login: FilesLogin, net_admin: bool) -> dict[str, Any]:
        mount = [f"{login.files}:{self.FILES_TARGET}:ro"]
        return whole_service(IMAGE, self.component, PORT, mount, net_admin)


PLUGIN = MariaDB()
