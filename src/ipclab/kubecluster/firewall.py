"""The local cluster's iptables rules: what it adds, the guard the harness installs, and
what ``down`` removes (only what is the cluster's: issue 48).

Chains, by who owns them:

- **ours alone**: kube-proxy's ``KUBE-*`` (filter, nat, mangle; ``up`` refuses to start
  beside another Kubernetes's), the guard ``IPCLAB-K8S-GUARD`` (below) and the firewall
  plugin's admin chain, named ``IPCLAB-K8S-CNI-ADMIN`` in the conflist (``config``): flushed
  and deleted with every jump to them.
- **shared**: the CNI firewall plugin's ``CNI-FORWARD`` (a fixed name: podman's and
  nerdctl's plugins write into the same chain) and ``CNI-ADMIN`` (the admin chain's name
  before it was ours). ``down`` deletes only the rules of our pods in them (an address in
  ``POD_SUBNET``) and our jumps; the chain itself only when nothing of anyone else's is
  left in it and it was not there before the first ``up`` (the host record:
  ``sysctls.Record.chains``). Any other ``CNI-*`` chain (podman's per-network NAT chains)
  is never touched.
- Docker's are never touched.

The plan is a pure function of ``iptables -S`` (:func:`cleanup_plan`).

**The guard** (:func:`guard_commands`): kube-proxy DNATs a packet for a ClusterIP (or a
NodePort on 127.0.0.1, with ``route_localnet=1``) to a pod, and with ``ip_forward=1`` it is
forwarded, whichever interface it came in on: a neighbour on the same L2 network that
routes ``10.96.0.0/16`` through this host reached every Service. ``IPCLAB-K8S-GUARD`` in the
raw table's PREROUTING, before connection tracking and any NAT, drops every packet to a
ClusterIP, a pod address or 127.0.0.0/8 that did not come in on ``lo`` or the cluster's
bridge: the host itself and the pods reach the cluster, nothing else does (docker's
containers included). It is installed before the first component starts and removed at
``down`` with the cluster's other chains.

**The FORWARD order** (:func:`forward_order_commands`): the firewall plugin's jump goes
after kube-proxy's, so that a Service without endpoints refuses at once.
"""

from __future__ import annotations

import ipaddress
import shlex
import shutil
import subprocess
import time
from collections.abc import Collection

from ipclab.kubecluster.layout import BRIDGE, POD_CIDR, POD_SUBNET, SERVICE_CIDR

OWN_PREFIXES = ("KUBE-", "IPCLAB-K8S-")
SHARED_CHAINS = ("CNI-FORWARD", "CNI-ADMIN")
ADMIN_CHAIN = "IPCLAB-K8S-CNI-ADMIN"  # the firewall plugin's admin chain (config)
GUARD_CHAIN = "IPCLAB-K8S-GUARD"
GUARD_TABLE = "raw"
GUARD_COMMENT = "ipclab: only the host and the pods reach the cluster"
LOCALNET = "127.0.0.0/8"
GUARDED = (SERVICE_CIDR, POD_CIDR, LOCALNET)  # ClusterIPs, pods, NodePorts on 127.0.0.1
TABLES = ("filter", "nat", "mangle", "raw")
NODE_LINKS = "ipclabn+"  # the extra nodes' veths on the host (``nodes.LINKS``)


def _owned(chain: str) -> bool:
    return chain.startswith(OWN_PREFIXES)


def _jumps(words: list[str]) -> list[str]:
    return [b for a, b in zip(words, words[1:], strict=False) if a in ("-j", "-g")]


def _our_pods(words: list[str], subnet: str) -> bool:
    """A rule that names an address of our pod subnet (``-s``/``-d``)."""
    net = ipaddress.ip_network(subnet)
    for flag, value in zip(words, words[1:], strict=False):
        if flag in ("-s", "-d"):
            try:
                if ipaddress.ip_network(value, strict=False).subnet_of(net):  # type: ignore[arg-type]
                    return True
            except (ValueError, TypeError):
                continue
    return False


def _parse(rules: str) -> tuple[list[str], list[list[str]]]:
    """The user chains (``-N``) and the rules (``-A`` lines as words) of ``iptables -S``."""
    chains: list[str] = []
    appended: list[list[str]] = []
    for line in rules.splitlines():
        words = shlex.split(line)
        if len(words) >= 2 and words[0] == "-N":
            chains.append(words[1])
        elif len(words) >= 2 and words[0] == "-A":
            appended.append(words)
    return chains, appended


