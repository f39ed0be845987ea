"""TLS on every hop (issue 32, must-show 1 and 4): a private authority per stack start, every
TLS-capable shop stack answering the same page over HTTPS with its hops in their style's
TLS, a client that trusts another authority refused, a stack that cannot have TLS refused
with the reason, and no key or certificate left once the stack stops."""

from __future__ import annotations

import http.client
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from cryptography import x509
from cryptography.x509.oid import ExtensionOID

from ipclab import tls
from ipclab.backends import StackOptions, get_backend
from ipclab.backends.local import LocalStack
from ipclab.stacks import all_stacks
from tests.conftest import started_together


def test_a_stack_authority_signs_one_certificate_for_its_hosts(tmp_path: Path) -> None:
    files = tls.make(tmp_path / "tls", ("gateway", "reviews", "127.0.0.1"), "shop-rest")
    ca = x509.load_pem_x509_certificate(files.ca.read_bytes())
    cert = x509.load_pem_x509_certificate(files.cert.read_bytes())
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_oid(ExtensionOID.SUBJECT_ALTERNATIVE_NAME).value
    assert {"gateway", "reviews", "localhost"} <= set(names.get_values_for_type(x509.DNSName))
    assert {str(ip) for ip in names.get_values_for_type(x509.IPAddress)} >= {"127.0.0.1", "::1"}
    assert (files.key.stat().st_mode & 0o777) == 0o600  # the harness's user alone
    assert not list(tmp_path.rglob("*ca*key*"))  # the authority's key is never written
    mounted = tls.make(tmp_path / "mounted", ("gateway",), "shop-rest", mounted=True)
    assert (mounted.key.stat().st_mode & 0o777) == 0o644  # read by the containers' users


TLS_STACKS = tuple(
    name
    for name, spec in all_stacks().items()
    if spec.tls_unavailable() is None and spec.unavailable() is None
)


@pytest.fixture(scope="module")
def tls_stacks() -> Iterator[dict[str, LocalStack]]:
    yield from started_together(
        get_backend("local"), TLS_STACKS, StackOptions(call_timeout_s=2.0, tls=True)
    )


def _get(url: str, context: ssl.SSLContext | None = None) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10, context=context) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


@pytest.mark.slow
def test_every_tls_stack_answers_the_same_page_over_https(
    tls_stacks: dict[str, LocalStack],
) -> None:
    assert {"shop-rest", "shop-grpc", "shop-amqp", "shop-h2c"} <= set(tls_stacks)
    pages = {}
    for name, stack in tls_stacks.items():
        assert stack.gateway_url.startswith("https://"), name
        status, body = _get(f"{stack.gateway_url}/product/7?customer_id=3")
        assert status == 200, (name, body[:300])
        pages[name] = orjson.loads(body)
        env = stack._env(stack.spec.services[0])
        assert env["IPCLAB_TLS_CA"].startswith(str(stack.workdir)), name
        if stack.spec.needs_broker:
            assert env["IPCLAB_AMQP_URL"].startswith("amqps://"), name
    first = next(iter(pages.values()))
    assert all(page == first for page in pages.values())


@pytest.mark.slow
def test_a_client_trusting_another_authority_is_refused(
    tls_stacks: dict[str, LocalStack], tmp_path: Path
) -> None:
    other = tls.make(tmp_path / "other", ("127.0.0.1",), "another stack")
    context = ssl.create_default_context(cafile=str(other.ca))
    for name, stack in tls_stacks.items():
        with pytest.raises(urllib.error.URLError) as refused:
            _get(f"{stack.gateway_url}/healthz", context)
        assert isinstance(refused.value.reason, ssl.SSLCertVerificationError), name
        plain = stack.gateway_url.replace("https://", "http://")
        assert not _answers_in_the_clear(f"{plain}/healthz"), name


def _answers_in_the_clear(url: str) -> bool:
    """Whether a plain HTTP request to ``url`` gets a 200 (a TLS port answers a Go server's
    400, a closed connection or a bad status line, never the page)."""
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return bool(r.status == 200)
    except (OSError, http.client.HTTPException):
        return False


@pytest.mark.slow
def test_no_key_or_certificate_is_left_once_the_stack_stops() -> None:
    stack = get_backend("local").start(all_stacks()["shop-rest"], StackOptions(tls=True))
    try:
        assert stack.tls is not None and stack.tls.key.exists()
        folder = stack.tls.directory
    finally:
        stack.stop()
    assert not folder.exists()


def test_a_stack_without_tls_is_refused_with_the_reason() -> None:
    coap = next(s for s in all_stacks().values() if s.transport == "coap" and not s.adapters)
    with pytest.raises(ValueError, match="DTLS"):
        get_backend("local").start(coap, StackOptions(tls=True))
