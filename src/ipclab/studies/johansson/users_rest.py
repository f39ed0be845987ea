"""Locust user of the REST gateway: the whole bundle, ``GET /api/Databundle/``.

Closed loop; think time from ``IPCLAB_THINK_TIME_S`` (the thesis paused 1 s per request)."""

from __future__ import annotations

import os

from locust import FastHttpUser, between, task

from ipclab.load import recorder  # noqa: F401 - registers the per-request recorder

THINK_S = float(os.environ.get("IPCLAB_THINK_TIME_S", "0"))
THINK_MAX_S = float(os.environ.get("IPCLAB_THINK_TIME_MAX_S", THINK_S))


class DatabundleUser(FastHttpUser):
    wait_time = between(THINK_S, max(THINK_S, THINK_MAX_S))
    network_timeout = 30.0
    connection_timeout = 10.0

    @task
    def bundle(self) -> None:
        self.client.get("/api/Databundle/", name="REST /api/Databundle/")
