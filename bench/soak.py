"""A soak under faults per style: a stack at a fraction (0.8) of its measured peak for 30
minutes, a fault every 5 minutes, and the growth of every process's memory, descriptors and
sockets after warm-up against a stated bound (docs/soak.md; issue 28, "Must show" 4).

Per stack: the peak comes from ``bench/stacks.py``'s ramp (its ``step`` and ``peak``: the
step with the most pages/s among those without failures), unless given; the soak keeps the
peak's users and adds the think time that brings them to ``--load-fraction`` of the peak's
throughput, calibrated by short runs (:func:`calibrate`); then ``ipclab.soak.run_soak``
(one ordinary run directory, written as it goes) and ``ipclab.soak.soak_tables``. Faults
hit every service in turn (killed, started again ``--downtime`` later) and the broker where
there is one (restarted); the gateway lives throughout, so its descriptors and sockets tell
whether the stack cleans up after faults.

    python bench/soak.py [--stacks shop-rest,shop-grpc,shop-amqp] [--duration 1800]
                         [--fault-period 300] [--load-fraction 0.8] [--backend local]
                         [--root data/runs/soak] [--peak RPS@USERS] [--markdown] [--json OUT]

Resumable: under ``--root`` each stack has ``<stack>-<backend>/peak.json``, ``load.json`` and
``<stack>-<backend>/soak/`` (the run directory). A finished soak with the same plan is
reused (its tables are recomputed and printed); an unfinished one (the harness was killed)
is moved aside to ``soak.interrupted-<UTC time>`` and run again. Ctrl-C or SIGTERM stops the
load and the stack before exiting.

    # the dry run: 2 minutes, one fault at 1 minute, a short ramp
    python bench/soak.py --stacks shop-rest --duration 120 --fault-period 60 --warmup 30 \\
        --restart-warmup 10 --window 15 --sample 2 --steps 4,16 --step-duration 5
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from ipclab import runstore
from ipclab.cli import install_signal_handlers
from ipclab.load.runner import LoadProfile, run
from ipclab.runs import DEFAULT_ROOT, read_run
from ipclab.soak import SoakPlan, SoakTables, run_soak, soak_tables
from ipclab.stacks import resolve

STACKS = ("shop-rest", "shop-grpc", "shop-amqp")


# --------------------------------------------------------------------------- the peak
def measure_peak(stack: str, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """The ramp of bench/stacks.py (its ``step`` and ``peak``), its rows kept in
    ``peak.json``; a ramp cut short is run again (it is short)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import stacks as ramp  # beside this file: bench/stacks.py

    done = folder / "peak.json"
    if done.exists():
        doc = json.loads(done.read_text())
        if doc.get("steps") == args.steps and doc.get("step_duration") == args.step_duration:
            return dict(doc)
    runs = folder / "peak"
    shutil.rmtree(runs, ignore_errors=True)
    runs.mkdir(parents=True)
    step_args = argparse.Namespace(
        duration=args.step_duration, warmup=min(2.0, args.step_duration / 2), backend=args.backend
    )
    rows = []
    for users in args.steps:
        rows.append(ramp.step(stack, users, step_args, runs))
        print("  ramp " + ramp.row(rows[-1]), flush=True)
    best = ramp.peak(rows)
    assert best is not None
    doc = {
        "steps": args.steps,
        "step_duration": args.step_duration,
        "rows": rows,
        "rps": best["rps"],
        "users": best["users"],
        "top_step": best["users"] == max(args.steps),  # the peak may lie beyond the ramp
        # the lightest step's median latency: the response time a user sees below the peak
        "light_p50_ms": min(rows, key=lambda r: r["users"])["p50_ms"],
    }
    done.write_text(json.dumps(doc, indent=2) + "\n")
    return doc


def think_time(peak: dict[str, Any], fraction: float) -> float:
    """The first guess of the think time that brings the peak's users to ``fraction`` of
    its pages/s in a closed loop, users / (think + response) = fraction x peak, taking the
    ramp's lightest step's response time."""
    r = (peak.get("light_p50_ms") or 0.0) / 1000.0
    return max(0.0, peak["users"] / (fraction * peak["rps"]) - r)


