#!/usr/bin/env python3
"""The FerretDB container's command (compose/ferretdb/): at first boot, FerretDB on SQLite
in /var/lib/ipclab-ferretdb with the services' user (its password from /run/ipclab), on the
container's loopback only; the domain's documents inserted as that user, in batches; the
server stopped and each collection's table indexed on what a lookup by a string ``_id``
filters on (ipclab.backends.ferretdb.FerretServer.index_ids); then FerretDB serves on the
project network, as this process (so it gets the container's signals). The port answers
only once the data is in: the health check's condition."""

import json
import os
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, "/usr/local/lib/ipclab-ferretdb")
import mongowire  # noqa: E402 - the harness's client, copied beside settings.json

FILES = "/run/ipclab"
STATE = "/var/lib/ipclab-ferretdb"
BINARY = "/usr/local/bin/ferretdb"
SEED_ADDRESS = ("127.0.0.1", 27018)
SERVE = "0.0.0.0:27017"
with open("/usr/local/lib/ipclab-ferretdb/settings.json") as f:
    S = json.load(f)


def argv(listen: str) -> list[str]:
    return [
        BINARY, f"--listen-addr={listen}", "--listen-unix=", "--debug-addr=-",
        "--telemetry=disable", f"--state-dir={STATE}/state", "--test-enable-new-auth",
        f"--setup-database={S['database']}", f"--setup-username={S['user']}",
        "--log-level=warn", "--handler=sqlite", f"--sqlite-url=file:{STATE}/data/",
    ]  # fmt: skip


def seed(password: str, env: dict[str, str]) -> None:
    host, port = SEED_ADDRESS
    server = subprocess.Popen(argv(f"{host}:{port}"), env=env)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                mongowire.ping(host, port, S["user"], password, S["database"])
                break
            except (OSError, mongowire.CommandError):
                if server.poll() is not None or time.monotonic() > deadline:
                    sys.exit(f"ipclab-ferretdb: FerretDB did not answer (exit {server.poll()})")
                time.sleep(0.1)
        with open(f"{FILES}/documents.json") as f:
            documents = json.load(f)
        with mongowire.Connection(host, port) as c:
            c.login(S["user"], password, S["database"])
            for collection, docs in documents.items():
                for at in range(0, len(docs), S["batch"]):
                    batch = docs[at : at + S["batch"]]
                    c.command(S["database"], {"insert": collection, "documents": batch})
    finally:
        server.terminate()
        server.wait(timeout=30)
    index_ids()


def index_ids() -> None:
    db = sqlite3.connect(f"file:{STATE}/data/{S['database']}.sqlite?mode=rw", uri=True)
    try:
        tables = [t for (t,) in db.execute(f'SELECT table_name FROM "{S["collections"]}"')]
        for table in tables:
            index = f'"{table}_{S["id_index"]}"'
            db.execute(f'CREATE INDEX IF NOT EXISTS {index} ON "{table}" ({S["sqlite_id"]})')
        db.commit()
    finally:
        db.close()


def main() -> None:
    with open(f"{FILES}/services.pw") as f:
        password = f.read().strip()
    env = {"PATH": "/usr/bin:/bin", "DO_NOT_TRACK": "1", "FERRETDB_SETUP_PASSWORD": password}
    for folder in ("state", "data"):
        os.makedirs(f"{STATE}/{folder}", mode=0o700, exist_ok=True)
    if not os.path.exists(f"{STATE}/seeded"):
        if os.path.exists(f"{FILES}/documents.json"):
            seed(password, env)
        with open(f"{STATE}/seeded", "w"):
            pass
    os.execve(BINARY, argv(SERVE), env)


main()
