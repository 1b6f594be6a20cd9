"""Know who listens before sending a secret: the healer's connections, against real sockets.

The impostor is a real listener made by a child process that became `nobody` before creating
its socket (the owner the kernel records is the creating process's). It records every
connection it accepts and every byte it reads, so each test can say whether the token, or
anything at all, reached it. The tests run as root, the daemon's user here.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import socketserver
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler

import pytest

from healerd.adapters import peer
from healerd.adapters.external import CodeHealerClient, HealerConfig
from healerd.adapters.openai_backend import OpenAIHealerClient
from healerd.config import ConfigError, from_dict, load
from healerd.core.peers import (
    is_loopback_host,
    listeners_for,
    normal_ip,
    parse_proc_net_tcp,
    plain_secret_refusal,
    request_url,
    split_unix_url,
)
from tests.support.daemon import db_rows
from tests.support.diagnosis_context import FIXED, HEALER_TOKEN, make_ctx
from tests.support.external_heal import FIXED as E2E_FIXED
from tests.support.external_heal import add_and_break, healed_version, healer_calls, healer_config
from tests.support.healer_server import HealerServer, healed

NOBODY = 65534

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/net/tcp"), reason="needs Linux's /proc/self/net/tcp")

REFUSE_ANSWER = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


def _serve_as_nobody(w: int, unix_path: str | None, host: str) -> None:
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)          # before the socket exists: the kernel records its creator's uid
    if unix_path:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(unix_path)
        port = 0
    else:
        s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        if host == "::":   # both families: an IPv4 client is seen at ::ffff:127.0.0.1 in tcp6
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        s.bind((host, 0))
        port = s.getsockname()[1]
    s.listen(16)
    os.write(w, f"ready {port}\n".encode())
    while True:
        c, _ = s.accept()
        os.write(w, b"conn\n")
        c.settimeout(3)
        try:
            while True:
                data = c.recv(65536)
                if not data:
                    break
                os.write(w, b"data " + data.hex().encode() + b"\n")
                c.sendall(REFUSE_ANSWER)
        except OSError:
            pass
        c.close()


class Impostor:
    """A listener owned by nobody (TCP on `host`, or a unix socket): what reached it."""

    def __init__(self, unix_path: str | None = None, host: str = "127.0.0.1"):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:   # the child: becomes nobody, listens, reports; never returns into pytest
            try:
                os.close(r)
                _serve_as_nobody(w, unix_path, host)
            finally:
                os._exit(0)
        os.close(w)
        self.pid = pid
        self.events: list[bytes] = []
        self._r = os.fdopen(r, "rb")
        first = self._r.readline()
        assert first.startswith(b"ready "), first
        self.port = int(first.split()[1])
        self.unix_path = unix_path
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self._r:
            self.events.append(line.strip())

    @property
    def connections(self) -> int:
        return sum(1 for e in self.events if e == b"conn")

    @property
    def received(self) -> bytes:
        return b"".join(bytes.fromhex(e[5:].decode()) for e in self.events if e.startswith(b"data "))

    def settle(self) -> None:
        """Give the child a moment to report what it accepted (reading its pipe is asynchronous)."""
        time.sleep(0.3)

    def stop(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)


@pytest.fixture
def impostor():
    if os.geteuid() != 0:
        pytest.skip("needs root, to start a listener as nobody")
    made: list[Impostor] = []

    def make(unix_path: str | None = None, host: str = "127.0.0.1") -> Impostor:
        i = Impostor(unix_path, host)
        made.append(i)
        return i

    yield make
    for i in made:
        i.stop()


@pytest.fixture
def shared_dir():
    """A directory in /tmp that nobody may create a socket in (pytest's tmp_path is root's only), short
    enough for a unix socket path."""
    d = tempfile.mkdtemp(prefix="hp-", dir="/tmp")
    os.chmod(d, 0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


class UnixHealer:
    """A code healer served over a unix socket by this (root) process."""

    def __init__(self, path: str, answer):
        self.path = path
        self.requests: list[tuple[str, dict, bytes]] = []
        srv = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                srv.requests.append((self.path, dict(self.headers), raw))
                status, body = answer(json.loads(raw))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def address_string(self):
                return "unix"

            def log_message(self, *args):
                pass

        self.server = socketserver.ThreadingUnixStreamServer(path, Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def heal_files(req) -> tuple[int, bytes]:
    return 200, json.dumps({"status": "healed", "modified_files": {"blueprint.json": json.dumps(FIXED)},
                            "changes_summary": "classes renamed"}).encode()


# ------------------------------------------------------------------------- the kernel's table


def test_the_tcp_table_is_read_as_the_kernel_writes_it():
    text = ("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
            "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  65534        0 4242 1 0\n"
            "   1: 0100007F:DCD4 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 4243 1 0\n"
            "   2: garbage\n")
    if socket.htonl(1) == 1:   # a big-endian kernel prints the words the other way round
        pytest.skip("the sample is a little-endian table")
    listen, conn = parse_proc_net_tcp(text, v6=False)
    assert (str(listen.local[0]), listen.local[1], listen.state, listen.uid, listen.inode) == \
        ("127.0.0.1", 8080, 0x0A, NOBODY, 4242)
    assert (str(conn.remote[0]), conn.remote[1], conn.uid) == ("127.0.0.1", 8080, 0)
    assert parse_proc_net_tcp(text, v6=False, local_port=8080) == [listen]      # rows of one local port only
    assert parse_proc_net_tcp(text, v6=False, local_port=0xDCD4) == [conn]
    v6 = ("  sl  local_address                         remote_address                        st tx_queue ...\n"
          "   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 "
          "00:00000000 00000000  1000        0 77 1 0\n"
          "   1: 0000000000000000FFFF00000100007F:1F91 00000000000000000000000000000000:0000 0A 00000000:00000000 "
          "00:00000000 00000000  1001        0 78 1 0\n")
    one, mapped = parse_proc_net_tcp(v6, v6=True)
    assert (str(one.local[0]), one.local[1], one.uid) == ("::1", 8080, 1000)
    assert (str(mapped.local[0]), mapped.local[1]) == ("127.0.0.1", 8081)   # ::ffff:127.0.0.1 read as IPv4


def test_a_listeners_owner_is_read_from_the_live_table(impostor):
    ours = socket.socket()
    ours.bind(("127.0.0.1", 0))
    ours.listen(1)
    try:
        theirs = impostor()
        table = peer.read_tcp_table()
        assert [e.uid for e in listeners_for(table, normal_ip("127.0.0.1"), ours.getsockname()[1])] == [0]
        assert [e.uid for e in listeners_for(table, normal_ip("127.0.0.1"), theirs.port)] == [NOBODY]
        assert listeners_for(table, normal_ip("::1"), theirs.port) == []   # bound to 127.0.0.1 only
        with pytest.raises(peer.PeerRefused, match=r"nobody \(uid 65534\)"):
            peer.check_listeners("127.0.0.1", theirs.port, peer.allowed_uids())
        with pytest.raises(peer.PeerRefused, match=r"nobody \(uid 65534\)"):
            peer.check_listeners("localhost", theirs.port, peer.allowed_uids())
        peer.check_listeners("127.0.0.1", ours.getsockname()[1], peer.allowed_uids())
        peer.check_listeners("127.0.0.1", theirs.port, peer.allowed_uids("nobody"))
        peer.check_listeners("example.invalid", theirs.port, peer.allowed_uids())   # not loopback: not asked
    finally:
        ours.close()


def test_the_allowed_users():
    me = os.geteuid()
    assert peer.allowed_uids() == frozenset({0, me})
    assert peer.allowed_uids("nobody") == frozenset({0, me, NOBODY})
    assert peer.allowed_uids("65534") == peer.allowed_uids(NOBODY) == frozenset({0, me, NOBODY})
    assert peer.allowed_uids("no-such-user-here") == frozenset({0, me})   # config load refuses it first
    with pytest.raises(ValueError, match="no user named"):
        peer.resolve_user("no-such-user-here")


# ------------------------------------------------------------------------- the client


def test_an_impostor_on_the_healers_port_never_receives_the_token(impostor):
    imp = impostor()
    url = f"http://127.0.0.1:{imp.port}/api/heal"
    for client in (CodeHealerClient(HealerConfig(url=url, token=HEALER_TOKEN)),
                   OpenAIHealerClient(HealerConfig(url=url, token=HEALER_TOKEN, kind="openai", model="m"))):
        with client:
            res = client.heal_cycle(make_ctx(), 1, [])
        assert res.outcome == "untrusted" and not res.ok and res.http_status is None
        assert "nobody (uid 65534)" in res.reason and "nothing was sent" in res.reason
        assert "\n" not in res.reason and HEALER_TOKEN not in res.reason
    imp.settle()
    assert imp.connections == 0 and imp.received == b""


def test_an_impostor_that_binds_between_check_and_connect_gets_not_a_byte(impostor, monkeypatch):
    """The listener check before connecting is skipped, as if the impostor had bound the port just
    after it: the connected socket's other end is checked before the request is written."""
    imp = impostor()
    raw = socket.create_connection(("127.0.0.1", imp.port))
    try:
        with pytest.raises(peer.PeerRefused, match=r"nobody \(uid 65534\)"):
            peer.check_connected(raw, peer.allowed_uids())
    finally:
        raw.close()
    monkeypatch.setattr(peer, "check_listeners", lambda *a, **k: None)
    with CodeHealerClient(HealerConfig(url=f"http://127.0.0.1:{imp.port}/api/heal", token=HEALER_TOKEN)) as client:
        res = client.heal_cycle(make_ctx(), 1, [])
    assert res.outcome == "untrusted" and "nobody (uid 65534)" in res.reason
    imp.settle()
    assert imp.connections == 2        # the raw socket's, and the client's: closed before a byte
    assert imp.received == b""


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _has_ipv6_loopback(), reason="no IPv6 loopback here")
@pytest.mark.parametrize("skip_listener_check", [False, True], ids=["before-connect", "after-connect"])
def test_impostors_over_ipv6_and_dual_stack_are_refused_too(impostor, monkeypatch, skip_listener_check):
    """The tcp6 table is read right (its words, IPv4-mapped addresses): an impostor on ::1, and one on
    `::` that an IPv4 client reaches, are refused, by the listener check and by the connection check."""
    if skip_listener_check:
        monkeypatch.setattr(peer, "check_listeners", lambda *a, **k: None)
    on_v6, dual = impostor(host="::1"), impostor(host="::")
    for url in (f"http://[::1]:{on_v6.port}/api/heal", f"http://127.0.0.1:{dual.port}/api/heal",
                f"http://[::1]:{dual.port}/api/heal"):
        with CodeHealerClient(HealerConfig(url=url, token=HEALER_TOKEN)) as client:
            res = client.heal_cycle(make_ctx(), 1, [])
        assert res.outcome == "untrusted" and "nobody (uid 65534)" in res.reason, (url, res.reason)
    for imp in (on_v6, dual):
        imp.settle()
        assert imp.received == b""
    assert (on_v6.connections, dual.connections) == ((0, 0) if not skip_listener_check else (1, 2))


