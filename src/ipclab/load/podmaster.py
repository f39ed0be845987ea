"""Inside the Locust master's pod (the kubernetes backend's load pods, docs/distributed.md):
run Locust's master and hand the run's files to the harness.

``python -m ipclab.load.podmaster RESULTS PORT -- COMMAND...`` starts ``COMMAND`` (Locust's
master, writing its CSV files and request records under ``RESULTS``, its log to
``RESULTS/locust.log``) and serves, on ``PORT``, what the harness outside the cluster needs
to treat the pod as it treats a Locust process of its own machine:

- ``GET /status``: ``{"exit_code": null}`` while Locust runs, then its exit status;
- ``GET /files``: every file under ``RESULTS``, as paths relative to it;
- ``GET /files/<path>``: one of them (nothing outside ``RESULTS``);
- ``POST /stop``: SIGTERM to Locust (it flushes its records, as on the harness's machine).

It keeps serving after Locust ended, until the pod is deleted with the stack's namespace.
Standard library only: it runs in the load image, not in the harness.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class Master:
    """The Locust process and its results folder."""

    def __init__(self, results: Path, command: list[str]) -> None:
        self.results = results.resolve()
        self.results.mkdir(parents=True, exist_ok=True)
        self.command = command
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = open(self.results / "locust.log", "ab")  # noqa: SIM115 - Locust's for its life
        self.proc = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT)

    def exit_code(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)

    def files(self) -> list[str]:
        return sorted(
            str(p.relative_to(self.results)) for p in self.results.rglob("*") if p.is_file()
        )

    def file(self, relative: str) -> Path | None:
        """``relative`` under the results folder, or None (outside it, or no such file)."""
        path = (self.results / relative).resolve()
        if self.results not in path.parents or not path.is_file():
            return None
        return path


def handler(master: Master) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _json(self, data: Any) -> None:
            self._send(200, json.dumps(data).encode())

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if self.path == "/status":
                return self._json({"exit_code": master.exit_code()})
            if self.path == "/files":
                return self._json(master.files())
            if self.path.startswith("/files/"):
                found = master.file(self.path.removeprefix("/files/"))
                if found is not None:
                    return self._send(200, found.read_bytes(), "application/octet-stream")
            return self._send(404, b"{}")

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            if self.path != "/stop":
                return self._send(404, b"{}")
            master.stop()
            return self._json({"exit_code": master.exit_code()})

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
            return

    return Handler


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 4 or args[2] != "--":
        print("usage: python -m ipclab.load.podmaster RESULTS PORT -- COMMAND...", file=sys.stderr)
        return 2
    master = Master(Path(args[0]), args[3:])
    server = ThreadingHTTPServer(("0.0.0.0", int(args[1])), handler(master))  # noqa: S104 - the pod's
    master.start()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: (master.stop(), sys.exit(0)))
    assert master.proc is not None
    master.proc.wait()
    threading.Event().wait()  # serve until the pod is deleted
    return 0


if __name__ == "__main__":
    sys.exit(main())
