"""How much of the machine the load generator takes: the harness (Locust) against wrk on the
same stack, with and without CPU pinning, and the largest load one and two Locust workers
drive before they saturate (issue 17).

Part 1, per condition, one wrk run and one harness run of ``--duration`` s at ``--users``
closed-loop users (wrk: that many connections, one thread; random product and customer ids as
Locust's users draw them), each on a freshly started ``--stack``:

- ``shared``: stack and generator on every CPU;
- ``pinned``: the stack on ``--stack-cpus``, the generator on ``--load-cpus`` (``--pin``);
- ``workers2``: the harness as a master and two workers, unpinned (wrk as in ``shared``).

The ratio harness rps / wrk rps is the generator's cost: 1.0 means Locust drives the stack as
hard as wrk does.

Part 2: the harness with 1 and with 2 workers at each of ``--steps`` users: rps, p50, each
worker's CPU (% of one core) and whether the generator saturated (any process >= 90%).

    python bench/generator_share.py [--stack shop-rest] [--users 20] [--duration 15]
        [--steps 25,50,100,200] [--stack-cpus 0] [--load-cpus 1] [--json OUT]

Single runs: estimates, no intervals; run it on a quiet machine (the load average is printed).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from ipclab.backends import StackOptions, get_backend
from ipclab.load.runner import LoadProfile, run
from ipclab.stacks import resolve

WRK_SCRIPT = """
math.randomseed(1)
request = function()
  local path = "/product/" .. math.random(1, 1000) .. "?customer_id=" .. math.random(1, 500)
  return wrk.format("GET", path)
end
"""


def _ms(text: str) -> float:
    value, unit = re.match(r"([\d.]+)(us|ms|s)", text).groups()  # type: ignore[union-attr]
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def wrk(stack: str, users: int, duration: float, stack_cpus: str | None, load_cpus: str | None,
        tmp: Path) -> dict[str, Any]:  # fmt: skip
    script = tmp / "random.lua"
    script.write_text(WRK_SCRIPT)
    running = get_backend("local").start(resolve(stack), StackOptions(cpuset=stack_cpus))
    try:
        cmd = ["wrk", "-t1", f"-c{users}", f"-d{duration:g}s", "--latency", "-s", str(script),
               running.gateway_url]  # fmt: skip
        if load_cpus:
            cmd = ["taskset", "-c", load_cpus, *cmd]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    finally:
        running.stop()
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p50 = _ms(re.search(r"50%\s+(\S+)", out).group(1))  # type: ignore[union-attr]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"rps": rps, "p50_ms": p50, "errors": int(errors.group(1)) if errors else 0}


def harness(stack: str, users: int, duration: float, workers: int, stack_cpus: str | None,
            load_cpus: str | None, root: Path) -> dict[str, Any]:  # fmt: skip
    profile = LoadProfile(users=users, spawn_rate=users, duration_s=duration, cpuset=load_cpus)
    run_dir = run(stack, profile, options=StackOptions(cpuset=stack_cpus), root=root,
                  workers=workers, label=f"{stack}-w{workers}-u{users}")  # fmt: skip
    s = json.loads((run_dir / "summary.json").read_text())
    one = (s.get("loadgen_cpu_percent") or {}).get("mean")  # a single Locust process
    by_process = s.get("loadgen_cpu_percent_by_process") or ({"loadgen": one} if one else {})
    return {
        "rps": s["rps"],
        "p50_ms": s["latency_ms"]["p50"],
        "failures": s["failures"],
        "requests": s["requests"],
        "loadgen_cpu": {k: round(v, 0) for k, v in by_process.items()},
        "saturated": s.get("loadgen_saturated"),
        "status": s.get("status"),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stack", default="shop-rest")
    ap.add_argument("--users", type=int, default=20)
    ap.add_argument("--duration", type=float, default=15.0)
    ap.add_argument("--steps", default="25,50,100,200")
    ap.add_argument("--stack-cpus", default="0")
    ap.add_argument("--load-cpus", default="1")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get install wrk")
    tmp = Path(tempfile.mkdtemp(prefix="ipclab-bench-gen-"))
    started = time.monotonic()
    print(f"# {os.cpu_count()} cores | load avg {os.getloadavg()[0]:.2f} | {args.stack}, "
          f"{args.users} users, {args.duration:g} s per run", flush=True)  # fmt: skip
    doc: dict[str, Any] = {"share": {}, "workers": []}
    try:
        conditions = {
            "shared": (None, None, 0),
            "pinned": (args.stack_cpus, args.load_cpus, 0),
            "workers2": (None, None, 2),
        }
        print(f"{'condition':<10} {'wrk rps':>8} {'wrk p50':>8} {'ipclab rps':>10} "
              f"{'ipclab p50':>10} {'ratio':>6}  generator cpu%", flush=True)  # fmt: skip
        wrk_shared: dict[str, Any] | None = None
        for name, (scpu, lcpu, workers) in conditions.items():
            if name == "workers2" and wrk_shared is not None:
                w = wrk_shared  # the same unpinned wrk figure
            else:
                w = wrk(args.stack, args.users, args.duration, scpu, lcpu, tmp)
            if name == "shared":
                wrk_shared = w
            h = harness(args.stack, args.users, args.duration, workers, scpu, lcpu, tmp)
            ratio = h["rps"] / w["rps"]
            doc["share"][name] = {"wrk": w, "ipclab": h, "ratio": round(ratio, 3)}
            line = f"{name:<10} {w['rps']:>8.0f} {w['p50_ms']:>8.1f} {h['rps']:>10.0f} "
            print(f"{line}{h['p50_ms']:>10.1f} {ratio:>6.2f}  {h['loadgen_cpu']}", flush=True)
        print()
        print(f"{'workers':>7} {'users':>5} {'rps':>7} {'p50 ms':>7} {'fail':>5} {'sat':>4}  "
              "cpu% per process", flush=True)  # fmt: skip
        for workers in (1, 2):
            for users in (int(u) for u in args.steps.split(",")):
                h = harness(args.stack, users, args.duration, workers, None, None, tmp)
                doc["workers"].append({"workers": workers, "users": users, **h})
                sat = "YES" if h["saturated"] else "no"
                print(f"{workers:>7} {users:>5} {h['rps']:>7.0f} {h['p50_ms']:>7.1f} "
                      f"{h['failures']:>5} {sat:>4}  {h['loadgen_cpu']}", flush=True)  # fmt: skip
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"# load avg {os.getloadavg()[0]:.2f} after; {time.monotonic() - started:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(doc, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
