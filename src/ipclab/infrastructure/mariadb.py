"""MariaDB, the SQL store of the shop's shipping service (MySQL in the shop's published system): a
private server on the local backend (``ipclab.backends.mariadb``: Debian's
``mariadb-server``, no system option file read, loopback only, generated passwords). The
services find it at ``IPCLAB_MYSQL_URL`` (``mysql://ipclab:<password>@127.0.0.1:<port>/ipclab``).

It is seeded from the stack's domain when the domain defines ``store_sql(env)`` (the
tables and rows, from the same generator as the in-memory data), run as the services'
user; otherwise it starts with an empty database. Local backend only for now: the docker
backends report it unavailable.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ipclab.infrastructure import Infrastructure, LocalSite


class MariaDB(Infrastructure):
    name = "mariadb"
    component = "sqlstore"
    backends = ("local",)
    url_env = "IPCLAB_MYSQL_URL"
    gateway_reaches = False  # the services' data; the gateway only calls them
    local_ports = 1

    def unavailable(self, backend: str) -> str | None:
        if backend != "local":
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


PLUGIN = MariaDB()
