"""Segmentation offloads off on a container's ``eth0``: its counters count packets as on the wire.

A container's interface counters (docker stats' ``networks``) count the kernel's buffers, not
frames: on a veth with TSO/GSO on (the default), TCP hands the interface one buffer of up to
64 KB and nothing ever cuts it to the MTU (a veth has no wire), so a 3.7 KB HTTP answer counts
as one packet while a CoAP answer sent as four 1 KB blocks counts as four. A study that
compares protocols by packets per request or bytes per packet needs every
packet counted to be one a real network would carry: with TSO and GSO off TCP cuts its segments
to the MSS itself, and with GRO off the receiving side does not merge them back (veth's is off
by default; turned off all the same). UDP datagrams are unchanged.

Turned off from the host, in the container's network namespace (``nsenter -t <pid> -n ethtool
-K eth0 tso off gso off gro off``): root on the host, ``ethtool`` installed
(``scripts/system-deps.sh``), no capability in the container. A sidecar shares its host's
interface, so it is done once per host container.
"""

from __future__ import annotations

import os
import shutil
import subprocess

DEV = "eth0"
# ethtool -K's short names and the names ethtool -k prints
FEATURES = {
    "tso": "tcp-segmentation-offload",
    "gso": "generic-segmentation-offload",
    "gro": "generic-receive-offload",
}
TIMEOUT_S = 30


class OffloadError(RuntimeError):
    pass


def off_command(pid: int) -> list[str]:
    """The command that turns the offloads off in the network namespace of host PID ``pid``."""
    args = [x for short in FEATURES for x in (short, "off")]
    return ["nsenter", "-t", str(pid), "-n", "ethtool", "-K", DEV, *args]


def parse_features(text: str) -> dict[str, str]:
    """``ethtool -k`` output -> ``{"tso": "off", "gso": "off", "gro": "off"}`` (a feature the
    driver cannot change prints ``off [fixed]``: the state is the first word)."""
    names = {long: short for short, long in FEATURES.items()}
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in names and value.split():
            out[names[key.strip()]] = value.split()[0]
    return out


def _run(cmd: list[str]) -> str:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise OffloadError(f"{' '.join(cmd)}: {type(e).__name__}: {e}") from None
    if r.returncode != 0:
        raise OffloadError(f"{' '.join(cmd)} -> {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def turn_off(pid: int) -> dict[str, str]:
    """Turn TSO, GSO and GRO off on ``eth0`` of the network namespace of host PID ``pid``
    (a container's ``State.Pid``); returns the state ``ethtool -k`` reads back."""
    if os.geteuid() != 0:
        raise OffloadError(
            "turning a container's segmentation offloads off needs root on the host (nsenter)"
        )
    for tool in ("nsenter", "ethtool"):
        if shutil.which(tool) is None:
            raise OffloadError(f"{tool} is not installed: run scripts/system-deps.sh (root)")
    _run(off_command(pid))
    state = parse_features(_run(["nsenter", "-t", str(pid), "-n", "ethtool", "-k", DEV]))
    still = sorted(k for k in FEATURES if state.get(k) != "off")
    if still:
        raise OffloadError(f"{DEV} of pid {pid}: still on after ethtool -K: {still} ({state})")
    return state
