"""Issue 13: each security and reliability item, with a test named after what it proves."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import orjson
import psutil
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ipclab_services.domains import GatewaySettings
from ipclab_services.domains.shop.gateway import INT64_MAX, handler, parse_id
from ipclab_services.errors import BadRequest, NotFound
from ipclab_services.fronts import Request

from ipclab.backends.broker import RabbitNode
from ipclab.cli import duration
from ipclab.procs import free_ports, kill_group
from tests.conftest import command_line, ipclab_processes, is_locust

ROOT = Path(__file__).resolve().parents[1]


def ipclab(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ipclab.cli", *args], capture_output=True, text=True, timeout=timeout
    )


# --- ports -------------------------------------------------------------------------------


def test_ports_asked_together_are_distinct_by_construction() -> None:
    ports = free_ports(300)
    assert len(set(ports)) == 300


def test_broker_ports_are_distinct_and_refused_when_equal(tmp_path: Path) -> None:
    node = RabbitNode(tmp_path)
    assert len({node.port, node.dist_port, node.epmd_port}) == 3
    with pytest.raises(ValueError, match="must differ"):
        RabbitNode(tmp_path, port=60091, dist_port=60091, epmd_port=60092)


def test_private_broker_listens_on_loopback_only_and_guest_stays_local(tmp_path: Path) -> None:
    node = RabbitNode(tmp_path)
    env = node._env()
    assert env["ERL_EPMD_ADDRESS"] == "127.0.0.1"
    assert "inet_dist_use_interface {127,0,0,1}" in env["RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS"]
    assert "loopback_users = none" not in (tmp_path / "rabbitmq.conf").read_text()


@pytest.mark.slow
def test_private_broker_opens_no_port_beyond_loopback(tmp_path: Path) -> None:
    node = RabbitNode(tmp_path / "broker")
    node.start()
    try:
        wanted = {node.port, node.dist_port, node.epmd_port}
        deadline = time.monotonic() + 30
        while True:  # the distribution listener may come up just after AMQP
            listening = [
                c
                for c in psutil.net_connections("tcp")
                if c.status == psutil.CONN_LISTEN
                and (c.laddr.port in wanted or c.pid in set(node.pids()))
            ]
            if wanted <= {c.laddr.port for c in listening} or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert wanted <= {c.laddr.port for c in listening}, listening
        assert all(c.laddr.ip in ("127.0.0.1", "::1") for c in listening), listening
    finally:
        node.stop()


# --- gateway input ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("²", "superscript two: isdigit() but int() raises"),
        ("٣", "Arabic-Indic three: int() reads it"),
        ("", "blank"),
        (str(INT64_MAX + 1), "beyond int64"),
        ("+1", "sign"),
        (" 1", "space"),
        ("1_000", "underscore"),
    ],
)
def test_ids_are_ascii_int64_only(text: str, why: str) -> None:
    with pytest.raises(BadRequest):
        parse_id(text, "product_id")


def test_every_int64_id_is_accepted() -> None:
    assert parse_id(str(INT64_MAX), "product_id") == INT64_MAX
    assert parse_id("10" + "0" * 17, "product_id") == 10**18
    assert parse_id("0", "product_id") == 0


@settings(max_examples=2000, deadline=None)
@given(st.text(max_size=30))
def test_any_text_as_an_id_is_a_number_or_a_bad_request(text: str) -> None:
    try:
        value = parse_id(text, "product_id")
    except BadRequest:
        assert not (text.isascii() and text.isdigit() and int(text) <= INT64_MAX)
    else:
        assert text.isascii() and text.isdigit() and value == int(text) <= INT64_MAX


class FakeClients:
    """The five services, answering or failing as told (no network)."""

    def __init__(self, behaviour: dict[str, Any], delay: float = 0.0) -> None:
        self.behaviour, self.delay, self.calls = behaviour, delay, 0

    async def call(self, service: str, op: str, request: dict[str, Any], timeout: float) -> Any:
        self.calls += 1
        what = self.behaviour.get(service, {})
        if isinstance(what, float):
            await asyncio.sleep(what)
            return {}
        await asyncio.sleep(self.delay)
        if isinstance(what, BaseException):
            raise what
        return {
            "reviews": [],
            "recommendations": [],
            "options": [],
            "cart": None,
            "name": "x",
        }

    def stats(self) -> dict[str, Any]:
        return {}


def _route(clients: FakeClients, timeout: float = 2.0, sequential: bool = False) -> Any:
    settings_ = GatewaySettings(timeout_s=timeout, sequential=sequential)
    services = ("product-info", "reviews", "recommendations", "shipping", "cart")
    return handler(clients, services, settings_)  # type: ignore[arg-type]


def _get(route: Any, path: str, query: dict[str, str] | None = None) -> tuple[int, Any]:
    request = Request(
        method="GET",
        path=[p for p in path.split("/") if p],
        query=query or {},
        body=b"",
        headers={},
    )
    return asyncio.run(route(request))


def test_blank_customer_id_is_a_bad_request_not_no_customer() -> None:
    status, body = _get(_route(FakeClients({})), "/product/1", {"customer_id": ""})
    assert status == 400, body


def test_unicode_digits_in_the_path_are_400_not_500_nor_200() -> None:
    route = _route(FakeClients({}))
    assert _get(route, "/product/²")[0] == 400
    assert _get(route, "/product/٣")[0] == 400
    assert _get(route, f"/product/{INT64_MAX}")[0] == 200


def test_too_many_query_fields_are_refused() -> None:
    query = {f"f{i}": "1" for i in range(100)}
    assert _get(_route(FakeClients({})), "/product/1", query)[0] == 400


def test_a_500_answer_reveals_no_exception_text() -> None:
    clients = FakeClients({"reviews": RuntimeError("secret /etc/passwd detail")})
    status, body = _get(_route(clients), "/product/1")
    assert status == 500
    assert "secret" not in orjson.dumps(body).decode() and "RuntimeError" not in str(body)


def test_concurrent_page_fails_at_the_first_error_without_waiting_for_the_rest() -> None:
    # four services would take 30 s; one says 404 at once: the page must not wait 30 s
    clients = FakeClients({s: 30.0 for s in ("reviews", "recommendations", "shipping", "cart")})
    clients.behaviour["product-info"] = NotFound("no product")
    t0 = time.monotonic()
    status, _ = _get(_route(clients, timeout=60.0), "/product/1")
    assert status == 404
    assert time.monotonic() - t0 < 20  # generous: the point is not 30 s


def test_sequential_page_has_one_deadline_not_one_per_call() -> None:
    # each call takes 0.5 s, well under the 1.5 s call timeout, but five of them do not fit
    clients = FakeClients({}, delay=0.5)
    status, body = _get(_route(clients, timeout=1.5, sequential=True), "/product/1")
    assert status == 504, body
    assert clients.calls < 5


# --- CLI input ---------------------------------------------------------------------------


def test_a_compound_duration_needs_every_unit() -> None:
    import argparse

    with pytest.raises(argparse.ArgumentTypeError):
        duration("1h30")
    assert duration("1h30m") == 5400
    assert duration("90") == 90


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--call-timeout", "0"), "positive"),
        (("--call-timeout", "-1"), "positive"),
        (("--think-time", "2", "--think-time-max", "1"), "below --think-time"),
        (("--cpus", "1"), "docker, swarm and kubernetes backends only"),
        (("--delay-ms", "5"), "docker and swarm backends only"),
        (("--memory", "256"), "docker, swarm and kubernetes backends only"),
        (("--fault", "broker@3"), "not a component"),
    ],
)
def test_run_refuses_options_it_cannot_honour(args: tuple[str, ...], says: str) -> None:
    r = ipclab("run", "shop-rest", "--duration", "5s", *args)
    assert r.returncode == 2, r.stderr
    assert says in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not ipclab_processes()


def test_runs_root_naming_a_file_is_a_clear_error(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("keep me")
    r = ipclab("run", "shop-rest", "--duration", "5s", "--runs-root", str(f))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert f.read_text() == "keep me"


def test_out_must_be_a_new_or_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    for out in (str(tmp_path), "."):
        r = ipclab("run", "shop-rest", "--duration", "5s", "--out", out)
        assert r.returncode == 2 and "not an empty directory" in r.stderr, r.stderr
    assert (tmp_path / "notes.txt").read_text() == "mine"


# --- signals -----------------------------------------------------------------------------


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a background job or nohup starts us


@pytest.mark.slow
def test_up_stops_on_ctrl_c_even_when_started_with_sigint_ignored() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "ipclab.cli", "up", "shop-rest"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_ignore_sigint,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if url.startswith("ipclab: swept"):  # what an earlier test's killed run left
            url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url  # (stderr: read after the stop)
        with urllib.request.urlopen(f"{url}/healthz", timeout=10) as resp:
            assert resp.status == 200
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) in (0, 130)
        deadline = time.monotonic() + 10
        while ipclab_processes() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not ipclab_processes()
    finally:
        if proc.poll() is None:
            kill_group(proc.pid)
            proc.wait(timeout=10)
        for p in ipclab_processes():  # a failed test leaves nothing behind either
            kill_group(p.pid)


def test_make_lab_listens_on_loopback_without_a_browser_and_allows_root() -> None:
    r = subprocess.run(
        ["make", "-n", "lab"], cwd=ROOT, capture_output=True, text=True, timeout=30, check=True
    )
    line = next(ln for ln in r.stdout.splitlines() if "jupyterlab" in ln)
    assert "--ip=127.0.0.1" in line and "--no-browser" in line
    assert ("--allow-root" in line) == (os.getuid() == 0)


def test_make_test_installs_what_it_needs_first() -> None:
    """The README's `make test` as a newcomer types it: not the variables of the make that
    runs this suite (.ci/run's `make test SETUP=` reaches it through MAKEFLAGS and the
    environment)."""
    made = {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "SETUP"}  # the calling make's, and its SETUP=
    env = {k: v for k, v in os.environ.items() if k not in made}
    r = subprocess.run(
        ["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True, timeout=30,
        check=True, env=env,
    )  # fmt: skip
    lines = r.stdout.splitlines()
    install = next(
        i
        for i, ln in enumerate(lines)
        if "pip install" in ln and ("[dev" in ln or ".ci/requirements.lock" in ln)
    )
    pytest_at = next(i for i, ln in enumerate(lines) if "-m pytest" in ln)
    assert install < pytest_at


# --- the detached stack's state file ---------------------------------------------------


@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from ipclab.backends import local

    d = tmp_path / "state"
    d.mkdir(mode=0o700)
    monkeypatch.setattr(local, "STATE_DIR", d)
    return d


@pytest.fixture
def bystander() -> Any:
    """A process that is not ipclab's, in its own group: down() must not touch it."""
    proc = subprocess.Popen(["sleep", "120"], start_new_session=True)
    yield proc
    kill_group(proc.pid)
    proc.wait(timeout=10)


