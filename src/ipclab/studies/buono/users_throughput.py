"""Locust user of the throughput experiment: a closed loop of GETs of one payload in one
format (``IPCLAB_PAYLOAD``: ``format structure count``, e.g. ``protobuf nested 650``), gzip
and the cache off; a request is named ``GET <format> <structure> <count>``. An answer that
is not a 200 holding the count is a failure."""

from __future__ import annotations

import os

from locust import FastHttpUser, constant, task

from ipclab.load import recorder  # noqa: F401 - registers the per-request recorder
from ipclab.load.targets import parse_targets
from ipclab.studies.buono.procedure import check_answer, parse_cell

TARGET = next(iter(parse_targets(os.environ.get("IPCLAB_TARGETS", "")).values()), "")
CELL = parse_cell("GET " + os.environ.get("IPCLAB_PAYLOAD", "json nested 5"))


class ThroughputUser(FastHttpUser):
    wait_time = constant(0)
    network_timeout = 60.0
    connection_timeout = 10.0

    @task
    def get(self) -> None:
        with self.client.get(
            f"{TARGET}{CELL.path}?count={CELL.count}",
            name=CELL.name,
            headers={"Accept-Encoding": "identity"},
            catch_response=True,
        ) as r:
            check_answer(r, CELL)
