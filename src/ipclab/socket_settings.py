"""Every client and server socket of the stacks, declared once: TCP_NODELAY, TCP keep-alive,
connection pools and idle timeouts, per runtime and library, and who sets each.

:data:`SETTINGS` is the declaration; :func:`markdown` renders it as the table of
docs/transports.md ("Socket options per runtime", a generated block: :func:`write_doc`), and
``tests/test_socket_options.py`` reads the options on the live sockets of running stacks
(``ipclab.sockopts``) and compares them with it, row by row, where ``live`` says.

Why it matters: a sender with Nagle's algorithm on (no TCP_NODELAY) that writes a message in
two short pieces holds the second until the first is acknowledged, and a receiver that waits
for the whole message delays that acknowledgement (Linux: 40 ms at least). Every request with
a body or answer written in two writes then waits ~40 ms: the artefact of issue 46's
Californium egress (the JDK's HttpServer set no TCP_NODELAY; the adapters now set it).
Linux holds a short segment only while an earlier short segment is unacknowledged
(Minshall's variant), so a message
written in one write is never held: that is why the two senders here with Nagle on (nginx's
upstream connections, Locust's client) stall nothing, and the declaration says so.

The Californium adapters (services/java/californium) are not rows here: their sockets are
stated with them (``Sockets.java``, docs/acmeair.md, tests/test_californium_adapters.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ipclab_services.domains.bundle.services import POOL_SIZE as DB_POOL
from ipclab_services.domains.shop.dbstore import MONGO_POOL_SIZE
from ipclab_services.domains.shop.dbstore import POOL_SIZE as SQL_STORE_POOL
from ipclab_services.limits import IDLE_TIMEOUT_S
from ipclab_services.transports.amqp import PREFETCH
from ipclab_services.transports.coap import POOL_PER_PEER
from ipclab_services.transports.h2c import MAX_STREAMS
from ipclab_services.transports.rest import POOL_IDLE_S, POOL_PER_HOST

from ipclab.paths import REPO_ROOT

DOC = REPO_ROOT / "docs" / "transports.md"
BLOCK = "socket-options"

SERVER, CLIENT = "server", "client"


@dataclass(frozen=True)
class Probes:
    """TCP keep-alive on (SO_KEEPALIVE): seconds idle before the first probe, between probes,
    and probes before the connection is dropped; None where the kernel's value applies
    (``net.ipv4.tcp_keepalive_time``, ``_intvl``, ``_probes``: 7200, 75, 9 by default)."""

    idle_s: int | None = None
    interval_s: int | None = None
    count: int | None = None

    def words(self) -> str:
        if self.idle_s is None:
            return "on, the kernel's timing (first probe after 7200 s idle by default)"
        every = f"every {self.interval_s} s, {self.count} probes"
        return f"on, first probe after {self.idle_s} s idle, {every}"


KERNEL = Probes()  # SO_KEEPALIVE on, the kernel's timing
GO_NET = Probes(15, 15, 9)  # Go's net.Dialer and net.ListenConfig (KeepAliveConfig) defaults


@dataclass(frozen=True)
class Live:
    """Where the live test reads a row: ``role`` of ``stack`` (``broker``, ``database`` for
    its infrastructure, ``loadgen`` for Locust), its connections to ``peer`` (a client row)
    or the ones it accepted (``peer`` None: a server row)."""

    stack: str
    role: str
    peer: str | None = None


@dataclass(frozen=True)
class SocketSetting:
    """One kind of socket: a server's accepted connections or a client's connections."""

    runtime: str
    component: str  # what it is, and which roles run it
    side: str  # SERVER or CLIENT
    library: str
    nodelay: bool | None  # None: not TCP (CoAP's UDP)
    nodelay_by: str  # who sets it, or why it does not matter when off
    keepalive: Probes | None  # None: SO_KEEPALIVE off
    keepalive_by: str
    pool: str  # connections: how many, how reused
    idle: str  # when an idle connection is closed, and by whom
    where: str  # the file that sets or relies on it
    live: tuple[Live, ...] = ()

    def cell_nodelay(self) -> str:
        if self.nodelay is None:
            return "n/a (UDP)"
        return f"**{'on' if self.nodelay else 'off'}**: {self.nodelay_by}"

    def cell_keepalive(self) -> str:
        if self.nodelay is None:
            return "n/a (UDP)"
        return f"{self.keepalive.words() if self.keepalive else 'off'}: {self.keepalive_by}"


_S = f"{IDLE_TIMEOUT_S:g} s"  # the servers' keep-alive idle timeout (services/limits.py)
UVLOOP = "uvloop's default, on every TCP transport it makes (`handles/tcp.pyx`)"
GO = "Go's default, on every `TCPConn` of package net"

PYTHON: tuple[SocketSetting, ...] = (
    SocketSetting(
        runtime="Python",
        component="HTTP/1.1 server: every gateway's front, REST and AcmeAir services, "
        "payload services",
        side=SERVER,
        library="uvicorn 0.54 + httptools (GuardedHttpTools)",
        nodelay=True,
        nodelay_by=UVLOOP,
        keepalive=None,
        keepalive_by="uvicorn sets none",
        pool="one connection per client, no limit, backlog 4096",
        idle=f"{_S} between requests (`timeout_keep_alive` = `limits.IDLE_TIMEOUT_S`)",
        where="services/asgi.py",
        live=(
            Live("acmeair-http1", "gateway"),
            Live("acmeair-http1", "auth"),
            Live("payload-http", "data"),
            Live("shop-rest", "product-info"),
        ),
    ),
    SocketSetting(
        runtime="Python",
        component="HTTP/1.1 relay server: the Python adapters' egress, the REST ingress",
        side=SERVER,
        library="aiohttp 3.14 low-level server",
        nodelay=True,
        nodelay_by=UVLOOP + "; aiohttp's protocol sets it too",
        keepalive=KERNEL,
        keepalive_by="aiohttp's `tcp_keepalive=True`, stated in `serve_relay`",
        pool="one connection per client, no limit, backlog 4096",
        idle=f"{_S} (`keepalive_timeout` = `limits.IDLE_TIMEOUT_S`; aiohttp's own is 3630 s)",
        where="services/transports/rest.py",
        live=(Live("acmeair-http1", "egress"), Live("acmeair-http1", "auth-ingress")),
    ),
    SocketSetting(
        runtime="Python",
        component="REST client: gateway to services (shop-rest, shop-rest-seq)",
        side=CLIENT,
        library="aiohttp 3.14 `ClientSession`",
        nodelay=True,
        nodelay_by=UVLOOP + "; aiohttp's protocol sets it too",
        keepalive=None,
        keepalive_by="aiohttp sets none",
        pool=f"keep-alive pool of up to {POOL_PER_HOST} per service (`POOL_PER_HOST`), "
        "no total limit",
        idle=f"{POOL_IDLE_S:g} s (`POOL_IDLE_S`: aiohttp's default, stated), before the server's",
        where="services/transports/rest.py",
        live=(Live("shop-rest", "gateway", "product-info"),),
    ),
    SocketSetting(
        runtime="Python",
        component="HTTP/1.1 relay client: AcmeAir gateway to egress, REST egress to ingress, "
        "every ingress to its service",
        side=CLIENT,
        library="aiohttp 3.14 `ClientSession` (no cookie jar)",
        nodelay=True,
        nodelay_by=UVLOOP + "; aiohttp's protocol sets it too",
        keepalive=None,
        keepalive_by="aiohttp sets none",
        pool=f"keep-alive pool of up to {POOL_PER_HOST} per peer (`POOL_PER_HOST`)",
        idle=f"{POOL_IDLE_S:g} s (`POOL_IDLE_S`)",
        where="services/transports/rest.py",
        live=(
            Live("acmeair-http1", "gateway", "egress"),
            Live("acmeair-http1", "egress", "auth-ingress"),
            Live("acmeair-http1", "auth-ingress", "auth"),
            Live("acmeair-h2c", "auth-ingress", "auth"),
        ),
    ),
    SocketSetting(
        runtime="Python",
        component="payload edge service to data service",
        side=CLIENT,
        library="aiohttp 3.14 `ClientSession`",
        nodelay=True,
        nodelay_by=UVLOOP + "; aiohttp's protocol sets it too",
        keepalive=None,
        keepalive_by="aiohttp sets none",
        pool="keep-alive pool of up to 100 connections in all (`limit=100`; one peer)",
        idle=f"{POOL_IDLE_S:g} s (`POOL_IDLE_S`)",
        where="services/domains/payload/http.py",
        live=(Live("payload-http", "gateway", "data"),),
    ),
    SocketSetting(
        runtime="Python",
        component="gRPC server: shop and bundle services",
        side=SERVER,
        library="grpc.aio (grpcio 1.85)",
        nodelay=True,
        nodelay_by="grpc core's, on every socket it opens or accepts",
        keepalive=None,
        keepalive_by="grpc core sets none; HTTP/2 PINGs after 2 h idle (grpc's server default)",
        pool="one HTTP/2 connection per client channel, streams unlimited (grpc's default)",
        idle="none (a connection lasts until the client closes it)",
        where="services/transports/grpc.py",
        live=(Live("shop-grpc", "product-info"),),
    ),
    SocketSetting(
        runtime="Python",
        component="gRPC client: gateway to services (shop, bundle)",
        side=CLIENT,
        library="grpc.aio channel (grpcio 1.85)",
        nodelay=True,
        nodelay_by="grpc core's",
        keepalive=None,
        keepalive_by="grpc core sets none, nor HTTP/2 PINGs (grpc's client default)",
        pool="one channel, so one HTTP/2 connection, per service, calls multiplexed on it",
        idle="the channel idles after 30 min without calls (grpc's default)",
        where="services/transports/grpc.py",
        live=(
            Live("shop-grpc", "gateway", "product-info"),
            Live("bundle-graphql", "gateway", "person"),
        ),
    ),
    SocketSetting(
        runtime="Python",
        component="h2c server: services (shop-h2c), the h2c ingress adapters",
        side=SERVER,
        library="own asyncio protocol on `h2` 4.4",
        nodelay=True,
        nodelay_by=UVLOOP,
        keepalive=None,
        keepalive_by="none set",
        pool=f"one connection per client, up to {MAX_STREAMS} streams on it (`MAX_STREAMS`)",
        idle="none (a connection lasts until the client closes it)",
        where="services/transports/h2c.py",
        live=(Live("acmeair-h2c", "auth-ingress"),),
    ),
    SocketSetting(
        runtime="Python",
        component="h2c client: gateway to services, the h2c egress adapter",
        side=CLIENT,
        library="own asyncio protocol on `h2` 4.4",
        nodelay=True,
        nodelay_by=UVLOOP,
        keepalive=None,
        keepalive_by="none set",
        pool="one multiplexed connection per peer, opened again after it ends",
        idle="none",
        where="services/transports/h2c.py",
        live=(Live("acmeair-h2c", "egress", "auth-ingress"),),
    ),
    SocketSetting(
        runtime="Python",
        component="AMQP client: gateway and services to the broker",
        side=CLIENT,
        library="aio-pika 10.2 on aiormq",
        nodelay=True,
        nodelay_by=UVLOOP + " (aiormq connects with asyncio's streams)",
        keepalive=None,
        keepalive_by="aiormq sets none; AMQP heartbeat 60 s (aiormq's default)",
        pool=f"one connection per process; services prefetch {PREFETCH} (`PREFETCH`)",
        idle="none (heartbeats keep it open)",
        where="services/transports/amqp.py",
        live=(Live("shop-amqp", "gateway", "broker"), Live("shop-amqp", "product-info", "broker")),
    ),
    SocketSetting(
        runtime="Python",
        component="CoAP client and server (shop-coap, the CoAP adapters)",
        side=CLIENT,
        library="aiocoap 0.4.17",
        nodelay=None,
        nodelay_by="",
        keepalive=None,
        keepalive_by="",
        pool=f"a pool of up to {POOL_PER_PEER} UDP endpoints per peer (`POOL_PER_PEER`), "
        "one exchange in flight each (NSTART 1)",
        idle="none (UDP)",
        where="services/transports/coap.py",
    ),
    SocketSetting(
        runtime="Python",
        component="PostgreSQL client: the bundle services",
        side=CLIENT,
        library="asyncpg 0.32",
        nodelay=True,
        nodelay_by=UVLOOP + "; asyncpg sets it too",
        keepalive=None,
        keepalive_by="asyncpg sets none",
        pool=f"a pool of 1 to {DB_POOL} connections per service process (`POOL_SIZE`)",
        idle="300 s (asyncpg's `max_inactive_connection_lifetime`)",
        where="services/domains/bundle/services.py",
        live=(Live("bundle-graphql", "person", "database"),),
    ),
)

GO_ROWS: tuple[SocketSetting, ...] = (
    SocketSetting(
        runtime="Go",
        component="HTTP/1.1 server: gateway and REST services (shop-*-go)",
        side=SERVER,
        library="net/http (Go 1.26)",
        nodelay=True,
        nodelay_by=GO,
        keepalive=GO_NET,
        keepalive_by="Go's default for accepted connections (`net.ListenConfig`)",
        pool="one connection per client, no limit",
        idle=f"{_S} (`IdleTimeout` = `idleTimeout`, limits.go)",
        where="services/go/limits.go",
        live=(Live("shop-rest-go", "gateway"), Live("shop-rest-go", "product-info")),
    ),
    SocketSetting(
        runtime="Go",
        component="REST client: gateway to services",
        side=CLIENT,
        library="net/http `Transport`",
        nodelay=True,
        nodelay_by=GO,
        keepalive=GO_NET,
        keepalive_by="Go's default (`net.Dialer`)",
        pool="keep-alive pool: `MaxIdleConnsPerHost` and `MaxConnsPerHost` 100 (`poolPerHost`, "
        "rest.py's; Go's default of 2 idle per host would close all but 2 after every burst)",
        idle=f"{POOL_IDLE_S:g} s (`IdleConnTimeout` = `poolIdle`, rest.py's `POOL_IDLE_S`)",
        where="services/go/rest.go",
        live=(Live("shop-rest-go", "gateway", "product-info"),),
    ),
    SocketSetting(
        runtime="Go",
        component="gRPC server: services (shop-grpc-go)",
        side=SERVER,
        library="grpc-go 1.72",
        nodelay=True,
        nodelay_by=GO,
        keepalive=GO_NET,
        keepalive_by="Go's default (`net.Listen`); HTTP/2 PINGs after 2 h idle (grpc-go's default)",
        pool="one HTTP/2 connection per client, streams unlimited (grpc-go's default)",
        idle="none",
        where="services/go/grpc.go",
        live=(Live("shop-grpc-go", "product-info"),),
    ),
    SocketSetting(
        runtime="Go",
        component="gRPC client: gateway to services",
        side=CLIENT,
        library="grpc-go 1.72 `ClientConn`",
        nodelay=True,
        nodelay_by=GO,
        keepalive=KERNEL,
        keepalive_by="grpc-go's dialer sets SO_KEEPALIVE and leaves the timing to the kernel; "
        "no keep-alive PINGs (its default)",
        pool="one `ClientConn`, so one HTTP/2 connection, per service",
        idle="30 min idle (grpc-go's)",
        where="services/go/grpc.go",
        live=(Live("shop-grpc-go", "gateway", "product-info"),),
    ),
    SocketSetting(
        runtime="Go",
        component="AMQP client: gateway and services to the broker",
        side=CLIENT,
        library="amqp091-go 1.10",
        nodelay=True,
        nodelay_by=GO,
        keepalive=GO_NET,
        keepalive_by="Go's default (`net.DialTimeout`); AMQP heartbeat 10 s (amqp091-go's)",
        pool=f"one connection per process; services prefetch {PREFETCH}",
        idle="none (heartbeats)",
        where="services/go/amqp.go",
        live=(Live("shop-amqp-go", "gateway", "broker"), Live("shop-amqp-go", "cart", "broker")),
    ),
)

NODE_KEEPALIVE = Probes(
    15, 1, 10
)  # setKeepAlive(true, 15000): libuv sets 1 s and 10 probes after it
NODE_HTTP = "node:http (Node.js 20)"

NODE_ROWS: tuple[SocketSetting, ...] = (
    SocketSetting(
        runtime="Node.js",
        component="HTTP/1.1 server: gateway and REST services (shop-*-node)",
        side=SERVER,
        library=NODE_HTTP + " `http.createServer`",
        nodelay=True,
        nodelay_by="`noDelay: true` (Node's default, stated)",
        keepalive=NODE_KEEPALIVE,
        keepalive_by="`keepAlive: true`, `keepAliveInitialDelay` 15 s (as Go's first probe); "
        "libuv sets 1 s between probes and 10 probes",
        pool="one connection per client, no limit, backlog 4096",
        idle=f"{_S} (`keepAliveTimeout` = `IDLE_TIMEOUT_MS`, limits.js)",
        where="services/node/lib/limits.js",
        live=(Live("shop-rest-node", "gateway"), Live("shop-rest-node", "product-info")),
    ),
    SocketSetting(
        runtime="Node.js",
        component="REST client: gateway to services",
        side=CLIENT,
        library=NODE_HTTP + " `http.Agent`",
        nodelay=True,
        nodelay_by="`noDelay: true` on the Agent (Node's http client sets it too)",
        keepalive=NODE_KEEPALIVE,
        keepalive_by="`keepAlive: true`, `keepAliveInitialDelay` and `keepAliveMsecs` 15 s; "
        "libuv's 1 s and 10 probes",
        pool=f"keep-alive pool: `maxSockets` and `maxFreeSockets` {POOL_PER_HOST} per service "
        "(`POOL_PER_HOST`, rest.py's), LIFO",
        idle=f"{POOL_IDLE_S:g} s (the Agent's `timeout` = `POOL_IDLE_MS`, rest.py's `POOL_IDLE_S`)",
        where="services/node/lib/rest.js",
        live=(Live("shop-rest-node", "gateway", "product-info"),),
    ),
    SocketSetting(
        runtime="Node.js",
        component="gRPC server: services (shop-grpc-node)",
        side=SERVER,
        library="@grpc/grpc-js 1.14 on node:http2",
        nodelay=True,
        nodelay_by="node:http2's, on every session's socket",
        keepalive=None,
        keepalive_by="grpc-js sets none; HTTP/2 PINGs after 2 h idle (its server default)",
        pool="one HTTP/2 connection per client, streams unlimited (grpc-js's default)",
        idle="none",
        where="services/node/lib/grpc.js",
        live=(Live("shop-grpc-node", "product-info"),),
    ),
    SocketSetting(
        runtime="Node.js",
        component="gRPC client: gateway to services",
        side=CLIENT,
        library="@grpc/grpc-js 1.14 channel",
        nodelay=True,
        nodelay_by="node:http2's",
        keepalive=None,
        keepalive_by="grpc-js sets none, nor keep-alive PINGs (its default)",
        pool="one client, so one channel and one HTTP/2 connection, per service",
        idle="30 min idle (grpc-js's `grpc.client_idle_timeout_ms` default)",
        where="services/node/lib/grpc.js",
        live=(Live("shop-grpc-node", "gateway", "product-info"),),
    ),
    SocketSetting(
        runtime="Node.js",
        component="AMQP client: gateway and services to the broker",
        side=CLIENT,
        library="amqplib 2.3",
        nodelay=True,
        nodelay_by="`noDelay: true` in the socket options (`SOCKET`)",
        keepalive=NODE_KEEPALIVE,
        keepalive_by="`keepAlive: true`, `keepAliveDelay` 15 s (libuv's 1 s and 10 probes); AMQP "
        "heartbeat: the broker's 60 s (amqplib asks for none)",
        pool=f"one connection per process; services prefetch {PREFETCH}",
        idle="none (heartbeats)",
        where="services/node/lib/amqp.js",
        live=(
            Live("shop-amqp-node", "gateway", "broker"),
            Live("shop-amqp-node", "cart", "broker"),
        ),
    ),
)

JVM_ROWS: tuple[SocketSetting, ...] = (
    SocketSetting(
        runtime="JVM",
        component="HTTP/1.1 server: payload data and edge services (payload-http-jvm)",
        side=SERVER,
        library="Quarkus 3.33 / Vert.x on OpenJDK 17",
        nodelay=True,
        nodelay_by="Vert.x's default (`tcpNoDelay` true; Quarkus does not change it)",
        keepalive=None,
        keepalive_by="Vert.x's default (`tcpKeepAlive` false)",
        pool="one connection per client, no limit",
        idle="30 min (`quarkus.http.idle-timeout`, Quarkus's default, stated): Vert.x counts a "
        f"request still being answered as idle, so not the others' {_S}",
        where="services/java/payload/src/main/resources/application.properties",
        live=(Live("payload-http-jvm", "gateway"), Live("payload-http-jvm", "data")),
    ),
    SocketSetting(
        runtime="JVM",
        component="HTTP/1.1 client: edge to data service",
        side=CLIENT,
        library="JDK `java.net.http.HttpClient` (OpenJDK 17)",
        nodelay=True,
        nodelay_by="the JDK's (`PlainHttpConnection` sets it)",
        keepalive=None,
        keepalive_by="the JDK sets none",
        pool="keep-alive pool, unbounded (`jdk.httpclient.connectionPoolSize` 0, "
        "the JDK's default)",
        idle="1200 s (`jdk.httpclient.keepalive.timeout`, JDK 17's default), before the server's",
        where="services/java/payload/src/main/java/ipclab/payload/EdgeService.java",
        live=(Live("payload-http-jvm", "gateway", "data"),),
    ),
)

NATIVE_ROWS: tuple[SocketSetting, ...] = (
    SocketSetting(
        runtime="nginx",
        component="native REST adapters, connections accepted (egress, ingress)",
        side=SERVER,
        library="nginx 1.22",
        nodelay=True,
        nodelay_by="`tcp_nodelay on` (nginx's default, stated): set when a connection "
        "turns keep-alive, after its first answer, which nginx writes in one `writev`",
        keepalive=None,
        keepalive_by="`so_keepalive` not set",
        pool="one connection per client, 4096 connections per worker, one worker",
        idle=f"{_S} (`keepalive_timeout`), 10^6 requests per connection",
        where="services/adapters/native.py",
        live=(Live("acmeair-http1-nginx", "egress"), Live("acmeair-http1-nginx", "auth-ingress")),
    ),
    SocketSetting(
        runtime="nginx",
        component="native REST adapters, upstream (egress to ingress, ingress to service)",
        side=CLIENT,
        library="nginx 1.22",
        nodelay=False,
        nodelay_by="nginx sets TCP_NODELAY upstream only when proxying unbuffered or "
        "upgraded, and no directive sets it; each request leaves in one `writev` (the body is "
        "read whole first: `proxy_request_buffering`), so Nagle holds nothing",
        keepalive=None,
        keepalive_by="`proxy_socket_keepalive` not set",
        pool="an `upstream` pool keeping 128 idle connections (`NGINX_UPSTREAM_KEEPALIVE`), "
        "busy ones unlimited",
        idle="60 s (`keepalive_timeout` in the upstream), before the peer's",
        where="services/adapters/native.py",
        live=(
            Live("acmeair-http1-nginx", "egress", "auth-ingress"),
            Live("acmeair-http1-nginx", "auth-ingress", "auth"),
        ),
    ),
    SocketSetting(
        runtime="nghttpx",
        component="native h2c adapters, frontend (egress HTTP/1.1, ingress h2c)",
        side=SERVER,
        library="nghttpx 1.52",
        nodelay=True,
        nodelay_by="nghttpx's, on every connection",
        keepalive=None,
        keepalive_by="nghttpx sets none",
        pool="one connection per client; HTTP/2: 100 streams (its default)",
        idle="1 min (`frontend-keep-alive-timeout`, its default)",
        where="services/adapters/native.py",
        live=(Live("acmeair-h2c-nghttpx", "egress"), Live("acmeair-h2c-nghttpx", "auth-ingress")),
    ),
    SocketSetting(
        runtime="nghttpx",
        component="native h2c adapters, backend (egress to ingress h2, ingress to service)",
        side=CLIENT,
        library="nghttpx 1.52",
        nodelay=True,
        nodelay_by="nghttpx's",
        keepalive=None,
        keepalive_by="nghttpx sets none",
        pool="HTTP/2: one connection per backend, as many streams as the peer allows (100); "
        "HTTP/1.1: a keep-alive "
        "pool, unlimited (`backend-connections-per-frontend` 0)",
        idle="60 s (`backend-keep-alive-timeout`)",
        where="services/adapters/native.py",
        live=(
            Live("acmeair-h2c-nghttpx", "egress", "auth-ingress"),
            Live("acmeair-h2c-nghttpx", "auth-ingress", "auth"),
        ),
    ),
)

OTHER_ROWS: tuple[SocketSetting, ...] = (
    SocketSetting(
        runtime="RabbitMQ",
        component="the broker (private node or container)",
        side=SERVER,
        library="RabbitMQ 3.10",
        nodelay=True,
        nodelay_by="RabbitMQ's default (`tcp_listen_options` nodelay true)",
        keepalive=None,
        keepalive_by="RabbitMQ's default (keepalive false); it proposes a 60 s heartbeat, "
        "the clients choose theirs",
        pool="one connection per client",
        idle="none (heartbeats)",
        where="src/ipclab/backends/broker.py",
        live=(Live("shop-amqp", "broker"), Live("shop-amqp-go", "broker")),
    ),
    SocketSetting(
        runtime="PostgreSQL",
        component="the bundle database",
        side=SERVER,
        library="PostgreSQL 15",
        nodelay=True,
        nodelay_by="PostgreSQL's, on every connection",
        keepalive=KERNEL,
        keepalive_by="PostgreSQL's (`tcp_keepalives_idle` 0)",
        pool="one backend process each",
        idle="none",
        where="src/ipclab/backends/postgres.py",
        live=(Live("bundle-graphql", "database"),),
    ),
    SocketSetting(
        runtime="Locust",
        component="the load generator's users (every study's users module)",
        side=CLIENT,
        library="Locust 2.47 `FastHttpUser` (geventhttpclient 2.6)",
        nodelay=False,
        nodelay_by="never set (gevent's sockets, geventhttpclient sets none); every request "
        "leaves in one write (`sendall(head + body)` for the bytes bodies every users "
        "module sends), so Nagle holds nothing",
        keepalive=None,
        keepalive_by="none set",
        pool="one keep-alive connection per user (a pool of up to 10, `concurrency`; a user has "
        "one request in flight)",
        idle=f"none (the gateway's {_S} applies)",
        where="src/ipclab/studies/*/users*.py",
        live=(Live("acmeair-http1", "loadgen", "gateway"),),
    ),
)

# The shop's services' clients of their stores (``--store db``): the same pools and options
# in every runtime, Python's the reference. Not in the live test's stacks (they start without
# stores): tests/test_stores.py reads them on the db stacks' live sockets.
PYMONGO_KEEPALIVE = Probes(120, 10, 9)  # pymongo caps the kernel's 7200/75/9 at 120/10/9
_MONGO_POOL = f"up to {MONGO_POOL_SIZE} per service process (`MONGO_POOL_SIZE`, pymongo's default)"
_SQL_POOL = f"up to {SQL_STORE_POOL} per shipping process (`POOL_SIZE`), every one kept idle"
_STORE_IDLE = "never (no idle limit; the store closes none)"
STORE_ROWS: tuple[SocketSetting, ...] = (
    SocketSetting(
        runtime="Python",
        component="MongoDB-wire store client: product-info, reviews, recommendations, cart "
        "to FerretDB",
        side=CLIENT,
        library="pymongo 4.20 `AsyncMongoClient`",
        nodelay=True,
        nodelay_by="pymongo's, on every connection it opens",
        keepalive=PYMONGO_KEEPALIVE,
        keepalive_by="pymongo's (`_set_keepalive_times`)",
        pool=_MONGO_POOL + "; a monitor connection beside them",
        idle=_STORE_IDLE,
        where="services/domains/shop/dbstore.py",
    ),
    SocketSetting(
        runtime="Python",
        component="SQL store client: shipping to MariaDB",
        side=CLIENT,
        library="aiomysql 0.3 pool",
        nodelay=True,
        nodelay_by="aiomysql's, on every connection",
        keepalive=KERNEL,
        keepalive_by="aiomysql's SO_KEEPALIVE",
        pool=_SQL_POOL + " (aiomysql's `maxsize`; one opened with the pool, `minsize` 1)",
        idle=_STORE_IDLE,
        where="services/domains/shop/dbstore.py",
    ),
    SocketSetting(
        runtime="Go",
        component="MongoDB-wire store client: as Python's",
        side=CLIENT,
        library="go.mongodb.org/mongo-driver/v2 2.8",
        nodelay=True,
        nodelay_by=GO,
        keepalive=PYMONGO_KEEPALIVE,
        keepalive_by="its dialer's `KeepAliveConfig` (`mongoKeepAlive`), pymongo's stated",
        pool=_MONGO_POOL + "; monitor connections beside them",
        idle=_STORE_IDLE,
        where="services/go/stores.go",
    ),
    SocketSetting(
        runtime="Go",
        component="SQL store client: as Python's",
        side=CLIENT,
        library="github.com/go-sql-driver/mysql 1.9 + database/sql",
        nodelay=True,
        nodelay_by=GO,
        keepalive=KERNEL,
        keepalive_by="its dialer's `KeepAliveConfig` (`mysqlKeepAlive`: the kernel's timing) "
        "and the driver's `SetKeepAlive(true)`",
        pool=_SQL_POOL + " (`SetMaxOpenConns`, `SetMaxIdleConns`; opened on demand)",
        idle=_STORE_IDLE,
        where="services/go/stores.go",
    ),
    SocketSetting(
        runtime="Node.js",
        component="MongoDB-wire store client: as Python's",
        side=CLIENT,
        library="mongodb 7.8",
        nodelay=True,
        nodelay_by="the driver's `noDelay` default",
        keepalive=Probes(120, 1, 10),
        keepalive_by="the driver's: `setKeepAlive(true, 120000)` (libuv's 1 s and 10 probes "
        "after it; Node cannot set pymongo's 10 s and 9)",
        pool=_MONGO_POOL + "; monitor connections beside them",
        idle=_STORE_IDLE,
        where="services/node/lib/stores.js",
    ),
    SocketSetting(
        runtime="Node.js",
        component="SQL store client: as Python's",
        side=CLIENT,
        library="mysql2 3.24 pool",
        nodelay=True,
        nodelay_by="mysql2's `setNoDelay(true)`",
        keepalive=KERNEL,
        keepalive_by="mysql2's `enableKeepAlive`, `keepAliveInitialDelay` 0 (the kernel's idle)",
        pool=_SQL_POOL + " (`connectionLimit`, `maxIdle`; opened on demand)",
        idle=_STORE_IDLE,
        where="services/node/lib/stores.js",
    ),
)

SETTINGS: tuple[SocketSetting, ...] = (
    PYTHON + GO_ROWS + NODE_ROWS + JVM_ROWS + NATIVE_ROWS + OTHER_ROWS + STORE_ROWS
)


def live_stacks() -> tuple[str, ...]:
    """The stacks the live test starts, in the order the rows first name them."""
    return tuple(dict.fromkeys(x.stack for row in SETTINGS for x in row.live))


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown(rows: tuple[SocketSetting, ...] = SETTINGS) -> str:
    """The table of docs/transports.md's "Socket options per runtime"."""
    lines = [
        "| runtime | socket | side | library | TCP_NODELAY | TCP keep-alive | connections | "
        "idle connection closed after | in |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cells = (
            r.runtime, r.component, r.side, r.library, r.cell_nodelay(),
            r.cell_keepalive(), r.pool, r.idle, f"`{r.where}`",
        )  # fmt: skip
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def write_doc(doc: Path = DOC) -> None:
    """Fill the generated block of docs/transports.md from :data:`SETTINGS`."""
    from ipclab.findings import fill_blocks

    fill_blocks(doc, {BLOCK: markdown()})
