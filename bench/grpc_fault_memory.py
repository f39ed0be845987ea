"""Does a grpc.aio client keep memory for every time its server dies? (docs/soak.md)

The soak (``bench/soak.py``) saw the gRPC shop's gateway grow by 5-12 MiB at each killed
service and stay there, where the REST gateway grew once (the allocator's first high-water
mark) and then not at all. This isolates the gRPC client from the shop: one process holds a
``grpc.aio`` channel, as the gateway does (one channel per service, kept), and 32 tasks call
an echo server in a closed loop. The server is a child process; in the ``faults`` arm it is
SIGKILLed every cycle and started again on the same port after ``--down`` seconds, in the
``steady`` arm it lives throughout. After each cycle the client runs ``gc.collect()`` and
reads its RSS and the Python heap (``tracemalloc``): growth that the Python heap does not
show is held by the C core.

    python bench/grpc_fault_memory.py [--cycles 8] [--up 10] [--down 5]

Each arm runs in its own process. Prints one row per arm and cycle, then the growth per
fault. Figures mean something only as the arms' differences measured in one sitting.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import signal
import socket
import subprocess
import sys
import time
import tracemalloc
from dataclasses import dataclass

import grpc
from ipclab_services.domains import all_answers

_SERVER = r"""
import asyncio, sys, grpc
async def main(port):
    async def echo(request, context):
        return request
    handler = grpc.unary_unary_rpc_method_handler(echo)
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("bench.Echo", {"Echo": handler}),))
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    print("ready", flush=True)
    await server.wait_for_termination()
asyncio.run(main(int(sys.argv[1])))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(port: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVER, str(port)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != "ready":
        proc.kill()
        raise RuntimeError("the echo server did not start")
    return proc


def kill(proc: subprocess.Popen[str]) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


@dataclass
class Counts:
    ok: int = 0
    failed: int = 0


async def caller(stub: grpc.aio.UnaryUnaryMultiCallable, counts: Counts, until: float) -> None:
    body = b"x" * 200
    while time.monotonic() < until:
        try:
            await stub(body, timeout=1.0)
            counts.ok += 1
        except grpc.aio.AioRpcError:
            counts.failed += 1
            await asyncio.sleep(0)  # a refused call fails at once: let the others run


async def fanout(
    stubs: list[grpc.aio.UnaryUnaryMultiCallable], counts: Counts, until: float, cancel: bool
) -> None:
    """A page as a gateway builds it: one call per service at once, the first failure
    answers. ``cancel``: it cancels the calls still in flight (the shop's gateway until
    2026-11-26); otherwise they run on to their own end (``all_answers``, the gateway now)."""
    body = b"x" * 200
    while time.monotonic() < until:
        failed = False
        if cancel:
            tasks = [asyncio.ensure_future(stub(body, timeout=1.0)) for stub in stubs]
            try:
                done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            finally:
                for t in tasks:
                    t.cancel()
            failed = any(t.exception() is not None for t in done)
        else:
            try:
                await all_answers(stub(body, timeout=1.0) for stub in stubs)
            except grpc.aio.AioRpcError:
                failed = True
        if failed:
            counts.failed += 1
            await asyncio.sleep(0)
        else:
            counts.ok += 1


async def arm(name: str, faults: bool, cycles: int, up: float, down: float) -> list[dict]:
    """``steady``/``faults``: 32 callers of one server; ``cancel``: 32 callers, each asking
    the dying server and a steady one at once and cancelling the other call on a failure;
    ``leave``: the same calls, none cancelled (``all_answers``, the gateways' fan-out)."""
    port = free_port()
    server = start_server(port)
    rows: list[dict] = []
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=[("grpc.so_reuseport", 0)])
    stub = channel.unary_unary("/bench.Echo/Echo")
    steady_port = free_port()
    steady = start_server(steady_port)
    other = grpc.aio.insecure_channel(f"127.0.0.1:{steady_port}")
    stubs = [stub, other.unary_unary("/bench.Echo/Echo")]

    def load(counts: Counts, until: float) -> list:
        if name in ("cancel", "leave"):
            return [fanout(stubs, counts, until, name == "cancel") for _ in range(32)]
        return [caller(stub, counts, until) for _ in range(32)]

    try:
        for cycle in range(cycles + 1):  # cycle 0: warm-up, no fault before it
            counts = Counts()
            if faults and cycle > 0:
                kill(server)
                end = time.monotonic() + down
                await asyncio.gather(*load(counts, end))
                server = start_server(port)
            end = time.monotonic() + up
            await asyncio.gather(*load(counts, end))
            gc.collect()
            heap = tracemalloc.get_traced_memory()[0] / 2**20
            rows.append(
                {
                    "arm": name,
                    "cycle": cycle,
                    "ok": counts.ok,
                    "failed": counts.failed,
                    "rss_mib": rss_mib(),
                    "py_heap_mib": heap,
                }
            )
            r = rows[-1]
            print(
                f"{name:7} {cycle:5} {r['ok']:8} {r['failed']:8} {r['rss_mib']:9.1f}"
                f" {r['py_heap_mib']:9.2f}",
                flush=True,
            )
    finally:
        await channel.close()
        await other.close()
        kill(server)
        kill(steady)
    return rows


def growth(rows: list[dict]) -> tuple[float, float, float, int]:
    """RSS above the warm-up at its highest, RSS and Python-heap growth per cycle over the
    second half of the cycles (a leak keeps growing there; a high-water mark reached at the
    first faults does not), and the failed calls."""
    mid = len(rows) // 2
    span = len(rows) - 1 - mid
    high = max(r["rss_mib"] for r in rows) - rows[0]["rss_mib"]
    rss = (rows[-1]["rss_mib"] - rows[mid]["rss_mib"]) / span if span else float("nan")
    heap = (rows[-1]["py_heap_mib"] - rows[mid]["py_heap_mib"]) / span if span else float("nan")
    return high, rss, heap, sum(r["failed"] for r in rows[1:])


ARMS = {"steady": False, "faults": True, "cancel": True, "leave": True}  # arm: server killed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cycles", type=int, default=8)
    ap.add_argument("--up", type=float, default=10.0, help="seconds served per cycle")
    ap.add_argument("--down", type=float, default=5.0, help="seconds the server is dead")
    ap.add_argument("--arm", choices=sorted(ARMS), help="one arm in this process (internal)")
    args = ap.parse_args()
    if args.arm:  # each arm in a fresh process: no arm reuses memory another one freed
        tracemalloc.start()
        rows = asyncio.run(arm(args.arm, ARMS[args.arm], args.cycles, args.up, args.down))
        high, rss, heap, failed = growth(rows)
        print(f"= {args.arm:7} {high:+10.1f} {rss:+15.2f} {heap:+15.3f} {failed:13}", flush=True)
        return 0
    print(f"# grpcio {grpc.__version__}, {os.cpu_count()} cores, load avg {os.getloadavg()[0]:.2f}")
    print("arm     cycle       ok   failed   rss MiB  py heap MiB", flush=True)
    totals = []
    for name in ARMS:
        cmd = [sys.executable, __file__, "--arm", name, "--cycles", str(args.cycles),
               "--up", str(args.up), "--down", str(args.down)]  # fmt: skip
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        print("\n".join(line for line in out.splitlines() if not line.startswith("= ")))
        totals += [line[2:] for line in out.splitlines() if line.startswith("= ")]
    print("\narm     RSS peak  RSS MiB/cycle  heap MiB/cycle  failed calls  (per cycle: 2nd half)")
    print("\n".join(totals))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
