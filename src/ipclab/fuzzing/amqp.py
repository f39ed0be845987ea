"""AMQP inputs: messages straight onto the services' request queues, with random bodies,
well-formed JSON of the wrong shape, no ``reply_to``, no correlation id, a wrong content
type, and oversized bodies (1-4 MiB)."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import orjson

from ipclab.fuzzing.results import DEADLINE_S, GRACE_S, HOST, ClassResult

OVERSIZED = "oversized body (1-4 MiB)"
CLASSES = {  # name: share of the target's count
    "random body": 0.199,
    "valid JSON, wrong shape": 0.199,
    "no reply_to": 0.199,
    "no correlation id": 0.199,
    "wrong content type": 0.199,
    OVERSIZED: 0.005,
}


async def fuzz(res: ClassResult, stack: Any, n: int, seed: int) -> None:
    import aio_pika
    from ipclab_services.transports.amqp import queue_name

    assert stack.broker is not None and stack.broker.host == HOST
    r = random.Random(seed)
    connection = await aio_pika.connect(stack.broker.url)
    replies: dict[str, asyncio.Future[bytes]] = {}
    anonymous: list[bytes] = []
    try:
        channel = await connection.channel()
        reply_queue = await channel.declare_queue(exclusive=True)

        async def on_reply(message: Any) -> None:
            future = replies.pop(message.correlation_id or "", None)
            if future is not None and not future.done():
                future.set_result(message.body)
            else:
                anonymous.append(message.body)

        await reply_queue.consume(on_reply, no_ack=True)
        services = list(stack.spec.services)
        kind = res.name

        async def one(i: int) -> None:
            body = _body(kind, r)
            cid = None if kind == "no correlation id" else f"fuzz-{i}"
            reply_to = None if kind == "no reply_to" else reply_queue.name
            ctype = "text/x-garbage" if kind == "wrong content type" else "application/json"
            future: asyncio.Future[bytes] | None = None
            if cid is not None and reply_to is not None:
                future = asyncio.get_running_loop().create_future()
                replies[cid] = future
            t0 = time.monotonic()
            await channel.default_exchange.publish(
                aio_pika.Message(body, correlation_id=cid, reply_to=reply_to, content_type=ctype),
                routing_key=queue_name(r.choice(services)),
            )
            if future is None:
                res.outcomes["sent, no reply expected"] += 1
            else:
                try:
                    answer = orjson.loads(await asyncio.wait_for(future, DEADLINE_S + GRACE_S))
                    res.outcomes["error reply" if "error" in answer else "result reply"] += 1
                except TimeoutError:
                    replies.pop(cid or "", None)
                    res.outcomes["no reply"] += 1
                    res.late += 1
                res.late += time.monotonic() - t0 > DEADLINE_S + GRACE_S
            res.inputs += 1

        sem = asyncio.Semaphore(8 if kind == OVERSIZED else 64)

        async def bounded(i: int) -> None:
            async with sem:
                await one(i)

        await asyncio.gather(*(bounded(i) for i in range(n)))
        await asyncio.sleep(0.5)
        if anonymous:
            res.outcomes["reply without its correlation id"] += len(anonymous)
    finally:
        await connection.close()


def _body(kind: str, r: random.Random) -> bytes:
    if kind == OVERSIZED:
        return r.randbytes(r.randint(1 << 20, 4 << 20))
    if kind == "valid JSON, wrong shape":
        return orjson.dumps(
            r.choice(
                [
                    {"op": "nope", "request": {}},
                    {"op": "get"},
                    {"op": "get", "request": {"product_id": "²"}},
                    {"op": "get", "request": {"product_id": 2**63 - 1}},
                    {"op": "get", "request": {"product_id": -1}},
                    {"op": "get", "request": None},
                    [1, 2, 3],
                    "text",
                ]
            )
        )
    if r.random() < 0.5 and kind != "random body":
        return orjson.dumps({"op": "get", "request": {"product_id": r.randint(0, 2000)}})
    return r.randbytes(r.randint(0, 2000))
