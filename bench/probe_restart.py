"""The availability probe after a whole-stack restart under load (issue 46.3): does it
measure the system, or itself?

One ``--stack`` on ``--backend`` under method 1's limits (0.5 CPU, 256 MB per container),
``--users`` Locust users spawned at ``--spawn-rate``, the harness's own ``Monitor`` (its
probe in a thread, as ``run_until_failure`` has it), and beside it traced probes that log
each attempt (a new or a reused connection, the connect time, the whole time, the outcome):

- ``B-thread-ka-1s``: in the harness process, keep-alive, 1 s (the Monitor's settings);
- ``C-proc-ka-1s``: the same in a process of its own (the harness's threads ruled out);
- ``D-proc-fresh-1s``: a new connection for every attempt (a stale pooled one ruled out);
- ``E-proc-ka-10s``: a 10 s timeout (what the system's latency is, past the probe's 1 s).

``ss`` and ``conntrack -C`` are sampled once a second (``ss.jsonl``). After the ramp and
``--steady`` s, ``restart_all`` restarts every component (as method 1 does on a failure);
``--after`` s more are observed, then everything stops. ``--summary OUT`` prints, per probe,
5-s bins around the gateway's restart and the first good answer after it, beside Locust's
per-second history.

    python bench/probe_restart.py run OUT [--users 300] [--spawn-rate 30] [--after 60]
    python bench/probe_restart.py summary OUT
    python bench/probe_restart.py newcomer [--users 300] [--cpu-ms 2] [--seconds 30]

``newcomer`` needs no stack: one uvicorn server of the services' own (``serve_http``, uvloop)
whose every answer takes ``--cpu-ms`` of CPU, ``--users`` closed-loop keep-alive clients (as
Locust's users) in a process of their own, and three traced probes with a 30 s timeout
(keep-alive and fresh at a fixed rate, and ``closed``: one request at a time on a kept
connection, as a user): the users' median and the probes' side by side, in one sitting.

Each traced probe asks for ``/product/1?customer_id=1`` every 0.2 s (the Monitor: every
0.1 s), 30 requests a second in all beside Locust's hundreds. A diagnostic: one run, no
intervals; on a shared machine compare the probes with each other and with Locust in the
same run, never across runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import aiohttp
import pandas as pd

PAGE = "/product/1?customer_id=1"
COLUMNS = ("seq", "t", "conn", "connect_ms", "end_ms", "status", "ok", "error")
#: name -> (keep-alive, timeout s, in the harness's process)
PROBES = {
    "B-thread-ka-1s": (True, 1.0, True),
    "C-proc-ka-1s": (True, 1.0, False),
    "D-proc-fresh-1s": (False, 1.0, False),
    "E-proc-ka-10s": (True, 10.0, False),
}


class Traced:
    """A probe that logs, per attempt, whether it made a connection and how long that took."""

    def __init__(
        self,
        url: str,
        out: Path,
        keepalive: bool,
        timeout_s: float,
        period_s: float,
        closed: bool = False,
    ):
        self.url, self.out = url.rstrip("/"), Path(out)
        self.keepalive, self.timeout_s, self.period_s = keepalive, timeout_s, period_s
        self.closed = closed  # one request at a time (as a user), at most one per period
        self.halt = threading.Event()

    def _trace(self) -> aiohttp.TraceConfig:
        tc = aiohttp.TraceConfig()

        def at(key: str) -> Any:
            async def cb(_s: Any, ctx: Any, _p: Any) -> None:
                # the first connection attempt's start, the last one's end (aiohttp retries
                # once when a reused connection turns out closed)
                if key != "c0" or key not in ctx.trace_request_ctx:
                    ctx.trace_request_ctx[key] = time.perf_counter()

            return cb

        tc.on_connection_create_start.append(at("c0"))
        tc.on_connection_create_end.append(at("c1"))
        tc.on_connection_reuseconn.append(at("reuse"))
        return tc

    async def _one(self, s: aiohttp.ClientSession, seq: int, w: Any) -> None:
        rec: dict[str, float] = {}
        t, p0 = time.time(), time.perf_counter()
        status, ok, err = 0, False, ""
        try:
            async with s.get(self.url + PAGE, trace_request_ctx=rec) as r:
                status = r.status
                body = await r.read()
            ok = status == 200 and isinstance(json.loads(body), dict)
        except TimeoutError:
            err = "timeout"
        except Exception as e:  # noqa: BLE001 - every failure is a row
            err = f"{type(e).__name__}: {e}"[:120]
        p1 = time.perf_counter()
        conn = "reused" if "reuse" in rec else "new" if "c0" in rec else "none"
        connect = round((rec.get("c1", p1) - rec["c0"]) * 1000, 2) if "c0" in rec else ""
        w.writerow([seq, round(t, 4), conn, connect, round((p1 - p0) * 1000, 2), status, ok, err])

    async def run(self, duration_s: float) -> None:
        with open(self.out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(COLUMNS)
            connector = aiohttp.TCPConnector(limit=0, force_close=not self.keepalive)
            timeout = aiohttp.ClientTimeout(total=self.timeout_s)
            tasks: set[asyncio.Task[None]] = set()
            async with aiohttp.ClientSession(
                connector=connector, timeout=timeout, trace_configs=[self._trace()]
            ) as s:
                loop = asyncio.get_running_loop()
                end, nxt, seq = loop.time() + duration_s, loop.time(), 0
                while loop.time() < end and not self.halt.is_set():
                    if self.closed:  # the next request once the previous is answered
                        await self._one(s, seq, w)
                        seq, nxt = seq + 1, max(nxt + self.period_s, loop.time())
                        await asyncio.sleep(max(0.0, nxt - loop.time()))
                        f.flush()
                        continue
                    task = asyncio.create_task(self._one(s, seq, w))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                    seq, nxt = seq + 1, nxt + self.period_s
                    await asyncio.sleep(max(0.0, nxt - loop.time()))
                    f.flush()
                if tasks:
                    await asyncio.wait(set(tasks))


def sample_sockets(port: int, out: Path, halt: threading.Event) -> None:
    """Once a second: the host's TCP sockets to or from ``port`` by state and process, and
    the conntrack table's size."""
    with open(out, "w") as f:
        while not halt.is_set():
            ss = subprocess.run(
                ["ss", "-tnpH", "state", "all", f"( dport = :{port} or sport = :{port} )"],
                capture_output=True, text=True, check=False,
            ).stdout  # fmt: skip
            ct = subprocess.run(["conntrack", "-C"], capture_output=True, text=True, check=False)
            counts: dict[str, int] = {}
            for line in ss.splitlines():
                who = line.split('users:(("')[1].split('"')[0] if "users:((" in line else "-"
                key = f"{line.split()[0]}:{who}"
                counts[key] = counts.get(key, 0) + 1
            row = {"t": round(time.time(), 2), "conntrack": ct.stdout.strip(), "ss": counts}
            f.write(json.dumps(row) + "\n")
            f.flush()
            halt.wait(1.0)