def calibrate(
    stack: str, peak: dict[str, Any], args: argparse.Namespace, folder: Path
) -> dict[str, Any]:
    """The think time of the soak, by short runs (``ipclab.load.runner.run``, each as long
    as a ramp step): from :func:`think_time`, each round takes the response time the last
    one saw (users / pages/s - think) and solves again, until the pages/s are within 5% of
    the target (at most ``--calibrate-rounds``). Below the peak the response time depends on
    the load, so no formula gets it in one; kept in ``load.json``."""
    target = args.load_fraction * peak["rps"]
    key = {"target_rps": target, "users": peak["users"], "rounds": args.calibrate_rounds}
    done = folder / "load.json"
    if done.exists():
        doc = json.loads(done.read_text())
        if all(doc.get(k) == v for k, v in key.items()):
            return dict(doc)
    users, think, rows = int(peak["users"]), think_time(peak, args.load_fraction), []
    for _ in range(args.calibrate_rounds):
        profile = LoadProfile(
            users=users,
            spawn_rate=users,
            duration_s=args.step_duration,
            warmup_s=min(2.0, args.step_duration / 2),
            think_time_s=think,
        )
        label = f"{stack}-calibrate-{len(rows)}"
        run_dir = run(
            stack, profile, backend=args.backend, root=folder / "calibration", label=label
        )
        rps = float(json.loads((run_dir / "summary.json").read_text())["rps"])
        rows.append({"think_s": think, "rps": rps, "share_of_peak": rps / peak["rps"]})
        print(f"  calibrate think {think:.4f} s: {rps:.0f} pages/s ({rps / target:.2f} of the"
              f" target {target:.0f})", flush=True)  # fmt: skip
        if rps <= 0 or abs(rps / target - 1) <= 0.05:
            break
        response = max(0.0, users / rps - think)
        think = max(0.0, users / target - response)
    doc = {**key, "think_s": think, "rounds_run": rows}
    done.write_text(json.dumps(doc, indent=2) + "\n")
    return doc


# --------------------------------------------------------------------------- the soak
def plan_from(args: argparse.Namespace) -> SoakPlan:
    return SoakPlan(
        duration_s=args.duration,
        fault_period_s=args.fault_period,
        downtime_s=args.downtime,
        components=tuple(c for c in args.components.split(",") if c),
        warmup_s=args.warmup,
        restart_warmup_s=args.restart_warmup,
        window_s=args.window,
        sample_s=args.sample,
    )


def soak_one(stack: str, args: argparse.Namespace, root: Path) -> tuple[Path, dict[str, Any]]:
    folder = root / f"{stack}-{args.backend}"
    folder.mkdir(parents=True, exist_ok=True)
    plan = plan_from(args)
    if args.peak:
        rps, _, users = args.peak.partition("@")
        peak = {"rps": float(rps), "users": int(users), "light_p50_ms": 0.0, "given": True}
    else:
        peak = measure_peak(stack, args, folder)
    out = folder / "soak"
    if (out / "manifest.json").exists():
        run = read_run(out)
        wanted = json.loads(json.dumps(plan.as_dict()))
        if runstore.reusable(
            run.manifest,
            backend=args.backend,
            stack_spec=resolve(stack).declaration(),
            same_parameters=lambda p: p.get("soak") == wanted,
        ):
            print(f"{stack}: reusing the finished soak in {out}", flush=True)
            return out, peak
        if run.complete:
            raise SystemExit(
                f"{out} holds a finished soak of another plan, stack, backend or measuring "
                "code; move it or choose another --root"
            )
    if out.exists():
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        aside = folder / f"soak.interrupted-{stamp}"
        out.rename(aside)
        print(f"{stack}: an unfinished soak moved aside to {aside}", flush=True)
    load = calibrate(stack, peak, args, folder)
    extra = {"peak": peak, "load_fraction": args.load_fraction, "calibration": load}
    run_soak(
        stack, out, plan, int(peak["users"]), load["think_s"], backend=args.backend, extra=extra
    )
    return out, peak


# --------------------------------------------------------------------------- the tables
def _f(v: Any, fmt: str = ".1f") -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return format(v, fmt)


def process_rows(t: SoakTables) -> list[list[str]]:
    verdict = {True: "pass", False: "FAIL", None: "?"}
    return [
        [r.component, r.metric, str(r.restarts), _f(r.after_warmup), _f(r.at_end),
         _f(r.per_10min, "+.2f"), _f(r.projected, "+.1f"), _f(r.bound), verdict[r.passed]]
        for r in t.processes.itertuples()
    ]  # fmt: skip


def fault_rows(t: SoakTables) -> list[list[str]]:
    return [
        [_f(r.at_s, ".0f"), r.component, r.action, str(r.lost), str(r.other_failures),
         _f(r.recovery_s, ".2f"), r.status]
        for r in t.faults.itertuples()
    ]  # fmt: skip


PROCESS_HEAD = ["component", "metric", "restarts", "after warm-up", "at end", "growth/10 min",
                "projected", "bound", "verdict"]  # fmt: skip
FAULT_HEAD = ["at s", "component", "fault", "pages lost", "other failures", "recovery s",
              "status"]  # fmt: skip


def render(head: list[str], rows: list[list[str]], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])
    widths = [max(len(x) for x in col) for col in zip(head, *rows, strict=False)]
    fmt = "  ".join(f"{{:<{w}}}" if i < 3 else f"{{:>{w}}}" for i, w in enumerate(widths))
    return "\n".join(fmt.format(*r) for r in [head, *rows])