def test_allowed_user_lets_that_user_serve_the_healer(impostor):
    imp = impostor()
    for who in ("nobody", str(NOBODY)):
        cfg = HealerConfig(url=f"http://127.0.0.1:{imp.port}/api/heal", token=HEALER_TOKEN, allowed_user=who)
        with CodeHealerClient(cfg) as client:
            res = client.heal_cycle(make_ctx(), 1, [])
        assert res.outcome == "http_error" and res.http_status == 503, res.reason
    imp.settle()
    assert imp.connections == 2 and f"Bearer {HEALER_TOKEN}".encode() in imp.received


def test_a_healer_served_by_root_on_loopback_is_called():
    server = HealerServer(lambda req: heal_files(req))
    try:
        for url in (server.url, server.url.replace("127.0.0.1", "localhost")):
            with CodeHealerClient(HealerConfig(url=url, token=HEALER_TOKEN)) as client:
                res = client.heal_cycle(make_ctx(), 1, [])
            assert res.ok and res.outcome == "healed", res.reason
        assert [h["Authorization"] for h in server.headers] == [f"Bearer {HEALER_TOKEN}"] * 2
    finally:
        server.stop()


def test_a_unix_socket_healer_is_called_and_one_served_by_another_user_is_refused(impostor, shared_dir):
    path = os.path.join(shared_dir, "healer.sock")
    good = UnixHealer(path, heal_files)
    try:
        for url, expect_path in ((f"unix:{path}", "/"), (f"unix:{path}:/api/heal", "/api/heal")):
            with CodeHealerClient(HealerConfig(url=url, token=HEALER_TOKEN)) as client:
                res = client.heal_cycle(make_ctx(), 1, [])
            assert res.ok and res.outcome == "healed", res.reason
            assert good.requests[-1][0] == expect_path
            assert good.requests[-1][1]["Authorization"] == f"Bearer {HEALER_TOKEN}"
        with OpenAIHealerClient(HealerConfig(url=f"unix:{path}", kind="openai", model="m")) as client:
            client.heal_cycle(make_ctx(), 1, [])
        assert good.requests[-1][0] == "/v1/chat/completions"
    finally:
        good.stop()
    foreign = os.path.join(shared_dir, "foreign.sock")
    imp = impostor(unix_path=foreign)
    assert os.stat(foreign).st_uid == NOBODY
    with CodeHealerClient(HealerConfig(url=f"unix:{foreign}", token=HEALER_TOKEN)) as client:
        res = client.heal_cycle(make_ctx(), 1, [])
    assert res.outcome == "untrusted" and "nobody (uid 65534)" in res.reason and f"unix:{foreign}" in res.reason
    imp.settle()
    assert imp.received == b""
    with CodeHealerClient(HealerConfig(url=f"unix:{foreign}", allowed_user="nobody")) as client:
        res = client.heal_cycle(make_ctx(), 1, [])
    assert res.http_status == 503      # allowed: it was asked (and answered 503)


