"""TLS on every hop on the docker backend (issue 32, must-show 1 and 4): every TLS-capable
shop stack in containers answers the same page over HTTPS, each role's container reads the
stack's authority and certificate from a read-only mount, the broker's URL is AMQPS, a client
that trusts another authority is refused, and no key or certificate is left once the stack
stops (tests/test_tls.py holds the same on local processes)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
import yaml

from ipclab import tls
from ipclab.backends import StackOptions
from ipclab.backends.docker.backend import DockerBackend, DockerStack
from ipclab.stacks import resolve
from tests.conftest import started_together
from tests.test_tls import (  # noqa: F401 - the refusal test, collected here with these stacks
    TLS_STACKS,
    _get,
    test_a_client_trusting_another_authority_is_refused,
)


@pytest.fixture(scope="module")
def tls_stacks(docker_images: dict[str, str]) -> Iterator[dict[str, DockerStack]]:
    yield from started_together(
        DockerBackend(), TLS_STACKS, StackOptions(call_timeout_s=2.0, tls=True)
    )


def test_every_tls_stack_answers_the_same_page_over_https_in_containers(
    tls_stacks: dict[str, DockerStack],
) -> None:
    assert {"shop-rest", "shop-grpc", "shop-amqp", "shop-h2c"} <= set(tls_stacks)
    pages = {}
    for name, stack in tls_stacks.items():
        assert stack.gateway_url.startswith("https://"), name
        status, body = _get(f"{stack.gateway_url}/product/7?customer_id=3")
        assert status == 200, (name, body[:300])
        pages[name] = orjson.loads(body)
        compose = yaml.safe_load(Path(stack.compose_path).read_text())
        for role in (stack.spec.gateway, *stack.spec.services):
            service = compose["services"][role]
            assert any(v.endswith(f":{tls.CONTAINER_DIR}:ro") for v in service["volumes"]), name
            env = service["environment"]
            assert env["IPCLAB_TLS_CA"].startswith(str(tls.CONTAINER_DIR)), (name, role)
            if resolve(name).needs_broker:
                assert env["IPCLAB_AMQP_URL"].startswith("amqps://"), (name, role)
    first = next(iter(pages.values()))
    assert all(page == first for page in pages.values())


def test_no_key_or_certificate_is_left_once_a_container_stack_stops(
    tls_stacks: dict[str, DockerStack],
) -> None:
    """The module's shop-rest stack (its last test to use the stacks), stopped here: a
    second start of the same stack would cost a stack start for the same check. The
    fixture's stop afterwards is a no-op on a stopped stack."""
    stack = tls_stacks["shop-rest"]
    assert stack.tls is not None and stack.tls.key.exists()
    folder = stack.tls.directory
    stack.stop()
    assert not folder.exists()


EDGE_STACKS = ("shop-amqp", "shop-grpc-go", "shop-rest-node")  # one per runtime (issue 50)


def test_tls_at_the_edge_in_containers_the_gateway_alone(docker_images: dict[str, str]) -> None:
    """``--tls-hops edge`` in containers: the gateway answers over HTTPS with the stack's
    certificate; the services' containers get no TLS files, the broker no TLS listener."""
    import ssl
    import urllib.request

    edge = StackOptions(call_timeout_s=2.0, tls="edge")
    for stacks in started_together(DockerBackend(), EDGE_STACKS, edge):
        for name, stack in stacks.items():
            assert stack.gateway_url.startswith("https://") and stack.tls is not None, name
            signed = ssl.create_default_context(cafile=str(stack.tls.ca))
            url = f"{stack.gateway_url}/product/7?customer_id=3"
            with urllib.request.urlopen(url, timeout=10, context=signed) as r:
                assert r.status == 200, name
            compose = yaml.safe_load(Path(stack.compose_path).read_text())["services"]
            gateway = compose[stack.spec.gateway]
            assert gateway["environment"]["IPCLAB_TLS_HOPS"] == "edge", name
            for role in stack.spec.services:
                assert "IPCLAB_TLS_CA" not in compose[role]["environment"], (name, role)
                mounts = compose[role].get("volumes", ())
                assert not any(str(tls.CONTAINER_DIR) in v for v in mounts), (name, role)
            if stack.spec.needs_broker:
                assert gateway["environment"]["IPCLAB_AMQP_URL"].startswith("amqp://"), name