def _removable(
    chains: list[str], appended: list[list[str]], owned: set[str], keep: Collection[str],
    subnet: str,
) -> set[str]:  # fmt: skip
    """The shared chains to delete: not kept, holding nothing but our pods' rules and
    jumps to chains that go too, and jumped to from no user chain that stays (the
    built-in chains' jumps are deleted): to a fixed point, as CNI-FORWARD jumps to
    CNI-ADMIN."""
    going = set(owned) | {c for c in chains if c in SHARED_CHAINS and c not in keep}
    while True:
        staying = [c for c in going - owned if not _only_ours(c, appended, going, subnet)]
        staying += [
            target
            for w in appended
            if w[1] in chains and w[1] not in going
            for target in _jumps(w)
            if target in going - owned
        ]
        if not staying:
            return going - owned
        going -= set(staying)


def _only_ours(chain: str, appended: list[list[str]], going: set[str], subnet: str) -> bool:
    """Every rule of ``chain`` is one of our pods' or a jump to a chain that goes."""
    return all(
        _our_pods(w, subnet) or bool(_jumps(w) and set(_jumps(w)) <= going)
        for w in appended
        if w[1] == chain
    )


def cleanup_plan(
    rules: str, keep: Collection[str] = (), subnet: str = POD_SUBNET
) -> list[list[str]]:
    """The commands (``iptables -t T`` arguments) that remove the cluster's rules from one
    table, given its ``iptables -S`` (see the module's docstring): delete our pods' rules
    in the shared chains and every rule of a remaining chain that jumps to a chain going,
    then flush the chains going, then delete them. ``keep``: shared chains that were there
    before the first ``up``."""
    chains, appended = _parse(rules)
    owned = {c for c in chains if _owned(c)}
    going = owned | _removable(chains, appended, owned, keep, subnet)
    ordered = [c for c in chains if c in going]
    deletes = []
    for words in appended:
        chain = words[1]
        if chain in going:
            continue  # flushed whole
        if (chain in SHARED_CHAINS and _our_pods(words, subnet)) or set(_jumps(words)) & going:
            deletes.append(["-D", *words[1:]])
    return [*deletes, *(["-F", c] for c in ordered), *(["-X", c] for c in ordered)]


def _iptables(tool: str = "iptables") -> str | None:
    return shutil.which(tool)


def cleanup(keep: Collection[str] = ()) -> list[str]:
    """Remove the cluster's rules in every table of both address families; returns the
    problems."""
    problems = []
    for tool in ("iptables", "ip6tables"):
        binary = _iptables(tool)
        if binary is None:
            continue
        for table in TABLES:
            listed = subprocess.run(
                [binary, "-w", "-t", table, "-S"], capture_output=True, text=True, check=False
            )
            if listed.returncode != 0:
                continue  # the table does not exist in this family
            for command in cleanup_plan(listed.stdout, keep):
                done = subprocess.run(
                    [binary, "-w", "-t", table, *command], capture_output=True, text=True
                )
                if done.returncode != 0:
                    problems.append(f"{tool} -t {table} {shlex.join(command)}: {done.stderr}")
    return problems


def shared_chains_present() -> list[str]:
    """The shared CNI chains in the filter table now (before our first ``up``: kept)."""
    binary = _iptables()
    if binary is None:
        return []
    listed = subprocess.run([binary, "-w", "-S"], capture_output=True, text=True, check=False)
    chains, _ = _parse(listed.stdout)
    return [c for c in chains if c in SHARED_CHAINS]


# --- the guard ----------------------------------------------------------------------------

GUARD_JUMP = ("-m", "comment", "--comment", GUARD_COMMENT, "-j", GUARD_CHAIN)


def guard_rules(bridge: str = BRIDGE) -> list[list[str]]:
    """The guard chain's rules: the host's loopback, the bridge and the extra nodes' links
    return; a packet from anywhere else to a ClusterIP, a pod or 127/8 is dropped."""
    inside = ("lo", bridge, NODE_LINKS)
    returns = [["-A", GUARD_CHAIN, "-i", where, "-j", "RETURN"] for where in inside]
    drops = [["-A", GUARD_CHAIN, "-d", net, "-j", "DROP"] for net in GUARDED]
    return [*returns, *drops]


