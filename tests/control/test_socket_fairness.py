"""Idle connections cannot keep a real request out of the control socket.

Connections that send no complete request are closed after the read timeout; one user holds at
most `max_per_user` slots, so a slot is left for everyone else; and a user at its cap (or a full
socket) makes the oldest idle connection give way instead of answering `busy` to a real request.
"""

from __future__ import annotations

import os
import socket
import subprocess

import pytest

from healerd.control.client import call
from healerd.control.server import ControlServer
from tests.support.control_kit import ExchangeLog, as_nobody, handler, nobodys_socket_dir, wait_until

IDLE = 600


def open_idle(path: str, n: int = IDLE) -> list[socket.socket]:
    """`n` connections that say nothing (the server may close some of them)."""
    socks = []
    for _ in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        socks.append(s)
    return socks


def test_defaults_leave_an_eighth_of_the_slots_to_other_users(tmp_path):
    srv = ControlServer(str(tmp_path / "d.sock"), handler)
    assert (srv.max_connections, srv.max_per_user, srv.read_timeout) == (512, 448, 5.0)
    assert ControlServer(str(tmp_path / "e.sock"), handler, max_connections=8).max_per_user == 7
    assert ControlServer(str(tmp_path / "f.sock"), handler, max_connections=1).max_per_user == 1


def test_600_idle_connections_from_one_user_do_not_keep_out_its_next_request(tmp_path, monkeypatch):
    path = str(tmp_path / "c.sock")
    with ControlServer(path, handler, read_timeout=600) as srv:   # no idle connection reaped meanwhile
        idle = open_idle(path)
        try:
            wait_until(lambda: srv.open_connections == srv.max_per_user, limit=30)
            log = ExchangeLog(monkeypatch)
            assert call(path, "ping", {}, timeout=10)["version"] == "test"
            # Served beside them: never `busy` (a retry on a momentarily full listen queue is the
            # client's ordinary behaviour while the server works through the flood).
            assert "busy" not in log.outcomes and log.outcomes[-1] == "ok", log.outcomes
            assert srv.open_connections <= srv.max_per_user
        finally:
            for s in idle:
                s.close()
        wait_until(lambda: srv.open_connections == 0, limit=30)


def test_idle_connections_are_closed_after_the_read_timeout(tmp_path):
    path = str(tmp_path / "t.sock")
    with ControlServer(path, handler, read_timeout=0.5) as srv:
        idle = open_idle(path, 50)
        try:
            wait_until(lambda: srv.open_connections == 50)
            wait_until(lambda: srv.open_connections == 0, limit=30)
            for s in idle:   # each was answered `timeout`, then closed
                s.settimeout(10)
                data = b""
                while chunk := s.recv(4096):
                    data += chunk
                assert b'"timeout"' in data
        finally:
            for s in idle:
                s.close()


IDLE_CLIENT = r"""
import socket, sys
socks = []
for _ in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    socks.append(s)
print("connected", flush=True)
sys.stdin.read()   # hold them until the test closes stdin
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a client as another user")
def test_another_users_idle_flood_leaves_a_slot_for_everyone_else(monkeypatch):
    with nobodys_socket_dir() as (exe, d):
        path = os.path.join(d, "g.sock")
        with ControlServer(path, handler, mode=0o660, group=65534, read_timeout=600,
                           max_connections=64, max_per_user=48) as srv:
            flood = subprocess.Popen([exe, "-I", "-c", IDLE_CLIENT, path, "200"], cwd=d,
                                     preexec_fn=lambda: as_nobody(65534), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
            try:
                assert flood.stdout.readline().strip() == "connected"
                wait_until(lambda: srv.open_connections == 48, limit=30)   # nobody's cap, not the whole socket
                log = ExchangeLog(monkeypatch)
                assert call(path, "echo", {}, timeout=10)["peer_uid"] == 0
                assert "busy" not in log.outcomes and log.outcomes[-1] == "ok", log.outcomes
                # Fill the rest with root's own idle connections: the socket is full, and the user
                # holding the most (nobody) gives way to a newcomer, not root's idle ones.
                wait_until(lambda: srv.open_connections == 48)   # the echo's slot given back
                mine = open_idle(path, 64 - 48)
                wait_until(lambda: srv.open_connections == 64, limit=30)
                del log.outcomes[:]
                assert call(path, "echo", {}, timeout=10)["peer_uid"] == 0
                assert "busy" not in log.outcomes and log.outcomes[-1] == "ok", log.outcomes
                for s in mine:   # root's own idle connections were left alone: nothing answered, none closed
                    s.setblocking(False)
                    with pytest.raises(BlockingIOError):
                        s.recv(1)
                for s in mine:
                    s.close()
            finally:
                flood.stdin.close()
                flood.wait(timeout=30)


def test_the_daemon_answers_a_real_ping_beside_600_idle_connections(daemon_factory):
    d = daemon_factory().start()
    idle = open_idle(d.socket)
    try:
        # Past the read timeout's reach (5 s): the ping is served beside them, not after them.
        r = d.ctl("--timeout", "3", "ping")
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("healerd ")
    finally:
        for s in idle:
            s.close()
    assert d.ctl("ping").returncode == 0
    assert d.proc.poll() is None
