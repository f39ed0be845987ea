"""The docker backends' filter: what the harness installs so that no other machine reaches
a stack's containers, a swarm stack's published gateway port or the overlay's VXLAN socket
(issue 48).

Measured before it (docs/hardening.md): a machine on the same L2 network that routes a
compose project's subnet through this host connected to the gateway container's port 8000,
although compose publishes it on 127.0.0.1 only (Docker 20.10 accepts forwarded packets to
a published container port whatever the host address it was published on). On swarm the
gateway's port is published in host mode on every address (docker-proxy on 0.0.0.0 and
[::], Docker's DNAT to the task's container), and the kernel binds 4789/udp to the wildcard
address (``ipclab.listeners.IMPOSED``). While a stack runs, the harness keeps the chain
:data:`CHAIN`:

- first in ``DOCKER-USER`` (forwarded packets, after Docker's DNAT) and first in ``INPUT``
  (docker-proxy on the port, VXLAN on 4789), and in ip6tables' ``INPUT`` (docker-proxy on
  [::]);
- a packet from one of this host's own addresses returns at once (``addrtype --src-type
  LOCAL``: the load generator and the probe on the host, docker-proxy, whatever address
  they use; the kernel drops a packet from another machine that claims one as a martian);
- compose: a new connection into the project's network that does not come from its own
  bridge is dropped;
- swarm: every other packet to the stack's gateway port or to 4789/udp is dropped.

Each stack's rules carry the comment ``ipclab-docker:<project>``; :func:`remove` deletes a
project's rules and, with the last, the jumps and the chain (``ownership.remove_project``
and each stack's stop call it, so a watchdog's removal after a kill -9 does too). Nothing
else in ``INPUT`` or ``DOCKER-USER`` is touched. A stack of a swarm the harness did not make
(a swarm across machines, docs/distributed.md) gets no filter: its firewall is its
administrators'. Without root or iptables nothing is installed, and the stack's ``info``
says so.

The plans are pure functions of ``iptables -S`` (:func:`install_plan`, :func:`remove_plan`).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from collections.abc import Iterable

CHAIN = "IPCLAB-DOCKER"
TAG = "ipclab-docker"
VXLAN_PORT = 4789
HOOKS = {"iptables": ("INPUT", "DOCKER-USER"), "ip6tables": ("INPUT",)}


def _comment(project: str) -> list[str]:
    return ["-m", "comment", "--comment", f"{TAG}:{project}"]


Network = tuple[str, str]  # a compose project's network: (its bridge, its subnet)


def project_rules(
    tool: str, project: str, port: int | None = None, networks: tuple[Network, ...] = ()
) -> list[list[str]]:
    """The rule specs (after ``-A CHAIN``) that drop non-local packets for ``project``:
    into each of its ``networks`` not from their own bridge (compose), to its published
    ``port`` and to 4789/udp (swarm)."""
    mine = _comment(project)
    rules: list[list[str]] = []
    if tool == "iptables":
        rules += [["-d", subnet, "!", "-i", bridge, "-m", "conntrack", "--ctstate", "NEW",
                   *mine, "-j", "DROP"] for bridge, subnet in networks]  # fmt: skip
    if port is None:
        return rules
    if tool == "ip6tables":  # docker-proxy on [::]; VXLAN is IPv4 here
        return [["-p", "tcp", "-m", "addrtype", "--dst-type", "LOCAL", "-m", "tcp",
                 "--dport", str(port), *mine, "-j", "DROP"]]  # fmt: skip
    return rules + [
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


def install_plan(
    tool: str, rules: str, project: str, port: int | None = None,
    networks: tuple[Network, ...] = (),
) -> list[list[str]]:  # fmt: skip
    """The ``tool`` commands that put ``project``'s rules in place, given ``tool -S``."""
    mine = project_rules(tool, project, port, networks)
    if not mine:
        return []
    chains, appended = _parsed(rules)
    plan: list[list[str]] = []
    if CHAIN not in chains:
        plan += [["-N", CHAIN], ["-A", CHAIN, *LOCAL_RETURN]]
    have = [spec for chain, spec in appended if chain == CHAIN]
    plan += [["-A", CHAIN, *r] for r in mine if not any(_same(r, h) for h in have)]
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


def install(
    project: str, port: int | None = None, networks: tuple[Network, ...] = ()
) -> str | None:
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
        for command in install_plan(tool, rules, project, port, networks):
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


__all__ = [
    "CHAIN", "install", "install_plan", "projects_in", "remove", "remove_plan",
    "unavailable",
]  # fmt: skip
