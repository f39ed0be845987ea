"""The Locust fork server (load/forkserver.py): forked Locusts run as ``python -m locust``
would, their exit is reported, they die with the server, and the runner falls back to a
plain start wherever the server cannot serve."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import psutil
import pytest

from ipclab.load import forkserver
from ipclab.procs import spawn, stop_group

LOCUSTFILE = """
from locust import User, task, constant


class Idle(User):
    wait_time = constant(0.05)

    @task
    def nothing(self):
        pass
"""


@pytest.fixture
def server() -> forkserver.ForkServer:
    s = forkserver.ForkServer()
    yield s
    s.close()


def headless(tmp_path: Path, run_time: str) -> list[str]:
    (tmp_path / "idle.py").write_text(LOCUSTFILE)
    return ["-f", str(tmp_path / "idle.py"), "--headless", "--users", "1", "--run-time",
            run_time, "--host", "http://127.0.0.1:9", "--only-summary"]  # fmt: skip


def test_a_forked_locust_lasts_its_run_time_after_the_server_idled(
    server: forkserver.ForkServer, tmp_path: Path
) -> None:
    """gevent's loop caches its clock: a child forked from a server idle for longer than the
    run time must still run for the whole run time (it ended at once before the fix)."""
    time.sleep(2.5)
    for i in range(2):
        t0 = time.monotonic()
        child = server.fork(headless(tmp_path, "2s"), dict(os.environ), tmp_path / f"{i}.log")
        assert child is not None
        assert child.wait(timeout=30) == 0, (tmp_path / f"{i}.log").read_text()
        assert time.monotonic() - t0 >= 2.0


def test_exit_codes_signals_and_the_environment_reach_the_harness(
    server: forkserver.ForkServer, tmp_path: Path
) -> None:
    bad = server.fork(["--no-such-option"], dict(os.environ), tmp_path / "bad.log")
    assert bad is not None and bad.wait(timeout=30) != 0
    assert "locustfile" in (tmp_path / "bad.log").read_text()  # its message, in its log
    env = {**os.environ, "IPCLAB_PROBE": "seen"}
    (tmp_path / "env.py").write_text(
        LOCUSTFILE + "\nimport os\nprint('probe', os.environ['IPCLAB_PROBE'], flush=True)\n"
    )
    long = server.fork(
        ["-f", str(tmp_path / "env.py"), "--headless", "--users", "1", "--run-time", "60s",
         "--host", "http://127.0.0.1:9"], env, tmp_path / "long.log", cpus=frozenset({0}),
    )  # fmt: skip
    assert long is not None
    proc = psutil.Process(long.pid)
    assert os.getsid(long.pid) == long.pid  # a session (and process group) of its own
    assert proc.cpu_affinity() == [0]
    deadline = time.monotonic() + 20
    while "probe seen" not in (tmp_path / "long.log").read_text():
        assert time.monotonic() < deadline, (tmp_path / "long.log").read_text()
        time.sleep(0.1)
    stop_group(long, grace=10)  # as the runner stops a load early
    assert long.poll() is not None


def test_children_die_with_the_server_and_a_new_server_serves_next(tmp_path: Path) -> None:
    forkserver.close()
    server = forkserver.warm()
    assert server is not None
    child = forkserver.fork_locust(headless(tmp_path, "60s"), dict(os.environ), tmp_path / "l")
    assert child is not None and child.poll() is None
    server.proc.send_signal(signal.SIGKILL)
    assert child.wait(timeout=10) is not None
    deadline = time.monotonic() + 10
    while psutil.pid_exists(child.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not psutil.pid_exists(child.pid) or psutil.Process(child.pid).status() == "zombie"
    again = forkserver.fork_locust(["--version"], dict(os.environ), tmp_path / "v.log")
    assert again is not None and again.wait(timeout=30) == 0
    assert forkserver.warm() is not server
    forkserver.close()


def test_no_server_where_it_is_turned_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(forkserver.DISABLE, "0")
    assert forkserver.fork_locust(["--version"], dict(os.environ), tmp_path / "v") is None


def test_children_started_from_a_thread_outlive_the_thread(tmp_path: Path) -> None:
    """The parent-death signal follows the thread that forked: a service or a fork server
    started from a short-lived thread (two stacks started at once) must not die with it."""
    forkserver.close()
    got: dict[str, object] = {}

    def start() -> None:
        got["service"] = spawn(["sleep", "30"], dict(os.environ), tmp_path / "sleep.log")
        got["server"] = forkserver.warm()

    worker = threading.Thread(target=start)
    worker.start()
    worker.join()
    time.sleep(1.0)  # a child killed at the thread's end would be gone by now
    service, server = got["service"], got["server"]
    assert isinstance(service, subprocess.Popen) and service.poll() is None
    assert isinstance(server, forkserver.ForkServer) and server.alive
    stop_group(service)
    forkserver.close()
