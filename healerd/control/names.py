"""What a source name may be on the control socket: 1-200 letters, digits, '-', '_' and '.'
(so a name is never a path, an option or a control character)."""

from __future__ import annotations

from typing import Any

from healerd.control.protocol import ControlError

_NAME_OK = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


def check_name(name: Any) -> str:
    if not isinstance(name, str) or not name or len(name) > 200 or not set(name) <= _NAME_OK:
        raise ControlError("bad_request", "a source name is 1-200 characters of letters, digits, '-', '_' and '.'")
    return name