def guard_commands(raw_rules: str, bridge: str = BRIDGE) -> list[list[str]]:
    """The ``iptables -t raw`` commands that install the guard, given the raw table's
    ``iptables -S``: the chain (made, or flushed and refilled) and the jump first in
    PREROUTING (added once)."""
    chains, appended = _parse(raw_rules)
    commands = [["-F", GUARD_CHAIN] if GUARD_CHAIN in chains else ["-N", GUARD_CHAIN]]
    commands += guard_rules(bridge)
    jump = ["PREROUTING", *GUARD_JUMP]
    if not any(w[1:] == jump for w in appended):
        commands.append(["-I", "PREROUTING", "1", *GUARD_JUMP])
    return commands


def install_guard() -> None:
    """Install the guard (RuntimeError if iptables refuses a rule: no cluster without it)."""
    binary = _iptables() or "iptables"
    base = [binary, "-w", "-t", GUARD_TABLE]
    listed = subprocess.run([*base, "-S"], capture_output=True, text=True, check=True)
    for command in guard_commands(listed.stdout):
        done = subprocess.run([*base, *command], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"iptables -t raw {shlex.join(command)}: {done.stderr.strip()}")


def guarded(raw_rules: str) -> bool:
    """The guard is in place and first in PREROUTING, given the raw table's ``-S``."""
    chains, appended = _parse(raw_rules)
    rules = [w for w in appended if w[1] == GUARD_CHAIN]
    prerouting = [w[1:] for w in appended if w[1] == "PREROUTING"]
    first = prerouting[:1] == [["PREROUTING", *GUARD_JUMP]]
    return GUARD_CHAIN in chains and rules == guard_rules() and first


# --- the FORWARD order --------------------------------------------------------------------

# the CNI firewall plugin's jump from FORWARD, exactly as the plugin writes it (it adds the
# rule only when no identical one exists, wherever that one is)
CNI_FORWARD_JUMP = ("-m", "comment", "--comment", "CNI firewall plugin rules", "-j", "CNI-FORWARD")
# kube-proxy's jump to its service rules, which REJECT a Service without endpoints
KUBE_SERVICES_JUMP = (
    "-m", "conntrack", "--ctstate", "NEW",
    "-m", "comment", "--comment", "kubernetes service portals", "-j", "KUBE-SERVICES",
)  # fmt: skip


def _normalized(rules: str) -> list[str]:
    return [shlex.join(shlex.split(line)) for line in rules.splitlines()]


def kube_proxy_forwards(filter_rules: str) -> bool:
    """kube-proxy's jump to its service rules is in FORWARD (given ``iptables -S``)."""
    return shlex.join(["-A", "FORWARD", *KUBE_SERVICES_JUMP]) in _normalized(filter_rules)


def forward_order_commands(filter_rules: str) -> list[list[str]]:
    """The ``iptables -t filter`` commands that put the CNI firewall's jump after
    kube-proxy's in FORWARD, given the filter table's ``iptables -S``.

    The plugin accepts every packet of a pod in its chain; placed first (it prepends its
    jump at the first pod), it accepts a pod's packets to a Service that has no endpoints
    before kube-proxy's REJECT sees them, and they are routed off the machine and lost: a
    client waits for its TCP connect to time out (about 130 s) where any cluster refuses
    at once, and an AMQP service that starts before its broker hangs that long."""
    jump = shlex.join(["-A", "FORWARD", *CNI_FORWARD_JUMP])
    kube = shlex.join(["-A", "FORWARD", *KUBE_SERVICES_JUMP])
    lines = _normalized(filter_rules)
    if kube not in lines:
        return []  # kube-proxy has not written its rules: nothing to order against yet
    commands = [["-N", "CNI-FORWARD"]] if "-N CNI-FORWARD" not in lines else []
    if jump in lines and lines.index(jump) > lines.index(kube):
        return commands
    if jump in lines:
        commands.append(["-D", "FORWARD", *CNI_FORWARD_JUMP])
    return [*commands, ["-A", "FORWARD", *CNI_FORWARD_JUMP]]


def order_forward(timeout_s: float = 30.0) -> None:
    """Once kube-proxy's jump is in FORWARD, the CNI firewall's after it (before any pod
    starts, so the plugin finds its rule and leaves it there); RuntimeError if kube-proxy
    wrote none within ``timeout_s``."""
    iptables = _iptables() or "iptables"
    deadline = time.monotonic() + timeout_s
    while True:
        listed = subprocess.run([iptables, "-w", "-S"], capture_output=True, text=True, check=True)
        if kube_proxy_forwards(listed.stdout):
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"kube-proxy wrote no FORWARD rules within {timeout_s:.0f} s")
        time.sleep(0.2)
    for command in forward_order_commands(listed.stdout):
        subprocess.run([iptables, "-w", *command], capture_output=True, text=True, check=True)
