"""``--store db`` on the docker backend (issue 50, must-show 2): one shop stack per runtime
that builds here, each on its stores (FerretDB's and MariaDB's containers, its plugins'
compose services), started once for the module: the contract's requests answered from the
stores, a page's trace on the project's bridge showing each service's round trips to its
store, nothing listening beyond loopback on the host and no store port published, and
nothing of a stack left after its stop (last in the module)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from ipclab import infrastructure, listeners, requesttrace
from ipclab.backends import StackOptions
from ipclab.backends.docker.backend import DockerBackend, DockerStack
from ipclab.backends.docker.ownership import PROJECT_LABEL, client
from tests.conftest import started_together
from tests.test_stores import PAGES, _assert_store_round_trips

from .conftest import SHOP_STACKS
from .local_tests import load_local_tests

# one per runtime (Python, Go, Node.js), those whose images build here; shop-rest first (the
# contract compares every stack's page with its)
CANDIDATES = ("shop-rest", "shop-grpc-go", "shop-rest-node")
STORE_STACKS = tuple(n for n in CANDIDATES if n in SHOP_STACKS)
STORES = {"docstore": "ferretdb", "sqlstore": "mariadb"}  # component -> plugin

_contract = load_local_tests("test_contract.py")
test_healthz = _contract.test_healthz
test_malformed_id_is_400 = _contract.test_malformed_id_is_400
test_same_json_in_every_style = _contract.test_same_json_in_every_style
test_unknown_product_is_404 = _contract.test_unknown_product_is_404

_BEFORE: list[set[listeners.Listener]] = []


@pytest.fixture(scope="module")
def shop_stacks(docker_images: dict[str, str]) -> Iterator[dict[str, DockerStack]]:
    """The store stacks, started together once (overrides the docker conftest's); skipped,
    saying why, where a store's image cannot be made (no Go to build FerretDB)."""
    for plugin in STORES.values():
        if why := infrastructure.get(plugin).unavailable("docker"):
            pytest.skip(why)
    _BEFORE.append(listeners.listening())
    options = StackOptions(store="db", call_timeout_s=10.0)  # a first call logs in (SCRAM)
    yield from started_together(DockerBackend(), STORE_STACKS, options)


def test_each_runtime_reads_its_stores_and_a_page_s_trace_shows_them(
    shop_stacks: dict[str, DockerStack],
) -> None:
    """The store containers run beside the roles; a page traced on the project's bridge (its
    connections warm) shows each service's round trips to its own store inside the page's
    exchange, and no other role's."""
    if why := requesttrace.unavailable():
        pytest.skip(why)
    for name, stack in shop_stacks.items():
        assert set(STORES) <= set(stack.components), name
        requesttrace.trace(stack, PAGES[0])  # connections made
        _, trips = requesttrace.trace(stack, PAGES[0])
        _assert_store_round_trips(trips)


def _env(ctr: Any) -> dict[str, str]:
    return dict(e.split("=", 1) for e in ctr.attrs["Config"]["Env"])


def test_the_stores_answer_on_the_stack_network_only(
    shop_stacks: dict[str, DockerStack],
) -> None:
    """No store port is published (the gateway's alone, on 127.0.0.1), nothing the stacks
    opened on the host listens beyond loopback, every store container carries the project's
    labels (what ``down`` and the orphan sweep remove by) and runs with no capability; the
    services have the store URLs with their generated passwords, the gateway none."""
    opened = listeners.opened_by(_BEFORE[0])
    assert listeners.beyond_loopback(opened) == [], opened
    for name, stack in shop_stacks.items():
        for component in STORES:
            ctr = stack.container(component)
            host = ctr.attrs["HostConfig"]
            published = [p for p in (ctr.ports or {}).values() if p]  # exposed, not published
            assert not host["PortBindings"] and not published, (name, component, ctr.ports)
            assert "ALL" in host["CapDrop"] and not host["CapAdd"] and not host["Privileged"]
            assert ctr.labels[PROJECT_LABEL] == stack.project
        mongo = _env(stack.container("product-info"))["IPCLAB_MONGO_URL"]
        assert mongo.startswith("mongodb://ipclab:") and "@docstore:27017/" in mongo
        assert "guest" not in mongo and len(mongo.split(":")[2].split("@")[0]) >= 32
        assert _env(stack.container("shipping"))["IPCLAB_MYSQL_URL"].endswith(
            "@sqlstore:3306/ipclab"
        )
        gateway = _env(stack.container("gateway"))
        assert "IPCLAB_MONGO_URL" not in gateway and "IPCLAB_MYSQL_URL" not in gateway


def test_stopping_a_stack_on_its_stores_leaves_nothing(
    shop_stacks: dict[str, DockerStack],
) -> None:
    """Last in the module: each stack stopped (as the fixture would), then no container,
    network or volume of its project is left, and its private folder (the stores' passwords
    and seed files) is gone."""
    for name, stack in shop_stacks.items():
        stack.stop()
        flt = {"label": f"{PROJECT_LABEL}={stack.project}"}
        deadline = time.monotonic() + 30
        while True:
            left = [
                *(c.name for c in client().containers.list(all=True, filters=flt)),
                *(n.name for n in client().networks.list(filters=flt)),
                *(v.name for v in client().volumes.list(filters=flt)),
            ]
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert left == [], (name, left)
        assert not stack._tmp.exists(), name
