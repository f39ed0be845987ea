"""How booking and customer validate a session: a call to auth over plain HTTP/1.1.

As in AcmeAir's microservices, whatever protocol carries the gateway's calls, a service
asks auth ``GET /validate?session=...`` over HTTP/1.1 keep-alive (the REST transport's
aiohttp client) at ``IPCLAB_HTTP_ADDR_AUTH`` (auth is the stack's ``http_peers``).
"""

from __future__ import annotations

from collections.abc import Mapping

from ipclab_services.domains.acmeair.services import Validate
from ipclab_services.transports.rest import RestClients

AUTH_HTTP_ADDR = "IPCLAB_HTTP_ADDR_AUTH"  # stacks.http_addr_env("auth")
TIMEOUT_S = 2.0


def over_http(address: str, timeout_s: float = TIMEOUT_S) -> Validate:
    """A validator calling auth at ``address`` (``host:port``) over HTTP/1.1; the client
    (one keep-alive pool) is made on first use, inside the running event loop."""
    clients: list[RestClients] = []

    async def validate(session: str) -> str:
        if not clients:
            clients.append(RestClients({"auth": address}))
        reply = await clients[0].call("auth", "validate", {"session": session}, timeout_s)
        return str(reply["customer"])

    return validate


def from_env(env: Mapping[str, str]) -> Validate:
    address = env.get(AUTH_HTTP_ADDR, "")
    if not address:

        async def missing(session: str) -> str:
            raise RuntimeError(f"{AUTH_HTTP_ADDR} is not set: this service cannot reach auth")

        return missing
    return over_http(address)