def _plant(state_dir: Path, doc: dict[str, Any], mode: int = 0o600) -> Path:
    path = state_dir / "shop-rest.json"
    path.write_text(orjson.dumps(doc).decode())
    path.chmod(mode)
    return path


def _recorded(proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    started = psutil.Process(proc.pid).create_time()
    return {"pids": {"gateway": proc.pid}, "started": {str(proc.pid): started}}


def test_down_kills_no_pid_and_deletes_no_directory_a_planted_state_file_names(
    state_dir: Path, tmp_path: Path, bystander: subprocess.Popen[bytes]
) -> None:
    from ipclab.backends.local import down

    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "data").write_text("keep")
    doc = {
        "stack": "shop-rest",
        "workdir": str(precious),
        "pids": {"gateway": bystander.pid, "reviews": 1},
        "broker": {"pid": bystander.pid, "epmd_port": 4369, "dir": str(precious)},
        "database": {"pid": bystander.pid, "dir": str(precious)},
    }
    _plant(state_dir, doc)
    assert down("shop-rest") is True
    time.sleep(0.3)
    assert bystander.poll() is None, "a pid the file named but ipclab did not start was killed"
    assert (precious / "data").read_text() == "keep"


def test_down_kills_no_process_that_reuses_a_recorded_pid(
    state_dir: Path, bystander: subprocess.Popen[bytes]
) -> None:
    from ipclab.backends.local import down

    started = psutil.Process(bystander.pid).create_time() - 100  # the recorded one was older
    doc = {"pids": {"gateway": bystander.pid}, "started": {str(bystander.pid): started}}
    doc["workdir"] = "/"
    _plant(state_dir, doc)
    assert down("shop-rest") is True
    time.sleep(0.3)
    assert bystander.poll() is None


