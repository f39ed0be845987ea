"""The swarm's filter: what the harness installs so that no other machine reaches a swarm
stack's published gateway port or the overlay's VXLAN socket (issue 48).

On swarm both are on every address and cannot be elsewhere (``ipclab.listeners.IMPOSED``):
the gateway's port is published in host mode (docker-proxy on 0.0.0.0 and [::], Docker's
DNAT to the task's container), and the kernel binds 4789/udp to the wildcard address. On a
swarm the harness made (single-node, on 127.0.0.1) no packet for either needs to come from
another machine, so while a stack runs the harness keeps the chain :data:`CHAIN`:

- first in ``DOCKER-USER`` (forwarded packets, after Docker's DNAT: the connection's
  original destination port is the gateway's) and first in ``INPUT`` (docker-proxy on the
  port, VXLAN on 4789), and in ip6tables' ``INPUT`` (docker-proxy on [::]);
- a packet from one of this host's own addresses returns at once (``addrtype --src-type
  LOCAL``: the load generator and the probe on the host, whatever address they use; the
  kernel drops a packet from another machine that claims one as a martian);
- every other packet to a stack's gateway port or to 4789/udp is dropped.

Each stack's rules carry the comment ``ipclab-swarm:<project>``; ``remove`` deletes a
project's rules and, with the last, the jumps and the chain. Nothing else in ``INPUT`` or
``DOCKER-USER`` is touched. A stack of a swarm the harness did not make (a swarm across
machines, docs/distributed.md) gets no filter: its firewall is its administrators'. Without
root or iptables nothing is installed, and the stack's ``info`` says so.

The plans are pure functions of ``iptables -S`` (:func:`install_plan`, :func:`remove_plan`).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from collections.abc import Iterable

CHAIN = "IPCLAB-SWARM"
TAG = "ipclab-swarm"
VXLAN_PORT = 4789
HOOKS = {"iptables": ("INPUT", "DOCKER-USER"), "ip6tables": ("INPUT",)}


def _comment(project: str) -> list[str]:
    return ["-m", "comment", "--comment", f"{TAG}:{project}"]


def project_rules(tool: str, project: str, port: int) -> list[list[str]]:
    """The rule specs (after ``-A CHAIN``) that drop non-local packets for ``project``."""
    mine = _comment(project)
    if tool == "ip6tables":  # docker-proxy on [::]; VXLAN is IPv4 here
        return [["-p", "tcp", "-m", "addrtype", "--dst-type", "LOCAL", "-m", "tcp",
                 "--dport", str(port), *mine, "-j", "DROP"]]  # fmt: skip
    return [
        ["-p", "udp", "-m", "addrtype", "--dst-type", "LOCAL", "-m", "udp",
         "--dport", str(VXLAN_PORT), *mine, "-j", "DROP"],
        ["-p", "tcp", "-m", "addrtype", "--dst-type", "LOCAL", "-m", "tcp",
         "--dport", str(port), *mine, "-j", "DROP"],
        ["-p", "tcp", "-m", "conntrack", "--ctstate", "DNAT", "--ctorigdstport", str(port),
         "--ctdir", "ORIGINAL", *mine, "-j", "DROP"],
    ]  # fmt: skip


LOCAL_RETURN = ["-m", "addrtype", "--src-type", "LOCAL", "-m", "comment", "--comment", TAG,
                "-j", "RETURN"]  # fmt: skip


def _parsed(rules: str) -> tuple[set[str], list[tuple[str, list[str]]]]:
    """The user chains and the ``-A`` rules (chain, spec) of ``iptables -S``."""
    chains, appended = set(), []
    for line in rules.splitlines():
        words = shlex.split(line)
        if words[:1] == ["-N"] and len(words) == 2:
            chains.add(words[1])
        elif words[:1] == ["-A"] and len(words) > 2:
            appended.append((words[1], words[2:]))
    return chains, appended


def _same(a: list[str], b: list[str]) -> bool:
    """Two rule specs alike, as ``iptables -S`` prints what was added (it adds ``-m udp``
    and quotes nothing it needs not)."""
    return [w.strip('"') for w in a] == [w.strip('"') for w in b]


def install_plan(tool: str, rules: str, project: str, port: int) -> list[list[str]]:
    """The ``tool`` commands that put ``project``'s rules in place, given ``tool -S``."""
    chains, appended = _parsed(rules)
    plan: list[list[str]] = []
    if CHAIN not in chains:
        plan += [["-N", CHAIN], ["-A", CHAIN, *LOCAL_RETURN]]
    have = [spec for chain, spec in appended if chain == CHAIN]
    plan += [["-A", CHAIN, *r] for r in project_rules(tool, project, port)
             if not any(_same(r, h) for h in have)]  # fmt: skip
    for hook in HOOKS[tool]:
        if hook != "INPUT" and hook not in chains:
            continue  # no DOCKER-USER: Docker runs without its iptables rules
        if not any(chain == hook and spec == ["-j", CHAIN] for chain, spec in appended):
            plan.append(["-I", hook, "1", "-j", CHAIN])
    return plan


