"""One call as JSON over a request/response protocol: what h2c and CoAP carry.

The same document as REST's (``transports/rest.py``): a call to ``op`` with ``request``
answers the operation's result as orjson bytes with status 200, or an error document
``{"error": code, "message": ...}`` with the error's HTTP status (404 for an unknown
operation). ``outcome`` turns a status and body back into the result or the error.
"""

from __future__ import annotations

from typing import Any

import orjson
from ipclab_services.errors import ServiceError, from_code
from ipclab_services.transports.base import ServiceDef


async def answer(service: ServiceDef, op: str, query: dict[str, str]) -> tuple[int, bytes]:
    """(status, JSON body) of ``op`` called with ``query``, as the REST server answers."""
    if op not in service.ops:
        return 404, orjson.dumps({"error": "no_such_operation", "message": op})
    try:
        return 200, orjson.dumps(await service.invoke(op, query))
    except ServiceError as e:
        return e.http_status, orjson.dumps({"error": e.code, "message": str(e)})


def outcome(service: str, status: int, body: bytes) -> dict[str, Any]:
    """The result an answer carries; raise its error (``errors.from_code``) if it is one."""
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise ServiceError(f"{service}: status {status} with a non-JSON body") from None
    if status != 200:
        raise from_code(doc.get("error", "internal"), doc.get("message", ""))
    return doc  # type: ignore[no-any-return]


def query_pairs(request: dict[str, Any]) -> list[tuple[str, str]]:
    """A request's fields as query pairs (every value as text, as REST sends them)."""
    return [(k, str(v)) for k, v in request.items()]
