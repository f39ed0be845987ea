"""What a run's manifest records about a started stack, in its own words.

Two things, both read once the stack is up and before any load: the stack's ``info()``
where it says something (docker and swarm: project, images with their ids, limits, engine) and
the gateway's ``/healthz`` document; and, for a stack whose roles run a runtime that
describes itself at start (the JVM of the Californium adapters or of the payload services:
version, flags, heap, collectors),
each such role's ``ipclab-runtime`` line from its log (``runtimes``). A gateway's health
answer names its services and, where a service describes itself there, how it runs (its
settings, its libraries' backends): what the service process did, which the harness
process's own environment cannot say.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from ipclab.backends.base import RunningStack

HEALTHZ_TIMEOUT_S = 5.0
RUNTIME_PREFIX = "ipclab-runtime "  # a role's own description of its runtime, one JSON line


def read_healthz(url: str, timeout_s: float = HEALTHZ_TIMEOUT_S) -> dict[str, Any]:
    """The JSON document ``url/healthz`` answers (with any status); ``{"unread": why}`` when
    there is none to read (no answer, or not a JSON object)."""
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=timeout_s) as r:
            body = r.read()
    except urllib.error.HTTPError as e:
        body = e.read()
    except (OSError, ValueError) as e:
        return {"unread": repr(e)[:300]}
    try:
        doc = json.loads(body)
    except ValueError:
        return {"unread": f"not JSON: {body[:100]!r}"}
    return doc if isinstance(doc, dict) else {"unread": f"not a JSON object: {body[:100]!r}"}


def runtimes(logs: Mapping[str, str]) -> dict[str, Any]:
    """Role -> the last ``ipclab-runtime`` document in its log (roles without one left out)."""
    out: dict[str, Any] = {}
    for role, text in logs.items():
        for line in text.splitlines():
            _, sep, body = line.partition(RUNTIME_PREFIX)
            if sep:
                try:
                    out[role] = json.loads(body)
                except ValueError:
                    continue
    return out


def describe_stack(stack: RunningStack) -> dict[str, Any]:
    """``{"stack_info": ..., "healthz": ...}`` for a manifest (``stack_info`` only when the
    stack's ``info()`` says something: ``RunningStack.info``'s default says nothing), and
    ``runtimes`` for a stack whose adapters or roles run on the JVM (read from its logs)."""
    out: dict[str, Any] = {}
    info = stack.info()
    if info is not None:
        out["stack_info"] = info
    out["healthz"] = read_healthz(stack.gateway_url)
    spec = getattr(stack, "spec", None)
    built = spec is not None and (
        getattr(spec, "adapter_runtime", None) is not None
        or getattr(getattr(spec, "runtime", None), "name", "") == "jvm"
    )
    if built:
        found = runtimes(stack.logs())
        if found:
            out["runtimes"] = found
    return out


__all__ = ["describe_stack", "read_healthz", "runtimes"]
