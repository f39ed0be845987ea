"""The TLS rows of bench/transports.py (issue 32): each style's per-call cost with TLS on,
and what a TLS handshake costs.

A TLS row runs the style's own adapters (``ipclab_services.transports``) with the stack's
TLS environment (``IPCLAB_TLS_CA``, ``IPCLAB_TLS_CERT``, ``IPCLAB_TLS_KEY``: one private
authority made for the bench process by ``ipclab.tls.make``), measured like every row:

- ``rest-tls``, ``grpc-tls``, ``h2c-tls``, ``amqp-tls`` (a private RabbitMQ node with its
  TLS listener): against ``rest``, ``grpc``, ``h2c``, ``amqp`` of the same round, the cost of
  encryption per call over connections kept open;
- ``rest-conn`` and ``rest-tls-conn``: HTTP/1.1 with a new connection per call (aiohttp,
  ``force_close``), in the clear and with TLS: their difference, less the kept-open rows'
  difference, is what a TLS handshake costs (a client that opens a connection per call pays
  it on every call).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ipclab import tls
from ipclab.tls import StackTls

_FILES: StackTls | None = None
#: the rows whose difference is a cost: (name, TLS row, plain row)
COSTS = (
    ("rest, per call", "rest-tls", "rest"),
    ("grpc, per call", "grpc-tls", "grpc"),
    ("h2c, per call", "h2c-tls", "h2c"),
    ("amqp, per call", "amqp-tls", "amqp"),
    ("rest, per new connection", "rest-tls-conn", "rest-conn"),
)


def files() -> StackTls:
    """The bench's authority, certificate and key (made once per process)."""
    global _FILES
    if _FILES is None:
        folder = Path(tempfile.mkdtemp(prefix="ipclab-bench-tls-"))
        _FILES = tls.make(folder / "tls", ("127.0.0.1",), "bench")
    return _FILES


@contextlib.contextmanager
def environment(on: bool) -> Iterator[None]:
    """The TLS environment in this process while the row's processes start (a spawned
    process takes this process's environment), none otherwise."""
    keys = ("IPCLAB_TLS_CA", "IPCLAB_TLS_CERT", "IPCLAB_TLS_KEY")
    saved = {k: os.environ.pop(k) for k in keys if k in os.environ}
    if on:
        os.environ.update(files().env())
    try:
        yield
    finally:
        for k in keys:
            os.environ.pop(k, None)
        os.environ.update(saved)


def broker(directory: Path) -> Any:
    """A private RabbitMQ node with a TLS listener (the amqp-tls row's)."""
    from ipclab.backends.broker import RabbitNode
    from ipclab.procs import free_ports

    amqp, dist, epmd, amqps = free_ports(4)
    node = RabbitNode(
        directory, port=amqp, dist_port=dist, epmd_port=epmd, tls_port=amqps, tls=files()
    )
    node.start()
    return node


def costs(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per cost of :data:`COSTS`: the TLS row's p50 and CPU per call less the plain row's of
    the same round (medians over rounds), and the handshake alone: the new-connection
    difference less REST's kept-open one."""
    ok = {(r["round"], r["name"]): r for r in rows if "error" not in r}
    rounds = sorted({r for r, _ in ok})
    out = []
    for name, with_tls, plain in COSTS:
        diffs = {
            key: [
                ok[r, with_tls][key] - ok[r, plain][key]
                for r in rounds
                if (r, with_tls) in ok and (r, plain) in ok
                and ok[r, with_tls][key] is not None and ok[r, plain][key] is not None
            ]
            for key in ("seq_p50_us", "cpu_us_per_call")
        }  # fmt: skip
        if diffs["cpu_us_per_call"]:
            out.append(
                {
                    "cost": name,
                    "rounds": len(diffs["cpu_us_per_call"]),
                    "extra_p50_us": round(float(np.median(diffs["seq_p50_us"])), 1),
                    "extra_cpu_us_per_call": round(float(np.median(diffs["cpu_us_per_call"])), 1),
                }
            )
    by = {c["cost"]: c for c in out}
    conn, call = by.get("rest, per new connection"), by.get("rest, per call")
    if conn and call:
        out.append(
            {
                "cost": "a TLS handshake (rest: new connection less kept-open)",
                "rounds": min(conn["rounds"], call["rounds"]),
                "extra_p50_us": round(conn["extra_p50_us"] - call["extra_p50_us"], 1),
                "extra_cpu_us_per_call": round(
                    conn["extra_cpu_us_per_call"] - call["extra_cpu_us_per_call"], 1
                ),
            }
        )
    return out


def print_costs(table: list[dict[str, Any]]) -> None:
    print("\n# TLS: what it adds, less the plain row of the same round (medians over rounds)")
    head = f"{'cost':<55} {'rounds':>6} {'+p50 us':>8} {'+cpu us/call':>12}"
    print(head + "\n" + "-" * len(head))
    for c in table:
        print(
            f"{c['cost']:<55} {c['rounds']:>6} {c['extra_p50_us']:>8.0f}"
            f" {c['extra_cpu_us_per_call']:>12.0f}"
        )


def cleanup(node: Any = None) -> None:
    """The TLS broker and the bench's TLS folder, removed."""
    global _FILES
    if node is not None:
        node.stop()
    if _FILES is not None:
        shutil.rmtree(_FILES.directory.parent, ignore_errors=True)
        _FILES = None
