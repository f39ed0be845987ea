"""Why a request through the Californium stack waited: the evidence, read off the running stack
with the system's own tools (issue 46, item 1; bench/californium_hops.py times the hops).

On ``acmeair-coap-californium`` started on the local backend (``--jvm-options`` as in
californium_hops.py, e.g. ``-Dsun.net.httpserver.nodelay=false`` for the JDK's default), four
readings, each printed as figures:

- ``sockets``: every role's TCP sockets after some load, with TCP_NODELAY and SO_KEEPALIVE
  as getsockopt reads them from outside the process (``ipclab.sockopts``, where ptrace is
  allowed), grouped by role, side and peer;
- ``packets``: ``tcpdump`` on loopback at the egress's port while one client sends GETs: per
  answer, the time from its first segment (the head) to its last (the body), and whether the
  client's pure ACK came between them (Nagle's algorithm holds a small segment until every
  earlier one is acknowledged, and the client delays that ACK: ``ato`` in ``ss -tni``);
- ``writes``: ``strace -f -e trace=write,setsockopt`` on the egress's JVM for a few answers:
  the writes per answer and whether any socket was given TCP_NODELAY;
- ``threads``: ``jstack`` of both JVMs sampled under 10 clients at the egress: how many of
  the egress's request threads are inside the adapter (``ipclab.coap``, e.g. waiting in
  ``Pool.exchange`` for the CoAP answer) and how many are idle, against the 10 requests in
  flight (a request held by a thread, a lock or a pool shows there), and where the
  ingress's threads are.

    python bench/californium_evidence.py [--jvm-options FLAGS] [--only sockets,packets,...]
        [--label NAME --csv TABLE]

``--csv`` appends each reading's figure as a row (what, measured, measured_on) to a table,
e.g. ``data/measured/californium_evidence.csv``, which docs/acmeair.md shows.

Root (or ptrace rights), tcpdump, strace and the JDK's jstack are needed for their readings;
a reading whose tool is missing says so and is skipped.
"""

from __future__ import annotations

import argparse
import collections
import csv
import datetime
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil
from californium_hops import SERVICE, cell, ports, started

from ipclab import sockopts
from ipclab.backends.local import LocalStack

READINGS = ("sockets", "packets", "writes", "threads")
#: the hops whose sockets the table states: (role, side, peer)
HOPS_READ = (
    ("gateway", "connected", "egress"),
    ("egress", "accepted", "gateway"),
    (f"{SERVICE}-ingress", "connected", SERVICE),
    (SERVICE, "accepted", f"{SERVICE}-ingress"),
)
SEGMENT = re.compile(
    r"^(?P<t>\d+\.\d+) IP6? \S+?\.(?P<sport>\d+) > \S+?\.(?P<dport>\d+): "
    r"Flags \[(?P<flags>[^\]]*)\].*?length (?P<len>\d+)"
)


def jvm_of(stack: LocalStack, role: str) -> int:
    """The pid of the JVM the role's adapter process started."""
    for child in psutil.Process(stack.procs[role].pid).children(recursive=True):
        if child.name() == "java":
            return child.pid
    raise RuntimeError(f"{role}: no JVM among its processes")


def _load(stack: LocalStack, hop: str, clients: int, seconds: float) -> threading.Thread:
    where = ports(stack)[hop]
    t = threading.Thread(target=cell, args=(hop, where, "GET", clients, seconds), daemon=True)
    t.start()
    return t


# --------------------------------------------------------------------------- sockets


