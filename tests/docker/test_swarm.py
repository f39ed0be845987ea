"""The swarm backend (issue 17): the shop stacks deployed with ``docker stack deploy`` on a
single-node swarm pass the contract tests; a killed task is restarted and the availability
probe sees the failure and the recovery; teardown leaves no service, network, config or secret,
leaves a swarm the harness made, and leaves a swarm it did not make untouched; a short run on
swarm beside the same run on compose."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ipclab.availability.tracker import CycleStatus
from ipclab.backends import StackOptions
from ipclab.backends.docker.compose import common_services, interpolate
from ipclab.backends.docker.ownership import client
from ipclab.backends.docker.swarm import (
    SwarmBackend,
    SwarmStack,
    publishing_containers,
    stack_document,
    swarm_leftovers,
    swarm_state,
)
from ipclab.infrastructure.rabbitmq import BROKER_USERS_TARGET, BrokerLogin
from ipclab.runs import read_run
from ipclab.stacks import all_stacks, resolve

from ..orchestrator_restart import killed_and_restarted
from .local_tests import load_local_tests

STACKS = ("shop-rest", "shop-grpc", "shop-amqp")
NOTHING = {"services": [], "containers": [], "networks": [], "configs": [], "secrets": []}


@pytest.fixture(scope="module")
def shop_stacks(docker_images: dict[str, str]) -> Iterator[dict[str, SwarmStack]]:
    """The three compared product-page stacks on a swarm, for this module."""
    backend = SwarmBackend()
    stacks: dict[str, SwarmStack] = {}
    busy = publishing_containers(client())
    if busy and swarm_state(client()) != "active":
        pytest.skip(f"other containers publish ports on this engine ({busy[:3]}): no swarm now")
    try:
        for name in STACKS:
            stacks[name] = backend.start(resolve(name), StackOptions(call_timeout_s=1.0))  # type: ignore[assignment]
        yield stacks
    finally:
        for stack in stacks.values():
            stack.stop()
    for stack in stacks.values():
        assert swarm_leftovers(stack.project) == NOTHING


_contract = load_local_tests("test_contract.py")
test_healthz = _contract.test_healthz
test_malformed_id_is_400 = _contract.test_malformed_id_is_400
test_same_json_in_every_style = _contract.test_same_json_in_every_style
test_unknown_product_is_404 = _contract.test_unknown_product_is_404


def test_stacks_run_as_swarm_services(shop_stacks: dict[str, SwarmStack]) -> None:
    c = client()
    for name, stack in shop_stacks.items():
        services = c.services.list(filters={"label": f"com.docker.stack.namespace={stack.project}"})
        assert {s.name.split("_", 1)[1] for s in services} == set(stack.components), name
        assert stack.info()["swarm"]["endpoint_mode"] == "dnsrr"
        rows = {r["component"]: r for r in stack.sample()}
        assert set(rows) == set(stack.components) and all(
            r["status"] == "running" for r in rows.values()
        )


def test_a_killed_task_is_restarted_and_the_probe_sees_failure_and_recovery(
    shop_stacks: dict[str, SwarmStack], tmp_path: Path
) -> None:
    # nobody restarts it but the swarm's restart policy
    cycles = killed_and_restarted(shop_stacks["shop-rest"], tmp_path, "reviews")
    assert cycles and cycles[0].status == CycleStatus.RECOVERED, cycles
    print(f"swarm restarted reviews: down {cycles[0].ttr_s:.1f} s (restart policy delay 5 s)")


def test_short_run_on_swarm_beside_compose(tmp_path: Path, docker_images: dict[str, str]) -> None:
    """The same short run on both (must-show 4: rps, p50, p99 in the closing note)."""
    out: dict[str, dict[str, float]] = {}
    for backend in ("docker", "swarm"):
        run_dir = tmp_path / backend
        r = subprocess.run(
            [sys.executable, "-m", "ipclab.cli", "run", "shop-rest", "--backend", backend,
             "--users", "20", "--spawn-rate", "20", "--duration", "8s", "--warmup", "2s",
             "--out", str(run_dir)],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr[-3000:]
        run = read_run(run_dir)
        s = run.summary
        assert run.complete and s["failures"] == 0 and s["requests"] > 0, s
        assert run.manifest["backend"] == backend
        out[backend] = {
            "rps": s["rps"],
            "p50": s["latency_ms"]["p50"],
            "p99": s["latency_ms"]["p99"],
        }
        if backend == "swarm":
            project = run.manifest["stack_info"]["project"]
            assert swarm_leftovers(project) == NOTHING
    print("compose vs swarm, shop-rest, 20 users, 8 s (6 s measured):", json.dumps(out))


# The keys of compose/common.yml a swarm service must carry as compose's does (limits are
# checked apart: the stack file has them under deploy.resources).
SHARED_KEYS = ("image", "init", "cap_drop", "cap_add", "stop_grace_period", "logging",
               "healthcheck", "hostname", "labels", "env_file")  # fmt: skip


def test_the_swarm_stack_file_carries_common_yml_for_every_service_of_every_stack() -> None:
    """No hand copy: each service of every stack swarm runs has common.yml's limits,
    dropped capabilities, logging, grace period and labels, as compose gives them."""
    variables = {"IPCLAB_PROJECT": "p", "IPCLAB_HARNESS": "h", "IPCLAB_IMAGE": "svc@x",
                 "IPCLAB_BROKER_IMAGE": "brk@y", "IPCLAB_CPUS": "0.5", "IPCLAB_MEM_LIMIT": "256m",
                 "IPCLAB_ENV_FILE": "/w/stack.env"}  # fmt: skip
    common = interpolate(common_services(), variables)
    login = BrokerLogin("pw", "/w/broker-users.conf")
    checked = 0
    for name, spec in all_stacks().items():
        try:
            doc = stack_document(spec, variables, 8123, logins={"rabbitmq": login})
        except ValueError:  # sidecars, load hosts, a database, no image: swarm refuses
            continue
        assert doc["networks"]["default"]["attachable"] is False
        for role, svc in doc["services"].items():
            base = common["broker" if role == "broker" else "app"]
            for key in SHARED_KEYS:
                assert svc.get(key) == base.get(key), (name, role, key)
            limits = svc["deploy"].get("resources", {}).get("limits", {})
            want = {k: str(base[c]) for c, k in (("cpus", "cpus"), ("mem_limit", "memory"))
                    if str(base[c]) != "0"}  # fmt: skip
            assert limits == want, (name, role)
            assert svc["deploy"]["labels"] == base["labels"]
            checked += 1
        if spec.needs_broker:
            broker = doc["services"]["broker"]
            assert broker["configs"][0]["target"] == BROKER_USERS_TARGET
            assert doc["services"][spec.gateway]["environment"]["IPCLAB_AMQP_URL"] == login.url
            assert "guest" not in json.dumps(doc)
    assert checked >= 20, checked
