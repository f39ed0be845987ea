"""``fake``: a backend from outside ipclab. Each role is a process of this machine started
from the stack's declaration alone (``StackSpec.role_env``); its infrastructure is each
plugin's local instance (``Infrastructure.start_local``), whose URL the roles get as the
plugin says (``ipclab.infrastructure.role_env``). A detached stack's pids go to a state
file in ``FAKEPLUG_STATE``; ``down`` stops them and says so in ``down.log`` there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from ipclab import infrastructure
from ipclab.backends.base import BackendPlugin, RunningStack, StackOptions, process_tree_usage
from ipclab.infrastructure import LocalSite
from ipclab.procs import free_ports, kill_group, stop_group
from ipclab.stackspec import StackSpec


def state_dir() -> Path:
    return Path(os.environ["FAKEPLUG_STATE"])


class FakeStack(RunningStack):
    backend = "fake"

    def __init__(self, spec: StackSpec, options: StackOptions, detached: bool) -> None:
        self.spec, self.options, self.detached = spec, options, detached
        self.workdir = Path(tempfile.mkdtemp(prefix=f"fakeplug-{spec.name}-"))
        plugins = infrastructure.of(spec.infrastructure)
        ports = free_ports(len(spec.roles) + sum(p.local_ports for p in plugins))
        self.ports = dict(zip(spec.roles, ports, strict=False))
        self.infra: dict[str, Any] = {}
        rest = ports[len(spec.roles) :]
        for plugin in plugins:
            mine, rest = tuple(rest[: plugin.local_ports]), rest[plugin.local_ports :]
            site = LocalSite(self.workdir, mine, dict(os.environ), spec.domain, {}, detached)
            self.infra[plugin.name] = plugin.start_local(site)
        urls = {n: infrastructure.get(n).local_url(i) for n, i in self.infra.items()}
        addresses = {r: f"127.0.0.1:{p}" for r, p in self.ports.items()}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        for role in spec.roles:
            reach = infrastructure.role_env(spec.infrastructure, urls, role == spec.gateway)
            env = {k: v for k, v in os.environ.items() if not k.startswith("IPCLAB_")}
            env.update(spec.role_env(role, addresses, reach, options.env()))
            env.update(IPCLAB_HOST="127.0.0.1", IPCLAB_PORT=str(self.ports[role]))
            with open(self.workdir / f"{role}.log", "ab") as log:
                self.procs[role] = subprocess.Popen(
                    spec.runtime.command(), env=env, stdout=log, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL, start_new_session=True,
                )  # fmt: skip
        self.gateway_url = f"http://127.0.0.1:{self.ports[spec.gateway]}"

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.gateway_url}/healthz", timeout=2):
                    return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"{self.spec.name} did not start on the fake backend")

    def pids(self) -> list[int]:
        extra = [i.process.pid for i in self.infra.values()]
        return [*(p.pid for p in self.procs.values()), *extra]

    def sample(self) -> list[dict[str, Any]]:
        return [{"component": r, **process_tree_usage(p.pid, {})} for r, p in self.procs.items()]

    def kill(self, role: str) -> None:
        kill_group(self.procs[role].pid)

    def restart(self, role: str) -> None:
        raise NotImplementedError

    def logs(self) -> dict[str, str]:
        return {p.stem: p.read_text() for p in self.workdir.glob("*.log")}

    def stop(self) -> None:
        for pid in self.pids():
            stop_group(pid, grace=5)
        shutil.rmtree(self.workdir, ignore_errors=True)


class FakeBackend:
    name = "fake"

    def start(
        self,
        spec: StackSpec,
        options: StackOptions,
        logs_dir: Path | None = None,
        detached: bool = False,
    ) -> FakeStack:
        stack = FakeStack(spec, options, detached)
        stack.wait_ready()
        if detached:
            state = {"pids": stack.pids(), "workdir": str(stack.workdir)}
            (state_dir() / f"{spec.name}.json").write_text(json.dumps(state))
        return stack


def down(stack: str) -> bool:
    """``ipclab down STACK --backend fake``: stop what ``up --detach`` left; say so."""
    path = state_dir() / f"{stack}.json"
    with open(state_dir() / "down.log", "a") as log:
        log.write(f"{stack} {'up' if path.exists() else 'not up'}\n")
    if not path.exists():
        return False
    state = json.loads(path.read_text())
    for pid in state["pids"]:
        stop_group(pid, grace=5)
    shutil.rmtree(state["workdir"], ignore_errors=True)
    path.unlink()
    return True


BACKEND = BackendPlugin(
    "fake",
    FakeBackend,
    order=50,
    description="each role a process, from outside the tree",
    stop_detached=down,
    options=frozenset({"detach"}),
)
