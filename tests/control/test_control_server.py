"""The control socket: a real ControlServer on a Unix socket, hostile and ordinary clients."""

from __future__ import annotations

import grp
import json
import os
import random
import resource
import socket
import stat
import struct
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from healerd.control import protocol
from healerd.control.client import (
    DaemonUnreachable,
    call,
    client_socket_path,
    default_socket_path,
    default_state_dir,
)
from healerd.control.protocol import ControlError
from healerd.control.server import ControlServer, ControlServerError, PeerCred, peer_allowed
from tests.support.control_kit import (
    ENTERED,
    RELEASE,
    WAITING,
    ExchangeLog,
    as_nobody,
    handler,
    nobodys_socket_dir,
    wait_until,
)


def raw_exchange(path, data: bytes, timeout=10.0):
    """Send raw bytes, then read one framed answer (or None if the server just closed)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(timeout)
        s.connect(path)
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        try:
            return protocol.read_frame(s, protocol.MAX_RESPONSE, time.monotonic() + timeout)
        except EOFError:
            return None
    finally:
        s.close()


def frame(payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + payload


def assert_healthy(path):
    assert call(path, "ping", {}, timeout=10)["version"] == "test"


@pytest.fixture
def sock_path(tmp_path):
    return str(tmp_path / "healerd.sock")


@pytest.fixture
def server(sock_path):
    srv = ControlServer(sock_path, handler, read_timeout=30.0)
    srv.start()
    yield srv
    RELEASE.set()
    srv.stop()
    RELEASE.clear()


def test_ping_and_echo(server, sock_path):
    assert_healthy(sock_path)
    r = call(sock_path, "echo", {"a": [1, "ü"]}, timeout=10)
    assert r == {"args": {"a": [1, "ü"]}, "peer_uid": os.getuid()}


def test_socket_mode_and_stop_removes_it(tmp_path):
    path = str(tmp_path / "s.sock")
    srv = ControlServer(path, handler, mode=0o660)
    srv.start()
    st = os.stat(path)
    assert stat.S_ISSOCK(st.st_mode)
    assert stat.S_IMODE(st.st_mode) == 0o660
    assert not os.path.exists(path + ".new")
    srv.stop()
    assert not os.path.exists(path)


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's group to another group needs root")
def test_socket_group(tmp_path):
    try:
        gid = grp.getgrnam("nogroup").gr_gid
        name = "nogroup"
    except KeyError:
        pytest.skip("no 'nogroup' group here")
    path = str(tmp_path / "g.sock")
    with ControlServer(path, handler, group=name):
        assert os.stat(path).st_gid == gid
        assert_healthy(path)


def test_unknown_group_is_a_clear_error(tmp_path):
    with pytest.raises(ControlServerError, match="unknown group"):
        ControlServer(str(tmp_path / "x.sock"), handler, group="no-such-group-healerd")


def test_garbage_requests_get_errors_and_server_continues(server, sock_path):
    # Not UTF-8, not JSON, not an object, no op, bad args, empty frame.
    cases = [
        (frame(b"\xff\xfe\xfd"), "bad_request"),
        (frame(b"{not json"), "bad_request"),
        (frame(b"[1, 2]"), "bad_request"),
        (frame(b'{"args": {}}'), "bad_request"),
        (frame(b'{"op": "ping", "args": [1]}'), "bad_request"),
        (struct.pack(">I", 0), "bad_request"),
        (frame(b'{"op": "ping"}') + b"trailing", "bad_request"),
    ]
    for data, code in cases:
        r = raw_exchange(sock_path, data)
        assert r["ok"] is False and r["error"]["code"] == code, (data, r)
        assert set(r["error"]) == {"code", "message", "details"}
        assert_healthy(sock_path)
    # Random bytes: whatever the first four bytes announce, the answer is an error.
    rng = random.Random(1234)
    for _ in range(20):
        data = bytes(rng.getrandbits(8) for _ in range(rng.randint(5, 5000)))
        r = raw_exchange(sock_path, data)
        assert r is not None and r["ok"] is False
        assert r["error"]["code"] in ("too_large", "bad_request")
    assert_healthy(sock_path)


def test_huge_request_is_refused_without_reading_it(server, sock_path):
    total = 100 * 1024 * 1024
    chunk = b"x" * (1024 * 1024)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(sock_path)
    sent = 0
    try:
        s.sendall(struct.pack(">I", total))
        while sent < total:
            s.sendall(chunk)
            sent += len(chunk)
    except (BrokenPipeError, ConnectionResetError):
        pass
    r = protocol.read_frame(s, protocol.MAX_RESPONSE, time.monotonic() + 10)
    s.close()
    assert r["ok"] is False and r["error"]["code"] == "too_large"
    assert r["error"]["details"]["limit"] == protocol.MAX_REQUEST
    assert sent < total  # the server closed long before the whole request was sent
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mib < 50
    assert_healthy(sock_path)


def test_request_over_the_cap_with_a_lying_header(server, sock_path):
    # The header announces exactly the cap, then the client keeps sending well past it.
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(sock_path)
    sent = 0
    try:
        s.sendall(struct.pack(">I", protocol.MAX_REQUEST))
        for _ in range(100):
            s.sendall(b"y" * 1024 * 1024)
            sent += 1
    except (BrokenPipeError, ConnectionResetError):
        pass
    r = protocol.read_frame(s, protocol.MAX_RESPONSE, time.monotonic() + 10)
    s.close()
    assert r["ok"] is False and r["error"]["code"] == "bad_request"
    assert sent < 100
    assert_healthy(sock_path)


def test_silent_client_does_not_delay_others(server, sock_path):
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.connect(sock_path)
    partial = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    partial.connect(sock_path)
    partial.sendall(struct.pack(">I", 100) + b'{"op": "pi')  # half a request, then nothing
    try:
        wait_until(lambda: server.open_connections >= 2)
        for _ in range(5):
            assert_healthy(sock_path)  # read_timeout is 30 s: answered while both still hang
        for hanging in (silent, partial):  # still open, nothing answered yet
            hanging.setblocking(False)
            with pytest.raises(BlockingIOError):
                hanging.recv(1)
    finally:
        silent.close()
        partial.close()
    wait_until(lambda: server.open_connections == 0)
    assert_healthy(sock_path)


def test_silent_client_gets_timeout_and_is_closed(tmp_path):
    path = str(tmp_path / "t.sock")
    with ControlServer(path, handler, read_timeout=0.3) as srv:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        r = protocol.read_frame(s, protocol.MAX_RESPONSE, time.monotonic() + 10)
        assert r["error"]["code"] == "timeout"
        assert s.recv(10) == b""  # closed by the server
        s.close()
        wait_until(lambda: srv.open_connections == 0)
        assert_healthy(path)


def test_slow_handler_does_not_block_other_requests(server, sock_path):
    with ThreadPoolExecutor(1) as ex:
        fut = ex.submit(call, sock_path, "wait", {}, 30)
        wait_until(lambda: server.open_connections == 1)
        assert_healthy(sock_path)
        assert not fut.done()
        RELEASE.set()
        assert fut.result(timeout=10) == "released"


def test_stop_does_not_wait_forever_for_a_stuck_handler(tmp_path):
    path = str(tmp_path / "st.sock")
    srv = ControlServer(path, handler)
    srv.start()
    try:
        with ThreadPoolExecutor(1) as ex:
            ENTERED.clear()
            fut = ex.submit(call, path, "wait", {}, 30)
            wait_until(ENTERED.is_set)  # a worker runs it (a request still queued at stop is refused)
            srv.stop(timeout=0.2)
            assert not os.path.exists(path)
            assert not fut.done()
            RELEASE.set()  # the running request still gets its answer
            assert fut.result(timeout=10) == "released"
    finally:
        RELEASE.clear()
    with ControlServer(path, handler):  # the path is free for the next daemon
        assert_healthy(path)


def test_200_concurrent_calls_all_answered(tmp_path):
    path = str(tmp_path / "c.sock")
    barrier = threading.Barrier(200)

    def one(i):
        barrier.wait(10)
        return call(path, "echo", {"i": i}, timeout=30)

    with ControlServer(path, handler):  # the default limits take a burst of 200
        with ThreadPoolExecutor(200) as ex:
            results = list(ex.map(one, range(200)))
        assert [r["args"]["i"] for r in results] == list(range(200))
        assert_healthy(path)


def test_too_many_connections_get_busy(tmp_path, monkeypatch):
    path = str(tmp_path / "b.sock")
    with ControlServer(path, handler, max_connections=2, max_per_user=2, read_timeout=30) as srv:
        # Both slots serve a request (an idle connection would give way to a newcomer).
        hogs = ThreadPoolExecutor(2)
        WAITING.clear()
        waits = [hogs.submit(call, path, "wait", {}, 60) for _ in range(2)]
        wait_until(lambda: len(WAITING) == 2 and srv.open_connections == 2)
        # The server answers `busy` at once, without reading the request.
        r = raw_exchange(path, frame(b'{"op": "ping", "args": {}}'))
        assert r["ok"] is False and r["error"]["code"] == "busy"
        # The client tries again until its deadline, then reports `busy`... (a deadline long enough
        # for the last try to be answered on a busy machine too: one that runs out mid-exchange is
        # "no answer", not `busy`)
        with pytest.raises(ControlError) as err:
            call(path, "ping", {}, timeout=3.0)
        assert err.value.code == "busy"
        # ...and gets its answer when a connection frees up meanwhile.
        log = ExchangeLog(monkeypatch)
        with ThreadPoolExecutor(1) as ex:
            fut = ex.submit(call, path, "ping", {}, 30)
            wait_until(lambda: log.outcomes.count("busy") >= 2)  # answered `busy`, and tried again
            RELEASE.set()
            assert fut.result(timeout=30)["version"] == "test"
        assert [w.result(timeout=30) for w in waits] == ["released", "released"]
        hogs.shutdown()
        RELEASE.clear()
        assert log.outcomes[-1] == "ok" and set(log.outcomes[:-1]) == {"busy"}
        wait_until(lambda: srv.open_connections == 0)
        assert_healthy(path)


def test_handler_errors(server, sock_path):
    with pytest.raises(ControlError) as err:
        call(sock_path, "boom", {}, timeout=10)
    assert err.value.code == "internal_error"
    msg = err.value.message
    assert "\n" not in msg and "kaboom" in msg and "RuntimeError" in msg
    assert "hunter2" not in msg and "abc123" not in msg
    assert_healthy(sock_path)

    with pytest.raises(ControlError) as err:
        call(sock_path, "missing", {}, timeout=10)
    assert (err.value.code, err.value.details) == ("not_found", {"name": "x"})
    assert_healthy(sock_path)

    with pytest.raises(ControlError) as err:
        call(sock_path, "notjson", {}, timeout=10)
    assert err.value.code == "internal_error"
    assert_healthy(sock_path)


def test_stale_socket_is_replaced(tmp_path):
    path = str(tmp_path / "stale.sock")
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(path)  # a socket file nobody listens on, as a crashed daemon leaves it
    dead.close()
    assert stat.S_ISSOCK(os.lstat(path).st_mode)
    with ControlServer(path, handler):
        assert_healthy(path)


def test_live_socket_is_not_stolen(server, sock_path):
    other = ControlServer(sock_path, handler)
    with pytest.raises(ControlServerError, match=f"another healerd is listening on {sock_path}"):
        other.start()
    assert_healthy(sock_path)


def test_non_socket_file_is_not_replaced(tmp_path):
    path = tmp_path / "file.sock"
    path.write_text("precious")
    with pytest.raises(ControlServerError, match="not a socket"):
        ControlServer(str(path), handler).start()
    assert path.read_text() == "precious"


def test_custom_policy_refuses_peer(tmp_path):
    path = str(tmp_path / "p.sock")
    seen = []

    def allow(peer):
        seen.append(peer)
        return False

    with ControlServer(path, handler, allow=allow):
        with pytest.raises(ControlError) as err:
            call(path, "ping", {}, timeout=10)
        assert err.value.code == "forbidden"
        assert seen[0] == PeerCred(os.getpid(), os.getuid(), os.getgid())


def test_default_policy(tmp_path):
    groups = {1000: {1000, 50}, 1001: {1001}}
    of = lambda uid, gid: groups.get(uid, {gid})  # noqa: E731
    allowed = lambda uid, gid, group: peer_allowed(  # noqa: E731
        PeerCred(1, uid, gid), own_uid=999, group_gid=group, groups_of=of)
    assert allowed(0, 0, None)             # root
    assert allowed(999, 999, None)         # the daemon's own user
    assert not allowed(1000, 1000, None)   # no group configured
    assert allowed(1000, 1000, 50)         # supplementary member of the socket group
    assert allowed(1001, 50, 50)           # primary group is the socket group
    assert not allowed(1001, 1001, 50)     # not a member
    # Without socket_group the server serves root and its own user only, not its primary
    # group: on many systems every local user has that group (`users`).
    other_uid = os.geteuid() + 4242
    srv = ControlServer(str(tmp_path / "x.sock"), handler)
    assert srv._allow(PeerCred(1, os.geteuid(), os.getegid()))
    assert srv._allow(PeerCred(1, 0, 0))
    assert not srv._allow(PeerCred(1, other_uid, os.getegid()))
    assert ControlServer(str(tmp_path / "y.sock"), handler, group=os.getegid())._allow(
        PeerCred(1, other_uid, os.getegid()))


NOBODY_CLIENT = r"""
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(sys.argv[1])
body = json.dumps({"op": "ping", "args": {}}).encode()
try:
    s.sendall(struct.pack(">I", len(body)) + body)
