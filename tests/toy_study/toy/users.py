"""The toy study's Locust user: one product page per task, closed loop, no think time."""

from __future__ import annotations

import random

from locust import FastHttpUser, constant, task

from ipclab.load import recorder  # noqa: F401 - registers the per-request recorder

_rng = random.Random(1)


class PageUser(FastHttpUser):
    wait_time = constant(0)

    @task
    def page(self) -> None:
        self.client.get(f"/product/{_rng.randint(1, 100)}", name="/product/[id]")
