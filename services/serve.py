"""Start one component of a stack: ``python -m ipclab_services.serve``.

Configured by environment only, so the local and docker backends start it the same way:
- ``IPCLAB_STACK`` (e.g. ``shop-rest``) and ``IPCLAB_ROLE`` (``gateway`` or a service);
- ``IPCLAB_HOST``/``IPCLAB_PORT``: where to listen (amqp services listen on no port);
- ``IPCLAB_ADDR_<ROLE>``: ``host:port`` of each service, for the gateway of rest/grpc
  stacks (role upper-cased, ``-`` -> ``_``);
- ``IPCLAB_AMQP_URL``: the broker, for amqp stacks;
- ``IPCLAB_SEED``, ``IPCLAB_CATALOGUE_SIZE``, ``IPCLAB_CUSTOMERS``: the data;
- ``IPCLAB_CALL_TIMEOUT_S``, ``IPCLAB_SEQUENTIAL``: the gateway's strategy.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys

import uvloop
from ipclab_services import transports
from ipclab_services.asgi import serve_http
from ipclab_services.domains.shop import data, gateway, services
from ipclab_services.transports.base import ConnectConfig, ServeConfig

from ipclab.stacks import resolve


def addr_env(role: str) -> str:
    return "IPCLAB_ADDR_" + role.upper().replace("-", "_")


async def main() -> None:
    spec = resolve(os.environ["IPCLAB_STACK"])
    role = os.environ["IPCLAB_ROLE"]
    host = os.environ.get("IPCLAB_HOST", "127.0.0.1")
    port = int(os.environ.get("IPCLAB_PORT", "0"))
    amqp_url = os.environ.get("IPCLAB_AMQP_URL", "")
    transport = transports.load(spec.style)
    defs = services.build(data.ShopConfig.from_env())

    if role == spec.gateway:
        addresses = {} if spec.needs_broker else {s: os.environ[addr_env(s)] for s in spec.services}
        clients = await transport.connect(
            [defs[s] for s in spec.services], ConnectConfig(addresses, amqp_url)
        )
        try:
            await serve_http(
                gateway.app(
                    clients,
                    spec.services,
                    timeout=float(os.environ.get("IPCLAB_CALL_TIMEOUT_S", "2.0")),
                    sequential=os.environ.get("IPCLAB_SEQUENTIAL", "0") == "1",
                ),
                host,
                port,
            )
        finally:
            await clients.close()
        return

    if role not in defs:
        sys.exit(f"unknown role {role!r} for stack {spec.name}; roles: {', '.join(spec.roles)}")
    task = asyncio.create_task(transport.serve(defs[role], ServeConfig(host, port, amqp_url)))
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, task.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await task


if __name__ == "__main__":
    uvloop.run(main())
