"""Hostile requests on the control socket: deep nesting and unbounded limits get a clear
answer, and the daemon keeps serving."""

from __future__ import annotations

import socket

import pytest

from healerd.control import protocol
from healerd.control.protocol import ControlError


def test_deep_nesting_is_a_bad_request_not_a_crash():
    with pytest.raises(ControlError) as ei:
        protocol.decode(b"[" * 200_000)
    assert ei.value.code == "bad_request" and "too deeply" in ei.value.message


def _raw(path: str, payload: bytes) -> dict:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(20)
    try:
        s.connect(path)
        s.sendall(protocol.HEADER.pack(len(payload)) + payload)
        return protocol.read_frame(s, protocol.MAX_RESPONSE, __import__("time").monotonic() + 20)
    finally:
        s.close()


def test_the_daemon_answers_deep_nesting_and_refuses_a_negative_limit(daemon_factory):
    d = daemon_factory().start()
    got = _raw(d.socket, b"[" * 200_000)
    assert got["ok"] is False and got["error"]["code"] == "bad_request", got
    deep_args = b'{"op": "status", "args": {"x": ' + b"[" * 200_000 + b"]" * 200_000 + b"}}"
    got = _raw(d.socket, deep_args)
    assert got["ok"] is False and "too deeply" in got["error"]["message"], got
    for limit in (-1, 0, "9", True):
        got = _raw(d.socket, protocol.dumps({"op": "alerts", "args": {"limit": limit}}).encode())
        assert got["ok"] is False and got["error"]["code"] == "bad_request", (limit, got)
        assert "limit" in got["error"]["message"]
    got = _raw(d.socket, protocol.dumps({"op": "alerts", "args": {"limit": 10**12}}).encode())
    assert got["ok"] is True   # clamped to 10,000
    assert d.ctl("status").returncode == 0
