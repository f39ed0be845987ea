"""A constant delay without netem: hold each packet arriving on eth0 in an NFQUEUE for D ms.

Used by ``ipclab.backends.docker.netem`` inside a container when the kernel has no ``sch_netem``
(as on this project's machines). An iptables rule sends every packet arriving on ``eth0``
to queue 0: on the way in, where it is charged to no socket (``netem``'s module docstring
says why); ``--queue-bypass``: if this program is gone, packets pass undelayed, never dropped.
This program receives each packet's id (metadata only, no payload copy), and accepts it
``D`` ms after it arrived. Delays are constant, so packets pass in their original order and
one batch verdict (accept every id up to N) releases all that are due: one syscall per
wake-up, not per packet. A lost notification (socket buffer overrun) is harmless for the
same reason: the next batch verdict releases that packet too.

Self-contained (standard library only, no ipclab imports): it is sent to containers as
``python3 -c <this file> ...``. Its CPU is the kernel's charge to that container; the docker
backend's samples split it off into a row of its own (``<host>-delayer``).

    python3 nfqdelay.py --delay-ms 5 [--queue 0] [--pidfile /run/ipclab-nfqdelay.pid]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import select
import signal
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
NETLINK_NO_ENOBUFS = 5
SOL_NETLINK = 270
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET = 0
NFQNL_MSG_CONFIG = 2
NFQNL_MSG_VERDICT_BATCH = 3
NFQA_PACKET_HDR = 1
NFQA_VERDICT_HDR = 2
NFQA_CFG_CMD = 1
NFQA_CFG_PARAMS = 2
NFQA_CFG_QUEUE_MAXLEN = 3
NFQA_CFG_MASK = 4
NFQA_CFG_FLAGS = 5
NFQNL_CFG_CMD_BIND = 1
NFQNL_CFG_CMD_UNBIND = 2
NFQNL_COPY_META = 1
NFQA_CFG_F_FAIL_OPEN = 1 << 0
NFQA_CFG_F_GSO = 1 << 2
NLM_F_REQUEST = 1
NLM_F_ACK = 4
NLMSG_ERROR = 2
NF_ACCEPT = 1
LATE_CAP_S = 0.001  # the most one release's lateness moves the aim (see Delayer.run)


def _attr(kind: int, payload: bytes) -> bytes:
    length = 4 + len(payload)
    return struct.pack("=HH", length, kind) + payload + b"\0" * ((4 - length % 4) % 4)


def _msg(msg: int, queue: int, attrs: bytes, seq: int, flags: int = NLM_F_REQUEST) -> bytes:
    body = struct.pack("=BBH", socket.AF_UNSPEC, 0, socket.htons(queue)) + attrs
    kind = (NFNL_SUBSYS_QUEUE << 8) | msg
    return struct.pack("=IHHII", 16 + len(body), kind, flags, seq, 0) + body


def _packet_ids(buf: bytes) -> list[int]:
    """Packet ids of every NFQNL_MSG_PACKET in one netlink datagram."""
    ids = []
    off = 0
    while off + 16 <= len(buf):
        length, kind, _flags, _seq, _pid = struct.unpack_from("=IHHII", buf, off)
        if length < 16:
            break
        if kind == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
            a = off + 20  # nlmsghdr + nfgenmsg
            end = off + length
            while a + 4 <= end:
                alen, atype = struct.unpack_from("=HH", buf, a)
                if alen < 4:
                    break
                if atype & 0x7FFF == NFQA_PACKET_HDR:
                    ids.append(struct.unpack_from("!I", buf, a + 4)[0])
                    break
                a += (alen + 3) & ~3
        elif kind == NLMSG_ERROR:
            err = struct.unpack_from("=i", buf, off + 16)[0]
            if err != 0:
                raise OSError(-err, f"nfnetlink: {os.strerror(-err)}")
        off += (length + 3) & ~3
    return ids


class Delayer:
    def __init__(self, queue: int, delay_s: float, maxlen: int = 65536):
        self.queue = queue
        self.delay_s = delay_s
        self.seq = 0
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        self.sock.setsockopt(SOL_NETLINK, NETLINK_NO_ENOBUFS, 1)
        self.sock.bind((0, 0))
        self._config(_attr(NFQA_CFG_CMD, struct.pack("!BxH", NFQNL_CFG_CMD_UNBIND, 0)), check=False)
        self._config(_attr(NFQA_CFG_CMD, struct.pack("!BxH", NFQNL_CFG_CMD_BIND, 0)))
        self._config(_attr(NFQA_CFG_PARAMS, struct.pack("!IB", 0, NFQNL_COPY_META)))
        self._config(_attr(NFQA_CFG_QUEUE_MAXLEN, struct.pack("!I", maxlen)))
        flags = NFQA_CFG_F_FAIL_OPEN | NFQA_CFG_F_GSO
        self._config(
            _attr(NFQA_CFG_FLAGS, struct.pack("!I", flags))
            + _attr(NFQA_CFG_MASK, struct.pack("!I", flags))
        )
        self.pending: collections.deque[tuple[float, int]] = collections.deque()

    def _config(self, attrs: bytes, check: bool = True) -> None:
        self.seq += 1
        self.sock.send(
            _msg(NFQNL_MSG_CONFIG, self.queue, attrs, self.seq, NLM_F_REQUEST | NLM_F_ACK)
        )
        reply = self.sock.recv(65536)
        try:
            _packet_ids(reply)
        except OSError:
            if check:
                raise

    def _accept_upto(self, packet_id: int) -> None:
        self.seq += 1
        hdr = _attr(NFQA_VERDICT_HDR, struct.pack("!II", NF_ACCEPT, packet_id))
        self.sock.send(_msg(NFQNL_MSG_VERDICT_BATCH, self.queue, hdr, self.seq))

    def run(self) -> None:
        # select(), not poll()/epoll(): their timeouts are whole milliseconds (rounded up),
        # which would add up to 1 ms to every packet; select() sleeps to the microsecond.
        fd = self.sock.fileno()
        recv = self.sock.recv
        pending = self.pending
        # Wake-ups come late by a scheduler-dependent amount; aim that much earlier (an
        # average of recent lateness, at most half the delay) so the mean delay stays on target.
        # A stall (the machine busy for tens of ms) is no wake-up latency: each sample counts
        # for at most LATE_CAP_S, or one stall would send every packet after it up to half the
        # delay early until enough on-time batches wore the estimate down.
        early = 0.0
        while True:
            now = time.monotonic()
            last_id = None
            while pending and pending[0][0] <= now:
                due, last_id = pending.popleft()
                late = now - (due + early)
            if last_id is not None:
                self._accept_upto(last_id)
                late = min(late, LATE_CAP_S)
                early = min(self.delay_s / 2, max(0.0, early + 0.1 * late))
            timeout = None if not pending else max(0.0, pending[0][0] - now)
            if not select.select((fd,), (), (), timeout)[0]:
                continue
            # Drain everything readable now; stamp arrivals with one clock read per datagram.
            while True:
                try:
                    buf = recv(1 << 16, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    break
                due = time.monotonic() + self.delay_s - early
                for pid in _packet_ids(buf):
                    pending.append((due, pid))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description="constant delay via NFQUEUE, on every packet's way in (the iptables "
        "rule's PREROUTING -i eth0 chooses which packets)"
    )
    p.add_argument("--delay-ms", type=float, required=True)
    p.add_argument("--queue", type=int, default=0)
    p.add_argument("--pidfile", default=None)
    args = p.parse_args(argv)
    # netem runs in the kernel, ahead of every process; the nearest a process gets is the
    # highest priority (needs CAP_SYS_NICE, which the compose files grant; else it runs as is).
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, 0, -20)
    d = Delayer(args.queue, args.delay_ms / 1000)
    if args.pidfile:
        with open(args.pidfile, "w") as f:
            f.write(f"{os.getpid()}\n")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with contextlib.suppress(KeyboardInterrupt):
        d.run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
