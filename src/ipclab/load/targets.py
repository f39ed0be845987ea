"""The stacks a group run's load generator sends to: ``IPCLAB_TARGETS`` (``name=url,...``,
the group's order; written by :class:`ipclab.load.group.StackGroup`, read by user modules)."""

from __future__ import annotations


def parse_targets(text: str) -> dict[str, str]:
    """``IPCLAB_TARGETS`` (``name=url,name=url``) as a dict, in order."""
    out: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, url = part.partition("=")
        if not sep or not name or not url:
            raise ValueError(f"IPCLAB_TARGETS: {part!r} is not name=url")
        out[name] = url
    return out
