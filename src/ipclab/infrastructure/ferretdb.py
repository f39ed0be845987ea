"""FerretDB, the MongoDB-wire store of the shop's services (all but shipping): a private
server on the local backend (``ipclab.backends.ferretdb``), built once from its Go module,
on SQLite in its private directory (``IPCLAB_FERRETDB_HANDLER=pg``: on a private
PostgreSQL cluster of its own instead), listening on loopback only, its one user's password
generated at every start. The services find it at ``IPCLAB_MONGO_URL`` (a ``mongodb://``
URL with that user and password).

It is seeded from the stack's domain when the domain defines ``store_documents(env)``
(collection -> documents, from the same generator as the in-memory data), then its tables
indexed for lookups by a string ``_id`` (``FerretServer.index_ids``); otherwise it starts
empty. Local backend only for now: the docker backends report it unavailable.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ipclab.infrastructure import Infrastructure, LocalSite

HANDLER_ENV = "IPCLAB_FERRETDB_HANDLER"
BATCH = 500  # documents per insert


def seed(server: Any, documents: dict[str, list[dict[str, Any]]]) -> None:
    """Insert ``documents`` (collection -> documents) as the services' user."""
    from ipclab.backends import ferretdb, mongowire

    with mongowire.Connection(server.host, server.port) as c:
        c.login(ferretdb.USER, server.secret, ferretdb.DATABASE)
        for collection, docs in documents.items():
            for at in range(0, len(docs), BATCH):
                batch = docs[at : at + BATCH]
                c.command(ferretdb.DATABASE, {"insert": collection, "documents": batch})


class FerretDB(Infrastructure):
    name = "ferretdb"
    component = "docstore"
    backends = ("local",)
    url_env = "IPCLAB_MONGO_URL"
    gateway_reaches = False  # the services' data; the gateway only calls them
    local_ports = 1

    def unavailable(self, backend: str) -> str | None:
        if backend != "local":
            return super().unavailable(backend)
        from ipclab.backends import ferretdb

        return ferretdb.unavailable()

    def start_local(self, site: LocalSite) -> Any:
        from ipclab_services import domains

        from ipclab.backends.ferretdb import FerretServer

        handler = site.env.get(HANDLER_ENV, "sqlite")
        server = FerretServer(port=site.ports[0], handler=handler, mark=site.mark)
        server.start(detached=site.detached)
        try:
            documents = getattr(domains.load(site.domain), "store_documents", None)
            if documents is not None:
                seed(server, documents(site.env))
                server.index_ids()  # a lookup by _id: an index search (backends.ferretdb)
        except BaseException:
            server.stop()
            raise
        return server

    def local_url(self, instance: Any) -> str:
        return str(instance.url)

    def local_versions(self, instance: Any) -> dict[str, str]:
        from ipclab.backends import ferretdb

        out = {**ferretdb.versions(), "ferretdb_handler": instance.handler}
        if instance.postgres is not None:
            from ipclab.backends.postgres import find_bin_dir

            out["postgresql"] = find_bin_dir().parent.name
        return out

    def local_state(self, instance: Any) -> dict[str, Any]:
        pg = instance.postgres
        return {
            "pid": instance.process.pid if instance.process else None,
            "dir": str(instance.directory),
            "postgres": None if pg is None else {"pid": pg.process.pid, "dir": str(pg.directory)},
        }

    def local_down(self, state: dict[str, Any], alive: Callable[[Any], bool], ours: bool) -> None:
        from ipclab.backends import ferretdb, storedir
        from ipclab.infrastructure import postgres
        from ipclab.procs import stop_group

        if alive(state.get("pid")):
            stop_group(state["pid"], grace=5)
        if isinstance(directory := state.get("dir"), str):
            storedir.remove(Path(directory), ferretdb.KIND)
        if isinstance(pg := state.get("postgres"), dict):
            postgres.PLUGIN.local_down(pg, alive, ours)

    def sweep_local(self) -> list[Path]:
        from ipclab.backends.postgres import sweep_stale

        return sweep_stale()  # its own PostgreSQL clusters (a store directory: orphans.sweep)


PLUGIN = FerretDB()
