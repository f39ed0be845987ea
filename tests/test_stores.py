"""The stores of Shafabakhsh's services as infrastructure (issue 50): FerretDB (MongoDB wire,
built from its Go module) and MariaDB, each started privately by its plugin, answering its
generated credentials only, on loopback only, and leaving nothing after a stop or a
``kill -9`` of the harness (the next ``orphans.sweep`` removes the store's directory).

Tests that start a server are marked slow; they skip, naming what to install, when the
store cannot run here (no ``mariadb-server``; no ``go`` to build FerretDB).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psutil
import pytest
from ipclab_services.domains.shop import SERVICES as SHOP_SERVICES

from ipclab import infrastructure, listeners, orphans, requesttrace, sockopts
from ipclab.backends import ferretdb, mariadb, mongowire, storedir
from ipclab.infrastructure import LocalSite
from ipclab.infrastructure.ferretdb import HANDLER_ENV
from ipclab.procs import free_port, port_open
from ipclab.stacks import all_stacks, resolve
from tests.conftest import _native_proxy, command_line, ipclab_processes

HARNESS = """
import json, sys, tempfile, time
from pathlib import Path
from types import SimpleNamespace
from ipclab import infrastructure, listeners, orphans, requesttrace, sockopts
from ipclab.infrastructure import LocalSite
from ipclab.infrastructure.ferretdb import HANDLER_ENV
from ipclab.procs import free_port
plugin = infrastructure.get(sys.argv[1])
env = {"IPCLAB_FERRETDB_HANDLER": sys.argv[2]}
site = LocalSite(Path(tempfile.gettempdir()), (free_port(),), env, "payload",
                 {orphans.MARK: orphans.this_harness()}, False)
inst = plugin.start_local(site)
pg = getattr(inst, "postgres", None)
print(json.dumps({"pid": inst.process.pid, "port": inst.port, "dir": str(inst.directory),
                  "pg": None if pg is None else [pg.process.pid, pg.port, str(pg.directory)]}),
      flush=True)
time.sleep(600)
"""


def _skip_unless(name: str) -> None:
    if why := infrastructure.get(name).unavailable("local"):
        pytest.skip(why)


def _site(domain: str = "payload") -> LocalSite:
    """Where a store starts: a domain's data (the payload domain brings none: it starts
    empty), this process's mark."""
    mark = {orphans.MARK: orphans.this_harness()}
    return LocalSite(Path(tempfile.gettempdir()), (free_port(),), {}, domain, mark, False)


def _listening(pid: int) -> set[str]:
    """The addresses a process listens on (TCP)."""
    conns = psutil.Process(pid).net_connections(kind="inet")
    return {c.laddr.ip for c in conns if c.status == psutil.CONN_LISTEN}


def _gone(started: dict[str, Any]) -> list[str]:
    left = []
    if psutil.pid_exists(started["pid"]):
        left.append(f"pid {started['pid']}")
    if port_open("127.0.0.1", started["port"]):
        left.append(f"port {started['port']}")
    return left


def test_the_stores_are_infrastructure_plugins_hosted_locally() -> None:
    ferret, maria = infrastructure.get("ferretdb"), infrastructure.get("mariadb")
    assert ferret.role_env("mongodb://x", gateway=False) == {"IPCLAB_MONGO_URL": "mongodb://x"}
    assert maria.role_env("mysql://y", gateway=False) == {"IPCLAB_MYSQL_URL": "mysql://y"}
    assert ferret.role_env("mongodb://x", gateway=True) == {}  # the services' data alone
    assert "swarm backend does not run yet" in str(maria.unavailable("swarm"))
    assert infrastructure.fault_components(("ferretdb", "mariadb")) == []


def test_bson_round_trips_what_the_stores_are_sent() -> None:
    doc = {"a": 1, "b": 2**40, "c": 2.5, "d": "é", "e": [1, "x"], "f": {"g": None}, "h": True}
    assert mongowire.decode(mongowire.encode({**doc, "i": b"\x00\x01"})) == {**doc, "i": b"\0\1"}


