"""REST: HTTP/1.1 + JSON. Server: uvicorn + httptools (raw ASGI). Client: aiohttp.

``GET http://host:port/{op}?{field}={value}`` returns the operation's JSON document, or an
error document ``{"error": code, "message": ...}`` with the matching HTTP status. The client
keeps one aiohttp session with keep-alive connection pools for all services. aiohttp was
chosen over httpx by ``bench/transports.py`` (see docs/transports.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import aiohttp
import orjson
from ipclab_services.asgi import json_app, serve_http
from ipclab_services.errors import ServiceError, Timeout, Unavailable, from_code
from ipclab_services.transports.base import ConnectConfig, ServeConfig, ServiceDef

POOL_PER_HOST = 100  # keep-alive connections per service


async def serve(service: ServiceDef, config: ServeConfig) -> None:
    async def route(parts: list[str], query: dict[str, str]) -> tuple[int, Any]:
        if len(parts) != 1 or parts[0] not in service.ops:
            return 404, {"error": "no_such_operation", "message": "/".join(parts)}
        try:
            return 200, await service.invoke(parts[0], query)
        except ServiceError as e:
            return e.http_status, {"error": e.code, "message": str(e)}

    await serve_http(json_app(route), config.host, config.port, config.ready)


class RestClients:
    def __init__(self, addresses: dict[str, str]):
        self._base = {name: f"http://{addr}" for name, addr in addresses.items()}
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, limit_per_host=POOL_PER_HOST),
            json_serialize=lambda o: orjson.dumps(o).decode(),
        )

    async def call(
        self, service: str, op: str, request: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        url = f"{self._base[service]}/{op}"
        params = {k: str(v) for k, v in request.items()}
        try:
            async with self._session.get(
                url, params=params, timeout=aiohttp.ClientTimeout(total=timeout)
            ) as resp:
                body = await resp.read()
        except TimeoutError:
            raise Timeout(f"{service} did not answer within {timeout}s") from None
        except aiohttp.ClientError as e:
            raise Unavailable(f"{service}: {e}") from None
        try:
            doc = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise ServiceError(f"{service}: HTTP {resp.status} with a non-JSON body") from None
        if resp.status != 200:
            raise from_code(doc.get("error", "internal"), doc.get("message", ""))
        return doc

    def stats(self) -> dict[str, Any]:
        return {}

    async def close(self) -> None:
        await self._session.close()
        await asyncio.sleep(0)


async def connect(services: Sequence[ServiceDef], config: ConnectConfig) -> RestClients:
    return RestClients({s.name: config.addresses[s.name] for s in services})
