"""The AcmeAir gateway: an HTTP/1.1 reverse proxy, as the thesis's nginx1.

Every request under ``/<service>/...`` goes on as it came (method, path and query as
sent, end-to-end headers, body) to the egress adapter beside the gateway
(``IPCLAB_ADDR_EGRESS``), which routes it to the service's host; the answer comes back as
it was given (status, ``Content-Type``, ``Set-Cookie``, body) but for the headers the
gateway's own server sets (Date, Server, its time in ``Server-Timing``), as a front proxy
hides the origin's. ``/healthz`` asks every service's ``/<service>/healthz`` the same way:
200 once all answer. The gateway's deadline (``IPCLAB_CALL_TIMEOUT_S``) gives 504.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ipclab_services.domains import GatewaySettings
from ipclab_services.errors import ServiceError
from ipclab_services.fronts import Handler, Reply, Request
from ipclab_services.transports.base import HttpRequest, Relay, end_to_end

#: what the gateway's own server sets: the origin's are hidden, as nginx1's proxy did
_OWN = frozenset({"content-type", "date", "server", "server-timing"})


def handler(egress: Relay, services: tuple[str, ...], settings: GatewaySettings) -> Handler:
    timeout = settings.timeout_s

    async def health(service: str) -> str:
        try:
            answer = await egress.request(
                HttpRequest("GET", f"/{service}/healthz"), min(timeout, 1.0)
            )
        except ServiceError as e:
            return type(e).__name__
        return "ok" if answer.status == 200 else f"HTTP {answer.status}"

    async def route(request: Request) -> tuple[int, Any]:
        if request.path == ["healthz"]:
            status = dict(zip(services, await asyncio.gather(*map(health, services)), strict=True))
            ready = all(v == "ok" for v in status.values())
            return (200 if ready else 503), {"ready": ready, "services": status}
        if not request.path or request.path[0] not in services:
            return 404, {"error": "not_found", "message": "no such path"}
        message = HttpRequest(
            request.method, request.target, end_to_end(request.headers.items()), request.body
        )
        try:
            answer = await egress.request(message, timeout)
        except ServiceError as e:
            return e.http_status, {"error": e.code, "message": str(e)}
        kind = next((v for k, v in answer.headers if k == "content-type"), "")
        rest = tuple((k, v) for k, v in answer.headers if k not in _OWN)
        return answer.status, Reply(answer.body, kind, rest)

    return route
