"""Time helpers: durations ("30s", "15m", "2h", "7d" or plain seconds) and UTC ISO 8601."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

# typing only for the type checker: importing it costs healerctl's light path ~10 ms of CPU
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNIT = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(value: Any, key: str = "duration") -> float:
    """Seconds from a number or a string with an s/m/h/d suffix; ValueError naming `key`."""
    if isinstance(value, bool):
        raise ValueError(f"{key}: expected a duration like 30, \"30s\", \"15m\", \"2h\", \"7d\"; got {value!r}")
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError(f"{key}: a duration cannot be negative ({value})")
        return float(value)
    if isinstance(value, str):
        m = _DURATION.match(value)
        if m:
            return float(m.group(1)) * _UNIT[m.group(2)]
    raise ValueError(f"{key}: expected a duration like 30, \"30s\", \"15m\", \"2h\", \"7d\"; got {value!r}")


def now() -> float:
    return time.time()


def iso(ts: float | None) -> str | None:
    """UTC ISO 8601 with a trailing Z, whole seconds; None stays None."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def ago(ts: float | None, ref: float | None = None) -> str:
    """A relative time for people: "just now", "3m ago", "in 2h"."""
    if ts is None:
        return "-"
    ref = time.time() if ref is None else ref
    delta = ref - ts
    future = delta < 0
    d = abs(delta)
    if d < 5:
        return "just now" if not future else "now"
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m"), (1, "s")):
        if d >= size:
            n = int(d // size)
            return f"in {n}{unit}" if future else f"{n}{unit} ago"
    return "just now"