def test_a_token_never_goes_over_plain_http_to_another_host():
    assert plain_secret_refusal("http://healer.example/api", True)
    assert plain_secret_refusal("http://10.0.0.7:3000/api", True)
    for fine in ("https://healer.example/api", "http://127.0.0.2:3000/", "http://[::1]:3000/",
                 "http://localhost:3000/", "unix:/run/healer.sock"):
        assert plain_secret_refusal(fine, True) is None, fine
    assert plain_secret_refusal("http://healer.example/api", False) is None   # no token, nothing secret
    # At call time, before any connection (a config built in code, not loaded from a file).
    with CodeHealerClient(HealerConfig(url="http://healer.invalid/api", token=HEALER_TOKEN)) as client:
        res = client.heal_cycle(make_ctx(), 1, [])
    assert res.outcome == "untrusted" and "plain http" in res.reason and "nothing was sent" in res.reason


def test_urls_and_loopback_names():
    assert split_unix_url("unix:/run/h.sock") == ("/run/h.sock", "/")
    assert split_unix_url("unix:///run/h.sock") == ("/run/h.sock", "/")
    assert split_unix_url("unix:/run/h.sock:/api/heal") == ("/run/h.sock", "/api/heal")
    assert split_unix_url("http://x/") is None
    with pytest.raises(ValueError, match="absolute"):
        split_unix_url("unix:run/h.sock")
    assert request_url("unix:/run/h.sock:/api/heal") == "http://localhost/api/heal"
    assert request_url("https://h/x") == "https://h/x"
    for host in ("127.0.0.1", "127.9.8.7", "::1", "[::1]", "localhost", "LOCALHOST.", "::ffff:127.0.0.1"):
        assert is_loopback_host(host), host
    for host in ("10.0.0.1", "example.com", "localhost.example.com", "", None, "::ffff:10.0.0.1", "0.0.0.0"):
        assert not is_loopback_host(host), host


