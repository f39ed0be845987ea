"""Issue 48, item 7: a TLS server of the roles gives a client the head timeout to finish its
handshake, not asyncio's 60 s (nor gRPC's 120 s) ahead of it.

Each server that speaks TLS with ``--tls`` (the HTTP/1.1 one, ``asgi.serve_http``, under
REST; h2c's; gRPC's) is started with a stack's TLS files; a client connects and sends
nothing, or half a ClientHello. The server must close the connection within
``HANDSHAKE_TIMEOUT_S`` (plus scheduling slack); on main's code it waited 60 s (120 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

import pytest
import uvloop
from ipclab_services import tls as service_tls
from ipclab_services import transports
from ipclab_services.limits import HEADER_TIMEOUT_S
from ipclab_services.transports.base import ServeConfig

from ipclab import tls
from ipclab.procs import free_port
from tests.test_transports_h2c_coap import TEST_SERVICE

STYLES = ("rest", "h2c", "grpc")
SLACK_S = 2.5  # a loaded 2-core machine's scheduling, on top of the timeout
# the first bytes of a TLS record carrying a ClientHello, then nothing
HALF_HELLO = bytes.fromhex("160301020001")


def test_the_handshake_timeout_is_the_head_timeout() -> None:
    assert service_tls.HANDSHAKE_TIMEOUT_S == HEADER_TIMEOUT_S


async def _closed_after(port: int, send: bytes) -> float:
    """Seconds from connecting (and sending ``send``) until the server closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    t0 = time.monotonic()
    writer.write(send)
    await writer.drain()
    try:
        await asyncio.wait_for(reader.read(), HEADER_TIMEOUT_S * 2 + SLACK_S)
    except (ConnectionError, OSError):
        pass
    except TimeoutError:
        return float("inf")
    finally:
        writer.close()
    return time.monotonic() - t0


@pytest.mark.parametrize("style", STYLES)
def test_a_client_that_never_finishes_its_handshake_is_closed_in_the_head_timeout(
    style: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = tls.make(tmp_path / "tls", ("127.0.0.1",), "shop-rest")
    monkeypatch.setenv(service_tls.CA, str(files.ca))
    monkeypatch.setenv(service_tls.CERT, str(files.cert))
    monkeypatch.setenv(service_tls.KEY, str(files.key))

    async def main() -> list[float]:
        port = free_port()
        config = ServeConfig(port=port)
        server = asyncio.create_task(transports.load(style).serve(TEST_SERVICE, config))
        await asyncio.wait_for(config.ready.wait(), 20)
        await asyncio.sleep(0.2)  # gRPC's listener answers a moment after start
        try:
            return list(
                await asyncio.gather(_closed_after(port, b""), _closed_after(port, HALF_HELLO))
            )
        finally:
            server.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await server

    waited = uvloop.run(main())
    for seconds in waited:
        assert seconds <= HEADER_TIMEOUT_S + SLACK_S, f"{style}: closed after {seconds:.1f} s"
        assert seconds >= HEADER_TIMEOUT_S - 0.5, f"{style}: closed early, after {seconds:.1f} s"
