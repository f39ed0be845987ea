"""Start one component of a stack: ``python -m ipclab_services.serve``.

Configured by environment only (the harness's ``StackSpec.role_env`` writes it), so the
local and docker backends start every role the same way, and this package needs nothing
from the harness:
- ``IPCLAB_ROLE``: this component (the gateway or a service), ``IPCLAB_GATEWAY``: the
  gateway's role name; ``IPCLAB_SERVICES``: the stack's services, comma-separated;
- ``IPCLAB_DOMAIN``, ``IPCLAB_FRONT``, ``IPCLAB_TRANSPORT``: the packages under
  ``domains/``, ``fronts/`` and ``transports/`` that make the stack;
- ``IPCLAB_HOST``/``IPCLAB_PORT``: where to listen (amqp services listen on no port);
- ``IPCLAB_ADDR_<ROLE>``: ``host:port`` of each service, for the gateway of rest/grpc
  stacks (role upper-cased, ``-`` -> ``_``); ``IPCLAB_AMQP_URL``: the broker;
- ``IPCLAB_HTTP_PORT``: a service that other services call over plain HTTP/1.1 whatever
  the transport (the stack's ``http_peers``) listens there too, with the REST transport;
- ``IPCLAB_GC_EVENTS=1``: every major (gen-2) garbage collection is logged (``gcwatch``);
- the domain's data (e.g. ``IPCLAB_SEED``) and the gateway's strategy
  (``IPCLAB_CALL_TIMEOUT_S``, ``IPCLAB_SEQUENTIAL``; see ``domains.GatewaySettings``).

A domain whose roles are whole apps rather than services behind a front and a transport
(the payload domain: the protocol is what it measures) defines ``serve_role`` and is
started by it, from the same environment.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys

import uvloop
from ipclab_services import domains, fronts, gcwatch, transports
from ipclab_services.transports.base import ConnectConfig, ServeConfig


def addr_env(role: str) -> str:
    return "IPCLAB_ADDR_" + role.upper().replace("-", "_")


async def main() -> None:
    env = os.environ
    gcwatch.install_from_env()
    role = env["IPCLAB_ROLE"]
    names = tuple(s for s in env["IPCLAB_SERVICES"].split(",") if s)
    host = env.get("IPCLAB_HOST", "127.0.0.1")
    port = int(env.get("IPCLAB_PORT", "0"))
    amqp_url = env.get("IPCLAB_AMQP_URL", "")
    domain = domains.load(env["IPCLAB_DOMAIN"])
    if hasattr(domain, "serve_role"):  # a domain whose roles are whole apps of their own
        await domain.serve_role(role, names, host, port, env)
        return
    transport = transports.load(env["IPCLAB_TRANSPORT"])
    defs = domain.build_services()

    if role == env.get("IPCLAB_GATEWAY", "gateway"):
        addresses = {s: env[addr_env(s)] for s in names if addr_env(s) in env}
        clients = await transport.connect(
            [defs[s] for s in names], ConnectConfig(addresses, amqp_url)
        )
        try:
            front = fronts.load(env["IPCLAB_FRONT"])
            settings = domains.GatewaySettings.from_env()
            await front.serve(front.make_handler(domain, clients, names, settings), host, port)
        finally:
            await clients.close()
        return

    if role not in names or role not in defs:
        sys.exit(f"unknown role {role!r}; this stack's services: {', '.join(names)}")
    served = [transport.serve(defs[role], ServeConfig(host, port, amqp_url))]
    if env.get("IPCLAB_HTTP_PORT"):
        http = transports.load("rest")
        served.append(http.serve(defs[role], ServeConfig(host, int(env["IPCLAB_HTTP_PORT"]))))
    task = asyncio.ensure_future(asyncio.gather(*served))
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, task.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await task


if __name__ == "__main__":
    uvloop.run(main())
