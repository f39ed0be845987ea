"""Network delay for the docker backend: a constant delay per container (per host), measured.

Every container (every network namespace: an adapter sidecar shares its host's) gets the same
delay X, so a hop between two containers costs X ms each way. With ``tc qdisc ... root netem
delay Xms`` on ``eth0`` it is held on the sender's way out, as in the studies; the NFQUEUE
fallback below holds it on the receiver's way in (once per hop all the same). The host is not a
container and is not delayed: a stack whose load generator runs on the host crosses 3 delayed
hops for a REST/gRPC product page (gateway -> service, service -> gateway, and one between the
client and the gateway) and 5 for an AMQP one; a stack with a load host of its own
(``StackSpec.load_host``: the load generator in a ``loadgen`` container's namespace) has that
hop delayed both ways.

Where the kernel has no netem (``CONFIG_NET_SCH_NETEM`` unset, as on this project's
machines), the same constant delay is made with an iptables NFQUEUE rule and a small delayer
in the container (``ipclab.backends.docker.nfqdelay``); ``set_delay`` returns which method it
used. The kernel charges the delayer's CPU to its container (netem's would be the kernel's,
no container's): the samples report it as a row of its own and take it off the container's
(``stats.split_delayer``; ``find_delayer`` finds its host PID). It holds packets on their way **in**
(``PREROUTING -i eth0``), not out: a packet held on its way out is still charged to the
sending socket until it leaves, which netem avoids (it orphans every delayed packet), and
Linux TCP waits for such packets before sending more: a small write after another one
(autocorking) or a third small segment in flight (TCP small queues) left one delay later,
one more delay per response written in two parts (uvicorn writes headers and body apart;
docs/docker.md, "Network delay"). Held on the way in, a packet belongs to no socket. Every
container has the same delay, so each packet between two containers is still delayed once,
and a round trip twice; between a container and the host (not delayed) the delay falls on
the way in instead of the way out, the same per round trip.

The delay is measured, not assumed: the minimum TCP connect time between two containers is
one SYN and one SYN-ACK, each delayed once, so RTT = 2 x delay + base; UDP likewise.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from ipclab.backends.docker import execs

DEV = "eth0"

# Runs inside a container with its own python3 (python on PATH in the services image).
# Round trips from inside a container, over TCP and UDP alike. TCP: the connect time (SYN out,
# SYN-ACK back). UDP: a datagram to port 9 (discard), where nothing listens on UDP (a CoAP
# service answers on its own port), and the ICMP "port unreachable" it draws back (a
# connected UDP socket sees it as a refused recv), so no responder is needed. The minimum
# over the tries is kept for each.
_PROBE = r"""
import json, socket, sys, threading, time
def tcp(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        t0 = time.perf_counter()
        s.connect((host, port))
        return (time.perf_counter() - t0) * 1000
    finally:
        s.close()
UDP_PORT = 9
def udp(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(0.2)
    try:
        s.connect((host, UDP_PORT))
        t0 = time.perf_counter()
        s.send(b"ipclab-rtt")
        try:
            s.recv(64)
        except ConnectionRefusedError:
            return (time.perf_counter() - t0) * 1000
        return None
    finally:
        s.close()
out = {"tcp": {}, "udp": {}}
# each target in a thread of its own: ICMP answers are rate-limited per peer, so the
# targets do not disturb one another, and the probe takes the slowest target's time
# rather than the sum of them (a stack's start measures its undelayed round trips)
def probe(target):
    host, port = target.rsplit(":", 1)
    for proto, fn in (("tcp", tcp), ("udp", udp)):
        best, misses, answers = None, 0, 0
        for _ in range(int(sys.argv[1])):
            try:
                dt = fn(host, int(port))
            except OSError:
                dt = None
            if dt is not None:
                best = dt if best is None else min(best, dt)
                answers += 1
            else:
                misses += 1
                # not answering (yet): do not wait out every try. A target's ICMP answers
                # are rate-limited per peer (a burst of 6, then 1 a second; an earlier probe
                # may have used the burst): 3 UDP answers are enough, else wait for the next
                if misses >= 3 or (proto == "udp" and answers >= 3):
                    break
                if proto == "udp":
                    time.sleep(1.0)
            time.sleep(0.01)
        out[proto][target] = best
threads = [threading.Thread(target=probe, args=(t,)) for t in sys.argv[2:]]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps(out, sort_keys=True))
"""


class NetemError(RuntimeError):
    pass


def _done(container: Any, cmd: list[str]) -> execs.Done:
    try:
        return execs.run(container, cmd)
    except execs.ExecError as e:
        raise NetemError(str(e)) from e


def _status(container: Any, cmd: list[str]) -> int:
    return _done(container, cmd).status


def _exec(container: Any, cmd: list[str]) -> str:
    """Run ``cmd`` (safe to run twice) in ``container``; its whole output, or NetemError
    when it failed or what came back was never whole (``execs``)."""
    done = _done(container, cmd)
    if done.status != 0:
        raise NetemError(
            f"{container.name}: {' '.join(cmd)} -> {done.status}: {done.output.strip()}"
        )
    return done.output


PIDFILE = "/run/ipclab-nfqdelay.pid"
# on the way in (see the module docstring): a packet held there is charged to no socket
NFQ_RULE = f"PREROUTING -i {DEV} -j NFQUEUE --queue-num 0 --queue-bypass"
_CLEAR = f"""
tc qdisc del dev {DEV} root 2>/dev/null
while iptables -t mangle -D {NFQ_RULE} 2>/dev/null; do :; done
if [ -f {PIDFILE} ]; then kill $(cat {PIDFILE}) 2>/dev/null; rm -f {PIDFILE}; fi
true
"""
METHODS = ("auto", "netem", "nfqueue")
# Whether the kernel under an engine has netem, by the engine's address: decided by the first
# ``tc ... netem`` there (the kernel is every container's), so later delays go straight on.
_KERNEL_NETEM: dict[str, bool] = {}


def _engine(container: Any) -> str:
    return str(getattr(getattr(getattr(container, "client", None), "api", None), "base_url", ""))


def no_netem_in_kernel(tc_output: str) -> bool:
    """Whether ``tc qdisc ... netem``'s (whole) output says the kernel has no netem:
    "Error: Specified qdisc kind is unknown." (iproute2 with the kernel's own message), or
    netlink's ENOENT from an older tc ("RTNETLINK answers: No such file or directory")."""
    text = tc_output.lower()
    return "qdisc kind is unknown" in text or (
        "rtnetlink answers" in text and "no such file or directory" in text
    )


def clear(container: Any) -> None:
    """Remove any delay this module set (netem qdisc, NFQUEUE rule and delayer)."""
    _exec(container, ["sh", "-c", _CLEAR])


def _try_netem(container: Any, delay_ms: float, method: str) -> bool:
    """netem's delay on eth0 where the kernel has netem (True); False where it has none
    (known from before, or said by tc now); NetemError for any other failure of tc."""
    if method == "auto" and _KERNEL_NETEM.get(_engine(container)) is False:
        return False
    cmd = ["tc", "qdisc", "replace", "dev", DEV, "root", "netem", "delay", f"{delay_ms:g}ms"]
    done = _done(container, cmd)
    if done.status == 0:
        _KERNEL_NETEM[_engine(container)] = True
        return True
    if method == "netem" or not no_netem_in_kernel(done.output):
        raise NetemError(
            f"{container.name}: tc netem failed (exit status {done.status}): "
            f"{done.output.strip() or '(no output)'}"
        )
    _KERNEL_NETEM[_engine(container)] = False
    return False


def set_delay(container: Any, delay_ms: float, method: str = "auto") -> str:
    """A constant delay on every packet of eth0, once (0 removes it); returns the method
    used: ``netem`` (tc qdisc on the way out) or ``nfqueue`` (iptables + delayer on the way
    in, where the kernel lacks netem; see the module docstring)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}")
    clear(container)
    if delay_ms <= 0:
        return "none"
    if method in ("auto", "netem") and _try_netem(container, delay_ms, method):
        return "netem"
    _start_delayer(container, delay_ms)
    return "nfqueue"


def _start_delayer(container: Any, delay_ms: float) -> None:
    src = (Path(__file__).with_name("nfqdelay.py")).read_text()
    execs.start(
        container, ["python3", "-c", src, "--delay-ms", f"{delay_ms:g}", "--pidfile", PIDFILE]
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # the delayer writes its pidfile once bound to queue 0
        if _status(container, ["test", "-s", PIDFILE]) == 0:
            break
        time.sleep(0.05)
    else:
        raise NetemError(f"{container.name}: the NFQUEUE delayer did not start")
    # appended once, however often run (execs may run a command twice)
    _exec(
        container,
        [
            "sh",
            "-c",
            f"iptables -t mangle -C {NFQ_RULE} 2>/dev/null || iptables -t mangle -A {NFQ_RULE}",
        ],
    )


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:  # gone, or not ours to read
        return None


def is_delayer(pid: int, container_id: str, proc: Path = Path("/proc")) -> bool:
    """Whether host process ``pid`` is the NFQUEUE delayer of the container ``container_id``:
    its command line is the one ``_start_delayer`` runs (``--pidfile`` and :data:`PIDFILE`)
    and its cgroup is the container's (its full id is in every docker cgroup path, cgroupfs
    and systemd drivers alike, v1 and v2)."""
    cmdline = _read(proc / str(pid) / "cmdline")
    cgroup = _read(proc / str(pid) / "cgroup")
    if not cmdline or not cgroup or container_id not in cgroup:
        return False
    args = cmdline.split("\0")
    return any(a == "--pidfile" and b == PIDFILE for a, b in zip(args, args[1:], strict=False))


def _start_ticks(pid: int, proc: Path) -> int:
    stat = _read(proc / str(pid) / "stat") or ""
    fields = stat.rpartition(")")[2].split()
    return int(fields[19]) if len(fields) > 19 else 0  # starttime, the 22nd field


def find_delayer(container_id: str, proc: Path = Path("/proc")) -> int | None:
    """The host PID of the delayer running in the container ``container_id`` (it is exec'd
    into the container's PID namespace, so the pidfile holds another number; every host
    process is listed in the host's ``/proc``), or None (no delay, netem, or a /proc that
    does not show the engine's processes). The newest if, for an instant, two run."""
    found = [
        int(d.name)
        for d in proc.iterdir()
        if d.name.isdigit() and is_delayer(int(d.name), container_id, proc)
    ]
    return max(found, key=lambda pid: _start_ticks(pid, proc)) if found else None


_CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_ns(pid: int, proc: Path = Path("/proc")) -> int | None:
    """CPU time (user + system) the single-threaded process ``pid`` has used, in ns:
    ``/proc/<pid>/schedstat`` (ns, the scheduler's own count, as the cgroup's) where the
    kernel keeps it, else ``/proc/<pid>/stat`` (clock ticks). None when it is gone."""
    sched = _read(proc / str(pid) / "schedstat")
    if sched and sched.split() and sched.split()[0] != "0":
        return int(sched.split()[0])
    stat = _read(proc / str(pid) / "stat")
    if not stat:
        return None
    fields = stat.rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) * 1_000_000_000 // _CLK_TCK  # utime, stime


def rss_bytes(pid: int, proc: Path = Path("/proc")) -> int | None:
    """Resident anonymous memory of ``pid`` (``RssAnon``), as the cgroup's ``rss`` counts it."""
    for line in (_read(proc / str(pid) / "status") or "").splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    return None


def show(container: Any) -> str:
    return _exec(container, ["tc", "qdisc", "show", "dev", DEV]).strip()


def rtt_ms(container: Any, targets: list[str], tries: int = 20) -> dict[str, dict[str, Any]]:
    """Minimum round trip (ms) from ``container`` to each ``host:port``, per protocol:
    ``{"tcp": {target: ms}, "udp": {target: ms}}`` (None where no try got an answer)."""
    out = _exec(container, ["python3", "-c", _PROBE, str(tries), *targets])
    return dict(json.loads(out.strip().splitlines()[-1]))


def connect_rtt_ms(container: Any, targets: list[str], tries: int = 20) -> dict[str, float | None]:
    """Minimum TCP connect time (ms) from ``container`` to each ``host:port``."""
    return dict(rtt_ms(container, targets, tries)["tcp"])


def _median(values: dict[str, float | None]) -> float | None:
    good = [v for v in values.values() if v is not None]
    return statistics.median(good) if good else None


def measure(
    prober: Any, targets: list[str], delay_ms: float, method: str, tries: int = 20
) -> dict[str, Any]:
    """Round trips from one container to others over TCP and UDP, and the delay per hop
    they imply (``measured_delay_ms`` from TCP, ``udp_measured_delay_ms`` from UDP): each
    packet between two containers is held once (netem: on its way out of the sender; the
    NFQUEUE delayer: on its way into the receiver), so RTT = 2 delays + base."""
    rtts = rtt_ms(prober, targets, tries)
    tcp, udp = _median(rtts["tcp"]), _median(rtts["udp"])
    return {
        "delay_ms": delay_ms,
        "method": method,
        "device": DEV,
        "measurement": f"min over {tries} tries from {prober.name}: TCP connect time, and UDP "
        "datagram to a closed port until its ICMP port-unreachable; RTT = 2 delays + base",
        "rtt_ms": rtts["tcp"],
        "rtt_median_ms": tcp,
        "measured_delay_ms": None if tcp is None else tcp / 2,
        "udp_rtt_ms": rtts["udp"],
        "udp_rtt_median_ms": udp,
        "udp_measured_delay_ms": None if udp is None else udp / 2,
    }
