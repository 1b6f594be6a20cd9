"""Who may receive the healer's token (healerd.adapters.peer over healerd.core.peers): cases a
mutation found no test for.

- `localhost` is both 127.0.0.1 and ::1: a listener on ::1 owned by another user is refused too;
- a loopback peer whose row is not in the kernel's TCP table has no owner to check: refused;
- the table's rows are matched on state, port and both addresses.
"""

from __future__ import annotations

import ipaddress
import os
import socket

import pytest

from healerd.adapters import peer
from healerd.core.peers import LISTEN, TcpEntry, listeners_for, normal_ip, server_side

NOBODY = 65534
PORT = 8931
ME = frozenset({0, os.geteuid()})


def row(local: str, port: int, *, remote: str = "0.0.0.0", rport: int = 0, state: int = LISTEN,
        uid: int = NOBODY) -> TcpEntry:
    return TcpEntry(local=(normal_ip(local), port), remote=(normal_ip(remote), rport), state=state, uid=uid, inode=1)


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST.", "[::1]", "::1"])
def test_localhost_on_ipv6_owned_by_another_user_is_refused(host):
    table = [row("127.0.0.1", PORT, uid=0), row("::1", PORT, remote="::")]
    with pytest.raises(peer.PeerRefused, match=r"uid 65534|nobody"):
        peer.check_listeners(host, PORT, ME, entries=table)


def test_localhost_on_ipv4_owned_by_another_user_is_refused_and_owned_ones_pass():
    with pytest.raises(peer.PeerRefused):
        peer.check_listeners("localhost", PORT, ME, entries=[row("::1", PORT, uid=0), row("127.0.0.1", PORT)])
    # every listener it could reach is allowed: nothing refused
    peer.check_listeners("localhost", PORT, ME, entries=[row("::1", PORT, uid=0), row("127.0.0.1", PORT, uid=0)])
    # another port's listener is not this one
    peer.check_listeners("localhost", PORT, ME, entries=[row("::1", PORT + 1), row("127.0.0.1", PORT + 1)])
    # allowed_user lets that user listen
    peer.check_listeners("localhost", PORT, ME | {NOBODY}, entries=[row("::1", PORT)])


def test_listeners_are_the_listening_rows_at_that_address_or_every_address():
    table = [row("127.0.0.1", PORT, uid=1), row("0.0.0.0", PORT, uid=2), row("::", PORT, uid=3),
             row("127.0.0.2", PORT, uid=4), row("127.0.0.1", PORT, state=1, uid=5), row("127.0.0.1", PORT + 1, uid=6)]
    assert [e.uid for e in listeners_for(table, ipaddress.ip_address("127.0.0.1"), PORT)] == [1, 2, 3]
    # an IPv6 target: `::` takes it, 0.0.0.0 does not
    assert [e.uid for e in listeners_for(table + [row("::1", PORT, uid=7)], ipaddress.ip_address("::1"), PORT)] == [3, 7]
    # an IPv4-mapped target is its IPv4 address
    assert [e.uid for e in listeners_for(table, ipaddress.ip_address("::ffff:127.0.0.1"), PORT)] == [1, 2, 3]


def test_the_server_side_is_the_connected_row_mirroring_ours():
    ours, theirs = ("127.0.0.1", 40000), ("127.0.0.1", PORT)
    listening = row("127.0.0.1", PORT, uid=1)
    mirrored = row("127.0.0.1", PORT, remote="127.0.0.1", rport=40000, state=1, uid=2)
    other_client = row("127.0.0.1", PORT, remote="127.0.0.1", rport=40001, state=1, uid=3)
    our_own = row("127.0.0.1", 40000, remote="127.0.0.1", rport=PORT, state=1, uid=4)
    assert server_side([listening, other_client, our_own, mirrored], ours, theirs) == mirrored
    assert server_side([listening, other_client, our_own], ours, theirs) is None
    # the listening row itself, even at the right addresses, is not the server side
    fake = row("127.0.0.1", PORT, remote="127.0.0.1", rport=40000, state=LISTEN, uid=5)
    assert server_side([fake], ours, theirs) is None
    assert server_side([mirrored], ("::ffff:127.0.0.1", 40000), theirs) == mirrored


