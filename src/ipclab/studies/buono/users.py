"""Locust user of the payload procedure: one client walking the schedule of
:func:`ipclab.studies.buono.procedure.schedule` through the edge service, then ending Locust.

It first asks the stack's ``/healthz`` how the data service runs (gzip, cache, encoder,
protobuf backend) and writes the answer to ``server.json`` in the run directory. A POST
body is built and encoded before its cell's first request (gzipped when the service takes
gzip), so building it stays out of the timings; a GET asks for gzip only when the service
gives it. Each answer must be a 200 holding the cell's count (``X-Elements``), else the
request is a failure. Records: the usual ones (``bytes`` is the answer's Content-Length,
the bytes on the wire), with ``timing`` (the data service's ``Server-Timing``) and
``header_bytes``.
"""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path
from typing import Any

from ipclab_services.domains.payload import codec, data
from ipclab_services.domains.payload.http import zlib_gzip
from locust import FastHttpUser, constant, task

from ipclab.load import recorder  # noqa: F401 - registers the per-request recorder
from ipclab.load.targets import parse_targets
from ipclab.studies.buono.procedure import Cell, check_answer, parse_cells, schedule

TARGET = next(iter(parse_targets(os.environ.get("IPCLAB_TARGETS", "")).values()), "")
SCHEDULE = schedule(
    parse_cells(os.environ.get("IPCLAB_PAYLOAD_CELLS", "")),
    requests=int(os.environ.get("IPCLAB_SCHEDULE_REQUESTS", "100")),
    warmup=int(os.environ.get("IPCLAB_SCHEDULE_WARMUP", "1")),
    seed=int(os.environ.get("IPCLAB_LOAD_SEED", "1")),
)


def describe_server(url: str) -> dict[str, Any]:
    """The edge's ``/healthz``: the data service's settings and protobuf backend."""
    with urllib.request.urlopen(f"{url}/healthz", timeout=10) as r:
        doc = json.loads(r.read())
    described = doc.get("data") or {}
    if not isinstance(described, dict) or "settings" not in described:
        raise RuntimeError(f"{url}/healthz does not describe the data service: {doc}")
    return described


def body(cell: Cell, settings: dict[str, Any]) -> tuple[bytes, dict[str, str]]:
    """A POST cell's body, encoded as the data service's encoder would, and its headers."""
    ds = data.dataset(cell.structure, cell.count, int(settings["seed"]))  # type: ignore[arg-type]
    if cell.fmt == "json":  # a JVM service (Jackson) reads orjson's bytes (json's are the same)
        library = settings["json_library"]
        raw = codec.encode_json(
            ds.document, library if library in codec.JSON_LIBRARIES else "orjson"
        )
    else:
        raw = codec.encode_protobuf(ds.message)
    headers = {"Content-Type": codec.CONTENT_TYPES[cell.fmt]}
    if settings["gzip"]:
        return zlib_gzip(raw), {**headers, "Content-Encoding": "gzip"}
    return raw, headers


class PayloadUser(FastHttpUser):
    wait_time = constant(0)
    network_timeout = 300.0
    connection_timeout = 10.0

    @task
    def procedure(self) -> None:
        server = describe_server(TARGET)
        requests_dir = os.environ.get("IPCLAB_REQUESTS_DIR")
        if requests_dir:
            (Path(requests_dir).parent / "server.json").write_text(json.dumps(server, indent=1))
        settings = server["settings"]
        accept = "gzip" if settings["gzip"] else "identity"
        current: Cell | None = None
        payload, headers = b"", {}
        for name, cell in SCHEDULE:
            if cell != current:
                current = cell
                payload, headers = body(cell, settings) if cell.method == "POST" else (b"", {})
            if cell.method == "GET":
                answer = self.client.get(
                    f"{TARGET}{cell.path}?count={cell.count}",
                    name=name,
                    headers={"Accept-Encoding": accept},
                    catch_response=True,
                )
            else:
                answer = self.client.post(
                    f"{TARGET}{cell.path}",
                    data=payload,
                    name=name,
                    headers={**headers, "Accept-Encoding": accept},
                    catch_response=True,
                )
            with answer as r:
                check_answer(r, cell)
        self.environment.runner.quit()  # the schedule is the run: end Locust
