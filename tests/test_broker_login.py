"""Issue 48, items 4 and 7: the local broker's login (a generated user, no ``guest``) and the
private epmd matched by its own process, not by a substring of any command line."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import aio_pika
import psutil
import pytest

from ipclab.backends import broker
from ipclab.backends.broker import RabbitNode, private_epmd, stop_private_epmd
from ipclab.infrastructure.rabbitmq import PLUGIN as RABBITMQ


async def _login(url: str) -> str:
    """``ok`` if an AMQP connection opens at ``url``, else the error's name."""
    try:
        connection = await aio_pika.connect(url, timeout=15)
    except Exception as e:  # noqa: BLE001 - the kind of refusal is the result
        return type(e).__name__
    await connection.close()
    return "ok"


def test_each_node_has_its_own_password_and_no_guest(tmp_path: Path) -> None:
    a, b = RabbitNode(tmp_path / "a"), RabbitNode(tmp_path / "b")
    assert a.password != b.password and len(a.password) == 32
    assert a.url.startswith(f"amqp://ipclab:{a.password}@127.0.0.1:{a.port}/")
    assert "guest" not in a.url and a.password not in repr(a)
    a.directory.mkdir()
    a._env()
    conf = a.directory / "rabbitmq.conf"
    assert f"default_user = ipclab\ndefault_pass = {a.password}\n" in conf.read_text()
    assert conf.stat().st_mode & 0o777 == 0o600
    state = RABBITMQ.local_state(a)
    assert a.password not in repr(state), "a state file must not hold the broker's password"


@pytest.mark.slow
def test_the_local_broker_refuses_guest_and_takes_its_generated_login(tmp_path: Path) -> None:
    """A real AMQP login each: guest:guest is refused on 127.0.0.1 (on main's code it was
    accepted), the node's own URL logs in; a restart of the node keeps the login."""
    node = RabbitNode(tmp_path / "broker")
    node.start()
    try:
        guest = f"amqp://guest:guest@127.0.0.1:{node.port}/"
        assert asyncio.run(_login(guest)) == "ProbableAuthenticationError"
        assert asyncio.run(_login(f"amqp://ipclab:wrong@127.0.0.1:{node.port}/")) != "ok"
        assert asyncio.run(_login(node.url)) == "ok"
        RABBITMQ.restart_local(node, detached=False)
        assert asyncio.run(_login(node.url)) == "ok"
        assert asyncio.run(_login(guest)) != "ok"
    finally:
        node.stop()


# --- epmd: its own process, uid and argv -----------------------------------------------------


def _fake_epmd(folder: Path, argv: list[str]) -> subprocess.Popen[bytes]:
    """A process named ``epmd`` that is not Erlang's (a shell script so named), run with
    ``argv``: its command line holds them."""
    folder.mkdir()
    fake = folder / "epmd"
    fake.write_text("#!/bin/sh\nwhile :; do sleep 1; done\n")
    fake.chmod(0o755)
    return subprocess.Popen([str(fake), *argv], start_new_session=True)


def test_an_epmd_that_is_not_erlangs_is_left_alone(tmp_path: Path) -> None:
    """A process named epmd whose command line holds ``-port 4711`` (and ``-port 47110``)
    is not the private epmd of port 4711: it is not Erlang's binary, nor its argv (main's
    code killed both)."""
    others = [_fake_epmd(tmp_path / "a", ["-port", "4711"]),
              _fake_epmd(tmp_path / "b", ["-port", "47110", "-daemon"])]  # fmt: skip
    try:
        time.sleep(0.3)
        for p in others:
            assert psutil.Process(p.pid).name() == "epmd"
            assert not private_epmd(psutil.Process(p.pid), 4711)
        stop_private_epmd(4711)
        time.sleep(0.3)
        assert all(p.poll() is None for p in others), "stop_private_epmd killed a stranger"
    finally:
        for p in others:
            p.kill()
            p.wait()


def test_only_an_epmd_of_erlangs_binary_on_its_exact_port_is_ours(tmp_path: Path) -> None:
    exe = broker.erlang_epmd()
    if exe is None:
        pytest.skip("no Erlang epmd here (rabbitmq-server's erlang-base)")
    env = {**os.environ, "ERL_EPMD_ADDRESS": "127.0.0.1"}
    from ipclab.procs import free_ports

    port, other = free_ports(2)
    mine = subprocess.Popen([exe, "-port", str(port)], env=env, start_new_session=True)
    stranger = subprocess.Popen([exe, "-port", str(other)], env=env, start_new_session=True)
    try:
        assert private_epmd(psutil.Process(mine.pid), port)
        assert not private_epmd(psutil.Process(mine.pid), other)
        assert not private_epmd(psutil.Process(stranger.pid), port)
        stop_private_epmd(port)
        mine.wait(10)
        assert stranger.poll() is None
    finally:
        for p in (mine, stranger):
            p.kill()
            p.wait()


def test_an_epmd_of_another_user_is_never_ours(tmp_path: Path) -> None:
    """Run as ``nobody`` (as root only): Erlang's own epmd on the port, but another uid."""
    from tests import attacker

    if why := attacker.why_not():
        pytest.skip(why)
    exe = broker.erlang_epmd()
    if exe is None:
        pytest.skip("no Erlang epmd here")
    from ipclab.procs import free_ports

    (port,) = free_ports(1)
    theirs = attacker.spawn_as_nobody([exe, "-port", str(port)])
    try:
        target = psutil.Process(theirs.pid)
        deadline = time.monotonic() + 10
        while target.name() != "epmd" and time.monotonic() < deadline:  # setpriv, then exec
            time.sleep(0.02)
        assert target.name() == "epmd" and target.uids().real == attacker.ids()[0]
        assert not private_epmd(target, port)
        stop_private_epmd(port)
        assert theirs.poll() is None
    finally:
        theirs.kill()
        theirs.wait()


def test_the_module_runs_without_psutil_access_errors() -> None:
    """Sweeping epmd as a user who cannot read others' processes raises nothing."""
    done = subprocess.run(
        [sys.executable, "-c", "from ipclab.backends.broker import stop_private_epmd as s; s(1)"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
