"""AMQP 0-9-1 through RabbitMQ: request/reply with correlation ids (aio-pika both sides).

Topology (why, in docs/transports.md):
- one queue per service, ``ipclab.<service>``, non-durable, not exclusive, not auto-delete;
  declared by the service and by the gateway (same arguments), so requests published while
  a service is down wait in its queue instead of being dropped;
- requests go through the default exchange (routing key = queue name), transient
  (delivery mode 1): an RPC request outlives neither the broker nor the caller's deadline;
- each service consumes with manual acks and ``prefetch_count`` = PREFETCH; it publishes the
  reply to the request's ``reply_to`` with the same ``correlation_id``, then acks, so a
  service that dies mid-request leaves the request to be redelivered (at-least-once);
- the gateway has one connection, one channel and one exclusive, server-named reply queue
  consumed without acks; a dict of futures keyed by correlation id matches replies;
  replies that match nothing (late after a timeout, or duplicated by a redelivery) are
  counted, never delivered twice.

Message body: JSON ``{"op": ..., "request": {...}}``; reply ``{"result": {...}}`` or
``{"error": code, "message": ...}``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from collections.abc import Sequence
from typing import Any

import aio_pika
import orjson
from aio_pika.abc import AbstractIncomingMessage
from aiormq.exceptions import ChannelInvalidStateError
from ipclab_services import reconnect, tls
from ipclab_services.errors import ServiceError, Timeout, Unavailable, from_code
from ipclab_services.transports.base import ConnectConfig, ServeConfig, ServiceDef

_log = logging.getLogger(__name__)

PREFETCH = 64


def queue_name(service: str) -> str:
    return f"ipclab.{service}"


async def _declare(
    channel: aio_pika.abc.AbstractChannel, service: str
) -> aio_pika.abc.AbstractQueue:
    return await channel.declare_queue(queue_name(service), durable=False, auto_delete=False)


async def _connect(url: str) -> aio_pika.abc.AbstractRobustConnection:
    """One robust connection to the broker; over TLS (AMQPS) when the stack has it: the
    harness then gives an ``amqps://`` URL, and the stack's authority alone is trusted."""
    files = tls.client_files()
    if files is not None and not url.startswith("amqps://"):
        raise tls.TlsConfigError(f"TLS is on but the broker's URL is not amqps: {url!r}")
    context = tls.client_context(files) if files is not None else None
    return await aio_pika.connect_robust(
        url, reconnect_interval=reconnect.amqp_reconnect_interval(), ssl_context=context
    )


async def serve(service: ServiceDef, config: ServeConfig) -> None:
    connection = await _connect(config.amqp_url)
    try:
        channel = await connection.channel()
        await channel.set_qos(prefetch_count=PREFETCH)
        queue = await _declare(channel, service.name)
        exchange = channel.default_exchange

        async def on_message(message: AbstractIncomingMessage) -> None:
            try:
                doc = orjson.loads(message.body)
                reply: dict[str, Any] = {"result": await service.invoke(doc["op"], doc["request"])}
            except ServiceError as e:
                reply = {"error": e.code, "message": str(e)}
            except Exception:  # noqa: BLE001 - a bad message must not kill the consumer
                _log.exception("amqp %s: bad message", service.name)
                reply = {"error": "internal", "message": "internal error"}
            if message.reply_to:
                await exchange.publish(
                    aio_pika.Message(
                        orjson.dumps(reply),
                        correlation_id=message.correlation_id,
                        delivery_mode=aio_pika.DeliveryMode.NOT_PERSISTENT,
                    ),
                    routing_key=message.reply_to,
                )
            await message.ack()

        await queue.consume(on_message)
        config.ready.set()
        await asyncio.Future()  # until cancelled
    finally:
        await connection.close()


class AmqpClients:
    def __init__(self) -> None:
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count()
        self._prefix = f"{os.getpid()}-"
        self.published = 0
        self.replies = 0
        self.unmatched = 0  # late (after the caller gave up) or duplicated replies
        self.returned = 0
        self.published_by_op: dict[str, int] = {}

    async def start(self, services: Sequence[ServiceDef], url: str) -> None:
        self._connection = await _connect(url)
        self._channel = await self._connection.channel(publisher_confirms=False)
        for s in services:
            await _declare(self._channel, s.name)
        self._reply_queue = await self._channel.declare_queue(exclusive=True, auto_delete=True)
        await self._reply_queue.consume(self._on_reply, no_ack=True)
        self._channel.return_callbacks.add(self._on_return)

    def _on_reply(self, message: AbstractIncomingMessage) -> None:
        self.replies += 1
        future = self._pending.pop(message.correlation_id or "", None)
        if future is None or future.done():
            self.unmatched += 1
            return
        future.set_result(orjson.loads(message.body))

    def _on_return(self, _channel: Any, message: AbstractIncomingMessage) -> None:
        self.returned += 1
        future = self._pending.pop(message.correlation_id or "", None)
        if future is not None and not future.done():
            future.set_exception(Unavailable("no queue for the request"))

    async def call(
        self, service: str, op: str, request: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        cid = f"{self._prefix}{next(self._ids)}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[cid] = future
        try:
            await self._channel.default_exchange.publish(
                aio_pika.Message(
                    orjson.dumps({"op": op, "request": request}),
                    correlation_id=cid,
                    reply_to=self._reply_queue.name,
                    delivery_mode=aio_pika.DeliveryMode.NOT_PERSISTENT,
                ),
                routing_key=queue_name(service),
                mandatory=True,
            )
            self.published += 1
            self.published_by_op[op] = self.published_by_op.get(op, 0) + 1
            reply = await asyncio.wait_for(future, timeout)
        except TimeoutError:
            raise Timeout(f"{service} did not answer within {timeout}s") from None
        except (aio_pika.exceptions.AMQPError, ChannelInvalidStateError, ConnectionError) as e:
            # the broker is gone or the robust connection is still reconnecting
            raise Unavailable(f"broker: {e!r}") from None
        finally:
            self._pending.pop(cid, None)
        if "error" in reply:
            raise from_code(reply["error"], reply.get("message", ""))
        return reply["result"]

    def stats(self) -> dict[str, Any]:
        return {
            "published": self.published,
            "replies": self.replies,
            "unmatched": self.unmatched,
            "returned": self.returned,
            "pending": len(self._pending),
            "published_by_op": dict(self.published_by_op),
        }

    async def close(self) -> None:
        await self._connection.close()


async def connect(services: Sequence[ServiceDef], config: ConnectConfig) -> AmqpClients:
    clients = AmqpClients()
    await clients.start(services, config.amqp_url)
    return clients
