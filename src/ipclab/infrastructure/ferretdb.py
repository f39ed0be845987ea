"""FerretDB, the MongoDB-wire store of the shop's services (all but shipping): a private
server on the local backend (``ipclab.backends.ferretdb``), built once from its Go module,
on SQLite in its private directory (``IPCLAB_FERRETDB_HANDLER=pg``: on a private
PostgreSQL cluster of its own instead), listening on loopback only, its one user's password
generated at every start. The services find it at ``IPCLAB_MONGO_URL`` (a ``mongodb://``
URL with that user and password).

It is seeded from the stack's domain when the domain defines ``store_documents(env)``
(collection -> documents, from the same generator as the in-memory data), then its tables
indexed for lookups by a string ``_id`` (``FerretServer.index_ids``); otherwise it starts
empty.

On docker it is the ``docstore`` service of the stack's compose project: the image
``ipclab-ferretdb`` (``compose/ferretdb/``: the same binary, built on the host from the Go
module, on the local Debian base or python:3.11-slim, built with no network), its data in the
container's filesystem (removed with the container), listening on the project network only
(no published port). The harness writes its files into the stack's private folder (the
services' password, generated per start, and the domain's documents as JSON); the
container's first boot seeds and indexes them on its loopback before it listens, so the
health check (the port answers) means the data is there. Swarm: not yet (a bind mount
reaches one node only).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ipclab.backends.docker.compose import COMPOSE_DIR, whole_service
from ipclab.backends.docker.recipes import ImageRecipe, RecipeError
from ipclab.infrastructure import FilesLogin, LocalSite, MountedStore

HANDLER_ENV = "IPCLAB_FERRETDB_HANDLER"
BATCH = 500  # documents per insert
PORT = 27017  # the docker service's
CONTEXT = COMPOSE_DIR / "ferretdb"
MONGOWIRE = Path(__file__).resolve().parents[1] / "backends" / "mongowire.py"


def _settings() -> dict[str, Any]:
    """What the container's entrypoint takes from the local server's module (the names it
    uses), so the two cannot drift apart."""
    from ipclab.backends import ferretdb

    return {
        "user": ferretdb.USER, "database": ferretdb.DATABASE, "batch": BATCH,
        "collections": ferretdb.SQLITE_COLLECTIONS, "sqlite_id": ferretdb.SQLITE_ID,
        "id_index": ferretdb.ID_INDEX,
    }  # fmt: skip


def _prepare(dest: Path) -> None:
    """The image's context: the FerretDB binary (built on the host first if missing), the
    entrypoint, the harness's MongoDB-wire client and the settings."""
    from ipclab.backends import ferretdb

    try:
        binary = ferretdb.ferretdb_binary()
    except ferretdb.FerretUnavailable as e:
        raise RecipeError(str(e)) from None
    shutil.copy2(binary, dest / "ferretdb")
    shutil.copy2(CONTEXT / "entrypoint.py", dest / "entrypoint.py")
    shutil.copy2(MONGOWIRE, dest / "mongowire.py")
    (dest / "settings.json").write_text(json.dumps(_settings(), sort_keys=True) + "\n")


def _inputs() -> str:
    """FerretDB's version and module sum, the entrypoint, the client and the settings."""
    from ipclab.backends import ferretdb

    digest = hashlib.sha256()
    for path in (CONTEXT / "entrypoint.py", MONGOWIRE):
        digest.update(path.read_bytes())
    settings = json.dumps(_settings(), sort_keys=True)
    return f"{ferretdb.VERSION}\n{ferretdb.module_sum()}\n{digest.hexdigest()}\n{settings}"


def _record() -> dict[str, Any]:
    from ipclab.backends import ferretdb

    return {"versions": ferretdb.versions()}


IMAGE = ImageRecipe(
    "docstore", "ipclab-ferretdb:latest", "IPCLAB_FERRETDB_IMAGE", CONTEXT / "Dockerfile",
    network="none", prepare=_prepare, inputs=_inputs, label="ferretdb", record=_record,
)  # fmt: skip


def _url_pattern() -> str:
    """The services' URL of the docstore, ``{password}`` for the password."""
    from ipclab.backends.ferretdb import DATABASE, USER

    return (
        f"mongodb://{USER}:{{password}}@docstore:{PORT}/{DATABASE}"
        f"?authSource={DATABASE}&authMechanism=SCRAM-SHA-256&directConnection=true"
    )


def _write(path: Path, text: str) -> None:
    """0644: the server's own user in the container reads it through the bind mount."""
    path.write_text(text)
    path.chmod(0o644)


def seed(server: Any, documents: dict[str, list[dict[str, Any]]]) -> None:
    """Insert ``documents`` (collection -> documents) as the services' user."""
    from ipclab.backends import ferretdb, mongowire

    with mongowire.Connection(server.host, server.port) as c:
        c.login(ferretdb.USER, server.secret, ferretdb.DATABASE)
        for collection, docs in documents.items():
            for at in range(0, len(docs), BATCH):
                batch = docs[at : at + BATCH]
                c.command(ferretdb.DATABASE, {"insert": collection, "documents": batch})


class FerretDB(MountedStore):
    port = PORT
    name = "ferretdb"
    component = "docstore"
    backends = ("local", "docker")
    recipe = IMAGE
    url_env = "IPCLAB_MONGO_URL"
    gateway_reaches = False  # the services' data; the gateway only calls them
    local_ports = 1

    def unavailable(self, backend: str) -> str | None:
        if backend not in ("local", "docker"):
            return super().unavailable(backend)
        from ipclab.backends import ferretdb

        return ferretdb.unavailable()  # docker: the image carries the binary built here

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

    # --- docker: the ``docstore`` service ------------------------------------------------
    def write_files(self, directory: Path, env: dict[str, str], domain: str) -> FilesLogin:
        """``directory/docstore/``: the services' password (new) and the domain's documents
        for ``env`` (none: it starts empty), as the local plugin seeds them."""
        from ipclab_services import domains

        files = directory / "docstore"
        files.mkdir(mode=0o755)
        files.chmod(0o755)
        password = secrets.token_urlsafe(32)
        _write(files / "services.pw", password + "\n")
        documents = getattr(domains.load(domain), "store_documents", None)
        if documents is not None:
            _write(files / "documents.json", json.dumps(documents(env)))
        return FilesLogin(password, str(files), self.url_pattern())

    def url_pattern(self) -> str:
        return _url_pattern()

    def compose_service(self, login: FilesLogin, net_admin: bool) -> dict[str, Any]:
        mount = [f"{login.files}:{self.FILES_TARGET}:ro"]
        return whole_service(IMAGE, self.component, PORT, mount, net_admin)


PLUGIN = FerretDB()
