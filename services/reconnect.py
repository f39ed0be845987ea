"""How a client reconnects after its peer went away: each library's default, or tuned.

``IPCLAB_RECONNECT`` chooses, for every client of a stack, ``default`` (the library's own
settings, the suite's measurements unless a run says otherwise) or ``tuned`` (short
back-offs, to measure how much of a style's recovery time is client configuration;
docs/availability.md, "Recovery, decomposed"). :data:`SETTINGS` names every value, the
defaults included, so a run's manifest can record what was in force.

- gRPC (grpc core's subchannel back-off, doc/connection-backoff.md): after a failed
  connection it waits ``initial`` 1 s, then 1.6 times longer each time (jitter 0.2) up to
  120 s; a call made meanwhile fails at once (UNAVAILABLE, no wait-for-ready).
- AMQP (aio-pika's robust connection): ``reconnect_interval`` 5 s between attempts after
  the broker went away (a restarted service connects afresh at its start).
- REST (aiohttp's pool): nothing to tune; a call after a refused connection opens a new one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

ENV = "IPCLAB_RECONNECT"
MODES = ("default", "tuned")

SETTINGS: dict[str, dict[str, dict[str, Any]]] = {
    "grpc": {
        "default": {
            "grpc.initial_reconnect_backoff_ms": 1000,
            "grpc.min_reconnect_backoff_ms": 20000,
            "grpc.max_reconnect_backoff_ms": 120000,
            "backoff_multiplier": 1.6,
        },
        "tuned": {
            "grpc.initial_reconnect_backoff_ms": 100,
            "grpc.min_reconnect_backoff_ms": 100,
            "grpc.max_reconnect_backoff_ms": 1000,
            "backoff_multiplier": 1.6,
        },
    },
    "amqp": {
        "default": {"reconnect_interval_s": 5.0},
        "tuned": {"reconnect_interval_s": 0.5},
    },
    "rest": {
        "default": {"reconnect": "a new connection per call after a refused one"},
        "tuned": {"reconnect": "a new connection per call after a refused one"},
    },
}


def mode(env: Mapping[str, str] | None = None) -> str:
    """The stack's reconnect mode (``default`` unless ``IPCLAB_RECONNECT`` says otherwise)."""
    value = (os.environ if env is None else env).get(ENV, "default") or "default"
    if value not in MODES:
        raise ValueError(f"{ENV}={value!r}: choose one of {', '.join(MODES)}")
    return value


def settings(transport: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The settings in force for ``transport``'s clients ({} for a transport not listed)."""
    return dict(SETTINGS.get(transport, {}).get(mode(env), {}))


def grpc_channel_options(env: Mapping[str, str] | None = None) -> list[tuple[str, int]]:
    """The channel arguments that differ from grpc core's defaults in the current mode."""
    if mode(env) == "default":
        return []
    return [(k, int(v)) for k, v in settings("grpc", env).items() if k.startswith("grpc.")]


def amqp_reconnect_interval(env: Mapping[str, str] | None = None) -> float:
    return float(settings("amqp", env)["reconnect_interval_s"])
