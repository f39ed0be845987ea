"""Locust user of the thesis test: one client, REST and GraphQL interleaved.

The group run (``ipclab.load.group``) starts both stacks and names their gateways in
``IPCLAB_TARGETS`` (by stack name; a request is named by its stack's style). This user
sends the schedule of :func:`schedule` (discarded warm-up requests first, then the measured
ones, each pair of one REST and one GraphQL request in a random order), pauses
``IPCLAB_THINK_TIME_S`` after every request (the thesis's 1 s), then ends Locust. A
request's ``name`` is its style (``rest``, ``graphql``), prefixed with ``warmup `` for the
warm-up.
"""

from __future__ import annotations

import os

import gevent
from ipclab_services.domains.bundle.gateway import BUNDLE_QUERY
from locust import FastHttpUser, constant, task

from ipclab.load import recorder  # noqa: F401 - registers the per-request recorder
from ipclab.studies.johansson.schedule import parse_targets, schedule
from ipclab.studies.johansson.stacks import COMPARED

STYLE = {s.name: s.style for s in COMPARED}
TARGETS = {STYLE[k]: url for k, url in parse_targets(os.environ.get("IPCLAB_TARGETS", "")).items()}
PAUSE_S = float(os.environ.get("IPCLAB_THINK_TIME_S", "0"))
SCHEDULE = schedule(
    list(TARGETS),
    requests=int(os.environ.get("IPCLAB_SCHEDULE_REQUESTS", "100")),
    warmup=int(os.environ.get("IPCLAB_SCHEDULE_WARMUP", "0")),
    seed=int(os.environ.get("IPCLAB_LOAD_SEED", "1")),
)


class InterleavedUser(FastHttpUser):
    wait_time = constant(0)
    network_timeout = 30.0
    connection_timeout = 10.0

    @task
    def thesis_test(self) -> None:
        for name, style in SCHEDULE:
            url = TARGETS[style]
            if style == "graphql":
                self.client.post(f"{url}/api/graphql", json={"query": BUNDLE_QUERY}, name=name)
            else:
                self.client.get(f"{url}/api/Databundle/", name=name)
            gevent.sleep(PAUSE_S)
        self.environment.runner.quit()  # the schedule is the run: end Locust
