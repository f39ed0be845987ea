"""The Python protocol adapters, built from the transport modules' relay level.

- **egress** (beside the gateway): an HTTP/1.1 server (the REST transport's relay server,
  aiohttp's) whose requests go, by their first path segment, to that service's ingress
  adapter over ``IPCLAB_TRANSPORT``'s relay client (a keep-alive pool, one multiplexed h2c
  connection, or a pool of CoAP endpoints per service).
- **ingress** (beside a service): ``IPCLAB_TRANSPORT``'s relay server, whose requests go to
  the service over HTTP/1.1 (the REST transport's aiohttp client, keep-alive).

An adapter answers 404 for a path naming no service, 502 when the next hop cannot be
reached and 504 when it does not answer within ``IPCLAB_RELAY_TIMEOUT_S`` (default 30 s,
longer than any gateway deadline, so the gateway's own deadline decides).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Mapping

from ipclab_services import transports
from ipclab_services.adapters import EGRESS, INGRESS_SUFFIX, addr_env, ingress
from ipclab_services.errors import Timeout, Unavailable
from ipclab_services.transports.base import HttpRequest, HttpResponse, Relay, ServeConfig

TEXT = (("content-type", "text/plain; charset=utf-8"),)


def _error(status: int, why: str) -> HttpResponse:
    return HttpResponse(status, TEXT, why.encode())


async def forward(relay: Relay, request: HttpRequest, timeout: float) -> HttpResponse:
    """``request`` through ``relay``; a failed hop becomes a 502 or 504 answer."""
    try:
        return await relay.request(request, timeout)
    except Timeout as e:
        return _error(504, str(e))
    except Unavailable as e:
        return _error(502, str(e))


def service_of(target: str) -> str:
    """The service a request is for: its path's first segment."""
    return target.lstrip("/").partition("/")[0].partition("?")[0]


async def serve(env: Mapping[str, str]) -> None:
    role = env["IPCLAB_ROLE"]
    network = transports.load(env["IPCLAB_TRANSPORT"])
    http = transports.load("rest")
    timeout = float(env.get("IPCLAB_RELAY_TIMEOUT_S", "30"))
    config = ServeConfig(env.get("IPCLAB_HOST", "127.0.0.1"), int(env["IPCLAB_PORT"]))
    services = tuple(s for s in env["IPCLAB_SERVICES"].split(",") if s)
    if role == EGRESS:
        relays: dict[str, Relay] = {
            s: await network.connect_relay(env[addr_env(ingress(s))]) for s in services
        }

        async def handler(request: HttpRequest) -> HttpResponse:
            relay = relays.get(service_of(request.target))
            if relay is None:
                return _error(404, f"no service at {request.target}")
            return await forward(relay, request, timeout)

        server = http.serve_relay(handler, config)
    elif role.endswith(INGRESS_SUFFIX) and role.removesuffix(INGRESS_SUFFIX) in services:
        upstream = await http.connect_relay(env[addr_env(role.removesuffix(INGRESS_SUFFIX))])
        relays = {role: upstream}

        async def handler(request: HttpRequest) -> HttpResponse:
            return await forward(upstream, request, timeout)

        server = network.serve_relay(handler, config)
    else:
        raise SystemExit(f"{role!r} is no adapter role of services {', '.join(services)}")
    task = asyncio.ensure_future(server)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, task.cancel)
    try:
        with contextlib.suppress(asyncio.CancelledError):
            await task
    finally:
        for relay in relays.values():
            await relay.close()
