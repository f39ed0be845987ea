"""Issue 48: the local attacker. A user of the same machine (``nobody``, tests/attacker.py)
tries each path to what the harness runs as root on the local backend: every listener the
stacks open, their logins, their secrets, and the state files the harness reads.

Two local stacks run (shop-amqp: a broker node; bundle-rest: a PostgreSQL cluster); the
listeners they opened come from ``ipclab.listeners`` (each must be one the harness knows).
As ``nobody`` (tests/local_attacker_probe.py, the system's Python alone):

- the broker refuses ``guest:guest`` (on main's code: accepted) and any other login without
  the stack's generated password;
- PostgreSQL asks every role for its SCRAM password (``trust`` nowhere);
- no secret is readable: the broker's conf and Erlang cookie, the database's password
  files, the services' environments (their URLs carry the passwords), nor any command line
  that would show one;
- reachable by design: the gateways and services (the benchmark's API on 127.0.0.1, data
  the domains generate), epmd's list of node names, the Erlang distribution port (which
  asks for the cookie nobody cannot read).

And the state files the harness reads, planted by ``nobody``, are refused or left alone
(the cluster's: tests/test_kubecluster_hardening.py; the report's PDF:
tests/test_pdf_readback.py; epmd: tests/test_broker_login.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ipclab import infrastructure, listeners, orphans
from ipclab.backends import StackOptions, get_backend
from ipclab.stacks import resolve
from tests import attacker
from tests.conftest import started_together

PROBE = (Path(__file__).parent / "local_attacker_probe.py").read_text()
STACKS = ("shop-amqp", "bundle-rest")

pytestmark = pytest.mark.skipif(attacker.why_not() is not None, reason=str(attacker.why_not()))


def _why_not_local(name: str) -> str | None:
    spec = resolve(name)
    for plugin in infrastructure.of(spec.infrastructure):
        if why := plugin.unavailable("local"):
            return why
    return spec.unavailable()


@dataclass
class Running:
    stacks: dict[str, Any]
    opened: list[listeners.Listener]

    def what(self) -> dict[int, str]:
        """Port -> what listens there, for every port the harness opened on purpose."""
        out: dict[int, str] = {}
        for name, stack in self.stacks.items():
            for role, port in stack.ports.items():
                out[port] = f"{name} {'gateway' if role == stack.spec.gateway else 'service'}"
            if (node := stack.broker) is not None:
                out |= {node.port: f"{name} broker amqp", node.dist_port: f"{name} broker dist",
                        node.epmd_port: f"{name} broker epmd"}  # fmt: skip
            if (db := stack.database) is not None:
                out[db.port] = f"{name} database"
        return out


@pytest.fixture(scope="module")
def running() -> Iterator[Running]:
    names = tuple(n for n in STACKS if _why_not_local(n) is None)
    if not names:
        pytest.skip("; ".join(f"{n}: {_why_not_local(n)}" for n in STACKS))
    before = listeners.listening()
    for stacks in started_together(get_backend("local"), names, StackOptions()):
        time.sleep(2)  # the distribution listener comes just after AMQP
        # this process's descendants' (opened_by also counts any docker-proxy that another
        # session's container brought meanwhile; the local backend starts none)
        ours = [
            x
            for x in listeners.opened_by(before)
            if x.process not in listeners.DOCKER_PROCESSES and x.pid is not None
        ]
        yield Running(stacks, ours)


def _probe(plan: dict[str, list[Any]]) -> dict[str, str]:
    found: dict[str, str] = attacker.probe(
        PROBE, timeout=120, env={"IPCLAB_ATTACK_PLAN": json.dumps(plan)}
    )
    print(json.dumps(found, indent=1))  # the table in docs/hardening.md
    return found


def test_every_listener_the_stacks_open_is_one_the_harness_knows_on_loopback(
    running: Running,
) -> None:
    what = running.what()
    tcp = [x for x in running.opened if x.proto == "tcp"]
    unknown = [x for x in tcp if x.port not in what]
    assert not unknown, f"listeners nobody accounts for: {unknown}"
    assert all(x.loopback() for x in running.opened), running.opened
    assert not [x for x in running.opened if x.proto == "udp"], "no stack here opens UDP"


def test_nobody_cannot_log_in_to_the_local_broker(running: Running) -> None:
    node = running.stacks.get("shop-amqp") and running.stacks["shop-amqp"].broker
    if not node:
        pytest.skip("shop-amqp did not run here")
    logins = {"guest:guest": ("guest", "guest"), "ipclab, no password": ("ipclab", ""),
              "ipclab:guest": ("ipclab", "guest"), "admin:admin": ("admin", "admin")}  # fmt: skip
    found = _probe({k: ["amqp", node.host, node.port, *v] for k, v in logins.items()})
    assert all(v.startswith("refused") for v in found.values()), found
    # the services' own login is accepted: the probe speaks AMQP well enough to tell
    own = _probe({"own": ["amqp", node.host, node.port, "ipclab", node.password]})
    assert own == {"own": "accepted"}


def test_nobody_gets_no_database_session_without_the_password(running: Running) -> None:
    db = running.stacks.get("bundle-rest") and running.stacks["bundle-rest"].database
    if not db:
        pytest.skip("bundle-rest did not run here")
    roles = {"ipclab": "ipclab", "ipclab_admin": "postgres", "postgres": "postgres",
             "nobody": "ipclab"}  # fmt: skip
    found = _probe({r: ["postgres", db.host, db.port, r, d] for r, d in roles.items()})
    assert not [v for v in found.values() if v == "trust"], found
    assert found["ipclab"].startswith("password asked") and found["ipclab_admin"].startswith(
        "password asked"
    ), found


def test_nobody_reads_no_secret_of_the_stacks(running: Running) -> None:
    plan: dict[str, list[Any]] = {}
    secrets: list[str] = []
    for name, stack in running.stacks.items():
        if (node := stack.broker) is not None:
            plan[f"{name} broker conf"] = ["read", str(node.directory / "rabbitmq.conf")]
            plan[f"{name} Erlang cookie"] = ["read", str(node.directory / ".erlang.cookie")]
            secrets.append(node.password)
        if (db := stack.database) is not None:
            plan[f"{name} services.pw"] = ["read", str(db.directory / "services.pw")]
            plan[f"{name} superuser.pw"] = ["read", str(db.directory / "superuser.pw")]
            secrets += [db.secret, db.admin_secret]
        for kind, pid in stack.components().values():
            plan[f"{name} {kind} {pid} environ"] = ["environ", pid]
            plan[f"{name} {kind} {pid} cmdline"] = ["cmdline", pid]
    found = _probe(plan)
    for step, result in found.items():
        if step.endswith("cmdline"):
            assert not any(s in result for s in secrets), step
        else:
            assert result.startswith("denied"), (step, result)


def test_what_nobody_reaches_by_design(running: Running) -> None:
    """The benchmark's API on 127.0.0.1 answers anyone on the machine, as a docker stack's
    published port does; epmd names the node (no secret); the distribution port answers
    but asks for the cookie."""
    plan: dict[str, list[Any]] = {}
    for name, stack in running.stacks.items():
        port = stack.ports[stack.spec.gateway]
        plan[f"{name} gateway"] = ["http", "127.0.0.1", port, stack.spec.probe_paths[0]]
        if (node := stack.broker) is not None:
            plan[f"{name} epmd"] = ["epmd", node.host, node.epmd_port]
            plan[f"{name} dist"] = ["tcp", node.host, node.dist_port]
    found = _probe(plan)
    for name in running.stacks:
        assert found[f"{name} gateway"].startswith("HTTP/1.1 200"), found
    if "shop-amqp" in running.stacks:
        assert "ipclab" in found["shop-amqp epmd"] and found["shop-amqp dist"] == "open", found


# --- state files planted by nobody -----------------------------------------------------------


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A folder under /tmp that nobody may write in (1777, as /tmp itself)."""
    folder = Path(tempfile.mkdtemp(prefix="ipclab-attack-"))
    folder.chmod(0o1777)
    try:
        yield folder
    finally:
        subprocess.run(["rm", "-rf", str(folder)], check=False)


