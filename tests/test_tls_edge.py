"""TLS at the edge only (issue 50, ``--tls-hops edge``, ``StackOptions(tls="edge")``): the
thesis's HTTPS from the load generator to the gateway. Every shop stack of every runtime
(Python, Go, Node.js) and style (REST, gRPC, AMQP, h2c) answers over HTTPS with a certificate
the stack's authority signed, while its services and broker speak in the clear: they get no
TLS files, a service's port refuses a TLS handshake, a REST service answers plain HTTP and
the broker's URL is ``amqp://``. ``--tls`` (every hop) keeps its meaning (tests/test_tls.py)."""

from __future__ import annotations

import argparse
import socket
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from ipclab import tls
from ipclab.backends import StackOptions, get_backend
from ipclab.backends.docker.compose import compose_document, write_logins
from ipclab.backends.local import LocalStack
from ipclab.cli import _tls_level
from ipclab.stacks import all_stacks, resolve
from tests.conftest import started_together

EDGE = StackOptions(call_timeout_s=2.0, tls="edge")
EDGE_STACKS = tuple(
    name
    for name, spec in all_stacks().items()
    if spec.tls_unavailable(edge=True) is None
    and spec.unavailable() is None
    and not name.endswith("-seq")
)


def test_the_levels_keep_old_keys_and_refuse_others() -> None:
    assert StackOptions().tls is None and StackOptions().as_dict()["tls"] is None
    assert StackOptions(tls=True).as_dict()["tls"] is True  # every hop, as before
    assert EDGE.as_dict()["tls"] == "edge" and EDGE.tls_edge
    assert not StackOptions(tls=True).tls_edge
    with pytest.raises(ValueError, match="edge"):
        StackOptions(tls="gateway")

    def level(**given: object) -> object:
        return _tls_level(argparse.Namespace(**given))

    assert level(tls=False, tls_hops=None) is None
    assert level(tls=True, tls_hops=None) is True
    assert level(tls=False, tls_hops="all") is True
    assert level(tls=True, tls_hops="edge") == level(tls=False, tls_hops="edge") == "edge"


def test_node_serves_tls_at_the_edge_only() -> None:
    node = resolve("shop-rest-node")
    assert node.tls_unavailable(edge=True) is None
    assert "Node.js" in (node.tls_unavailable() or "")  # every hop: not built for Node.js


def test_the_compose_file_mounts_the_files_into_the_gateway_alone(tmp_path: Path) -> None:
    spec = resolve("shop-amqp")
    files = tls.make(tmp_path / "tls", spec.roles, spec.name, mounted=True)
    logins = write_logins(spec, tmp_path, StackOptions().env())
    doc = compose_document(spec, logins=logins, tls_dir=files.directory, tls_edge=True)
    doc = doc["services"]
    gateway = doc[spec.gateway]
    assert any(v.endswith(f":{tls.CONTAINER_DIR}:ro") for v in gateway["volumes"])
    assert gateway["environment"]["IPCLAB_TLS_HOPS"] == "edge"
    assert gateway["environment"]["IPCLAB_AMQP_URL"].startswith("amqp://")
    for role in spec.services:
        assert "IPCLAB_TLS_CA" not in doc[role]["environment"], role
        assert not any(str(tls.CONTAINER_DIR) in v for v in doc[role].get("volumes", ())), role
    every = compose_document(spec, logins=logins, tls_dir=files.directory)["services"]
    assert every[spec.services[0]]["environment"]["IPCLAB_AMQP_URL"].startswith("amqps://")


@pytest.fixture(scope="module")
def edge_stacks() -> Iterator[dict[str, LocalStack]]:
    yield from started_together(get_backend("local"), EDGE_STACKS, EDGE)


def _refuses_tls(port: int) -> bool:
    """Whether 127.0.0.1:``port`` refuses a TLS handshake (a server in the clear does)."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    try:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
            context.wrap_socket(raw, server_hostname="127.0.0.1"),
        ):
            return False
    except (ssl.SSLError, OSError):
        return True


def _answers_plain_http(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as r:
            return r.status > 0
    except urllib.error.HTTPError:
        return True  # an HTTP answer, whatever its status
    except OSError:
        return False


@pytest.mark.slow
def test_the_gateway_answers_over_https_and_the_services_in_the_clear(
    edge_stacks: dict[str, LocalStack],
) -> None:
    runtimes = {s.spec.runtime.name for s in edge_stacks.values()}
    assert {"python", "go", "node"} <= runtimes
    styles = {s.spec.transport for s in edge_stacks.values()}
    assert {"rest", "grpc", "amqp", "h2c"} <= styles
    for name, stack in edge_stacks.items():
        assert stack.gateway_url.startswith("https://") and stack.tls is not None, name
        signed = ssl.create_default_context(cafile=str(stack.tls.ca))  # this stack's alone
        with urllib.request.urlopen(
            f"{stack.gateway_url}/product/7?customer_id=3", timeout=10, context=signed
        ) as r:
            assert r.status == 200, name
        gateway = stack._env(stack.spec.gateway)
        assert gateway["IPCLAB_TLS_HOPS"] == "edge", name
        for role in stack.spec.services:
            assert "IPCLAB_TLS_CA" not in stack._env(role), (name, role)
        if stack.spec.needs_broker:
            assert gateway["IPCLAB_AMQP_URL"].startswith("amqp://"), name
            continue
        port = stack.ports[stack.spec.services[0]]
        assert _refuses_tls(port), name
        if stack.spec.transport == "rest":
            assert _answers_plain_http(port), name