def test_the_config_refuses_what_would_leak(monkeypatch, tmp_path):
    monkeypatch.delenv("CODE_HEALER_URL", raising=False)
    monkeypatch.delenv("CODE_HEALER_TOKEN", raising=False)

    def refused(healer: dict) -> str:
        with pytest.raises(ConfigError) as exc:
            from_dict({"healer": healer})
        assert "\n" not in str(exc.value)
        return str(exc.value)

    assert "plain http" in refused({"url": "http://healer.example/api", "token": "t0ken-xyz"})
    assert "t0ken-xyz" not in refused({"url": "http://healer.example/api", "token": "t0ken-xyz"})
    assert "absolute socket path" in refused({"url": "unix:healer.sock"})
    assert "expected an http:// or https:// URL, or unix:/path/to.sock" in refused({"url": "ftp://h/x"})
    assert "no user named" in refused({"allowed_user": "no-such-user-here"})
    assert "[healer] allowed_user" in refused({"allowed_user": ["x"]})
    assert from_dict({"healer": {"allowed_user": 65534}}).healer.allowed_user == "65534"
    assert from_dict({"healer": {"allowed_user": "nobody"}}).healer.allowed_user == "nobody"
    ok = from_dict({"healer": {"url": "unix:/run/healer.sock", "token": "t0ken-xyz"}})
    assert ok.healer.url == "unix:/run/healer.sock"
    from_dict({"healer": {"url": "http://healer.example/api"}})      # no token: nothing secret to leak
    from_dict({"healer": {"url": "http://127.0.0.1:3000/api", "token": "t0ken-xyz"}})
    # The environment's URL and token meet the same rule.
    monkeypatch.setenv("CODE_HEALER_URL", "http://healer.example/api")
    monkeypatch.setenv("CODE_HEALER_TOKEN", "t0ken-xyz")
    with pytest.raises(ConfigError, match="plain http"):
        load(None)
    cfg_file = tmp_path / "c.toml"
    cfg_file.write_text('[healer]\nurl = "https://file.example/heal"\n')
    with pytest.raises(ConfigError, match="plain http"):
        load(str(cfg_file))


