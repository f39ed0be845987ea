"""The gateway's client-facing protocol, one module per front; ``load(name)`` returns it.

A front turns what a client sends into a :class:`Request` for the domain's gateway handler
and its ``(status, body)`` answer back into bytes on the wire. Each module provides

    def make_handler(domain, clients, services, settings) -> Handler
        # what the gateway answers: the domain's handler, or the front's own on top of it
    async def serve(handler: Handler, host: str, port: int, ready: asyncio.Event | None)

so a new front (POST bodies, GraphQL, protobuf bodies, h2c, CoAP) is one module here, and
a stack names it in its declaration.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any


@dataclass(frozen=True)
class Request:
    method: str  # "GET", "POST", ...
    path: list[str]  # the path split on "/", empty parts dropped
    query: dict[str, str]  # the query string, blank values kept
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)  # lower-case names
    target: str = ""  # the path and query as sent (for a proxy)


@dataclass(frozen=True)
class Reply:
    """An answer that is not a JSON document: its bytes, content type and extra headers
    (e.g. ``Set-Cookie``), sent as they are. A handler answers a JSON-able object or this."""

    body: bytes
    content_type: str = "text/plain"
    headers: tuple[tuple[str, str], ...] = ()


Handler = Callable[[Request], Awaitable[tuple[int, Any]]]


def available() -> tuple[str, ...]:
    return tuple(m.name for m in pkgutil.iter_modules(__path__))


def load(front: str) -> ModuleType:
    if front not in available():
        raise ValueError(f"unknown front {front!r}; known: {', '.join(available())}")
    return importlib.import_module(f"{__name__}.{front}")
