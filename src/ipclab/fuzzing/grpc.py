"""gRPC inputs: random bytes (0-4 kB) as the request of every method of every service the
stack declares (the domain's service definitions name them)."""

from __future__ import annotations

import asyncio
import random
import time

from ipclab.fuzzing.results import DEADLINE_S, DUE_S, HOST, ClassResult
from ipclab.stacks import StackSpec

CLASSES = {"random bytes per method": 1.0}


def methods(spec: StackSpec) -> list[tuple[str, str]]:
    """(service role, "/package.Service/Method") for every operation of every service."""
    from ipclab_services import domains

    defs = domains.load(spec.domain).build_services()
    return [
        (name, f"/{d.proto_service}/{op.capitalize()}")
        for name, d in defs.items()
        if name in spec.services
        for op in d.ops
    ]


async def fuzz(res: ClassResult, spec: StackSpec, ports: dict[str, int], n: int, seed: int) -> None:
    import grpc

    r = random.Random(seed)
    targets = methods(spec)
    channels = {name: grpc.aio.insecure_channel(f"{HOST}:{ports[name]}") for name, _ in targets}
    sem = asyncio.Semaphore(32)

    async def one() -> None:
        name, method = r.choice(targets)
        call = channels[name].unary_unary(method)
        body = r.randbytes(r.randint(0, 4096))
        async with sem:
            t0 = time.monotonic()  # the call's own time, not its wait for a slot
            try:
                await call(body, timeout=DEADLINE_S)
                outcome = "OK (bytes parsed as a valid request)"
            except grpc.aio.AioRpcError as e:
                outcome = e.code().name
            res.late += time.monotonic() - t0 > DUE_S
        res.outcomes[outcome] += 1
        res.inputs += 1

    try:
        await asyncio.gather(*(one() for _ in range(n)))
    finally:
        for c in channels.values():
            await c.close()