def remove_plan(tool: str, rules: str, projects: Iterable[str] | None) -> list[list[str]]:
    """The ``tool`` commands that remove the rules of ``projects`` (None: every project's),
    and the jumps and the chain once no project's rule is left, given ``tool -S``."""
    chains, appended = _parsed(rules)
    if CHAIN not in chains:
        return []
    wanted = None if projects is None else {f"{TAG}:{p}" for p in projects}
    plan, left = [], 0
    for chain, spec in appended:
        if chain != CHAIN or spec == LOCAL_RETURN:
            continue
        tag = _tag(spec)
        if tag is not None and tag.startswith(f"{TAG}:") and (wanted is None or tag in wanted):
            plan.append(["-D", CHAIN, *spec])
        else:
            left += 1
    if left == 0:
        plan += [["-D", hook, "-j", CHAIN] for hook, spec in appended if spec == ["-j", CHAIN]]
        plan += [["-F", CHAIN], ["-X", CHAIN]]
    return plan


def _tag(spec: list[str]) -> str | None:
    for i, word in enumerate(spec[:-1]):
        if word == "--comment":
            return spec[i + 1].strip('"')
    return None


def projects_in(rules: str) -> set[str]:
    """The projects with rules in the chain, given ``iptables -S``."""
    _, appended = _parsed(rules)
    tags = {_tag(spec) for chain, spec in appended if chain == CHAIN}
    return {t.split(":", 1)[1] for t in tags if t and t.startswith(f"{TAG}:")}


def unavailable() -> str | None:
    """Why the filter cannot be installed here, or None."""
    import os

    if os.geteuid() != 0:
        return "the harness is not root (iptables needs it)"
    if shutil.which("iptables") is None:
        return "no iptables"
    return None


def _run(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([tool, "-w", *args], capture_output=True, text=True, timeout=60)


def _rules(tool: str) -> str | None:
    if shutil.which(tool) is None:
        return None
    done = _run(tool, "-S")
    return done.stdout if done.returncode == 0 else None


def install(project: str, port: int) -> str | None:
    """Install ``project``'s rules; None when done, else why not (nothing installed, or
    what failed after the chain was made: the caller says so)."""
    if why := unavailable():
        return why
    for tool in HOOKS:
        rules = _rules(tool)
        if rules is None:
            if tool == "iptables":
                return "iptables -S failed"
            continue  # no ip6tables: IPv6 filtering is the host's
        for command in install_plan(tool, rules, project, port):
            done = _run(tool, *command)
            if done.returncode != 0:
                return f"{tool} {shlex.join(command)}: {done.stderr.strip()}"
    return None


def remove(projects: Iterable[str] | None) -> None:
    """Remove the rules of ``projects`` (None: all), the chain with the last."""
    if unavailable():
        return
    for tool in HOOKS:
        rules = _rules(tool)
        if rules is not None:
            for command in remove_plan(tool, rules, projects):
                _run(tool, *command)


def prune(live: set[str]) -> None:
    """Remove the rules of projects not in ``live`` (stacks no longer on the swarm: a killed
    harness's, whose watchdog removed them)."""
    if unavailable():
        return
    rules = _rules("iptables") or ""
    gone = projects_in(rules) - live
    rules6 = _rules("ip6tables") or ""
    gone |= projects_in(rules6) - live
    if gone:
        remove(gone)


__all__ = [
    "CHAIN", "install", "install_plan", "projects_in", "prune", "remove", "remove_plan",
    "unavailable",
]  # fmt: skip
