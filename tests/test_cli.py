"""The CLI's verbs and its errors on bad input (issue 2)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from ipclab.backends import broker
from ipclab.cli import duration
from ipclab.stacks import all_stacks
from tests.conftest import ipclab_processes


def ipclab(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ipclab.cli", *args], capture_output=True, text=True, timeout=timeout
    )


def test_stacks_lists_one_name_per_line() -> None:
    r = ipclab("stacks")
    assert r.returncode == 0
    assert r.stdout.split() == list(all_stacks())


@pytest.mark.parametrize(
    ("text", "seconds"), [("30s", 30), ("2m", 120), ("1m30s", 90), ("45", 45), ("1.5s", 1.5)]
)
def test_durations(text: str, seconds: float) -> None:
    assert duration(text) == seconds


@pytest.mark.parametrize(
    "args",
    [
        ("run", "shop-nope", "--duration", "5s"),
        ("run", "shop-rest", "--users", "0", "--duration", "5s"),
        ("run", "shop-rest", "--duration", "soon"),
        ("run", "shop-rest", "--fault", "reviews", "--duration", "5s"),
        ("run", "shop-rest", "--fault", "nobody@3", "--duration", "5s"),
        ("up", "shop-nope"),
    ],
)
def test_bad_input_gets_a_clear_error_and_starts_nothing(args: tuple[str, ...]) -> None:
    r = ipclab(*args)
    assert r.returncode == 2, r.stderr
    assert "error" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not ipclab_processes()


def test_an_existing_run_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps({"status": "complete"}))
    r = ipclab("run", "shop-rest", "--duration", "5s", "--out", str(tmp_path))
    assert r.returncode == 2 and "already holds a run" in r.stderr
    assert json.loads((tmp_path / "manifest.json").read_text()) == {"status": "complete"}


def test_missing_rabbitmq_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(broker, "SERVER_CANDIDATES", ("/nonexistent/rabbitmq-server",))
    with pytest.raises(broker.BrokerUnavailable, match="apt-get install rabbitmq-server"):
        broker.find_server()


@pytest.mark.slow
def test_up_detach_then_down(tmp_path: Path) -> None:
    env_state = {"IPCLAB_STATE_DIR": str(tmp_path)}
    import os

    env = {**os.environ, **env_state}
    r = subprocess.run(
        [sys.executable, "-m", "ipclab.cli", "up", "shop-amqp", "--detach"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    url = r.stdout.splitlines()[0]
    assert url.startswith("http://127.0.0.1:")
    try:
        with urllib.request.urlopen(f"{url}/product/5?customer_id=2", timeout=10) as resp:
            assert set(json.loads(resp.read())) == {
                "product",
                "reviews",
                "recommendations",
                "shipping",
                "cart",
            }
        assert ipclab_processes()  # still running after `up --detach` returned
    finally:
        d = subprocess.run(
            [sys.executable, "-m", "ipclab.cli", "down", "shop-amqp"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
    assert d.returncode == 0 and "stopped" in d.stdout, d.stderr
    time.sleep(0.5)
    assert not ipclab_processes()


@pytest.mark.slow
def test_up_in_the_foreground_stops_on_ctrl_c() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "ipclab.cli", "up", "shop-grpc"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:")
    with urllib.request.urlopen(f"{url}/healthz", timeout=10) as resp:
        assert resp.status == 200
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 0
    deadline = time.monotonic() + 10
    while ipclab_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not ipclab_processes()
