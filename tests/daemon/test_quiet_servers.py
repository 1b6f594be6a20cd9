"""A client that goes away mid-answer is no error: neither the test sites nor the demo's site
print a traceback for it (the daemon cuts pages at their size cap or deadline on purpose, and a
server thread still writing when the session ends printed one after pytest's summary)."""

from __future__ import annotations

import socket
import struct
import threading
import time

import pytest

BIG = "<html><body>" + "<p>x</p>" * 2_000_000 + "</body></html>"   # ~16 MB: more than any socket buffer


def walk_away(port: int, path: str) -> None:
    """GET `path`, read a little, then reset the connection (SO_LINGER 0: an RST, not a FIN)."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    s.recv(4096)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def wait_handlers_done(before: set[threading.Thread]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if not [t for t in threading.enumerate() if t not in before and t.is_alive()]:
            return
        time.sleep(0.05)
    pytest.fail("the server's handler thread never finished")


def test_the_test_site_is_quiet_when_a_client_goes_away(site, capsys):
    site.page("/big", BIG)
    before = set(threading.enumerate())
    walk_away(site.port, "/big")
    wait_handlers_done(before)
    err = capsys.readouterr().err
    assert "Traceback" not in err and "Exception occurred" not in err, err


def test_the_demo_site_is_quiet_when_a_client_goes_away(monkeypatch, capsys):
    from healerd.demo import site as demo_site

    monkeypatch.setitem(demo_site.PAGES, "/big", lambda layout: BIG)
    s = demo_site.DemoSite(0).start()
    try:
        before = set(threading.enumerate())
        walk_away(s.port, "/big")
        wait_handlers_done(before)
    finally:
        s.stop()
    err = capsys.readouterr().err
    assert "Traceback" not in err and "Exception occurred" not in err, err
