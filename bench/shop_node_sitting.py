"""Where shop-grpc-node's time goes, beside shop-rest-node and shop-grpc-go in one sitting
(docs/node.md, "shop-grpc-node's wait").

The three stacks run at once on the local backend. Each is measured first as a fresh stack
(``cold``: one client, the first ``--cold`` pages after 20, one after another on one
keep-alive connection: what a probe of a just-started stack sees, JIT compilers not yet
done), then after ``--warmup`` seconds of 10 clients (``warm``): a closed loop of 1, 10 and
50 clients for ``--seconds`` each, the stacks taking turns cell by cell (the order rotated
every round), ``--rounds`` rounds. Every cell records its pages' min, p50, mean and p95, req/s,
the CPU the stack's processes used per page (all roles; the gateway alone), the time their
threads spent runnable but waiting for a CPU per page (run-queue delay, schedstat; all roles,
the gateway alone), the host's
CPU busy (200 = both cores) and load average over the cell: a stack's req/s is its share of
the CPU over its CPU per page when the host is busy (``cpu_share`` = the stack's CPU %).

    python bench/shop_node_sitting.py [--rounds 3] [--seconds 5] [--clients 1,10,50]
        [--cold 100] [--warmup 8] [--csv data/measured/shop_node_sitting.csv]

A shared 2-core machine: compare the stacks within a round, not the days.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import datetime
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))
from californium_hops import read_http  # noqa: E402  (beside this file)

from ipclab.backends import StackOptions, get_backend  # noqa: E402
from ipclab.backends.local import LocalStack  # noqa: E402
from ipclab.stacks import resolve  # noqa: E402

STACKS = ("shop-grpc-node", "shop-rest-node", "shop-grpc-go")
CSV_FIELDS = ("phase", "round", "stack", "clients", "n", "bad", "min_ms", "p50_ms", "mean_ms",
              "p95_ms", "rps", "cpu_ms_per_page", "gateway_cpu_ms_per_page", "runq_ms_per_page",
              "gateway_runq_ms_per_page", "cpu_share", "host_busy", "load_average",
              "measured_on")  # fmt: skip


async def client(port: int, first: int, step: int, end: float, limit: int, out: list[float]) -> int:
    """Pages over one keep-alive connection until ``end`` or ``limit`` pages (each a product and
    a customer of the fixture); latencies (s) into ``out``; the count of answers not 200."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    bad, i = 0, first
    try:
        while time.perf_counter() < end and len(out) < limit:
            target = f"/product/{i % 1000 + 1}?customer_id={i % 500 + 1}"
            t = time.perf_counter()
            writer.write(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
            bad += await read_http(reader) != 200
            out.append(time.perf_counter() - t)
            i += step
    finally:
        writer.close()
    return bad


async def _loop(port: int, clients: int, seconds: float, limit: int) -> tuple[list[float], int]:
    out: list[float] = []
    end = time.perf_counter() + seconds
    jobs = [client(port, k, clients, end, limit, out) for k in range(clients)]
    return out, sum(await asyncio.gather(*jobs))


def cpu_s(pids: list[int]) -> float:
    """CPU seconds (user + system) the processes have used so far."""
    return sum(sum(psutil.Process(p).cpu_times()[:2]) for p in pids)


def runq_s(pids: list[int]) -> float:
    """Seconds the processes' threads have spent runnable but waiting for a CPU (the
    scheduler's run-queue delay, /proc/<pid>/task/<tid>/schedstat's second field)."""
    total = 0
    for pid in pids:
        for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
            with contextlib.suppress(OSError, IndexError):
                total += int(stat.read_text().split()[1])
    return total / 1e9


def cell(stack: LocalStack, clients: int, seconds: float, limit: int = 10**9) -> dict[str, Any]:
    """One closed loop against the stack's gateway, with its CPU and the host's."""
    port = stack.ports[stack.spec.gateway]
    pids = [p.pid for p in stack.procs.values()]
    gateway = [stack.procs[stack.spec.gateway].pid]
    load = round(os.getloadavg()[0], 2)
    host0, cpu0, gw0, t0 = psutil.cpu_times(), cpu_s(pids), cpu_s(gateway), time.perf_counter()
    runq0, gw_runq0 = runq_s(pids), runq_s(gateway)
    out, bad = uvloop.run(_loop(port, clients, seconds, limit))
    took = time.perf_counter() - t0
    host1 = psutil.cpu_times()
    idle = (host1.idle + host1.iowait) - (host0.idle + host0.iowait)
    busy = 100 * (psutil.cpu_count() - idle / took)
    ms, n = np.array(out) * 1000, len(out)
    used, runq = cpu_s(pids) - cpu0, runq_s(pids) - runq0
    return {
        "stack": stack.spec.name, "clients": clients, "n": n, "bad": bad,
        "min_ms": round(float(ms.min()), 2), "p50_ms": round(float(np.median(ms)), 2),
        "mean_ms": round(float(ms.mean()), 2), "p95_ms": round(float(np.percentile(ms, 95)), 2),
        "rps": round(n / took, 1), "cpu_ms_per_page": round(1000 * used / n, 3),
        "gateway_cpu_ms_per_page": round(1000 * (cpu_s(gateway) - gw0) / n, 3),
        "runq_ms_per_page": round(1000 * runq / n, 3),
        "gateway_runq_ms_per_page": round(1000 * (runq_s(gateway) - gw_runq0) / n, 3),
        "cpu_share": round(100 * used / took, 1), "host_busy": round(busy, 1),
        "load_average": load,
    }  # fmt: skip


@contextlib.contextmanager
def started(names: tuple[str, ...]) -> Iterator[dict[str, LocalStack]]:
    stacks: dict[str, LocalStack] = {}
    try:
        for name in names:
            stacks[name] = get_backend("local").start(resolve(name), StackOptions())
        yield stacks
    finally:
        for s in stacks.values():
            s.stop()


def sitting(args: argparse.Namespace) -> list[dict[str, Any]]:
    today = datetime.date.today().isoformat()
    rows: list[dict[str, Any]] = []

    def keep(phase: str, rnd: int, row: dict[str, Any]) -> None:
        rows.append({"phase": phase, "round": rnd, **row, "measured_on": today})
        print(_line(rows[-1]), flush=True)

    with started(STACKS) as stacks:
        for s in stacks.values():  # cold: the first pages of a fresh stack
            cell(s, 1, 60, 20)
            keep("cold", 1, cell(s, 1, 60, args.cold))
        for s in stacks.values():
            cell(s, 10, args.warmup)
        for rnd in range(1, args.rounds + 1):
            order = list(stacks.values())
            order = order[rnd - 1 :] + order[: rnd - 1]
            for clients in args.clients:
                for s in order:
                    keep("warm", rnd, cell(s, clients, args.seconds))
    return rows


def _line(r: dict[str, Any]) -> str:
    return (
        f"{r['phase']:>5} {r['round']:>2} {r['stack']:>15} {r['clients']:>3} {r['n']:>6} "
        f"{r['bad']:>3} {r['min_ms']:>7.2f} {r['p50_ms']:>7.2f} {r['mean_ms']:>7.2f} "
        f"{r['p95_ms']:>7.2f} {r['rps']:>7.1f} {r['cpu_ms_per_page']:>6.2f} "
        f"{r['gateway_cpu_ms_per_page']:>6.2f} {r['runq_ms_per_page']:>7.2f} "
        f"{r['gateway_runq_ms_per_page']:>6.2f} "
        f"{r['cpu_share']:>6.1f} {r['host_busy']:>6.1f} "
        f"{r['load_average']:>5.2f}"
    )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--clients", default="1,10,50")
    p.add_argument("--cold", type=int, default=100)
    p.add_argument("--warmup", type=float, default=8.0)
    p.add_argument("--csv", type=Path)
    args = p.parse_args(argv)
    args.clients = [int(c) for c in args.clients.split(",")]
    print("phase rd           stack  cl      n bad  min ms  p50 ms mean ms  p95 ms   req/s "
          "cpu/pg  gw/pg runq/pg gwrunq stack%  host%  load")  # fmt: skip
    rows = sitting(args)
    if args.csv:
        new = not args.csv.exists()
        with args.csv.open("a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
            if new:
                w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    main()