@pytest.fixture
def victim() -> Iterator[subprocess.Popen[bytes]]:
    """A process of root's that a planted file names."""
    p = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        yield p
    finally:
        p.kill()
        p.wait()


def _plant(source: str) -> None:
    attacker.run_as_nobody(source)


def test_a_local_stack_state_planted_by_nobody_is_refused(
    shared_tmp: Path, victim: subprocess.Popen[bytes]
) -> None:
    state = shared_tmp / "state"
    started = _started(victim.pid)
    doc = {"stack": "shop-rest", "pids": {"gateway": victim.pid},
           "started": {str(victim.pid): started}, "workdir": str(shared_tmp)}  # fmt: skip
    _plant(f"import os, json; os.mkdir({str(state)!r}, 0o700); "
           f"open({str(state / 'shop-rest.json')!r}, 'w').write({json.dumps(doc)!r})")  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "ipclab.cli", "down", "shop-rest", "--backend", "local"],
        env={**os.environ, "IPCLAB_STATE_DIR": str(state)}, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode != 0 and "will not trust" in done.stderr, done
    assert victim.poll() is None, "a planted state file killed root's process"


def _started(pid: int) -> float:
    import psutil

    return psutil.Process(pid).create_time()


def test_a_postgres_root_planted_by_nobody_is_refused(
    shared_tmp: Path, victim: subprocess.Popen[bytes]
) -> None:
    from ipclab.backends import postgres
    from ipclab.private import UnsafeState

    root = shared_tmp / "pg"
    cluster = root / "pg-5432-planted"
    _plant(f"import os, json; os.makedirs({str(cluster / 'data')!r}); "
           f"open({str(cluster / 'owner.json')!r}, 'w').write(json.dumps({{'pid': 1}})); "
           f"open({str(cluster / 'data' / 'postmaster.pid')!r}, 'w').write("
           f"'{victim.pid}\\n{cluster / 'data'}\\n')")  # fmt: skip
    with pytest.raises(UnsafeState):
        postgres.sweep_stale(root)
    assert victim.poll() is None and cluster.is_dir()


def test_a_workdir_planted_by_nobody_with_a_dead_harness_mark_is_left(shared_tmp: Path) -> None:
    """orphans.sweep and the docker backend's workdir removal take only this user's."""
    from ipclab.backends.docker import ownership

    dead = "1:1.00"  # pid 1's start time is not 1.00: a harness that is gone
    planted = Path(tempfile.gettempdir()) / f"{orphans.WORKDIR_PREFIX}attack-{os.getpid()}"
    _plant(f"import os; os.mkdir({str(planted)!r}); "
           f"open({str(planted / orphans.MARK_FILE)!r}, 'w').write({dead!r})")  # fmt: skip
    try:
        orphans.sweep(say=lambda _: None)
        assert planted.is_dir(), "orphans.sweep removed a directory nobody planted"
        assert ownership.remove_workdirs(f"{orphans.WORKDIR_PREFIX}attack", dead) == []
        assert planted.is_dir()
    finally:
        subprocess.run(["rm", "-rf", str(planted)], check=False)