def test_down_refuses_a_state_file_others_can_write(
    state_dir: Path, bystander: subprocess.Popen[bytes]
) -> None:
    from ipclab.backends.local import UnsafeState, down

    _plant(state_dir, _recorded(bystander), mode=0o666)
    with pytest.raises(UnsafeState):
        down("shop-rest")
    assert bystander.poll() is None


def test_down_refuses_a_state_directory_others_can_write(
    state_dir: Path, bystander: subprocess.Popen[bytes]
) -> None:
    from ipclab.backends.local import UnsafeState, down

    started = psutil.Process(bystander.pid).create_time()
    _plant(
        state_dir, {"pids": {"gateway": bystander.pid}, "started": {str(bystander.pid): started}}
    )
    state_dir.chmod(0o777)
    with pytest.raises(UnsafeState):
        down("shop-rest")
    assert bystander.poll() is None


def test_down_stops_the_process_it_recorded(
    state_dir: Path, bystander: subprocess.Popen[bytes]
) -> None:
    # the same file, with the true start time: this one must be stopped (the checks above
    # would pass vacuously if down() never killed anything)
    from ipclab.backends.local import down

    started = psutil.Process(bystander.pid).create_time()
    _plant(
        state_dir, {"pids": {"gateway": bystander.pid}, "started": {str(bystander.pid): started}}
    )
    assert down("shop-rest") is True
    assert bystander.wait(timeout=15) is not None


