"""Peak product-page throughput per stack, stepping the number of Locust users.

Each step is one ordinary run (``ipclab.load.runner.run``: start the stack, closed-loop load
with no think time, stop the stack), so every figure comes from a run directory's
summary.json. Per step it prints users, rps, latency p50/p99, failures, the load
generator's CPU (mean, % of one core) and whether it saturated, and the mean CPU of the
gateway, the five services together and (AMQP) the broker. Then the peak per stack: the
step with the most rps among those without failures, and the generator's CPU there.

    python bench/stacks.py [--stacks shop-rest,shop-grpc,shop-amqp] [--steps 8,16,32,64,128]
                           [--duration 10] [--warmup 2] [--backend local] [--root DIR]
                           [--json OUT]

Run directories go to a temporary directory that is removed afterwards, unless --root.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ipclab_services.domains.shop import SERVICES as SHOP_SERVICES

from ipclab.load.runner import LoadProfile, run

STACKS = ("shop-rest", "shop-grpc", "shop-amqp")


def step(stack: str, users: int, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    profile = LoadProfile(
        users=users, spawn_rate=users, duration_s=args.duration, warmup_s=args.warmup
    )
    run_dir = run(stack, profile, backend=args.backend, root=root, label=f"{stack}-u{users}")
    s = json.loads((run_dir / "summary.json").read_text())
    cpu = s.get("cpu_percent_mean", {})
    gen = s.get("loadgen_cpu_percent") or {}
    return {
        "stack": stack,
        "users": users,
        "rps": s["rps"],
        "p50_ms": s["latency_ms"]["p50"],
        "p99_ms": s["latency_ms"]["p99"],
        "requests": s["requests"],
        "failures": s["failures"],
        "loadgen_cpu_mean": gen.get("mean"),
        "loadgen_cpu_p95": gen.get("p95"),
        "loadgen_saturated": s.get("loadgen_saturated"),
        "gateway_cpu": cpu.get("gateway"),
        "services_cpu": round(sum(cpu.get(r) or 0.0 for r in SHOP_SERVICES), 1),
        "broker_cpu": cpu.get("broker"),
        "stack_cpu_ms_per_page": s.get("stack_cpu_ms_per_request"),
        "status": s.get("status"),
        "run_dir": str(run_dir),
    }


def _f(v: float | None, fmt: str = ".0f") -> str:
    return "-" if v is None else format(v, fmt)


HEADER = (
    f"{'stack':<10} {'users':>5} {'rps':>7} {'p50 ms':>7} {'p99 ms':>7} {'fail':>5} "
    f"{'gen cpu%':>8} {'gen sat':>7} {'gw cpu%':>7} {'svc cpu%':>8} {'brk cpu%':>8} "
    f"{'cpu ms/page':>11}"
)


def row(r: dict[str, Any]) -> str:
    sat = {True: "YES", False: "no", None: "?"}[r["loadgen_saturated"]]
    return (
        f"{r['stack']:<10} {r['users']:>5} {r['rps']:>7.0f} {_f(r['p50_ms'], '.1f'):>7} "
        f"{_f(r['p99_ms'], '.1f'):>7} {r['failures']:>5} {_f(r['loadgen_cpu_mean']):>8} "
        f"{sat:>7} {_f(r['gateway_cpu']):>7} {_f(r['services_cpu']):>8} "
        f"{_f(r['broker_cpu']):>8} {_f(r['stack_cpu_ms_per_page'], '.2f'):>11}"
    )


def peak(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    clean = [r for r in rows if r["failures"] == 0] or rows
    return max(clean, key=lambda r: r["rps"], default=None)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stacks", default=",".join(STACKS), help="comma-separated stack names")
    ap.add_argument("--steps", default="8,16,32,64,128", help="users per step, comma-separated")
    ap.add_argument("--duration", type=float, default=10.0, help="seconds per step (default 10)")
    ap.add_argument("--warmup", type=float, default=2.0, help="seconds left out of each summary")
    ap.add_argument("--backend", default="local")
    ap.add_argument("--root", type=Path, help="keep the run directories here")
    ap.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = ap.parse_args(argv)
    stacks = [s for s in args.stacks.split(",") if s]
    steps = [int(u) for u in args.steps.split(",") if u]

    root = args.root or Path(tempfile.mkdtemp(prefix="ipclab-bench-stacks-"))
    load_before = os.getloadavg()
    print(
        f"# {os.cpu_count()} cores | load avg {load_before[0]:.2f} | backend {args.backend}"
        f" | {args.duration:g} s per step, first {args.warmup:g} s left out"
        " | cpu: mean % of one core; cpu ms/page: gateway+services+broker",
        flush=True,
    )
    print(HEADER, flush=True)
    rows: list[dict[str, Any]] = []
    started = time.monotonic()
    try:
        for stack in stacks:
            for users in steps:
                rows.append(step(stack, users, args, root))
                print(row(rows[-1]), flush=True)
    finally:
        if args.root is None:
            shutil.rmtree(root, ignore_errors=True)
    print()
    peaks = {}
    for stack in stacks:
        p = peak([r for r in rows if r["stack"] == stack])
        if p is None:
            continue
        peaks[stack] = p
        sat = "SATURATED" if p["loadgen_saturated"] else "not saturated"
        print(
            f"peak {stack}: {p['rps']:.0f} rps at {p['users']} users (p50 {p['p50_ms']:.1f} ms,"
            f" p99 {p['p99_ms']:.1f} ms); load generator CPU {_f(p['loadgen_cpu_mean'])}%"
            f" of one core (p95 {_f(p['loadgen_cpu_p95'])}%), {sat}"
        )
    load_after = os.getloadavg()
    print(
        f"# load avg {load_before[0]:.2f} before, {load_after[0]:.2f} after;"
        f" {time.monotonic() - started:.0f} s"
    )
    if args.json:
        doc = {
            "cores": os.cpu_count(),
            "load_avg_before": load_before,
            "load_avg_after": load_after,
            "args": {k: str(v) for k, v in vars(args).items() if k != "json"},
            "steps": rows,
            "peaks": peaks,
        }
        args.json.write_text(json.dumps(doc, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
