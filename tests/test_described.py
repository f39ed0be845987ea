"""What a run's manifest records about a started stack (ipclab.backends.described): the
gateway's /healthz document, whatever its status, and the stack's info() where it says
something (RunningStack's default says nothing); a missing or unreadable answer is said,
never an error of the run."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ipclab.backends.base import RunningStack
from ipclab.backends.described import describe_stack, read_healthz
from ipclab.procs import free_port

ANSWERS: dict[str, tuple[int, bytes]] = {
    "/ok/healthz": (200, b'{"ready": true, "data": {"implementation": "upb"}}'),
    "/down/healthz": (503, b'{"ready": false, "services": {"data": "TimeoutError"}}'),
    "/text/healthz": (200, b"ok"),
    "/list/healthz": (200, b"[1, 2]"),
}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        status, body = ANSWERS.get(self.path, (404, b"{}"))
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@dataclass
class _Stack(RunningStack):  # RunningStack.info's default: nothing to add
    gateway_url: str


@dataclass
class _DockerLike(_Stack):
    def info(self) -> dict[str, Any]:
        return {"images": {"services": {"name": "ipclab-services", "id": "sha256:ab"}}}


def test_the_healthz_document_is_read_whatever_its_status(server: str) -> None:
    assert read_healthz(f"{server}/ok") == {"ready": True, "data": {"implementation": "upb"}}
    assert read_healthz(f"{server}/down")["services"] == {"data": "TimeoutError"}


def test_an_answer_that_is_no_json_object_or_no_answer_is_said(server: str) -> None:
    assert read_healthz(f"{server}/text")["unread"].startswith("not JSON")
    assert read_healthz(f"{server}/list")["unread"].startswith("not a JSON object")
    gone = read_healthz(f"http://127.0.0.1:{free_port()}", timeout_s=2)
    assert set(gone) == {"unread"} and "refused" in gone["unread"].lower()


def test_a_stack_is_described_by_its_healthz_and_its_backends_info(server: str) -> None:
    local = describe_stack(_Stack(f"{server}/ok"))  # type: ignore[arg-type]
    assert local == {"healthz": {"ready": True, "data": {"implementation": "upb"}}}
    docker = describe_stack(_DockerLike(f"{server}/ok"))  # type: ignore[arg-type]
    assert docker["stack_info"]["images"]["services"]["id"] == "sha256:ab"
    assert docker["healthz"] == local["healthz"]