def _spawn_probe(name: str, url: str, out: Path, total_s: float) -> subprocess.Popen[bytes]:
    keepalive, timeout_s, _ = PROBES[name]
    args = [url, str(out / f"{name}.csv"), str(int(keepalive)), str(timeout_s), str(total_s)]
    return subprocess.Popen([sys.executable, __file__, "probe", *args])


def run(out: Path, stack_name: str, backend: str, users: int, spawn_rate: float,
        steady_s: float, after_s: float) -> None:  # fmt: skip
    from ipclab.availability.runner import Monitor, restart_all, with_stack
    from ipclab.availability.tracker import Criteria
    from ipclab.backends import StackOptions
    from ipclab.load.runner import LoadProfile, LoadSession
    from ipclab.runs import RunWriter

    out.mkdir(parents=True)
    opts = StackOptions(call_timeout_s=15.0, cpus=0.5, memory_mb=256)
    before = users / spawn_rate + 1 + steady_s
    total = before + after_s + 10
    with with_stack(stack_name, backend, opts, logs_dir=out / "stacklogs") as stack:
        w = RunWriter(out / "run", "availability", {"bench": "probe_restart"}, stack=stack_name)
        profile = LoadProfile(users=users, spawn_rate=spawn_rate, duration_s=total + 60)
        load = LoadSession(stack, profile, w, opts)
        mon = Monitor(stack, w, Criteria(await_restart="always"))
        halt = threading.Event()
        port = int(stack.gateway_url.rsplit(":", 1)[1])
        threading.Thread(target=sample_sockets, args=(port, out / "ss.jsonl", halt)).start()
        inproc = Traced(stack.gateway_url, out / "B-thread-ka-1s.csv", True, 1.0, 0.2)
        procs: list[subprocess.Popen[bytes]] = []
        try:
            load.start()
            time.sleep(2.0)
            mon.start()
            th = threading.Thread(target=lambda: asyncio.run(inproc.run(total)), daemon=True)
            th.start()
            procs = [_spawn_probe(n, stack.gateway_url, out, total) for n in PROBES if n[0] != "B"]
            mon.sleep(before)
            t0 = restart_all(stack, mon)
            print(f"restart_all: {time.time() - t0:.1f} s", flush=True)
            mon.sleep(after_s)
        finally:
            inproc.halt.set()
            for p in procs:
                p.send_signal(signal.SIGTERM)
            for p in procs:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(15)
            mon.close()
            load.stop()
            halt.set()