except (BrokenPipeError, ConnectionResetError):
    pass
def exact(n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise SystemExit("closed early")
        buf += chunk
    return buf
n = struct.unpack(">I", exact(4))[0]
print(exact(n).decode())
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a client as another user")
def test_other_user_is_forbidden():
    with nobodys_socket_dir() as (exe, d):
        path = os.path.join(d, "n.sock")
        with ControlServer(path, handler, mode=0o666):
            out = subprocess.run(
                [exe, "-I", "-c", NOBODY_CLIENT, path],
                cwd=d, preexec_fn=as_nobody, capture_output=True, text=True, timeout=30,
            )
            assert out.returncode == 0, out.stderr
            r = json.loads(out.stdout)
            assert r["ok"] is False and r["error"]["code"] == "forbidden"
            assert_healthy(path)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a client as another user")
def test_sharing_the_daemons_primary_group_is_not_enough():
    """A user whose primary group is the daemon's is served only when that group is socket_group."""
    with nobodys_socket_dir() as (exe, d):
        path = os.path.join(d, "g.sock")

        def ask() -> dict:
            out = subprocess.run(
                [exe, "-I", "-c", NOBODY_CLIENT, path],
                cwd=d, preexec_fn=lambda: as_nobody(os.getegid()), capture_output=True, text=True, timeout=30,
            )
            assert out.returncode == 0, out.stderr
            return json.loads(out.stdout)

        with ControlServer(path, handler, mode=0o660):  # the group can open the socket...
            r = ask()
            assert r["ok"] is False and r["error"]["code"] == "forbidden"  # ...but is not served
            assert_healthy(path)
        with ControlServer(path, handler, mode=0o660, group=os.getegid()):
            assert ask()["ok"] is True


# -- the client -------------------------------------------------------------------------


def test_client_missing_socket(tmp_path):
    path = str(tmp_path / "nope.sock")
    with pytest.raises(DaemonUnreachable) as err:
        call(path, "ping", {}, timeout=5)
    assert "socket missing" in str(err.value) and path in str(err.value)


def test_client_connection_refused(tmp_path):
    path = str(tmp_path / "dead.sock")
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(path)
    dead.close()
    with pytest.raises(DaemonUnreachable) as err:
        call(path, "ping", {}, timeout=5)
    assert "connection refused" in str(err.value) and path in str(err.value)


def test_client_retries_a_full_listen_queue(tmp_path, monkeypatch):
    path = str(tmp_path / "q.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(0)  # room for one pending connection
    listener.settimeout(10)
    filler = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    filler.connect(path)
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.setblocking(False)
    try:
        with pytest.raises(BlockingIOError):  # EAGAIN: the queue is full
            probe.connect(path)
        # The client tries again until its deadline, then says the queue is full...
        with pytest.raises(DaemonUnreachable, match="connection queue is full"):
            call(path, "ping", {}, timeout=0.3)
        # ...and gets through once the queue has room.
        log = ExchangeLog(monkeypatch)
        with ThreadPoolExecutor(1) as ex:
            fut = ex.submit(call, path, "ping", {}, 30)
            wait_until(lambda: log.outcomes.count("_QueueFull") >= 2)  # met the full queue, and tried again
            listener.accept()[0].close()  # the filler's connection
            conn, _ = listener.accept()
            with conn:
                conn.settimeout(10)
                assert protocol.read_frame(conn, protocol.MAX_REQUEST, time.monotonic() + 10)["op"] == "ping"
                conn.sendall(protocol.encode(protocol.ok({"version": "test"})))
            assert fut.result(timeout=30) == {"version": "test"}
        assert log.outcomes[-1] == "ok" and set(log.outcomes[:-1]) == {"_QueueFull"}
    finally:
        for s in (probe, filler, listener):
            s.close()


def test_client_no_answer(tmp_path):
    path = str(tmp_path / "mute.sock")
    mute = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    mute.bind(path)
    mute.listen(1)  # accepts into the backlog, never answers
    try:
        with pytest.raises(DaemonUnreachable) as err:
            call(path, "ping", {}, timeout=0.3)
        assert "no answer" in str(err.value)
    finally:
        mute.close()


def test_default_paths(monkeypatch, tmp_path):
    for var in ("HEALERD_SOCKET", "RUNTIME_DIRECTORY", "STATE_DIRECTORY", "HEALERD_STATE_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    assert default_state_dir() == str(tmp_path / "healerd-state")
    assert default_socket_path() == str(tmp_path / "healerd-state" / "healerd.sock")
    assert default_socket_path(state_dir="/srv/st") == "/srv/st/healerd.sock"
    monkeypatch.setenv("HEALERD_STATE_DIR", "/var/lib/h")
    assert default_state_dir() == "/var/lib/h"
    monkeypatch.setenv("STATE_DIRECTORY", "/var/lib/healerd:/var/lib/other")
    assert default_state_dir() == "/var/lib/healerd"
    assert default_state_dir("/explicit") == "/explicit"
    assert default_socket_path() == "/var/lib/healerd/healerd.sock"
    monkeypatch.setenv("RUNTIME_DIRECTORY", "/run/healerd")
    assert default_socket_path() == "/run/healerd/healerd.sock"
    monkeypatch.setenv("HEALERD_SOCKET", "/tmp/x.sock")
    assert default_socket_path() == "/tmp/x.sock"
    assert default_socket_path("/tmp/y.sock") == "/tmp/y.sock"
    assert client_socket_path("/tmp/z.sock") == "/tmp/z.sock"


def test_a_retry_after_busy_cut_off_by_the_deadline_reports_busy(tmp_path):
    """The first try is answered `busy`; the retry is accepted but never answered before the
    deadline. The daemon was full: the caller is told `busy`, not "no answer"."""
    path = str(tmp_path / "cut.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(8)
    held: list[socket.socket] = []

    def serve():
        first, _ = srv.accept()
        first.sendall(protocol.encode({"ok": False, "error": {"code": "busy", "message": "full"}}))
        first.close()
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            held.append(conn)   # accepted, read never, answered never

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        with pytest.raises(ControlError) as err:
            call(path, "ping", {}, timeout=0.5)
        assert err.value.code == "busy"
    finally:
        srv.close()
        for c in held:
            c.close()
