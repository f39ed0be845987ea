"""Locust user for the product page: one task, closed loop, think time a parameter.

Run by ``ipclab.load.runner`` in its own process (never inside a notebook kernel: Locust's
gevent monkey-patching does not mix with asyncio). Configuration comes from environment
variables set by the runner; every request is recorded by ``ipclab.load.recorder``.
"""

from __future__ import annotations

import os
import random

from locust import FastHttpUser, constant, task

from ipclab.load import recorder  # noqa: F401 - registers the per-request recorder

CATALOGUE = int(os.environ.get("IPCLAB_CATALOGUE_SIZE", "1000"))
CUSTOMERS = int(os.environ.get("IPCLAB_CUSTOMERS", "500"))
THINK_S = float(os.environ.get("IPCLAB_THINK_TIME_S", "0"))
THINK_MAX_S = float(os.environ.get("IPCLAB_THINK_TIME_MAX_S", THINK_S))
_rng = random.Random(int(os.environ.get("IPCLAB_LOAD_SEED", "1")))


def _think() -> float:
    return THINK_S if THINK_MAX_S <= THINK_S else _rng.uniform(THINK_S, THINK_MAX_S)


class ProductPageUser(FastHttpUser):
    wait_time = constant(0) if THINK_MAX_S == 0 else staticmethod(lambda: _think())  # type: ignore[assignment]
    network_timeout = 30.0
    connection_timeout = 10.0

    @task
    def product_page(self) -> None:
        product_id = _rng.randint(1, CATALOGUE)
        customer_id = _rng.randint(0, CUSTOMERS)  # 0: not logged in, no customer_id sent
        query = f"?customer_id={customer_id}" if customer_id else ""
        self.client.get(f"/product/{product_id}{query}", name="/product/[id]")
