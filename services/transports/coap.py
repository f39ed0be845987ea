"""CoAP (RFC 7252) over UDP with aiocoap on both sides.

``GET coap://host:port/{op}?{field}={value}`` (one Uri-Query option per field) answers
2.05 Content with the operation's JSON document, byte-identical to REST's (Content-Format
50, application/json), or the error document ``{"error": code, "message": ...}`` under
the CoAP code of the HTTP status (4.04, 4.00, 5.03, 5.04; ``wire.py``).

- Confirmable requests, piggybacked responses. A document larger than one block (1024
  bytes) travels block-wise (RFC 7959, Block2): aiocoap slices it on the server and
  reassembles it on the client, one request per block.
- One client context (one UDP socket) per service; aiocoap gives every request its own
  token and matches responses by token and peer, so many calls can be in flight at once
  (``tests/test_transports_h2c_coap.py`` checks 64 of mixed sizes). The client keeps no
  cookie jar: nothing is carried from one response to the next request.
- The call deadline cancels the request (aiocoap stops retransmitting) and raises
  ``Timeout``; an unreachable peer (ICMP port unreachable, retransmissions exhausted)
  raises ``Unavailable``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any

import aiocoap
import aiocoap.error
import aiocoap.resource
from aiocoap.numbers.codes import Code
from ipclab_services import wire
from ipclab_services.errors import Timeout, Unavailable
from ipclab_services.transports.base import ConnectConfig, ServeConfig, ServiceDef

JSON = 50  # Content-Format application/json (RFC 7252, 12.3)


def code_of(status: int) -> Code:
    """The CoAP code of an HTTP status: 200 -> 2.05 Content, 404 -> 4.04, 503 -> 5.03 ..."""
    return Code.CONTENT if status == 200 else Code((status // 100) << 5 | status % 100)


def status_of(code: Code) -> int:
    return 200 if code == Code.CONTENT else code.class_ * 100 + (code & 0x1F)


class _Operations(aiocoap.resource.Resource):
    """Every path of the server: the first segment names the operation."""

    def __init__(self, service: ServiceDef) -> None:
        super().__init__()
        self.service = service

    async def render_get(self, request: aiocoap.Message) -> aiocoap.Message:
        query = dict(q.partition("=")[::2] for q in request.opt.uri_query)
        status, body = await wire.answer(self.service, "/".join(request.opt.uri_path), query)
        return aiocoap.Message(code=code_of(status), payload=body, content_format=JSON)


async def serve(service: ServiceDef, config: ServeConfig) -> None:
    context = await aiocoap.Context.create_server_context(
        _Operations(service), bind=(config.host, config.port)
    )
    config.ready.set()
    try:
        await asyncio.Future()  # until cancelled
    finally:
        await context.shutdown()


class CoapClients:
    """One aiocoap client context (one UDP socket) per service.

    Under uvloop an aiocoap socket that has received an ICMP error (the service was down)
    receives nothing more, so a network error replaces that service's context; with one
    context per service the others' calls in flight are not disturbed.
    """

    def __init__(self, addresses: dict[str, str]) -> None:
        self._base = {name: f"coap://{addr}/" for name, addr in addresses.items()}
        self._contexts: dict[str, aiocoap.Context] = {}
        self._renewals: dict[str, asyncio.Task[None]] = {}
        self.renewed = 0

    async def start(self) -> None:
        for service in self._base:
            self._contexts[service] = await aiocoap.Context.create_client_context()

    async def call(
        self, service: str, op: str, request: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        message = aiocoap.Message(code=aiocoap.GET, uri=self._base[service] + op)
        message.opt.uri_query = tuple(f"{k}={v}" for k, v in wire.query_pairs(request))
        context = self._contexts[service]
        try:
            async with asyncio.timeout(timeout):
                response = await context.request(message).response
        except TimeoutError:
            raise Timeout(f"{service} did not answer within {timeout}s") from None
        except aiocoap.error.TimeoutError as e:  # retransmissions exhausted
            raise Timeout(f"{service}: {e}") from None
        except aiocoap.error.Error as e:
            if isinstance(e, aiocoap.error.NetworkError):
                self._renew(service, context)
            raise Unavailable(f"{service}: {e!r}") from None
        return wire.outcome(service, status_of(response.code), response.payload)

    def _renew(self, service: str, broken: aiocoap.Context) -> None:
        if self._contexts.get(service) is not broken or service in self._renewals:
            return

        async def renew() -> None:
            try:
                self._contexts[service] = await aiocoap.Context.create_client_context()
                self.renewed += 1
                with contextlib.suppress(Exception):
                    await broken.shutdown()
            finally:
                self._renewals.pop(service, None)

        self._renewals[service] = asyncio.get_running_loop().create_task(renew())

    def stats(self) -> dict[str, Any]:
        return {"contexts_renewed": self.renewed}

    async def close(self) -> None:
        for task in list(self._renewals.values()):
            with contextlib.suppress(Exception):
                await task
        for context in self._contexts.values():
            with contextlib.suppress(Exception):
                await context.shutdown()


async def connect(services: Sequence[ServiceDef], config: ConnectConfig) -> CoapClients:
    clients = CoapClients({s.name: config.addresses[s.name] for s in services})
    await clients.start()
    return clients
