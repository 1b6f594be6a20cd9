"""`stats` over a window that is not a finite positive number of seconds is a bad request (one
line), never an internal error, and the daemon answers the next request as usual."""

from __future__ import annotations

import json
import socket

import pytest

from healerd.control.protocol import HEADER

BAD = [b"1e400", b"-1e400", b"Infinity", b"-Infinity", b"NaN", b"-1", b"0", b"-0.0", b"1" + b"0" * 400,
       b'"7d"', b'"3600"', b"true", b"null", b"[3600]", b"{}"]


def raw_call(path: str, payload: bytes) -> dict:
    """One request frame with this exact JSON text (json.dumps could not write 1e400), its answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(30)
        s.connect(path)
        s.sendall(HEADER.pack(len(payload)) + payload)
        data = b""
        while len(data) < HEADER.size or len(data) < HEADER.size + HEADER.unpack(data[:HEADER.size])[0]:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return json.loads(data[HEADER.size:])


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    from tests.support.daemon import DaemonProc

    d = DaemonProc(tmp_path_factory.mktemp("stats-window")).start()
    yield d
    d.stop()


@pytest.mark.parametrize("window", BAD, ids=lambda w: w.decode()[:12])
def test_a_window_that_is_not_a_finite_positive_number_is_a_bad_request(daemon, window):
    answer = raw_call(daemon.socket, b'{"op": "stats", "args": {"window_s": ' + window + b"}}")
    assert answer["ok"] is False, answer
    assert answer["error"]["code"] == "bad_request", answer
    assert "finite number of seconds" in answer["error"]["message"]
    ok = raw_call(daemon.socket, b'{"op": "stats", "args": {"window_s": 3600}}')
    assert ok["ok"] is True and ok["result"]["window_s"] == 3600.0


def test_healerctl_refuses_an_infinite_window_itself(daemon):
    r = daemon.ctl("stats", "--window", "9" * 400 + "d")
    assert r.returncode == 2 and "finite" in r.stderr, r.stderr
    r = daemon.ctl("stats", "--window", "1e300s")
    assert r.returncode == 2, r.stderr
    assert daemon.ctl("stats", "--window", "2h").returncode == 0
