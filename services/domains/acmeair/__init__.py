"""AcmeAir, as a small stand-in: a gateway and the auth, flight, booking and customer
services of IBM's AcmeAir microservices benchmark.

What the measurements depend on is kept: a form-urlencoded login answering ``text/plain``
"logged in" with session cookies, ``queryflights`` answering several KB of JSON, bookings
and profiles, and every authenticated request validated by a call to auth over HTTP/1.1.
As in AcmeAir, every service is an HTTP/1.1 app of its own (``routes.py``) and the gateway
a reverse proxy (``gateway.py``) that sends each request to the egress protocol adapter
beside it (``ipclab_services.adapters``). Data: ``data.py``; operations: ``services.py``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ipclab_services.domains.acmeair import data, routes, services, validator
from ipclab_services.domains.acmeair.services import Validate
from ipclab_services.transports.base import ServiceDef

SERVICES = ("auth", "flight", "booking", "customer")
__all__ = ["SERVICES", "build_services", "serve_role"]


def build_services(validate: Validate | None = None) -> dict[str, ServiceDef]:
    """The four services on the environment's data; booking and customer validate
    sessions with ``validate``, by default over HTTP/1.1 at auth's ``IPCLAB_ADDR_AUTH``."""
    check = validate if validate is not None else validator.from_env(os.environ)
    return services.build(data.AcmeAirConfig.from_env(), check)


async def serve_role(
    role: str, names: tuple[str, ...], host: str, port: int, env: Mapping[str, str]
) -> None:
    """Serve ``role``: the gateway (a proxy to ``IPCLAB_ADDR_EGRESS``) or a service."""
    from ipclab_services.domains import GatewaySettings
    from ipclab_services.domains.acmeair import gateway
    from ipclab_services.fronts import http_json
    from ipclab_services.transports import rest

    if role == env.get("IPCLAB_GATEWAY", "gateway"):
        egress = await rest.connect_relay(env["IPCLAB_ADDR_EGRESS"])
        try:
            handler = gateway.handler(egress, names, GatewaySettings.from_env())
            await http_json.serve(handler, host, port)
        finally:
            await egress.close()
        return
    if role not in names or role not in SERVICES:
        raise SystemExit(f"unknown role {role!r}; this stack's services: {', '.join(names)}")
    defs = services.build(data.AcmeAirConfig.from_env(env), validator.from_env(env))
    # no Server-Timing: AcmeAir's services send none, and it would cross the measured hop
    await http_json.serve(routes.handler(defs[role]), host, port, timing=False)
