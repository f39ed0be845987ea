"""Go per-call costs of the three styles (issue 18): the Go companion of transports.py.

For each style, the Go binary (``services/go``, built by the harness) serves the shop's
``product-info`` on the shared fixture, and the same binary as a client (``IPCLAB_ROLE=
bench``) calls ``get`` for product 1: ``--requests`` calls one at a time (p50, p99), then
``--inflight`` calls in flight for ``--seconds`` seconds (req/s). CPU: the client's own over
the throughput phase (getrusage), the server's (and the broker's) per call over the whole
run, in microseconds. ``transports.py --go`` prints these rows after its own.

    python bench/transports_go.py [--requests 2000] [--inflight 32] [--seconds 3]
                                  [--only rest,grpc,amqp] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
from ipclab_services.domains import shop

from ipclab.backends.broker import RabbitNode
from ipclab.gobuild import go_binary, toolchain_missing
from ipclab.procs import free_port, spawn, stop_group

STYLES = ("rest", "grpc", "amqp")
SERVICE = "product-info"


def _cpu(proc: psutil.Process) -> float:
    """CPU seconds of ``proc`` and its live children (the broker's beam.smp is a child)."""
    total = 0.0
    for p in (proc, *proc.children(recursive=True)):
        try:
            t = p.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += t.user + t.system
    return total


def measure(style: str, binary: Path, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    fixture = work / "fixture.json"
    if not fixture.exists():
        shop.write_fixture(fixture, {})
    base = {k: v for k, v in os.environ.items() if not k.startswith("IPCLAB_")}
    env = {**base, "IPCLAB_TRANSPORT": style, "IPCLAB_SERVICES": SERVICE}
    broker = None
    server = None
    try:
        if style == "amqp":
            broker = RabbitNode(work / f"broker-{style}")
            broker.start()
            env["IPCLAB_AMQP_URL"] = broker.url
        port = free_port()
        server = spawn(
            [str(binary)],
            {
                **env,
                "IPCLAB_ROLE": SERVICE,
                "IPCLAB_PORT": str(port),
                "IPCLAB_FIXTURE": str(fixture),
            },
            work / f"{style}-server.log",
        )
        time.sleep(1.0)  # the listener or the consumer is up well within this
        srv = psutil.Process(server.pid)
        brk = psutil.Process(broker.process.pid) if broker and broker.process else None
        s0, b0 = _cpu(srv), (_cpu(brk) if brk else 0.0)
        client = subprocess.run(
            [str(binary)],
            env={
                **env,
                "IPCLAB_ROLE": "bench",
                "IPCLAB_ADDR_PRODUCT_INFO": f"127.0.0.1:{port}",
                "IPCLAB_BENCH_REQUESTS": str(args.requests),
                "IPCLAB_BENCH_INFLIGHT": str(args.inflight),
                "IPCLAB_BENCH_SECONDS": str(args.seconds),
            },
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        if client.returncode != 0:
            raise RuntimeError(f"go bench client ({style}): {client.stderr.strip()[-500:]}")
        row: dict[str, Any] = json.loads(client.stdout)
        calls = row["calls"]
        row["server_cpu_us"] = 1e6 * (_cpu(srv) - s0) / calls
        row["broker_cpu_us"] = 1e6 * (_cpu(brk) - b0) / calls if brk else None
        return {"style": style, "language": "go", **row}
    finally:
        if server is not None:
            stop_group(server)
        if broker is not None:
            broker.stop()


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    missing = toolchain_missing()
    if missing:
        print(f"Go rows skipped: {missing}", file=sys.stderr)
        return []
    binary = go_binary()
    styles = [s for s in STYLES if not args.only or s in args.only.split(",")]
    with tempfile.TemporaryDirectory(prefix="ipclab-bench-go-") as tmp:
        return [measure(s, binary, Path(tmp), args) for s in styles]


def print_rows(rows: list[dict[str, Any]]) -> None:
    print(
        f"{'go style':<10}{'p50 ms':>9}{'p99 ms':>9}{'req/s':>10}"
        f"{'client us/call':>16}{'server us/call':>16}{'broker us/call':>16}"
    )
    for r in rows:
        broker = f"{r['broker_cpu_us']:.1f}" if r["broker_cpu_us"] is not None else "-"
        print(
            f"{r['style']:<10}{r['p50_ms']:>9.3f}{r['p99_ms']:>9.3f}{r['rps']:>10.0f}"
            f"{r['client_cpu_us']:>16.1f}{r['server_cpu_us']:>16.1f}{broker:>16}"
        )


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=2000)
    p.add_argument("--inflight", type=int, default=32)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--only", default="")
    p.add_argument("--json", type=Path, default=None)
    return p


def main() -> None:
    args = parser().parse_args()
    rows = run(args)
    print_rows(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