# ------------------------------------------------------------------------- the daemon


def test_the_daemon_refuses_an_impostor_healer_with_one_line_and_an_alert_and_spends_no_attempt(
        site, daemon_factory, tmp_path, impostor):
    imp = impostor()   # another user (nobody) listens on the healer's port
    d = daemon_factory(healer_config(f"http://127.0.0.1:{imp.port}/api/heal", token=HEALER_TOKEN,
                                     cycles=3, timeouts="[5, 5, 5]", attempts=1)).start()
    add_and_break(d, site, tmp_path)
    calls = d.wait_for(lambda: healer_calls(d), what="the refused healer call")
    d.wait_for(lambda: db_rows(d, "SELECT 1 FROM fix_history WHERE source_name = 'stats'"), what="the attempt")
    calls = healer_calls(d)
    assert [(c["cycle"], c["outcome"], c["http_status"]) for c in calls] == [(1, "untrusted", None)]   # no cycle 2
    assert "nobody (uid 65534)" in calls[0]["reason"]
    alerts = d.wait_for(lambda: [a for a in d.alerts() if a["details"].get("cause") == "untrusted_healer"],
                        what="the alert")
    assert len(alerts) == 1 and alerts[0]["source"] == "stats" and alerts[0]["level"] == "error"
    assert alerts[0]["event"] == "BUDGET_PAUSED" and "no fix attempt spent" in alerts[0]["message"]
    assert "nobody (uid 65534)" in alerts[0]["message"]
    # With one attempt allowed, a spent attempt would have quarantined the source: it waits instead,
    # its task released for later, no attempt counted and no heal said to have failed.
    status = d.ctl_json("status", "stats")
    assert status["state"] == "DEGRADED" and status["fix_attempts_24h"] == 0, status
    assert [r["outcome"] for r in db_rows(d, "SELECT outcome FROM fix_history WHERE source_name = 'stats'")] \
        == ["declined"]
    assert db_rows(d, "SELECT state FROM task_queue WHERE target = 'stats' AND type = 'FIX_SOURCE'") \
        == [{"state": "PENDING"}]
    assert not [a for a in d.alerts() if a["event"] in ("HEAL_FAILED", "QUARANTINED")]
    lines = [line for line in d.log().splitlines() if "external healer not called" in line]
    assert any("WARNING" in line and "nobody (uid 65534)" in line for line in lines), d.log()[-3000:]
    assert HEALER_TOKEN not in d.log() and HEALER_TOKEN not in json.dumps(d.alerts())
    imp.settle()
    assert imp.connections == 0 and imp.received == b""
    assert d.proc.poll() is None and d.ctl("ping").returncode == 0


def test_the_daemon_heals_through_a_unix_socket_healer(site, daemon_factory, tmp_path, shared_dir):
    path = os.path.join(shared_dir, "healer.sock")
    good = UnixHealer(path, lambda req: healed(E2E_FIXED, "renamed classes"))
    try:
        d = daemon_factory(healer_config(f"unix:{path}:/api/heal", token=HEALER_TOKEN)).start()
        add_and_break(d, site, tmp_path)
        v = d.wait_for(lambda: healed_version(d), what="the external fix to be promoted")
        assert v and [(c["outcome"], c["http_status"]) for c in healer_calls(d)] == [("healed", 200)]
        assert good.requests[0][0] == "/api/heal"
        assert good.requests[0][1]["Authorization"] == f"Bearer {HEALER_TOKEN}"
    finally:
        good.stop()


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare(1)")
def test_the_table_is_readable_under_the_units_proc_subset():
    """The shipped unit mounts /proc with ProcSubset=pid, which hides /proc/net: the check reads
    the daemon's own /proc/self/net instead and still sees a listener and its owner."""
    import subprocess
    import sys

    probe = ("import socket; from healerd.adapters import peer; from healerd.core.peers import listeners_for, "
             "normal_ip\ns = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1)\n"
             "print([e.uid for e in listeners_for(peer.read_tcp_table(), normal_ip('127.0.0.1'), "
             "s.getsockname()[1])])")
    script = ("mount -t proc -o subset=pid proc /proc && test ! -e /proc/net && "
              f"exec {sys.executable} -c \"$PROBE\"")
    r = subprocess.run(["unshare", "--mount", "sh", "-c", script], env={**os.environ, "PROBE": probe},
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0 and "mount" in r.stderr and "permission" in r.stderr.lower():
        pytest.skip(f"cannot mount a proc here: {r.stderr.strip()}")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[0]"