def gateway_restarted(out: Path) -> float:
    events = [json.loads(x) for x in (out / "run" / "events.jsonl").read_text().splitlines()]
    return next(e["t"] for e in events if e["event"] == "restarted" and e.get("role") == "gateway")


def first_good_after(df: pd.DataFrame, t: float, latency: str) -> float | None:
    """Seconds from ``t`` to the first good answer asked after it (answer time)."""
    at = df["t"] + pd.to_numeric(df[latency], errors="coerce").fillna(0) / 1000
    good = df["ok"].astype(str).str.lower().isin(("true", "1")) & (df["t"] >= t)
    return float(at[good].min() - t) if good.any() else None


def bins(df: pd.DataFrame, t: float, latency: str, width: float = 5.0) -> pd.DataFrame:
    """Per ``width``-s bin from ``t``: attempts, share good, timeouts, new connections, the
    median whole time and the median connect time."""
    d = df[(df["t"] > t - 20) & (df["t"] < t + 95)].copy()
    d["bin"] = ((d["t"] - t) // width * width).astype(int)
    d["good"] = d["ok"].astype(str).str.lower().isin(("true", "1"))
    g = d.groupby("bin")
    out = pd.DataFrame({
        "n": g.size(), "good%": (g["good"].mean() * 100).round(0),
        "timeouts": g["error"].apply(lambda s: int((s == "timeout").sum())),
        "p50_ms": g[latency].median().round(0),
    })  # fmt: skip
    if "conn" in d:
        out["new"] = g["conn"].apply(lambda s: int((s == "new").sum()))
        out["connect_p50_ms"] = pd.to_numeric(d["connect_ms"], errors="coerce").groupby(
            d["bin"]).median().round(1)  # fmt: skip
    return out


def locust_back(out: Path, t: float) -> float | None:
    """Seconds from ``t`` to the first second of Locust's history with successes and no
    failures."""
    h = pd.read_csv(out / "run" / "locust_stats_history.csv")
    h = h[(h["Name"] == "Aggregated") & (h["Timestamp"] >= t)]
    total = h["Total Request Count"] - h["Total Failure Count"]
    served = h[(total.diff() > 0) & (h["Total Failure Count"].diff() == 0)]
    return float(served["Timestamp"].min() - t) if len(served) else None


def summary(out: Path) -> dict[str, Any]:
    t = gateway_restarted(out)
    res: dict[str, Any] = {"locust_back_s": locust_back(out, t), "probes": {}}
    a = pd.read_csv(out / "run" / "probe.csv")
    res["probes"]["A-monitor"] = first_good_after(a, t, "latency_ms")
    print("== A-monitor (the harness's probe)\n" + bins(a, t, "latency_ms").T.to_string())
    for name in PROBES:
        path = out / f"{name}.csv"
        if path.exists():
            d = pd.read_csv(path, keep_default_na=False)
            res["probes"][name] = first_good_after(d, t, "end_ms")
            print(f"== {name}\n" + bins(d, t, "end_ms").T.to_string())
    print(json.dumps(res))
    return res


async def _server(port: int, cpu_s: float) -> None:
    from ipclab_services.asgi import serve_http

    async def app(scope: Any, _receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        t = time.perf_counter()
        while time.perf_counter() - t < cpu_s:  # the page's work, on the loop
            pass
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})  # fmt: skip
        await send({"type": "http.response.body", "body": b'{"product":1}'})

    await serve_http(app, "127.0.0.1", port)