def test_mariadb_reads_no_option_file_and_removes_the_installer_s_accounts() -> None:
    sql = mariadb.bootstrap_sql("ADMIN", "SERVICES")
    assert "DELETE FROM mysql.global_priv WHERE User <> 'mariadb.sys'" in sql
    assert "'ipclab'@'127.0.0.1' IDENTIFIED BY 'SERVICES'" in sql
    server = mariadb.MariaDBServer(port=4242)
    server.directory = Path("/nonexistent/ipclab-mariadb-x")
    argv = server.server_argv({"mariadbd": "mariadbd"})
    assert argv[1] == "--no-defaults" and "--bind-address=127.0.0.1" in argv


@pytest.mark.slow
def test_ferretdb_answers_its_generated_user_only_on_loopback() -> None:
    _skip_unless("ferretdb")
    plugin = infrastructure.get("ferretdb")
    server = plugin.start_local(_site())
    directory = server.directory
    try:
        assert _listening(server.process.pid) == {"127.0.0.1"}  # no debug listener either
        assert mongowire.ping("127.0.0.1", server.port, "ipclab", server.secret, "ipclab")
        with pytest.raises(mongowire.AuthFailed):
            mongowire.ping("127.0.0.1", server.port, "ipclab", "wrong", "ipclab")
        with (
            mongowire.Connection("127.0.0.1", server.port) as c,
            pytest.raises(mongowire.CommandError, match="requires authentication"),
        ):
            c.command("ipclab", {"find": "products"})
        assert plugin.local_url(server).startswith(f"mongodb://ipclab:{server.secret}@127.0.0.1:")
        assert plugin.local_versions(server)["ferretdb"] == "v1.24.2"
        assert (directory / "data" / "ipclab.sqlite").exists()
    finally:
        server.stop()
    assert not directory.exists() and ipclab_processes() == []


@pytest.mark.slow
def test_mariadb_answers_its_generated_users_only_on_loopback() -> None:
    _skip_unless("mariadb")
    plugin = infrastructure.get("mariadb")
    server = plugin.start_local(_site())
    directory = server.directory
    try:
        assert _listening(server.process.pid) == {"127.0.0.1"}
        server.execute(
            "CREATE TABLE shipping (id INT PRIMARY KEY); INSERT INTO shipping VALUES (7)"
        )
        assert server.execute("SELECT id FROM shipping;").split() == ["7"]
        accounts = server.execute("SELECT CONCAT(User, '@', Host) FROM mysql.global_priv;", True)
        assert sorted(accounts.split()) == [
            "ipclab@127.0.0.1", "ipclab_admin@127.0.0.1", "mariadb.sys@localhost",
        ]  # fmt: skip
        client = mariadb.find_binaries()["mariadb"]
        for how in (
            ["-h127.0.0.1", f"-P{server.port}", "-uipclab", "-pwrong"],  # a wrong password
            [f"--socket={server.socket}", "-uroot"],  # the installer's root: removed
        ):
            r = subprocess.run([client, "--no-defaults", *how, "-e", "SELECT 1"],
                               capture_output=True, text=True, timeout=30)  # fmt: skip
            assert r.returncode != 0 and "Access denied" in r.stderr, r.stderr
        assert plugin.local_versions(server)["mariadb"].startswith("10.11.")
    finally:
        server.stop()
    assert not directory.exists() and ipclab_processes() == []


