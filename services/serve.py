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
- ``IPCLAB_ADAPTER``: the role is a protocol adapter beside the gateway (``egress``) or a
  service (``ingress``), started by ``ipclab_services.adapters`` (its environment is
  described there);
- ``IPCLAB_GC_EVENTS=1``: every major (gen-2) garbage collection is logged (``gcwatch``);
- ``IPCLAB_RECONNECT``: the clients' reconnect settings, ``default`` or ``tuned``
  (``reconnect``);
- the domain's data (e.g. ``IPCLAB_SEED``) and the gateway's strategy
  (``IPCLAB_CALL_TIMEOUT_S``, ``IPCLAB_SEQUENTIAL``; see ``domains.GatewaySettings``).

A domain whose roles are whole apps rather than services behind a front and a transport
(the payload domain: the protocol is what it measures) defines ``serve_role`` and is
started by it, from the same environment.

Once a gateway or a service accepts calls it prints one line to stderr,
``ipclab-ready {"t": <unix s>, "role": "<role>"}``, which the backends keep as the role's
log: the harness times a restarted component's start from it (docs/availability.md,
"Recovery, decomposed").
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time

import uvloop
from ipclab_services import adapters, domains, fronts, gcwatch, transports
from ipclab_services.adapters import addr_env
from ipclab_services.transports.base import ConnectConfig, ServeConfig

READY = "ipclab-ready "


async def announce(ready: asyncio.Event, role: str) -> None:
    """Print the ``ipclab-ready`` line once ``ready`` is set."""
    await ready.wait()
    sys.stderr.write(READY + json.dumps({"t": round(time.time(), 6), "role": role}) + "\n")
    sys.stderr.flush()


async def main() -> None:
    env = os.environ
    gcwatch.install_from_env()
    role = env["IPCLAB_ROLE"]
    names = tuple(s for s in env["IPCLAB_SERVICES"].split(",") if s)
    host = env.get("IPCLAB_HOST", "127.0.0.1")
    port = int(env.get("IPCLAB_PORT", "0"))
    amqp_url = env.get("IPCLAB_AMQP_URL", "")
    if env.get("IPCLAB_ADAPTER"):  # a protocol adapter beside the gateway or a service
        await adapters.serve(env)
        return
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
            ready = asyncio.Event()
            announced = asyncio.ensure_future(announce(ready, role))
            handler = front.make_handler(domain, clients, names, settings)
            try:
                await front.serve(handler, host, port, ready)
            finally:
                announced.cancel()
        finally:
            await clients.close()
        return

    if role not in names or role not in defs:
        sys.exit(f"unknown role {role!r}; this stack's services: {', '.join(names)}")
    config = ServeConfig(host, port, amqp_url)
    announced = asyncio.ensure_future(announce(config.ready, role))
    task = asyncio.ensure_future(transport.serve(defs[role], config))
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, task.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await task
    announced.cancel()


if __name__ == "__main__":
    uvloop.run(main())
