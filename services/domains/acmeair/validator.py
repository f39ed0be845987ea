"""How booking and customer validate a session: a call to auth over plain HTTP/1.1.

As in AcmeAir's microservices, whatever protocol carries the gateway's calls, a service
asks auth ``GET /auth/acmeair-as/rest/api/login/validate?session=...`` directly over
HTTP/1.1 keep-alive (the REST transport's aiohttp client, not through the adapters) at
auth's address, ``IPCLAB_ADDR_AUTH``.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import quote

from ipclab_services import wire
from ipclab_services.domains.acmeair.routes import api
from ipclab_services.domains.acmeair.services import Validate
from ipclab_services.transports.base import HttpRequest, Relay
from ipclab_services.transports.rest import connect_relay

AUTH_ADDR = "IPCLAB_ADDR_AUTH"
TIMEOUT_S = 2.0


def over_http(address: str, timeout_s: float = TIMEOUT_S) -> Validate:
    """A validator calling auth at ``address`` (``host:port``) over HTTP/1.1; the client
    (one keep-alive pool) is made on first use, inside the running event loop."""
    relays: list[Relay] = []
    path = f"{api('auth')}/login/validate?session="

    async def validate(session: str) -> str:
        if not relays:
            relays.append(await connect_relay(address))
        answer = await relays[0].request(HttpRequest("GET", path + quote(session)), timeout_s)
        return str(wire.outcome("auth", answer.status, answer.body)["customer"])

    return validate


def from_env(env: Mapping[str, str]) -> Validate:
    address = env.get(AUTH_ADDR, "")
    if not address:

        async def missing(session: str) -> str:
            raise RuntimeError(f"{AUTH_ADDR} is not set: this service cannot reach auth")

        return missing
    return over_http(address)