def report(stack: str, run_dir: Path, peak: dict[str, Any], args: argparse.Namespace) -> dict:
    t = soak_tables(run_dir)
    p = read_run(run_dir).parameters
    think = p.get("think_time", {}).get("min")
    rps = t.info.get("rps")
    share = rps / peak["rps"] if rps and peak.get("rps") else None
    beyond = " (the ramp's top step: the peak may be higher)" if peak.get("top_step") else ""
    n_faults = len(t.faults)
    print(
        f"\n## {stack} ({args.backend}): {t.info['users']} users, think {_f(think, '.3f')} s;"
        f" peak {peak['rps']:.0f} pages/s at {peak['users']} users{beyond};"
        f" soaked at {_f(rps, '.0f')} pages/s ({_f(share, '.2f')} of the peak) for"
        f" {t.info['span_s']:.0f} s, {n_faults} faults; status {t.info['status']}"
    )
    print(
        f"rss in MiB, fds and sockets per process tree; after warm-up ({t.info['warmup_s']:g} s)"
        " and at end: medians; growth: trend within process lifetimes;"
        " projected: over the span after warm-up; bound: max(10% of after warm-up, slack)\n"
    )
    print(render(PROCESS_HEAD, process_rows(t), args.markdown))
    print()
    print(render(FAULT_HEAD, fault_rows(t), args.markdown))
    print(
        f"\npages: {t.info['requests']} requested, {t.info['failures']} failed,"
        f" {t.info['failures_before_first_fault']} of them before the first fault"
    )
    return {
        "stack": stack,
        "run_dir": str(run_dir),
        "peak": peak,
        "info": t.info,
        "processes": t.processes.to_dict("records"),
        "faults": t.faults.to_dict("records"),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stacks", default=",".join(STACKS), help="comma-separated stack names")
    ap.add_argument("--duration", type=float, default=1800.0, help="soak seconds (1800)")
    ap.add_argument("--fault-period", type=float, default=300.0, help="a fault every (300 s)")
    ap.add_argument("--downtime", type=float, default=5.0, help="kill to restart (5 s)")
    ap.add_argument("--components", default="", help="fault targets (all services, broker)")
    ap.add_argument("--load-fraction", type=float, default=0.8, help="of the peak (0.8)")
    ap.add_argument("--warmup", type=float, default=180.0, help="left out of trends (180 s)")
    ap.add_argument("--restart-warmup", type=float, default=60.0, help="after a restart (60 s)")
    ap.add_argument("--window", type=float, default=60.0, help="median windows (60 s)")
    ap.add_argument("--sample", type=float, default=5.0, help="handles.csv period (5 s)")
    ap.add_argument("--backend", default="local")
    ap.add_argument("--root", type=Path, default=DEFAULT_ROOT / "soak", help="run directories")
    ap.add_argument("--peak", help="RPS@USERS: skip the ramp, take this peak")
    ap.add_argument("--steps", default="8,16,32,64", help="the ramp's users per step")
    ap.add_argument("--step-duration", type=float, default=10.0, help="seconds per ramp step")
    ap.add_argument("--calibrate-rounds", type=int, default=3, help="think-time runs (3)")
    ap.add_argument("--markdown", action="store_true", help="tables in Markdown (docs/soak.md)")
    ap.add_argument("--json", type=Path, help="also write the tables to this JSON file")
    args = ap.parse_args(argv)
    args.steps = [int(u) for u in args.steps.split(",") if u]
    if not 0 < args.load_fraction <= 1:
        ap.error("--load-fraction must be in (0, 1]")
    install_signal_handlers()  # SIGTERM as Ctrl-C: the load and the stack are stopped
    load_before = os.getloadavg()
    print(
        f"# {os.cpu_count()} cores | load avg {load_before[0]:.2f} | backend {args.backend}"
        f" | {args.duration:g} s per style, a fault every {args.fault_period:g} s"
        f" | {args.load_fraction:g} of the peak | root {args.root}",
        flush=True,
    )
    started, docs = time.monotonic(), []
    try:
        for stack in [s for s in args.stacks.split(",") if s]:
            run_dir, peak = soak_one(stack, args, args.root)
            docs.append(report(stack, run_dir, peak, args))
    except KeyboardInterrupt:
        print("interrupted; the stack and the load were stopped", file=sys.stderr)
        return 130
    print(f"\n# load avg {load_before[0]:.2f} before, {os.getloadavg()[0]:.2f} after;"
          f" {time.monotonic() - started:.0f} s")  # fmt: skip
    if args.json:
        doc = {"cores": os.cpu_count(), "args": {k: str(v) for k, v in vars(args).items()},
               "stacks": docs}  # fmt: skip
        args.json.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
