"""TLS for a stack started with ``--tls`` (issue 32): every role reads the stack's files from
its environment and builds its server and client contexts here, one way for every style.

The harness makes a private certificate authority per stack start (``ipclab.tls``) and one
certificate for the stack's roles (every role's host name, ``localhost`` and 127.0.0.1 in
its subject alternative names); a role gets three paths:

- ``IPCLAB_TLS_CA``: the authority's certificate, the only one a client trusts;
- ``IPCLAB_TLS_CERT`` and ``IPCLAB_TLS_KEY``: the stack's certificate and key, which a
  server presents.

Clients verify the peer's certificate and its name (no "insecure" switch exists); TLS 1.3 is
the least either side accepts where the library takes a setting (Python's gRPC does not).
Without ``IPCLAB_TLS_CA`` in the environment TLS is off and every role speaks in the clear,
as before. ``IPCLAB_TLS_HOPS=edge`` (``--tls-hops edge``, issue 50: the gateway's alone gets
the files then) keeps the role's clients in the clear: it serves HTTPS to the load generator
and dials the services and the broker in plain text (:func:`client_files` is None).

A server gives a client :data:`HANDSHAKE_TIMEOUT_S` to finish its TLS handshake, the head
timeout of ``ipclab_services.limits`` (asyncio's own default is 60 s, gRPC's 120 s): a
connection that opens and then stalls is closed as soon as one that stalls in its head.
Every server of the roles passes it (``asgi.serve_http``, the h2c and gRPC servers).
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ipclab_services.limits import HEADER_TIMEOUT_S

CA, CERT, KEY = "IPCLAB_TLS_CA", "IPCLAB_TLS_CERT", "IPCLAB_TLS_KEY"
HOPS, EDGE = "IPCLAB_TLS_HOPS", "edge"  # edge: this role's server only, its clients plain


# seconds a server waits for a client's TLS handshake (Go's servers: the least of their
# read timeouts, so ReadHeaderTimeout, the same value)
HANDSHAKE_TIMEOUT_S = HEADER_TIMEOUT_S


class TlsConfigError(RuntimeError):
    """The environment asks for TLS but does not give usable files."""


@dataclass(frozen=True)
class TlsFiles:
    ca: Path
    cert: Path
    key: Path

    def read(self, which: str) -> bytes:
        return Path(getattr(self, which)).read_bytes()


def files(env: Mapping[str, str] | None = None) -> TlsFiles | None:
    """The stack's TLS files, or None when TLS is off."""
    e = os.environ if env is None else env
    if not e.get(CA):
        return None
    missing = [name for name in (CA, CERT, KEY) if not e.get(name)]
    if missing:
        raise TlsConfigError(f"{CA} is set but {', '.join(missing)} is not")
    out = TlsFiles(Path(e[CA]), Path(e[CERT]), Path(e[KEY]))
    for path in (out.ca, out.cert, out.key):
        if not path.is_file():
            raise TlsConfigError(f"TLS file {path} does not exist or is not a file")
    return out


def client_files(env: Mapping[str, str] | None = None) -> TlsFiles | None:
    """The files a client of this role dials its peers with, or None (in the clear): TLS on
    and every hop encrypted (not ``IPCLAB_TLS_HOPS=edge``)."""
    e = os.environ if env is None else env
    found = files(e)
    return None if e.get(HOPS) == EDGE else found


def enabled(env: Mapping[str, str] | None = None) -> bool:
    return files(env) is not None


def server_context(tls: TlsFiles, alpn: Sequence[str] = ()) -> ssl.SSLContext:
    """A server's context: the stack's certificate, TLS 1.3 at least, ``alpn`` offered."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.load_cert_chain(tls.cert, tls.key)
    if alpn:
        ctx.set_alpn_protocols(list(alpn))
    return ctx


def client_context(tls: TlsFiles, alpn: Sequence[str] = ()) -> ssl.SSLContext:
    """A client's context: the stack's authority alone trusted, the peer's name checked,
    TLS 1.3 at least, ``alpn`` asked for."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # check_hostname and CERT_REQUIRED
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.load_verify_locations(cafile=tls.ca)
    if alpn:
        ctx.set_alpn_protocols(list(alpn))
    return ctx


def scheme(http: str = "http", env: Mapping[str, str] | None = None) -> str:
    """``https`` when TLS is on, else ``http`` (or ``ws``/``wss``, ``amqp``/``amqps``)."""
    return (http + "s") if enabled(env) else http


__all__ = [
    "CA", "CERT", "EDGE", "HANDSHAKE_TIMEOUT_S", "HOPS", "KEY", "TlsConfigError", "TlsFiles",
    "client_context", "client_files",
    "enabled", "files", "scheme", "server_context",
]  # fmt: skip
