"""Durations and think times read from a run's parameters, whatever way a study wrote
them (``"1m30s"``, ``[1, 2]``, ``"between(1, 2)"``...)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

_NUM = r"[0-9]*\.?[0-9]+"


def parse_seconds(value: Any) -> float | None:
    """Seconds from a number, ``"30s"``, ``"2m"``, ``"1h"``, ``"1m30s"``; None if absent."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, int | float):
        return float(value)
    s = str(value).strip().lower()
    if not s:
        return None
    try:
        return float(s)
    except ValueError:
        pass
    parts = re.findall(rf"({_NUM})\s*(ms|h|m|s)", s)
    if not parts or "".join(n + u for n, u in parts) != s.replace(" ", ""):
        raise ValueError(f"cannot read a duration from {value!r}")
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(n) * scale[u] for n, u in parts)


def parse_think_time(value: Any) -> float:
    """Mean think time in seconds from a number, ``[lo, hi]``, ``{"min": lo, "max": hi}``,
    ``"1-2"``, ``"1-2s"``, ``"between(1, 2)"`` or ``"1.5s"``; 0 when absent."""
    if value is None or value == "":
        return 0.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, Mapping):
        lo = value.get("min", value.get("low", value.get("lo")))
        hi = value.get("max", value.get("high", value.get("hi")))
        if lo is None or hi is None:
            raise ValueError(f"cannot read a think time from {value!r}")
        return (float(lo) + float(hi)) / 2
    if isinstance(value, list | tuple):
        if len(value) == 1:
            return float(value[0])
        if len(value) == 2:
            return (float(value[0]) + float(value[1])) / 2
        raise ValueError(f"cannot read a think time from {value!r}")
    nums = re.findall(_NUM, str(value))
    if len(nums) == 1:
        return float(parse_seconds(str(value).replace("constant", "").strip("() ")) or 0.0)
    if len(nums) == 2:
        return (float(nums[0]) + float(nums[1])) / 2
    raise ValueError(f"cannot read a think time from {value!r}")
