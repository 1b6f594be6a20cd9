"""Whole-number arguments of the control ops, checked before they reach SQL.

A request is JSON, and JSON has integers of any size: `offset = 10**30` reached SQLite, which
keeps 64-bit integers, as an OverflowError (an `internal_error` answer). Every integer argument
of every op is read here instead: a JSON integer (not a bool, a float or a string) from `least`
to `most` (at most MAX_WHOLE, the largest integer every JSON reader keeps exact), or one
`bad_request` that says so.
"""

from __future__ import annotations

from typing import Any

from healerd.control.protocol import ControlError

MAX_WHOLE = 2**53 - 1


def whole(value: Any, what: str, least: int = 0, most: int = MAX_WHOLE) -> int:
    """`value` as an int within [least, most]; ControlError(bad_request) naming `what` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
        raise ControlError("bad_request", f"{what} must be a whole number from {least} to {most}")
    return value
