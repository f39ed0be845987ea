"""Payloads of two shapes for measuring data interchange formats: a flat list of users and
a nested list of payments (payment -> transactions -> items and a shipping address).

``data`` builds them from a seed, once per (structure, count), both as protobuf messages
(``proto/users.proto``, ``proto/payments.proto``) and as JSON-ready documents whose keys are
the proto field names; ``codec`` encodes and decodes them (JSON with the standard library
or orjson, protobuf with whichever backend the ``protobuf`` package runs on).

``http`` holds the two roles as ASGI apps: the data service (``GET`` and ``POST
/{format}/{structure}``, gzip with a bound on inflated size, a cache of serialised answers,
``Server-Timing``) and the edge service, the stack's gateway, that calls it over HTTP/1.1.
The format is chosen per request, so one stack serves both; :func:`serve_role` starts a
role (``services/serve.py`` calls it for this domain).
"""

from __future__ import annotations

from collections.abc import Mapping

DATA = "data"  # the one service; the gateway is the edge service
SERVICES = (DATA,)


async def serve_role(
    role: str, services: tuple[str, ...], host: str, port: int, env: Mapping[str, str]
) -> None:
    """Serve ``role`` (``data`` or the gateway, the edge service) on ``host:port``."""
    from ipclab_services.asgi import serve_http
    from ipclab_services.domains.payload import http

    if role == env.get("IPCLAB_GATEWAY", "gateway"):
        upstream = env.get("IPCLAB_ADDR_" + DATA.upper())
        if not upstream:
            raise SystemExit(f"the edge service needs IPCLAB_ADDR_{DATA.upper()} (host:port)")
        edge = http.EdgeService("http://" + upstream, float(env.get("IPCLAB_CALL_TIMEOUT_S", "30")))
        try:
            await serve_http(edge, host, port)
        finally:
            await edge.close()
        return
    if role != DATA or DATA not in services:
        raise SystemExit(f"unknown role {role!r} of the payload domain; its service: {DATA}")
    await serve_http(http.DataService(http.Settings.from_env(dict(env))), host, port)