def test_state_and_study_files_are_written_atomically(tmp_path: Path) -> None:
    from ipclab.atomic import write_json_atomic

    target = tmp_path / "study.json"
    write_json_atomic(target, {"a": 1})
    write_json_atomic(target, {"a": 2}, mode=0o600)
    assert orjson.loads(target.read_text()) == {"a": 2}
    assert target.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["study.json"]  # no temp file left
    src = (ROOT / "src" / "ipclab").rglob("*.py")
    writers = [
        p.relative_to(ROOT)
        for p in src
        if any(
            f'"{name}").write_text' in p.read_text()
            for name in ("study.json", "experiment.json", "run_log.json", "manifest.json")
        )
    ]
    assert not writers, f"non-atomic writes of run records in {writers}"


# --- a killed harness ------------------------------------------------------------------


# alone: it asserts what its own sweep removed and said, and any stack started beside it
# (another worker's) sweeps first
@pytest.mark.alone
def test_sweep_removes_only_what_a_dead_harness_left(tmp_path: Path) -> None:
    import tempfile

    from ipclab import orphans

    dead = subprocess.Popen(["true"])
    dead.wait()
    dead_mark = f"{dead.pid}:1.00"  # a harness that is gone
    alive_mark = orphans.this_harness()
    env = {**os.environ}
    left = subprocess.Popen(["sleep", "120"], env={**env, orphans.MARK: dead_mark})
    kept = subprocess.Popen(["sleep", "120"], env={**env, orphans.MARK: alive_mark})
    dirs = {}
    for name, mark in (("dead", dead_mark), ("alive", alive_mark)):
        d = Path(tempfile.mkdtemp(prefix=f"{orphans.WORKDIR_PREFIX}sweeptest-{name}-"))
        (d / orphans.MARK_FILE).write_text(mark)
        dirs[name] = d
    said: list[str] = []
    try:
        swept = orphans.sweep(said.append)
        assert left.wait(timeout=10) is not None
        assert kept.poll() is None
        assert not dirs["dead"].exists() and dirs["alive"].exists()
        assert any(str(left.pid) in s for s in swept) and said and "swept" in said[0]
    finally:
        for p in (left, kept):
            p.kill()
            p.wait()
        for d in dirs.values():
            import shutil

            shutil.rmtree(d, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.alone  # as above: the broker node it leaves is for its own sweep to find
def test_kill_9_of_ipclab_run_leaves_nothing_or_the_next_start_sweeps_it(tmp_path: Path) -> None:
    """Must-show 4 on the local backend: after kill -9 of `ipclab run` on an AMQP stack, the
    services and Locust die with it within 10 s (parent-death signal); what cannot (the
    broker node, epmd, the workdir) is removed by the next start, which says so."""
    from ipclab import orphans

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ipclab.cli",
            "run",
            "shop-amqp",
            "--duration",
            "60s",
            "--users",
            "2",
            "--runs-root",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # until the load runs (Locust is up)
            if any(is_locust(p) for p in ipclab_processes()):
                break
            time.sleep(0.5)
        else:
            pytest.fail("the run did not reach its load phase")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            left = [p for p in ipclab_processes() if not _broker_node(p)]
            if not left:
                break
            time.sleep(0.5)
        assert not left, [command_line(p) for p in left]
        said: list[str] = []
        orphans.sweep(said.append)  # what the next start does first
        assert said and "swept" in said[0], "the broker node should have been left to sweep"
        deadline = time.monotonic() + 10
        while ipclab_processes() and time.monotonic() < deadline:
            time.sleep(0.3)
        assert not ipclab_processes(), [command_line(p) for p in ipclab_processes()]
        assert not [
            d
            for d in Path(tempfile_dir()).glob("ipclab-shop-amqp-*")
            if (d / orphans.MARK_FILE).exists()
            and (d / orphans.MARK_FILE).read_text().startswith(f"{proc.pid}:")
        ]
    finally:
        kill_group(proc.pid)
        for p in ipclab_processes():
            kill_group(p.pid)
            with contextlib.suppress(psutil.Error):
                p.kill()


def _broker_node(p: psutil.Process) -> bool:
    """The private RabbitMQ node: its launcher script dies with the harness, but beam.smp
    (a grandchild) and epmd (a daemon) do not get the parent-death signal."""
    try:
        return "RABBITMQ_NODENAME" in p.environ()
    except psutil.Error:
        return False


def tempfile_dir() -> str:
    import tempfile

    return tempfile.gettempdir()


# --- runs and their reuse --------------------------------------------------------------


def test_reuse_requires_the_same_stack_options(tmp_path: Path) -> None:
    from dataclasses import asdict

    from ipclab.backends import StackOptions
    from ipclab.experiments import Experiment
    from ipclab.runs import RunWriter
    from ipclab.stacks import resolve

    base = Experiment("e", ["shop-rest"], [1], duration_s=30, root=tmp_path)
    cell = base.cells()[0]
    params = {"profile": asdict(base.profile(cell)), "options": base.options.as_dict()}
    spec = resolve("shop-rest").declaration()
    writer = RunWriter(base.directory / cell.key, "load", params, backend="local", stack_spec=spec)
    writer.finish("complete")
    assert base.pending() == []  # the same experiment reuses the run (the check can pass)
    for other in (
        StackOptions(sequential=True),
        StackOptions(call_timeout_s=5.0),
        StackOptions(cpus=1.0),
        StackOptions(delay_ms=2.0),
    ):
        changed = Experiment("e", ["shop-rest"], [1], duration_s=30, root=tmp_path, options=other)
        assert changed.pending() == changed.cells(), other


@pytest.mark.slow
def test_a_run_whose_locust_dies_early_is_not_marked_complete(tmp_path: Path) -> None:
    from ipclab.runs import read_run

    out = tmp_path / "run"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ipclab.cli",
            "run",
            "shop-rest",
            "--duration",
            "60s",
            "--users",
            "2",
            "--out",
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        locust = None
        while locust is None and time.monotonic() < deadline:
            locust = next((p for p in ipclab_processes() if is_locust(p)), None)
            time.sleep(0.3)
        assert locust is not None, "Locust never started"
        locust.kill()  # Locust dies early
        proc.wait(timeout=120)
        run = read_run(out)
        assert run.status != "complete"
        assert not run.complete
    finally:
        if proc.poll() is None:
            kill_group(proc.pid)


# --- the report --------------------------------------------------------------------------


def test_the_report_reads_no_file_outside_the_study_folders(tmp_path: Path) -> None:
    from ipclab.report import _resolve

    study = tmp_path / "results" / "s"
    figures = tmp_path / "figures"
    study.mkdir(parents=True)
    figures.mkdir()
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"\x89PNG\r\n\x1a\nsecret")
    (study / "inside.csv").write_text("a\n1\n")
    (study / "link.png").symlink_to(secret)
    (figures / "fig.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    assert _resolve(study, "inside.csv") == study / "inside.csv"  # the check can pass
    assert _resolve(study, "fig.png", str(figures)) == figures / "fig.png"
    assert _resolve(study, str(secret)) is None  # absolute
    assert _resolve(study, "../../secret.png") is None  # leading out
    assert _resolve(study, "link.png") is None  # a symlink out
    from ipclab.report import Counter, _figure_html

    n = Counter()
    html = _figure_html(study, {"name": "x", "png": "passwd"}, "/etc", n)
    assert "root:" not in html and "base64" not in html and n.problems


def test_atomic_writes_are_fsynced_file_and_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Renamed over the target only after the data is on disk, then the directory entry too:
    a power cut or kill -9 leaves the old file or the whole new one."""
    import os

    from ipclab import atomic

    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(atomic.os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    atomic.write_text_atomic(tmp_path / "run_log.json", "{}")
    assert len(synced) >= 2, "the file and its directory are both fsynced"


def test_pyarrow_floor_excludes_the_release_with_cve_2023_47248() -> None:
    """pyarrow 14.0.0 runs code from a crafted Parquet file; Run.requests() reads Parquet."""
    import importlib.metadata
    import tomllib

    from packaging.requirements import Requirement
    from packaging.version import Version

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (arrow,) = [Requirement(d) for d in deps if Requirement(d).name == "pyarrow"]
    assert not arrow.specifier.contains("14.0.0") and arrow.specifier.contains("14.0.1")
    assert Version(importlib.metadata.version("pyarrow")) >= Version("14.0.1")


def test_children_get_their_parent_death_signal_without_a_preexec_fn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A preexec_fn runs Python between fork and exec, unsafe while the harness's sampler and
    probe threads run; setpriv(1) sets the parent-death signal instead."""
    import subprocess

    from ipclab import procs

    if procs._SETPRIV is None:
        pytest.skip("no setpriv here: the preexec_fn fallback is used")
    seen: dict[str, object] = {}

    class Capture:
        def __init__(self, argv: list[str], **kw: object) -> None:
            seen.update(argv=argv, **kw)

    monkeypatch.setattr(subprocess, "Popen", Capture)
    procs.spawn(["true"], {}, tmp_path / "x.log")
    assert seen["preexec_fn"] is None
    assert seen["argv"][:3] == [procs._SETPRIV, "--pdeathsig", "KILL"]  # type: ignore[index]


def test_a_killed_harness_docker_workdir_goes_with_its_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compose workdir of a docker stack carries its harness's mark: the watchdog removes
    it with the project (and `orphans.sweep` at the next start, if the watchdog missed it);
    another harness's workdir, an unmarked one and a symlink are left alone."""
    import tempfile

    from ipclab import orphans
    from ipclab.backends.docker import ownership

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    project, dead, alive = "ipclab-shop-rest-abc123", "1:1.00", "2:2.00"
    made: dict[str, Path] = {}
    for name, mark in (("mine", dead), ("other", alive), ("unmarked", None)):
        d = tmp_path / f"{project}-{name}"
        d.mkdir()
        (d / "shop-rest.yml").write_text("services: {}\n")
        if mark:
            (d / orphans.MARK_FILE).write_text(mark)
        made[name] = d
    (tmp_path / f"{project}-link").symlink_to(made["mine"])
    assert ownership.remove_workdirs(project, dead) == [made["mine"]]
    assert not made["mine"].exists() and made["other"].exists() and made["unmarked"].exists()