@pytest.fixture
def connected():
    """A real loopback connection: (our socket, the accepted one)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    client = socket.create_connection(server.getsockname())
    accepted, _ = server.accept()
    yield client, accepted
    for s in (client, accepted, server):
        s.close()


def test_a_loopback_peer_with_no_row_in_the_table_is_refused(connected, monkeypatch):
    client, _ = connected
    monkeypatch.setattr(peer, "read_tcp_table", lambda port=None: [])
    monkeypatch.setattr(peer, "SERVER_SIDE_PAUSE_S", 0.0)
    with pytest.raises(peer.PeerRefused, match="cannot tell who accepted the connection"):
        peer.check_connected(client, ME)
    with pytest.raises(peer.PeerRefused, match="cannot tell who accepted the connection"):
        peer.check_connected(client, ME, plain_secret=True)


def test_a_loopback_peer_is_judged_by_its_rows_owner(connected, monkeypatch):
    client, _ = connected
    local, remote = client.getsockname(), client.getpeername()
    mirrored = row(remote[0], remote[1], remote=local[0], rport=local[1], state=1, uid=NOBODY)
    monkeypatch.setattr(peer, "read_tcp_table", lambda port=None: [mirrored])
    with pytest.raises(peer.PeerRefused, match="uid 65534|nobody"):
        peer.check_connected(client, ME)
    peer.check_connected(client, ME | {NOBODY})
    # the real table: this process accepted the connection, so it passes
    monkeypatch.undo()
    if os.path.exists("/proc/self/net/tcp"):
        peer.check_connected(client, ME)


def test_a_row_that_shows_late_is_waited_for(connected, monkeypatch):
    client, _ = connected
    local, remote = client.getsockname(), client.getpeername()
    mirrored = row(remote[0], remote[1], remote=local[0], rport=local[1], state=1, uid=NOBODY)
    calls = []

    def late(port=None):
        calls.append(port)
        return [mirrored] if len(calls) >= 3 else []
    monkeypatch.setattr(peer, "read_tcp_table", late)
    monkeypatch.setattr(peer, "SERVER_SIDE_PAUSE_S", 0.0)
    with pytest.raises(peer.PeerRefused, match="uid 65534|nobody"):
        peer.check_connected(client, ME)
    assert calls == [remote[1]] * 3      # asked about the peer's port only, until the row showed


def test_a_refusal_names_the_place_the_owner_and_who_is_allowed(connected, monkeypatch):
    client, _ = connected
    local, remote = client.getsockname(), client.getpeername()
    mirrored = row(remote[0], remote[1], remote=local[0], rport=local[1], state=1, uid=NOBODY)
    monkeypatch.setattr(peer, "read_tcp_table", lambda port=None: [mirrored])
    with pytest.raises(peer.PeerRefused) as info:
        peer.check_connected(client, ME, what="the alert webhook")
    allowed = f"root, healerd's user {peer.describe_uid(os.geteuid())} or [healer] allowed_user"
    assert str(info.value) == (f"refused to send to the alert webhook at {remote[0]}:{remote[1]}: the socket there "
                               f"belongs to {peer.describe_uid(NOBODY)}, not to {allowed}; nothing was sent")
    with pytest.raises(peer.PeerRefused) as info:
        peer.check_listeners("localhost", PORT, ME, entries=[row("::1", PORT)])
    assert str(info.value).startswith(f"refused to send to the healer at localhost:{PORT}: the socket there belongs to ")


def test_the_tables_are_read_for_one_port_and_a_missing_one_is_skipped(tmp_path, monkeypatch):
    header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    if socket.htonl(1) == 1:
        pytest.skip("the sample is a little-endian table")
    (tmp_path / "tcp6").write_text(
        header + f"   0: 00000000000000000000000001000000:{PORT:04X} 00000000000000000000000000000000:0000 0A "
                 "00000000:00000000 00:00000000 00000000 65534 0 77 1 0\n"
               + f"   1: 00000000000000000000000001000000:{PORT + 1:04X} 00000000000000000000000000000000:0000 0A "
                 "00000000:00000000 00:00000000 00000000 1 0 78 1 0\n")
    # tcp missing (IPv4 off), tcp6 there: the one table read is enough
    monkeypatch.setattr(peer, "PROC_TABLES", ((str(tmp_path / "tcp"), False), (str(tmp_path / "tcp6"), True)))
    assert [(str(e.local[0]), e.local[1], e.uid) for e in peer.read_tcp_table(PORT)] == [("::1", PORT, NOBODY)]
    assert len(peer.read_tcp_table()) == 2
    with pytest.raises(peer.PeerRefused):
        peer.check_listeners("::1", PORT, ME)
    # no table at all: refused, nothing sent
    monkeypatch.setattr(peer, "PROC_TABLES", ((str(tmp_path / "tcp"), False), (str(tmp_path / "none6"), True)))
    with pytest.raises(peer.PeerRefused) as info:
        peer.read_tcp_table(PORT)
    assert str(info.value) == "cannot tell who listens: /proc/self/net/tcp cannot be read; nothing was sent"
