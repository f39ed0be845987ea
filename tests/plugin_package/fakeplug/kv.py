"""``fakekv``: an infrastructure plugin from outside ipclab. Locally a tiny HTTP server (a
process of this machine, started through the ``start_local`` hook any backend that runs
processes may use); on docker a service of its own image (its recipe), with a login it
writes (a token file) or placeholders for a document run by hand."""

from __future__ import annotations

import secrets
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipclab.backends.docker.recipes import ImageRecipe
from ipclab.infrastructure import Infrastructure, LocalSite

HERE = Path(__file__).parent


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    port: int

    def kill(self) -> None:
        self.process.kill()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


@dataclass(frozen=True)
class Login:
    token: str
    token_file: str


class FakeKV(Infrastructure):
    name = "fakekv"
    component = "kv"
    backends = ("local", "fake", "docker")
    recipe = ImageRecipe("kv", "fakeplug-kv:latest", "FAKEPLUG_KV_IMAGE", HERE / "Dockerfile")
    url_env = "FAKEPLUG_KV_URL"
    gateway_reaches = False  # the services' alone
    faults = True  # faults hit it as they hit a service; its restart recovers
    local_ports = 1

    def start_local(self, site: LocalSite) -> Server:
        (site.workdir / "kv").mkdir(exist_ok=True)
        process = subprocess.Popen(
            [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(site.ports[0])],
            cwd=site.workdir / "kv",
            env={**site.env, **site.mark},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        return Server(process, site.ports[0])

    def local_url(self, instance: Server) -> str:
        return f"http://127.0.0.1:{instance.port}/"

    def local_state(self, instance: Server) -> dict[str, Any]:
        return {"pid": instance.process.pid}

    def local_down(self, state: dict[str, Any], alive: Callable[[Any], bool], ours: bool) -> None:
        from ipclab.procs import stop_group

        if alive(state.get("pid")):
            stop_group(state["pid"], grace=5)

    def write_files(self, directory: Path, env: dict[str, str], domain: str) -> Login:
        token = secrets.token_hex(8)
        path = directory / "kv-token"
        path.write_text(token + "\n")
        return Login(token, str(path))

    def by_hand(self) -> Login:
        return Login("${FAKEPLUG_KV_TOKEN:?set it}", "${FAKEPLUG_KV_TOKEN_FILE:?set it}")

    def url(self, login: Login) -> str:
        return f"http://kv:8000/?token={login.token}"

    def compose_service(self, login: Login, net_admin: bool) -> dict[str, Any]:
        image = f"${{{self.recipe.env}:-{self.recipe.tag}}}"
        return {"image": image, "volumes": [f"{login.token_file}:/run/kv-token:ro"]}

    def service_ports(self) -> tuple[int, ...]:
        return (8000,)


PLUGIN = FakeKV()