def _role_sockets(stack: LocalStack, roles: tuple[str, ...]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for role in roles:
        root = stack.procs[role].pid
        sockopts.live_sockets(root)  # raises SockoptsError where they cannot be read
        out[role] = [s for s in sockopts.tree_sockets(root) if s.state in ("LISTEN", "ESTABLISHED")]
    return out


def sockets(stack: LocalStack) -> list[tuple[str, str]]:
    """Every role's TCP sockets by side and peer, with their options."""
    roles = ("gateway", "egress", f"{SERVICE}-ingress", SERVICE)
    load = _load(stack, "gateway", 10, 2.0)
    time.sleep(1.0)
    try:
        found = _role_sockets(stack, roles)
    except sockopts.SockoptsError as e:
        print(f"sockets: skipped ({e})")
        return []
    finally:
        load.join()
    owner = {s.local: role for role, socks in found.items() for s in socks}
    counts: collections.Counter[tuple[str, ...]] = collections.Counter()
    for role, socks in found.items():
        for s in socks:
            side = (
                "listening"
                if s.listening
                else ("accepted" if s.local[1] == stack.ports.get(role) else "connected")
            )
            peer = "-" if s.listening else owner.get(s.remote, "bench client")
            counts[(role, side, peer, str(int(s.nodelay)), str(int(s.keepalive)))] += 1
    print(f"sockets: {'role':>14} {'side':>10} {'peer':>14} TCP_NODELAY SO_KEEPALIVE  n")
    for (role, side, peer, nd, ka), n in sorted(counts.items()):
        print(f"         {role:>14} {side:>10} {peer:>14} {nd:>11} {ka:>12} {n:>2}")
    rows = []
    for role, side, peer in HOPS_READ:
        mine = {k: n for k, n in counts.items() if k[:3] == (role, side, peer)}
        on = sum(n for k, n in mine.items() if k[3] == "1")
        alive = sum(n for k, n in mine.items() if k[4] == "1")
        total = sum(mine.values())
        rows.append((f"{role}'s sockets {side} {'from' if side == 'accepted' else 'to'} {peer}",
                     f"TCP_NODELAY on {on} of {total}, SO_KEEPALIVE on {alive}"))  # fmt: skip
    return rows


# --------------------------------------------------------------------------- packets


def answers(lines: list[str], port: int) -> list[dict[str, Any]]:
    """Per answer of the server at ``port`` in more than one segment (tcpdump -tt text): the
    time from its first data segment (the head) to its last (the body), and the client's pure
    ACKs between them (the last one's time in ``ack``)."""
    out: list[dict[str, Any]] = []
    current: dict[int, dict[str, Any]] = {}
    for line in lines:
        m = SEGMENT.match(line)
        if not m:
            continue
        t, length = float(m["t"]), int(m["len"])
        from_server = int(m["sport"]) == port
        conn = int(m["dport"]) if from_server else int(m["sport"])
        a = current.get(conn)
        if from_server and length:
            if a is None:
                a = current[conn] = {"first": t, "last": t, "acks": [], "segs": 0}
            a["last"], a["segs"] = t, a["segs"] + 1
        elif not from_server and length:  # the next request: the answer before it is whole
            if a is not None:
                out.append(current.pop(conn))
        elif not from_server and a is not None:
            a["acks"].append(t)
    found = []
    for a in out:
        between = [t for t in a["acks"] if a["first"] <= t <= a["last"]]
        if a["segs"] > 1:
            found.append({**a, "gap_ms": (a["last"] - a["first"]) * 1000,
                          "acked_between": bool(between),
                          "ack": between[-1] if between else None})  # fmt: skip
    return found


def _ato(port: int) -> list[str]:
    """``ato`` (the delayed-ACK timeout) of the clients' sockets to ``port``, from ss."""
    text = subprocess.run(["ss", "-tniH", "state", "established", f"( dport = :{port} )"],
                          capture_output=True, text=True).stdout  # fmt: skip
    return re.findall(r"\bato:(\d+)", text)


def packets(stack: LocalStack) -> list[tuple[str, str]]:
    if shutil.which("tcpdump") is None:
        print("packets: skipped (no tcpdump: apt-get install tcpdump)")
        return []
    port = ports(stack)["egress"]
    with tempfile.NamedTemporaryFile("r", suffix=".txt") as out:
        dump = subprocess.Popen(
            ["tcpdump", "-i", "lo", "-nn", "-tt", "-l", f"tcp port {port}"],
            stdout=out, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        time.sleep(1.0)
        load = _load(stack, "egress", 1, 2.0)
        time.sleep(1.0)
        ato = _ato(port)
        load.join()
        time.sleep(0.5)
        dump.terminate()
        dump.wait()
        found = answers(Path(out.name).read_text().splitlines(), port)
    if not found:
        print("packets: every answer left in one segment")
        return [("egress answers in two segments (head, body), 1 client", "none")]
    held = [a for a in found if a["acked_between"]]
    release = [(a["last"] - a["ack"]) * 1000 for a in held]
    gap = statistics.median(a["gap_ms"] for a in found)
    measured = (
        f"{gap:.2f} ms (median of {len(found)} answers); the client's ACK of the head came "
        f"before the body in {len(held)} of them"
        + (f", the body {statistics.median(release):.2f} ms after it" if release else "")
        + f"; the client's delayed-ACK timeout (ss ato) {'/'.join(sorted(set(ato)))} ms"
    )
    print(f"packets: egress answer, head to body: {measured}")
    return [("egress answer's head to its body (tcpdump, 1 client, GET)", measured)]


# --------------------------------------------------------------------------- writes


def writes(stack: LocalStack) -> list[tuple[str, str]]:
    if shutil.which("strace") is None:
        print("writes: skipped (no strace: apt-get install strace)")
        return []
    pid = jvm_of(stack, "egress")
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as out:
        trace = subprocess.Popen(
            ["strace", "-f", "-e", "trace=write,setsockopt", "-o", out.name, "-p", str(pid)],
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        time.sleep(1.5)
        _load(stack, "egress", 1, 1.0).join()
        trace.terminate()
        trace.wait()
        text = Path(out.name).read_text()
    heads = len(re.findall(r'write\(\d+, "HTTP/1\.1 ', text))
    bodies = len(re.findall(r'write\(\d+, "logged out"', text))
    nodelay = len(re.findall(r"setsockopt\(\d+, SOL_TCP, TCP_NODELAY, \[1\]", text))
    measured = (
        f"{heads} heads and {bodies} bodies, each its own write(); "
        f"setsockopt(TCP_NODELAY, 1) on {nodelay} new connection(s)"
    )
    print(f"writes: {measured}")
    return [("egress JVM's writes per answer (strace, 1 client, 1 s, GET)", measured)]


# --------------------------------------------------------------------------- threads


def _dump(pid: int) -> dict[str, list[str]]:
    """Thread name -> its frames, from one jstack."""
    text = subprocess.run(["jstack", str(pid)], capture_output=True, text=True).stdout
    out: dict[str, list[str]] = {}
    for block in text.split("\n\n"):
        lines = block.strip().splitlines()
        if lines and lines[0].startswith('"'):
            name = lines[0].split('"')[1]
            out[f"{name}@{len(out)}"] = [x.strip() for x in lines[1:]]
    return out


def _where(frames: list[str]) -> str:
    """Where a thread is: idle (in no adapter code), blocked on a monitor, waiting for a pool
    slot (a semaphore), waiting for its own CoAP answer, or running adapter code."""
    mine = [f for f in frames if f.startswith("at ipclab.coap.")]
    if not mine:
        return "idle"
    top = mine[0].split("(")[0].removeprefix("at ipclab.coap.")
    if any("Thread.State: BLOCKED" in f for f in frames):
        return f"{top} (blocked on a monitor)"
    if any("Semaphore" in f for f in frames):
        return f"{top} (waits for a pool slot)"
    if any("CompletableFuture.get" in f or "CompletableFuture.timedGet" in f for f in frames):
        return f"{top} (waits for its answer)"
    return top


def threads(stack: LocalStack, samples: int = 5) -> list[tuple[str, str]]:
    if shutil.which("jstack") is None:
        print("threads: skipped (no jstack: the JDK, openjdk-17-jdk-headless)")
        return []
    jvms = {"egress": jvm_of(stack, "egress"), "ingress": jvm_of(stack, f"{SERVICE}-ingress")}
    load = _load(stack, "egress", 10, 1.0 + samples)
    time.sleep(1.0)
    seen: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for _ in range(samples):
        for name, pid in jvms.items():
            for thread, frames in _dump(pid).items():
                kind = re.sub(r"[#\-\[/].*", "", thread.split("@")[0])
                if kind in ("egress", "ingress", "coap", "UDP", "HttpClient"):
                    seen[name][f"{kind}: {_where(frames)}"] += 1
        time.sleep(0.3)
    load.join()
    print(f"threads: {samples} jstack samples of each JVM, 10 requests in flight at the egress")
    for name, counts in seen.items():
        for what, n in sorted(counts.items()):
            print(f"  {name:>8} {what:<60} {n / samples:6.1f} per sample")
    egress = seen["egress"]

    def mean(*words: str) -> float:
        return sum(n for k, n in egress.items() if all(w in k for w in words)) / samples

    measured = (
        f"{mean('egress: ') - mean('egress: idle'):.1f} in the adapter: "
        f"{mean('egress: ', 'its answer'):.1f} waiting for their own CoAP answer, "
        f"{mean('egress: ', 'pool slot') + mean('egress: ', 'monitor'):.1f} for a lock or a "
        f"pool slot; {mean('egress: idle'):.1f} idle; Californium's stage and timer threads "
        f"busy {mean('coap: ') - mean('coap: idle'):.1f} of {mean('coap: '):.0f} "
        f"(mean of {samples} jstacks)"
    )
    return [("egress request threads, 10 clients at the egress (jstack)", measured)]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--jvm-options", default="")
    p.add_argument("--only", default=",".join(READINGS))
    p.add_argument("--label", default="", help="the setting's name, before each row's what")
    p.add_argument("--csv", type=Path, help="append (what, measured, measured_on) rows here")
    args = p.parse_args(argv)
    print(f"IPCLAB_JVM_OPTIONS={args.jvm_options!r}", file=sys.stderr)
    rows: list[tuple[str, str]] = []
    with started(args.jvm_options) as stack:
        cell("gateway", ports(stack)["gateway"], "GET", 10, 3.0)  # warm-up
        for reading in args.only.split(","):
            rows += {"sockets": sockets, "packets": packets, "writes": writes,
                     "threads": threads}[reading](stack)  # fmt: skip
    if args.csv:
        new = not args.csv.exists()
        with args.csv.open("a", newline="") as f:
            w = csv.writer(f)
            if new:
                w.writerow(("what", "measured", "measured_on"))
            today = datetime.date.today().isoformat()
            w.writerows((f"{args.label}: {what}" if args.label else what, measured, today)
                        for what, measured in rows)  # fmt: skip


if __name__ == "__main__":
    main()