@pytest.mark.slow
def test_ferretdb_on_postgresql_keeps_its_data_in_a_private_cluster() -> None:
    _skip_unless("ferretdb")
    _skip_unless("postgres")
    plugin = infrastructure.get("ferretdb")
    site = _site()
    server = plugin.start_local(dataclasses.replace(site, env={HANDLER_ENV: "pg"}))
    directories = [server.directory, server.postgres.directory]
    try:
        with mongowire.Connection("127.0.0.1", server.port) as c:
            c.login("ipclab", server.secret, "ipclab")
            c.command("ipclab", {"insert": "products", "documents": [{"_id": 1, "n": "x"}]})
            found = c.command("ipclab", {"find": "products", "filter": {"_id": 1}})
        assert found["cursor"]["firstBatch"] == [{"_id": 1, "n": "x"}]
        assert "ipclab" in server.postgres.execute("SELECT nspname FROM pg_namespace;").split()
        with pytest.raises(mongowire.AuthFailed):
            mongowire.ping("127.0.0.1", server.port, "ipclab", "wrong", "ipclab")
        assert plugin.local_versions(server)["ferretdb_handler"] == "pg"
    finally:
        server.stop()
    assert not any(d.exists() for d in directories) and ipclab_processes() == []


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "handler"), [("ferretdb", "sqlite"), ("ferretdb", "pg"), ("mariadb", "")]
)
def test_kill_9_of_the_harness_leaves_no_store_and_the_sweep_removes_its_directory(
    name: str, handler: str
) -> None:
    _skip_unless(name)
    if handler == "pg":
        _skip_unless("postgres")
    harness = subprocess.Popen([sys.executable, "-c", HARNESS, name, handler],
                               stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert harness.stdout is not None
        started = json.loads(harness.stdout.readline())
    finally:
        harness.kill()  # SIGKILL: no atexit, no finally, no stop()
        harness.wait()
    deadline = time.monotonic() + 10
    while (left := _gone(started)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert left == [], f"still there 10 s after kill -9 of the harness: {left}"
    # what a dead harness cannot remove, its directory, the next sweep removes (another
    # harness's sweep on this machine may get there first: then it is gone already)
    directory = Path(started["dir"])
    there = storedir.is_store_dir(directory, name)
    swept = orphans.sweep(say=lambda _: None)
    assert not directory.exists() and (not there or f"directory {directory}" in swept)
    if started["pg"] is not None:  # its PostgreSQL cluster: the plugin's own sweep
        pid, port, cluster = started["pg"]
        assert _gone({"pid": pid, "port": port}) == []
        there = Path(cluster).exists()
        assert not there or Path(cluster) in infrastructure.get(name).sweep_local()
        assert not Path(cluster).exists()
    assert ipclab_processes() == []


def test_a_local_stack_records_its_stores_versions_in_the_manifest() -> None:
    """``stack_info.infrastructure``: each instance's ``local_versions`` (the broker says
    nothing, so a stack of services and a broker records nothing new)."""
    from ipclab.backends.local import LocalStack

    _skip_unless("mariadb")
    stores = SimpleNamespace(infra={"rabbitmq": object(), "mariadb": object()})
    info = LocalStack.info(stores)  # type: ignore[arg-type]
    assert info == {"infrastructure": {"mariadb": {"mariadb": mariadb.version()}}}
    assert LocalStack.info(SimpleNamespace(infra={"rabbitmq": object()})) is None  # type: ignore[arg-type]


@pytest.mark.slow
def test_the_shop_s_stores_hold_what_its_generator_gives() -> None:
    """Seeded by the plugins from the shop's generator (``store_documents``, ``store_sql``):
    what the stores give back is the in-memory data, id for id."""
    from ipclab_services.domains.shop import data, stores

    _skip_unless("ferretdb")
    _skip_unless("mariadb")
    cfg = data.ShopConfig()
    sample = (1, 2, 499, cfg.catalogue_size)
    ferret = infrastructure.get("ferretdb").start_local(_site("shop"))
    try:
        with mongowire.Connection("127.0.0.1", ferret.port) as c:
            c.login("ipclab", ferret.secret, "ipclab")
            counts = {n: c.command("ipclab", {"count": n})["n"] for n in stores.COLLECTIONS}
            got = {
                (n, i): c.command("ipclab", {"find": n, "filter": {"_id": str(i)}})["cursor"]
                for n in stores.COLLECTIONS
                for i in sample
            }
            plans = {
                key: c.command("ipclab", {"explain": {"find": "products", "filter": {"_id": key}}})
                for key in ("613", 613)
            }
    finally:
        ferret.stop()
    # a lookup by a string _id: handed to SQLite and an index search there (index_ids); by
    # a number it would be a scan of the collection in FerretDB
    assert plans["613"]["filterPushdown"] is True and plans[613]["filterPushdown"] is False
    plan = " | ".join(plans["613"]["queryPlanner"]["Plan"])
    assert f"_{ferretdb.ID_INDEX} (<expr>=?)" in plan and "SCAN" not in plan, plan
    assert counts == {"products": 1000, "reviews": 1000, "recommendations": 1000, "carts": 500}
    for i in sample:
        assert got["products", i]["firstBatch"] == [{"_id": str(i), **data.product(cfg, i)}]
        assert got["reviews", i]["firstBatch"][0]["reviews"] == data.reviews(cfg, i)
        recommended = got["recommendations", i]["firstBatch"][0]["recommendations"]
        assert recommended == data.recommendations(cfg, i)
    assert got["carts", 499]["firstBatch"] == [{"_id": "499", **data.cart(cfg, 499)}]
    assert got["carts", cfg.catalogue_size]["firstBatch"] == []  # beyond the customers

    maria = infrastructure.get("mariadb").start_local(_site("shop"))
    try:
        rows = {i: maria.execute(stores.shipping_select(i) + ";") for i in sample}
        count = maria.execute("SELECT COUNT(*) FROM shipping;").strip()
    finally:
        maria.stop()
    assert count == str(3 * cfg.catalogue_size)
    for i, text in rows.items():
        keys = ("carrier", "method", "price", "min_days", "max_days")
        options = [dict(zip(keys, line.split("\t"), strict=True)) for line in text.splitlines()]
        read = [
            {**o, "price": float(o["price"]), "min_days": int(o["min_days"]),
             "max_days": int(o["max_days"])}
            for o in options
        ]  # fmt: skip
        assert read == data.shipping(cfg, i)


@pytest.mark.slow
def test_the_official_drivers_read_the_shop_from_the_stores_by_their_urls() -> None:
    """What the services will run (pyproject's ``stores`` extra): pymongo's asyncio client
    on ``IPCLAB_MONGO_URL`` and aiomysql on ``IPCLAB_MYSQL_URL``, the shop's data back."""
    pymongo = pytest.importorskip("pymongo")
    aiomysql = pytest.importorskip("aiomysql")
    from ipclab_services.domains.shop import data, stores

    _skip_unless("ferretdb")
    _skip_unless("mariadb")
    cfg = data.ShopConfig()
    ferret = infrastructure.get("ferretdb").start_local(_site("shop"))
    maria = infrastructure.get("mariadb").start_local(_site("shop"))

    async def read() -> tuple[Any, Any]:
        client = pymongo.AsyncMongoClient(ferret.url)
        try:
            product = await client.get_default_database().products.find_one({"_id": "7"})
        finally:
            await client.close()
        url = urllib.parse.urlsplit(maria.url)
        conn = await aiomysql.connect(host=url.hostname, port=url.port, user=url.username,
                                      password=url.password, db=url.path.lstrip("/"))  # fmt: skip
        try:
            cursor = await conn.cursor(aiomysql.DictCursor)
            await cursor.execute(stores.shipping_select(7))
            options = await cursor.fetchall()
        finally:
            conn.close()
        return product, options

    try:
        product, options = asyncio.run(read())
    finally:
        ferret.stop()
        maria.stop()
    assert product == {"_id": "7", **data.product(cfg, 7)}
    assert [{**o, "price": float(o["price"])} for o in options] == data.shipping(cfg, 7)


def _page(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as r:
        return bytes(r.read())


def _left() -> list[str]:
    """What a stack on its stores left running (native adapters' proxies aside: these stacks
    start none, and another session's carry no mark on a shared machine)."""
    return [c for p in ipclab_processes() if not _native_proxy(c := command_line(p))]


STORE_STACKS = sorted(name for name, spec in all_stacks().items() if spec.stores)
#: the stacks the live tests start, one per distinct code path of a page read from the
#: stores: a runtime's store client (dbstore.py, stores.go, stores.js) is one path whatever
#: the transport in Python and Go (every transport calls the same handlers: services.py,
#: data.go), while Node.js's REST, gRPC and AMQP each wait for the store in their own code
#: (lib/rest.js, grpc.js, amqp.js); an AMQP stack's trace names its services by their
#: connections, having no listening port (shop-amqp-node)
PAGE_STACKS = ("shop-rest", "shop-grpc-go", "shop-rest-node", "shop-grpc-node", "shop-amqp-node")
#: kill -9: the stores die with the harness (their plugins, whatever the stack); the roles
#: die each runtime's way, and an AMQP stack leaves a broker node to sweep: one per runtime
KILLED_STACKS = ("shop-rest", "shop-grpc-go", "shop-amqp-node")
PAGES = ("/product/7?customer_id=3", "/product/1000?customer_id=600", "/product/1")
#: which store each of the shop's services reads (stores.py: shipping's is the SQL one)
OWNS = {s: "mariadb" if s == "shipping" else "ferretdb" for s in SHOP_SERVICES}


def test_every_shop_stack_declares_its_stores_in_every_runtime() -> None:
    """The stacks declare ``stores`` (the study's ``_SHOP``): the Python, Go and Node.js shop
    stacks read their stores; a stack that declares none is refused ``--store db``."""
    stacks = all_stacks()
    runtimes = {stacks[n].runtime.name for n in STORE_STACKS}
    assert runtimes == {"python", "go", "node"}
    assert all(stacks[n].domain == "shop" for n in STORE_STACKS)
    assert {"shop-rest", "shop-grpc-go", "shop-amqp-node"} <= set(STORE_STACKS)
    assert all(stacks[n].store_unavailable() is None for n in STORE_STACKS)
    assert "declares none" in str(stacks["acmeair-http1"].store_unavailable())


def test_the_live_store_tests_cover_every_runtime_and_node_s_every_transport() -> None:
    """``PAGE_STACKS`` and ``KILLED_STACKS``: each a stack that declares stores, together
    every runtime's store client; the page test every Node.js transport (each its own code)."""
    stacks = all_stacks()
    runtimes = {stacks[n].runtime.name for n in STORE_STACKS}
    for chosen in (PAGE_STACKS, KILLED_STACKS):
        assert set(chosen) <= set(STORE_STACKS)
        assert {stacks[n].runtime.name for n in chosen} == runtimes
    node = {stacks[n].transport for n in STORE_STACKS if stacks[n].runtime.name == "node"}
    assert {stacks[n].transport for n in PAGE_STACKS if stacks[n].runtime.name == "node"} == node
    assert any(stacks[n].transport == "amqp" for n in PAGE_STACKS)


def _skip_unless_stack(name: str) -> None:
    _skip_unless("ferretdb")
    _skip_unless("mariadb")
    if why := resolve(name).unavailable():
        pytest.skip(why)
    if resolve(name).runtime.name == "python":
        pytest.importorskip("pymongo")
        pytest.importorskip("aiomysql")


def _assert_store_round_trips(trips: list[requesttrace.RoundTrip]) -> None:
    """Each service's round trips to its store lie inside the page's exchange (the harness
    asking the gateway), and no other role asks a store."""
    [page] = [t for t in trips if t.client == requesttrace.CLIENT and t.server == "gateway"]
    inside = [t for t in trips if t.server in ("ferretdb", "mariadb") and t.within(page)]
    asked = {(t.client, t.server) for t in inside}
    assert asked == set(OWNS.items()), requesttrace.render(trips)
    assert all(t.sent > 0 and t.received > 0 for t in inside), requesttrace.render(trips)


RUNTIME_LABELS = {"python": "Python", "go": "Go", "node": "Node.js"}  # socket_settings' names


def _store_sockets_unlike_their_rows(stack: Any, runtime: str) -> list[str]:
    """Each service's connections to its store against ``socket_settings.STORE_ROWS`` (the
    runtime's MongoDB-wire row, then its SQL row): what differs."""
    from ipclab.socket_settings import STORE_ROWS
    from tests.test_socket_options import check

    mongo, sql = [r for r in STORE_ROWS if r.runtime == RUNTIME_LABELS[runtime]]
    out = []
    for service, store in OWNS.items():
        found = sockopts.tree_sockets(stack.procs[service].pid)
        mine = sockopts.connections(found, stack.infra[store].port, "client")
        out += [f"{service}: {x}" for x in check(mongo if store == "ferretdb" else sql, mine)]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", PAGE_STACKS)
def test_a_shop_stack_on_its_stores_answers_as_from_memory_and_the_trace_shows_them(
    name: str,
) -> None:
    """``--store db``: the stack starts FerretDB and MariaDB with it (their URLs reach the
    services only), the services read them, and the product pages are the in-memory
    stack's byte for byte; a page's packet trace shows each service's round trips to its
    store inside the page's exchange; nothing the stack opened listens beyond loopback;
    stopping the stack leaves no store process or directory."""
    from ipclab.backends import StackOptions, get_backend

    _skip_unless_stack(name)
    if why := requesttrace.unavailable():
        pytest.skip(why)
    backend = get_backend("local")
    pages: dict[str, list[bytes]] = {}
    for store in (None, "db"):
        before = listeners.listening()
        # a first call connects and authenticates (SCRAM): on a loaded shared machine that
        # can pass the gateway's 2 s deadline, which is not what this test is about
        stack = backend.start(resolve(name), StackOptions(store=store, call_timeout_s=10.0))
        try:
            pages[str(store)] = [_page(stack.gateway_url + p) for p in PAGES]
            if store == "db":
                body, trips = requesttrace.trace(stack, PAGES[0])  # connections made: warm
                assert body == pages["db"][0]
                _assert_store_round_trips(trips)
                spec = resolve(name)
                assert _store_sockets_unlike_their_rows(stack, spec.runtime.name) == []
                instances = dict(stack.infra)  # type: ignore[attr-defined]
                assert {"ferretdb", "mariadb"} <= set(instances)
                opened = listeners.opened_by(before)
                assert listeners.beyond_loopback(opened) == [], opened
                for i in (instances["ferretdb"], instances["mariadb"]):
                    assert i.port in {x.port for x in opened if x.loopback()}
                environ = psutil.Process(stack.procs["product-info"].pid).environ()  # type: ignore[attr-defined]
                assert environ["IPCLAB_MONGO_URL"].startswith("mongodb://ipclab:")
                gateway = psutil.Process(stack.procs["gateway"].pid).environ()  # type: ignore[attr-defined]
                assert "IPCLAB_MONGO_URL" not in gateway and "IPCLAB_MYSQL_URL" not in gateway
                directories = [instances[n].directory for n in ("ferretdb", "mariadb")]
        finally:
            stack.stop()
    assert pages["db"] == pages["None"]
    assert not any(d.exists() for d in directories)
    assert _left() == []


def test_a_stack_that_declares_no_store_is_refused_the_db_store() -> None:
    from ipclab.backends import StackOptions, get_backend

    with pytest.raises(ValueError, match="its services read no store"):
        get_backend("local").start(resolve("acmeair-http1"), StackOptions(store="db"))


KILLED_STACK = """
import json, sys, time, urllib.request
from ipclab.backends import StackOptions, get_backend
from ipclab.stacks import resolve
options = StackOptions(store="db", call_timeout_s=10.0)
stack = get_backend("local").start(resolve(sys.argv[1]), options)
with urllib.request.urlopen(stack.gateway_url + "/product/7?customer_id=3", timeout=30) as r:
    r.read()
stores = {n: stack.infra[n] for n in ("ferretdb", "mariadb")}
print(json.dumps({
    "roles": [p.pid for p in stack.procs.values()],
    "stores": [{"pid": i.process.pid, "port": i.port, "dir": str(i.directory)}
               for i in stores.values()],
}), flush=True)
time.sleep(600)
"""


@pytest.mark.slow
@pytest.mark.parametrize("name", KILLED_STACKS)
def test_kill_9_of_a_harness_running_a_shop_stack_on_its_stores_leaves_no_store(
    name: str,
) -> None:
    """A harness serving a page from the stores is killed (SIGKILL: no finally, no stop):
    within 10 s no role and no store process is left and no store port answers; the next
    sweep removes the store directories the dead harness could not."""
    _skip_unless_stack(name)
    harness = subprocess.Popen([sys.executable, "-c", KILLED_STACK, name],
                               stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert harness.stdout is not None
        started = json.loads(harness.stdout.readline())
    finally:
        harness.kill()
        harness.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        left = [f"role pid {p}" for p in started["roles"] if psutil.pid_exists(p)]
        left += [x for store in started["stores"] for x in _gone(store)]
        if not left:
            break
        time.sleep(0.1)
    assert left == [], f"still there 10 s after kill -9 of the harness: {left}"
    orphans.sweep(say=lambda _: None)  # another harness's sweep may get there first
    assert not [s["dir"] for s in started["stores"] if Path(s["dir"]).exists()]
    deadline = time.monotonic() + 10  # the broker node an AMQP stack left: swept
    while _left() and time.monotonic() < deadline:
        time.sleep(0.3)
    assert _left() == []


def test_on_docker_the_stores_are_their_plugins_whole_services_on_the_project_network(
    tmp_path: Path,
) -> None:
    """``--store db`` on docker (``StackSpec.infrastructure_with``): each store is its plugin's
    compose service, whole (no part of common.yml), its image the recipe's variable, no port
    published, no capability, the project's labels; the services reach it by its component's
    name with the password its plugin wrote, the gateway not at all; the files the container
    seeds from are the local plugins' data from the same generator."""
    from ipclab_services import domains

    from ipclab.backends.docker.compose import compose_document, write_logins

    spec = resolve("shop-rest")
    infra = spec.infrastructure_with("db")
    assert infra == ("ferretdb", "mariadb") and spec.infrastructure_with(None) == ()
    knobs = {"IPCLAB_SEED": "42"}
    logins = write_logins(spec, tmp_path, knobs, infra)
    doc = compose_document(spec, logins=logins, infra=infra)
    services = doc["services"]
    for store, image in (
        ("docstore", "IPCLAB_FERRETDB_IMAGE"),
        ("sqlstore", "IPCLAB_MARIADB_IMAGE"),
    ):
        svc = services[store]
        assert "extends" not in svc and "ports" not in svc and svc["cap_drop"] == ["ALL"]
        assert svc["image"].startswith(f"${{{image}:-") and "cap_add" not in svc
        assert svc["labels"]["ipclab.project"] == "${IPCLAB_PROJECT:-manual}"
        assert svc["volumes"] == [f"{tmp_path / store}:/run/ipclab:ro"]
    healthy = {"condition": "service_healthy"}
    assert services["product-info"]["depends_on"] == {"docstore": healthy, "sqlstore": healthy}
    env = services["product-info"]["environment"]
    password = (tmp_path / "docstore" / "services.pw").read_text().strip()
    assert env["IPCLAB_MONGO_URL"].startswith(f"mongodb://ipclab:{password}@docstore:27017/")
    sql_password = (tmp_path / "sqlstore" / "services.pw").read_text().strip()
    assert env["IPCLAB_MYSQL_URL"] == f"mysql://ipclab:{sql_password}@sqlstore:3306/ipclab"
    gateway = services["gateway"]["environment"]
    assert "IPCLAB_MONGO_URL" not in gateway and "IPCLAB_MYSQL_URL" not in gateway
    shop = domains.load("shop")
    documents = json.loads((tmp_path / "docstore" / "documents.json").read_text())
    assert documents == shop.store_documents(knobs)
    assert (tmp_path / "sqlstore" / "data.sql").read_text() == shop.store_sql(knobs)
    accounts = (tmp_path / "sqlstore" / "bootstrap.sql").read_text()
    assert f"'ipclab'@'%' IDENTIFIED BY '{sql_password}'" in accounts
    assert "'ipclab_admin'@'localhost'" in accounts  # the admin: the container's socket only
    args = (tmp_path / "sqlstore" / "server.args").read_text().split()
    assert args == list(mariadb.SERVER_SETTINGS)
    assert compose_document(spec)["services"].keys().isdisjoint({"docstore", "sqlstore"})


def test_the_swarm_backend_refuses_the_stores_and_docker_the_stacks_that_read_none() -> None:
    """Before anything starts: swarm runs no store yet; docker, as local, refuses ``--store
    db`` to a stack that declares none."""
    from ipclab.backends import StackOptions
    from ipclab.backends.docker.backend import DockerBackend
    from ipclab.backends.docker.swarm import SwarmBackend

    with pytest.raises(ValueError, match="ferretdb, which the swarm backend does not run yet"):
        SwarmBackend().start(resolve("shop-rest"), StackOptions(store="db"))
    with pytest.raises(ValueError, match="its services read no store"):
        DockerBackend().start(resolve("acmeair-http1"), StackOptions(store="db"))
