"""The adapter-pair rows of bench/transports.py (issue 30): CoAP as a sidecar pair.

The AcmeAir stacks carry the gateway's HTTP/1.1 calls over the protocol under test through
two adapters (``services/adapters``): an ``egress`` (HTTP/1.1 in, the protocol out) and the
service's ``<service>-ingress`` (the protocol in, HTTP/1.1 out). A row here measures one
such pair between the bench's client and server, with the procedure of every other row:

- the server is the bench's aiohttp server of ``product-info`` (``aiohttp-web``'s), which
  also answers ``/product-info/<op>``, the path a pair carries unchanged;
- the pair is started as the stacks start it (``python -m ipclab_services.serve`` with the
  adapter's environment: ``IPCLAB_ADAPTERS`` ``python`` for aiocoap, ``native`` for
  Californium on the JVM, whose jars :func:`ipclab.javabuild.classpath` builds once);
- the client sends ``GET /product-info/get?product_id=1`` over HTTP/1.1 (aiohttp, keep-alive)
  to the egress, or to the server itself for ``pair-none``, the rows' own baseline: a pair's
  cost per call is its row less ``pair-none``'s, both measured in the same round;
- CPU counts the server, both adapters and every process they started (the JVM).

The JVM compiles as it runs: a pair row warms up with ``--pair-warmup`` calls (default
3,000; at least ``--requests``) before it is measured, and the aiocoap pair and
``pair-none`` with the same number, so that warm-up is no difference between them.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ipclab.procs import free_ports, spawn, stop_group, tail

SERVICE = "product-info"
PATH = f"/{SERVICE}/get?product_id=1"
#: the pair rows: adapter set per row (None: no pair, the client calls the server)
SETS = {"pair-none": None, "pair-aiocoap": "python", "pair-californium": "native"}
TRANSPORT = "coap"
READY_S = 90.0  # the JVM's start and the first build of its jars are within this


class PairError(RuntimeError):
    """A pair did not start or does not answer: the row fails, saying why."""


def _env(role: str, adapters: str, port: int, peers: dict[str, int]) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("IPCLAB_")}
    env = {
        **base,
        "IPCLAB_ROLE": role,
        "IPCLAB_ADAPTER": "egress" if role == "egress" else "ingress",
        "IPCLAB_ADAPTERS": adapters,
        "IPCLAB_TRANSPORT": TRANSPORT,
        "IPCLAB_HOST": "127.0.0.1",
        "IPCLAB_PORT": str(port),
        "IPCLAB_SERVICES": SERVICE,
    }
    for peer, p in peers.items():
        env["IPCLAB_ADDR_" + peer.upper().replace("-", "_")] = f"127.0.0.1:{p}"
    if adapters == "native":
        from ipclab import javabuild

        try:
            env["IPCLAB_CALIFORNIUM_CLASSPATH"] = str(javabuild.classpath())
        except javabuild.ToolchainMissing as e:
            raise PairError(str(e)) from None
    return env


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{PATH}", timeout=5) as r:
            return bool(r.status == 200)
    except (OSError, ValueError):
        return False


def _wait(port: int, procs: list[subprocess.Popen[bytes]], logs: list[Path]) -> None:
    """Until a call through the egress at ``port`` is answered 200 (or a pair process exits)."""
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in procs):
            raise PairError("an adapter exited: " + " | ".join(tail(f, 3) for f in logs))
        if _answers(port):  # refused while nothing listens yet: False
            return
        time.sleep(0.2)
    raise PairError(f"the pair does not answer after {READY_S:.0f} s: {tail(logs[0], 3)}")


@contextlib.contextmanager
def pair(name: str, server_port: int) -> Iterator[tuple[str, list[int]]]:
    """The pair of row ``name`` in front of the server at ``server_port``: yields the
    address the client calls and the pids of the adapters (their children count too)."""
    adapters = SETS[name]
    if adapters is None:
        yield f"127.0.0.1:{server_port}", []
        return
    egress_port, ingress_port = free_ports(2)
    work = Path(tempfile.mkdtemp(prefix="ipclab-bench-pair-"))
    ingress = f"{SERVICE}-ingress"
    roles = (
        (ingress, ingress_port, {SERVICE: server_port}),
        ("egress", egress_port, {ingress: ingress_port}),
    )
    procs, logs = [], []
    try:
        for role, port, peers in roles:
            logs.append(work / f"{role}.log")
            argv = [sys.executable, "-m", "ipclab_services.serve"]
            procs.append(spawn(argv, _env(role, adapters, port, peers), logs[-1]))
        _wait(egress_port, procs, logs)
        yield f"127.0.0.1:{egress_port}", [p.pid for p in procs]
    finally:
        for p in procs:
            stop_group(p)
        for f in logs:
            f.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            work.rmdir()


def costs(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per pair row, what the pair adds per call: its sequential p50 and its CPU per call
    less ``pair-none``'s of the same round (medians over the rounds), beside its req/s."""
    ok = [r for r in rows if "error" not in r]
    base = {r["round"]: r for r in ok if r["name"] == "pair-none"}
    out = []
    for name in (n for n in SETS if SETS[n] is not None):
        mine = [r for r in ok if r["name"] == name and r["round"] in base]
        if not mine:
            continue

        def extra(key: str, mine: list[dict[str, Any]] = mine) -> float | None:
            values = [
                r[key] - base[r["round"]][key]
                for r in mine
                if r[key] is not None and base[r["round"]][key] is not None
            ]
            return round(float(np.median(values)), 1) if values else None

        out.append(
            {
                "name": name,
                "rounds": len(mine),
                "rps": round(float(np.median([r["rps"] for r in mine])), 1),
                "extra_seq_p50_us": extra("seq_p50_us"),
                "extra_cpu_us_per_call": extra("cpu_us_per_call"),
            }
        )
    return out


def print_costs(table: list[dict[str, Any]]) -> None:
    print("\n# adapter pairs: what a pair adds per call, less pair-none of the same round")
    head = f"{'pair':<17} {'rounds':>6} {'req/s':>8} {'+p50 us':>8} {'+cpu us/call':>12}"
    print(head + "\n" + "-" * len(head))
    for c in table:
        p50, cpu = c["extra_seq_p50_us"], c["extra_cpu_us_per_call"]
        print(
            f"{c['name']:<17} {c['rounds']:>6} {c['rps']:>8.0f}"
            f" {'-' if p50 is None else f'{p50:.0f}':>8} {'-' if cpu is None else f'{cpu:.0f}':>12}"
        )
