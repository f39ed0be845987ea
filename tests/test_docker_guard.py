"""Issue 48, item 7: the docker backends' filter (compose and swarm), as plans computed
from ``iptables -S`` (real stacks and a neighbour in a network namespace:
tests/docker/test_docker_guard.py)."""

from __future__ import annotations

import shlex

from ipclab.backends.docker import dockerguard
from ipclab.backends.docker.dockerguard import CHAIN, install_plan, projects_in, remove_plan

DOCKER = """-P INPUT ACCEPT
-P FORWARD DROP
-N DOCKER
-N DOCKER-USER
-A FORWARD -j DOCKER-USER
-A DOCKER-USER -s 10.9.0.0/16 -j ACCEPT
-A DOCKER-USER -j RETURN
-A INPUT -p tcp --dport 22 -j ACCEPT
"""


def _apply(rules: str, plan: list[list[str]]) -> str:
    """What ``iptables -S`` says after ``plan`` (enough of iptables for these plans)."""
    lines = rules.splitlines()
    for command in plan:
        op, chain, rest = command[0], command[1], command[2:]
        if op == "-N":
            lines.append(f"-N {chain}")
        elif op == "-A":
            lines.append(shlex.join(["-A", chain, *rest]))
        elif op == "-I":
            first = next(i for i, ln in enumerate(lines) if ln.startswith(f"-A {chain} ") or
                         ln == f"-N {chain}" or ln.startswith(f"-P {chain} "))  # fmt: skip
            at = first + (0 if lines[first].startswith("-A") else 1)
            lines.insert(at, shlex.join(["-A", chain, *rest[1:]]))
        elif op == "-D":
            lines.remove(shlex.join(["-A", chain, *rest]))
        elif op == "-F":
            lines = [ln for ln in lines if not ln.startswith(f"-A {chain} ")]
        elif op == "-X":
            lines.remove(f"-N {chain}")
    return "\n".join(lines) + "\n"


def test_the_filter_is_first_in_docker_user_and_input_and_drops_only_non_local() -> None:
    after = _apply(DOCKER, install_plan("iptables", DOCKER, "ipclab-a", 41000))
    lines = after.splitlines()
    assert lines.index(f"-A DOCKER-USER -j {CHAIN}") < lines.index(
        "-A DOCKER-USER -s 10.9.0.0/16 -j ACCEPT"
    )
    assert lines.index(f"-A INPUT -j {CHAIN}") < lines.index("-A INPUT -p tcp --dport 22 -j ACCEPT")
    chain = [ln for ln in lines if ln.startswith(f"-A {CHAIN} ")]
    assert chain[0] == f"-A {CHAIN} " + shlex.join(dockerguard.LOCAL_RETURN)
    assert any("--ctorigdstport 41000" in ln and "DROP" in ln for ln in chain)
    assert any("--dport 4789" in ln and "-p udp" in ln for ln in chain)
    assert install_plan("iptables", after, "ipclab-a", 41000) == []  # installed once


def test_without_docker_user_the_input_hook_alone_and_ip6tables_has_no_vxlan() -> None:
    plan = install_plan("ip6tables", "-P INPUT ACCEPT\n", "ipclab-a", 41000)
    assert ["-I", "INPUT", "1", "-j", CHAIN] in plan
    assert not any("DOCKER-USER" in c for c in plan)
    assert not any("4789" in " ".join(c) for c in plan)


def test_removal_takes_one_projects_rules_then_with_the_last_the_chain_and_jumps() -> None:
    one = _apply(DOCKER, install_plan("iptables", DOCKER, "ipclab-a", 41000))
    two = _apply(one, install_plan("iptables", one, "ipclab-b", 42000))
    assert projects_in(two) == {"ipclab-a", "ipclab-b"}
    left = _apply(two, remove_plan("iptables", two, ["ipclab-a"]))
    assert projects_in(left) == {"ipclab-b"} and f"-N {CHAIN}" in left
    assert "41000" not in left and "42000" in left
    gone = _apply(left, remove_plan("iptables", left, ["ipclab-b"]))
    assert gone == DOCKER, "everything else as it was"
    assert remove_plan("iptables", DOCKER, None) == []


def test_a_rule_in_the_chain_that_is_not_a_projects_keeps_the_chain() -> None:
    one = _apply(DOCKER, install_plan("iptables", DOCKER, "ipclab-a", 41000))
    foreign = one + f"-A {CHAIN} -s 192.0.2.1 -j DROP\n"
    plan = remove_plan("iptables", foreign, None)
    assert ["-X", CHAIN] not in plan and all(c[0] == "-D" and c[1] == CHAIN for c in plan)


def test_a_compose_project_drops_new_connections_into_its_network_from_elsewhere() -> None:
    nets = (("br-0123456789ab", "192.168.80.0/20"),)
    plan = install_plan("iptables", DOCKER, "ipclab-c", networks=nets)
    after = _apply(DOCKER, plan)
    rule = [ln for ln in after.splitlines() if "192.168.80.0/20" in ln]
    assert len(rule) == 1 and "--ctstate NEW" in rule[0]
    assert " ".join(shlex.split(rule[0])).count("! -i br-0123456789ab") == 1
    assert "4789" not in after and "ctorigdstport" not in after  # swarm's only
    assert install_plan("ip6tables", "-P INPUT ACCEPT\n", "ipclab-c", networks=nets) == []
    assert _apply(after, remove_plan("iptables", after, ["ipclab-c"])) == DOCKER
