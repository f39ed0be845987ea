"""What every server of the services grants one client, in one place for Python.

``services/go/limits.go`` holds the same numbers for the Go roles (a test compares the two
files), and docs/hardening.md lists them with the reason for each value:

- ``MAX_BODY``: a request body longer than this is refused with 413 (CoAP: 4.13) by the
  HTTP/1.1 front, the REST, h2c and CoAP relays, the native nginx adapters and the Go
  gateway;
- ``MAX_HEADER_BYTES``: a request line and headers longer than this are refused with 431;
- ``HEADER_TIMEOUT_S``: a connection that has not sent a whole request head this long
  after it opened (or after the first byte of its next request) is closed, without an
  answer, as Go's ``ReadHeaderTimeout`` does;
- ``READ_TIMEOUT_S``: a request whose body has not arrived whole this long after its first
  byte is cut off (Go's ``ReadTimeout``);
- ``IDLE_TIMEOUT_S``: a keep-alive connection that sends no new request this long after an
  answer is closed (Go's ``IdleTimeout``, uvicorn's ``timeout_keep_alive``, nginx's
  ``keepalive_timeout``, the REST relay server's ``keepalive_timeout``); the clients' pools
  close an idle connection sooner (``transports.rest.POOL_IDLE_S``);
- ``MAX_ANSWER``: a service's answer longer than this is not read by a gateway's client:
  the call fails as ``internal`` (a gateway's memory per call stays bounded).
"""

from __future__ import annotations

MAX_BODY = 1 << 20  # bytes (1 MiB)
MAX_HEADER_BYTES = 64 << 10  # bytes (64 KiB)
HEADER_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 30.0
IDLE_TIMEOUT_S = 75.0
MAX_ANSWER = 16 << 20  # bytes (16 MiB)
