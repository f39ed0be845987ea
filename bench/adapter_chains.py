"""What a pair of protocol adapters costs: one request through egress -> ingress -> service.

On loopback, per chain (``direct``: no adapter; ``<set>-<transport>``: an egress and an
ingress adapter of that set, ``services/adapters``): sequential latency (p50, p90, mean) of
``--requests`` GETs of a ~4 KB JSON document on one keep-alive connection, after warm-up,
then the throughput with ``--inflight`` requests in flight for ``--seconds`` seconds. The
service is a small aiohttp app in its own process; adapters run as roles do
(``ipclab_services.adapters.serve``). A quick look at the adapters' own cost, not a study:
the numbers move with the machine's load; compare rows of one run.

    python bench/adapter_chains.py [--requests 2000] [--inflight 32] [--seconds 3]
                                   [--only direct,native-rest,native-h2c,python-rest,python-h2c]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import time
from collections.abc import AsyncIterator

import aiohttp

from ipclab.procs import free_port

CHAINS = ("direct", "native-rest", "native-h2c", "python-rest", "python-h2c")
PATH = "/auth/acmeair-fs/rest/api/flights/queryflights"
UPSTREAM = r"""
import json, sys
from aiohttp import web
BIG = json.dumps([{"flightId": f"AA{i:04d}", "segment": "CDG-JFK", "miles": 3625 + i}
                  for i in range(70)]).encode()
async def h(request):
    return web.Response(body=BIG, content_type="application/json")
app = web.Application()
app.router.add_get("/{tail:.*}", h)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
"""
ADAPTER = (
    "import os, uvloop; from ipclab_services.adapters import serve; uvloop.run(serve(os.environ))"
)


async def wait_port(port: int, timeout: float = 15) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with contextlib.suppress(OSError):
            _, w = await asyncio.open_connection("127.0.0.1", port)
            w.close()
            return
        await asyncio.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


async def spawn(*argv: str, env: dict[str, str] | None = None) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *argv, env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
    )


@contextlib.asynccontextmanager
async def chain(name: str, upstream: int) -> AsyncIterator[int]:
    """The port to send to: the service's, or an egress in front of an ingress."""
    if name == "direct":
        yield upstream
        return
    adapters, transport = name.split("-")
    ingress, egress = free_port(), free_port()
    base = {
        **os.environ,
        "IPCLAB_ADAPTERS": adapters,
        "IPCLAB_TRANSPORT": transport,
        "IPCLAB_HOST": "127.0.0.1",
        "IPCLAB_SERVICES": "auth",
    }
    procs = [
        await spawn(
            sys.executable,
            "-c",
            ADAPTER,
            env={**base, **env},
        )
        for env in (
            {
                "IPCLAB_ROLE": "auth-ingress",
                "IPCLAB_ADAPTER": "ingress",
                "IPCLAB_PORT": str(ingress),
                "IPCLAB_ADDR_AUTH": f"127.0.0.1:{upstream}",
            },
            {
                "IPCLAB_ROLE": "egress",
                "IPCLAB_ADAPTER": "egress",
                "IPCLAB_PORT": str(egress),
                "IPCLAB_ADDR_AUTH_INGRESS": f"127.0.0.1:{ingress}",
            },
        )
    ]
    try:
        await wait_port(ingress)
        await wait_port(egress)
        yield egress
    finally:
        for p in procs:
            with contextlib.suppress(ProcessLookupError):
                p.terminate()
        for p in procs:
            await p.wait()


async def measure(port: int, requests: int, inflight: int, seconds: float) -> dict[str, float]:
    url = f"http://127.0.0.1:{port}{PATH}"
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=inflight)) as http:

        async def get() -> None:
            async with http.get(url) as r:
                assert r.status == 200, r.status
                await r.read()

        for _ in range(200):
            await get()
        times = []
        for _ in range(requests):
            t0 = time.perf_counter()
            await get()
            times.append((time.perf_counter() - t0) * 1000)
        times.sort()
        done = 0
        end = time.monotonic() + seconds

        async def worker() -> None:
            nonlocal done
            while time.monotonic() < end:
                await get()
                done += 1

        t0 = time.monotonic()
        await asyncio.gather(*(worker() for _ in range(inflight)))
        rate = done / (time.monotonic() - t0)
    return {
        "p50_ms": times[len(times) // 2],
        "p90_ms": times[int(len(times) * 0.9)],
        "mean_ms": statistics.fmean(times),
        "req_per_s": rate,
    }


async def main(args: argparse.Namespace) -> None:
    port = free_port()
    upstream = await spawn(sys.executable, "-c", UPSTREAM, str(port))
    try:
        await wait_port(port)
        print(f"{'chain':<13} {'p50 ms':>8} {'p90 ms':>8} {'mean ms':>8} {'req/s':>8}")
        for name in args.only.split(","):
            async with chain(name, port) as entry:
                m = await measure(entry, args.requests, args.inflight, args.seconds)
            print(
                f"{name:<13} {m['p50_ms']:8.3f} {m['p90_ms']:8.3f} {m['mean_ms']:8.3f}"
                f" {m['req_per_s']:8.0f}",
                flush=True,
            )
    finally:
        upstream.terminate()
        await upstream.wait()


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--requests", type=int, default=2000)
    p.add_argument("--inflight", type=int, default=32)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--only", default=",".join(CHAINS))
    asyncio.run(main(p.parse_args()))
