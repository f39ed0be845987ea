"""The Go rows of bench/transports.py (issue 18): the same calls, measured the same way.

For each Go candidate of ``transports.py`` (``go-floor``, ``go-rest``, ``go-grpc``,
``go-amqp``), the Go binary (``services/go``, built by the harness) serves the shop's
``product-info`` on the Python generator's data (or, for the floor, echoes length-prefixed
frames), and the same binary as a client (``IPCLAB_ROLE=bench``, ``services/go/bench.go``)
calls ``get`` for product 1 (or echoes the same product-1 JSON payload as the Python floor)
with the procedure of ``transports.py``'s Python client: the same warm-up, ``--requests``
calls one at a time (p50, p99), ``--inflight`` calls in flight for ``--seconds``; CPU of
the client, the server and the broker (the same private RabbitMQ node as the Python AMQP
rows) over the throughput phase. The row has ``transports.py``'s fields, so the Go rows
take their place in its interleaved rounds, ratios and summary.

``transports.py`` imports this module; ``transports_go.py`` is the command that runs the
floor and the Go rows only (through ``transports.py``), so no two bench modules import
each other.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from ipclab.gobuild import go_binary, toolchain_missing
from ipclab.procs import free_port, spawn, stop_group

SERVICE = "product-info"
NAMES = ("go-floor", "go-rest", "go-grpc", "go-amqp")


def _work() -> Path:
    """One folder per bench process: the data fixture and the servers' logs."""
    global _WORK
    if _WORK is None:
        _WORK = Path(tempfile.mkdtemp(prefix="ipclab-bench-go-"))
    return _WORK


_WORK: Path | None = None


def measure(style: str, args: argparse.Namespace, broker: Any, payload: bytes) -> dict[str, Any]:
    """One Go row: ``style`` is ``echo`` (the floor), ``rest``, ``grpc`` or ``amqp``;
    ``broker``: the running RabbitMQ node for ``amqp``. Raises on failure."""
    from ipclab_services.domains import shop

    missing = toolchain_missing()
    if missing:
        raise RuntimeError(missing)
    binary = go_binary()
    work = _work()
    fixture, payload_file = work / "fixture.json", work / "payload.json"
    if not fixture.exists():
        shop.write_fixture(fixture, {})
        payload_file.write_bytes(payload)
    base = {k: v for k, v in os.environ.items() if not k.startswith("IPCLAB_")}
    env = {**base, "IPCLAB_TRANSPORT": style, "IPCLAB_SERVICES": SERVICE}
    if style == "amqp":
        env["IPCLAB_AMQP_URL"] = broker.url
    port = free_port()
    log = work / f"{style}-server.log"
    server = spawn(
        [str(binary)],
        {**env, "IPCLAB_ROLE": SERVICE, "IPCLAB_PORT": str(port), "IPCLAB_FIXTURE": str(fixture)},
        log,
    )
    try:
        time.sleep(1.0)  # the listener or the consumer is up well within this
        if server.poll() is not None:
            raise RuntimeError(f"go server ({style}) exited: {log.read_text()[-500:]}")
        budget = 60 + args.requests * 10 / 100 + args.seconds
        client = subprocess.run(
            [str(binary)],
            env={
                **env,
                "IPCLAB_ROLE": "bench",
                "IPCLAB_ADDR_PRODUCT_INFO": f"127.0.0.1:{port}",
                "IPCLAB_BENCH_REQUESTS": str(args.requests),
                "IPCLAB_BENCH_INFLIGHT": str(args.inflight),
                "IPCLAB_BENCH_SECONDS": str(args.seconds),
                "IPCLAB_BENCH_PAYLOAD": str(payload_file),
                "IPCLAB_BENCH_SERVER_PIDS": str(server.pid),
                "IPCLAB_BENCH_BROKER_PIDS": ",".join(map(str, broker.pids() if broker else [])),
            },
            capture_output=True,
            text=True,
            check=False,
            timeout=budget,
        )
        if client.returncode != 0:
            raise RuntimeError(f"go bench client ({style}): {client.stderr.strip()[-500:]}")
        r = json.loads(client.stdout)
    finally:
        stop_group(server)
    elapsed, done = r["elapsed_s"], r["done"]
    cpu = (r["client_cpu_s"], r["server_cpu_s"], r["broker_cpu_s"])
    return {
        "seq_p50_us": round(r["seq_p50_us"], 1),
        "seq_p99_us": round(r["seq_p99_us"], 1),
        "rps": round(done / elapsed, 1),
        "cpu_us_per_call": round(1e6 * sum(cpu) / done, 1) if done else None,
        "errors": r["errors"],
        "first_error": r["first_error"],
        "client_cpu_percent": round(100 * cpu[0] / elapsed, 1),
        "server_cpu_percent": round(100 * cpu[1] / elapsed, 1),
        "broker_cpu_percent": round(100 * cpu[2] / elapsed, 1) if broker else None,
    }


def cleanup() -> None:
    """Remove this process's work folder (fixture, payload, server logs)."""
    global _WORK
    if _WORK is not None:
        shutil.rmtree(_WORK, ignore_errors=True)
        _WORK = None


def go_version() -> str | None:
    """The toolchain that built the rows (None without one)."""
    if toolchain_missing():
        return None
    out = subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True, check=False)
    return out.stdout.strip() or None