async def _users(url: str, n: int, seconds: float) -> dict[str, float]:
    lat: list[float] = []

    async def user(s: aiohttp.ClientSession) -> None:
        while True:
            t = time.perf_counter()
            with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                async with s.get(url) as r:
                    await r.read()
                lat.append(time.perf_counter() - t)

    conn = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=conn, timeout=aiohttp.ClientTimeout(total=60)) as s:
        tasks = [asyncio.create_task(user(s)) for _ in range(n)]
        await asyncio.sleep(seconds)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    lat.sort()
    x = len(lat) / seconds
    return {"rps": x, "p50_ms": lat[len(lat) // 2] * 1000, "p95_ms": lat[int(len(lat) * 0.95)]
            * 1000, "little_ms": n / x * 1000 if x else float("nan")}  # fmt: skip


def newcomer(out: Path, users: int, cpu_ms: float, seconds: float) -> dict[str, Any]:
    """Closed-loop users on kept connections against probes' requests, on one saturated
    server (no stack): each side's latency in one sitting."""
    out.mkdir(parents=True, exist_ok=True)
    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        port = sk.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, __file__]
    server = subprocess.Popen([*cmd, "serve", str(port), str(cpu_ms / 1000)])
    try:
        time.sleep(2.0)
        load = subprocess.Popen([*cmd, "users", url + PAGE, str(users), str(seconds)],
                                stdout=subprocess.PIPE, text=True)  # fmt: skip
        time.sleep(min(5.0, seconds / 4))
        probes = [
            subprocess.Popen(
                [*cmd, "probe", url, str(out / f"{n}.csv"), ka, "30", str(seconds / 2)]
            )
            for n, ka in (("kept", "1"), ("fresh", "0"), ("closed", "closed"))
        ]
        res: dict[str, Any] = {"users": json.loads(load.communicate(timeout=seconds + 60)[0])}
        for p in probes:
            p.wait(60)
    finally:
        server.terminate()
        server.wait(10)
    for name in ("kept", "fresh", "closed"):
        d = pd.read_csv(out / f"{name}.csv", keep_default_na=False)
        res[name] = {
            "n": len(d),
            "ok": int(d["ok"].astype(str).eq("True").sum()),
            "p50_ms": float(d["end_ms"].median()),
            "new": int((d["conn"] == "new").sum()),
        }
    print(json.dumps(res))
    return res


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("out", type=Path)
    r.add_argument("--stack", default="shop-rest")
    r.add_argument("--backend", default="docker")
    r.add_argument("--users", type=int, default=300)
    r.add_argument("--spawn-rate", type=float, default=30.0)
    r.add_argument("--steady", type=float, default=20.0)
    r.add_argument("--after", type=float, default=60.0)
    sub.add_parser("summary").add_argument("out", type=Path)
    nc = sub.add_parser("newcomer")
    nc.add_argument("--out", type=Path, default=Path("newcomer"))
    nc.add_argument("--users", type=int, default=300)
    nc.add_argument("--cpu-ms", type=float, default=2.0)
    nc.add_argument("--seconds", type=float, default=30.0)
    sv = sub.add_parser("serve")
    sv.add_argument("port", type=int)
    sv.add_argument("cpu_s", type=float)
    us = sub.add_parser("users")
    for a in ("url", "n", "seconds"):
        us.add_argument(a)
    pr = sub.add_parser("probe")  # one traced probe in a process of its own
    for a in ("url", "csv", "keepalive", "timeout", "duration"):
        pr.add_argument(a)
    a = p.parse_args(argv)
    if a.cmd == "run":
        run(a.out, a.stack, a.backend, a.users, a.spawn_rate, a.steady, a.after)
        summary(a.out)
    elif a.cmd == "summary":
        summary(a.out)
    elif a.cmd == "newcomer":
        newcomer(a.out, a.users, a.cpu_ms, a.seconds)
    elif a.cmd == "serve":
        import uvloop

        uvloop.run(_server(a.port, a.cpu_s))
    elif a.cmd == "users":
        print(json.dumps(asyncio.run(_users(a.url, int(a.n), float(a.seconds)))))
    else:
        closed = a.keepalive == "closed"  # a closed loop on a kept connection
        tp = Traced(a.url, Path(a.csv), a.keepalive != "0", float(a.timeout), 0.2, closed)
        signal.signal(signal.SIGTERM, lambda *_: tp.halt.set())
        asyncio.run(tp.run(float(a.duration)))


if __name__ == "__main__":
    main()
