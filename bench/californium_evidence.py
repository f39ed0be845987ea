"""Why a request through the Californium stack waited: the evidence, read off the running stack
with the system's own tools (issue 46, item 1; bench/californium_hops.py times the hops).

On ``acmeair-coap-californium`` started on the local backend (``--jvm-options`` as in
californium_hops.py, e.g. ``-Dsun.net.httpserver.nodelay=false`` for the JDK's default), four
readings, each printed as figures:

- ``sockets``: every role's TCP sockets after some load, with TCP_NODELAY and SO_KEEPALIVE
  as getsockopt reads them from outside the process (``ipclab.sockopts``; root, or the
  processes' owner where ptrace is allowed), grouped by role, side and peer;
- ``packets``: ``tcpdump`` on loopback at the egress's port while one client sends GETs: per
  answer, the time from its first segment (the head) to its last (the body), and whether the
  client's pure ACK came between them (Nagle's algorithm holds a small segment until every
  earlier one is acknowledged, and the client delays that ACK: ``ato`` in ``ss -tni``);
- ``writes``: ``strace -f -e trace=write,setsockopt`` on the egress's JVM for a few answers:
  the writes per answer and whether any socket was given TCP_NODELAY;
- ``threads``: ``jstack`` of both JVMs sampled under 10 clients at the gateway: how many of
  the egress's request threads are inside the adapter (``ipclab.coap``, e.g. waiting in
  ``Pool.exchange`` for the CoAP answer) and how many are idle, against the 10 requests in
  flight, and where the ingress's threads are.

    python bench/californium_evidence.py [--jvm-options FLAGS] [--only sockets,packets,...]

Root (or ptrace rights), tcpdump, strace and the JDK's jstack are needed for their readings;
a reading whose tool is missing says so and is skipped.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
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
        pids = [stack.procs[role].pid]
        pids += [c.pid for c in psutil.Process(pids[0]).children(recursive=True)]
        out[role] = [s for pid in pids for s in sockopts.tcp_sockets(pid)]
    return out


def sockets(stack: LocalStack) -> None:
    """Every role's TCP sockets by side and peer, with their options."""
    roles = ("gateway", "egress", f"{SERVICE}-ingress", SERVICE)
    load = _load(stack, "gateway", 10, 2.0)
    time.sleep(1.0)
    try:
        found = _role_sockets(stack, roles)
    except sockopts.Unreadable as e:
        print(f"sockets: skipped ({e})")
        return
    finally:
        load.join()
    owner = {s.local: role for role, socks in found.items() for s in socks}
    counts: collections.Counter[tuple[str, ...]] = collections.Counter()
    for role, socks in found.items():
        for s in socks:
            side = (
                "listening"
                if s.peer is None
                else ("accepted" if s.local[1] == stack.ports.get(role) else "connected")
            )
            peer = "-" if s.peer is None else owner.get(s.peer, "bench client")
            counts[(role, side, peer, str(int(s.nodelay)), str(int(s.keepalive)))] += 1
    print(f"sockets: {'role':>14} {'side':>10} {'peer':>14} TCP_NODELAY SO_KEEPALIVE  n")
    for (role, side, peer, nd, ka), n in sorted(counts.items()):
        print(f"         {role:>14} {side:>10} {peer:>14} {nd:>11} {ka:>12} {n:>2}")


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


def packets(stack: LocalStack) -> None:
    if shutil.which("tcpdump") is None:
        print("packets: skipped (no tcpdump: apt-get install tcpdump)")
        return
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
        return
    held = [a for a in found if a["acked_between"]]
    release = [(a["last"] - a["ack"]) * 1000 for a in held]
    print(
        f"packets: {len(found)} answers in more than one segment; head to body "
        f"median {statistics.median(a['gap_ms'] for a in found):.2f} ms; the client's ACK "
        f"came between head and body in {len(held)} ({100 * len(held) / len(found):.0f}%), "
        f"the body left a median "
        f"{statistics.median(release) if release else float('nan'):.3f} ms after that ACK; "
        f"the client's delayed-ACK timeout (ss ato) {sorted(set(ato))} ms"
    )


# --------------------------------------------------------------------------- writes


def writes(stack: LocalStack) -> None:
    if shutil.which("strace") is None:
        print("writes: skipped (no strace: apt-get install strace)")
        return
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
    print(
        f"writes: {heads} answer heads and {bodies} bodies written apart (two writes per answer); "
        f"setsockopt TCP_NODELAY=1 on {nodelay} sockets (new connections only)"
    )


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
    mine = [f for f in frames if f.startswith("at ipclab.coap.")]
    if not mine:
        return "idle"
    if any("CompletableFuture.get" in f or "CompletableFuture.timedGet" in f for f in frames):
        return mine[0].split("(")[0].removeprefix("at ipclab.coap.") + " (waits for its answer)"
    return mine[0].split("(")[0].removeprefix("at ipclab.coap.")


def threads(stack: LocalStack, samples: int = 5) -> None:
    if shutil.which("jstack") is None:
        print("threads: skipped (no jstack: the JDK, openjdk-17-jdk-headless)")
        return
    jvms = {"egress": jvm_of(stack, "egress"), "ingress": jvm_of(stack, f"{SERVICE}-ingress")}
    load = _load(stack, "gateway", 10, 1.0 + samples)
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
    print(f"threads: {samples} jstack samples of each JVM, 10 requests in flight at the gateway")
    for name, counts in seen.items():
        for what, n in sorted(counts.items()):
            print(f"  {name:>8} {what:<60} {n / samples:6.1f} per sample")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--jvm-options", default="")
    p.add_argument("--only", default=",".join(READINGS))
    args = p.parse_args(argv)
    print(f"IPCLAB_JVM_OPTIONS={args.jvm_options!r}", file=sys.stderr)
    with started(args.jvm_options) as stack:
        cell("gateway", ports(stack)["gateway"], "GET", 10, 3.0)  # warm-up
        for reading in args.only.split(","):
            with contextlib.suppress(KeyboardInterrupt):
                {"sockets": sockets, "packets": packets, "writes": writes,
                 "threads": threads}[reading](stack)  # fmt: skip


if __name__ == "__main__":
    main()
