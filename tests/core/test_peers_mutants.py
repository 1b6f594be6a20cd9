"""The pure half of the healer's connection guard (healerd.core.peers): cases a mutation found no test for."""

from __future__ import annotations

import ipaddress
import socket

import pytest

from healerd.core.peers import is_loopback_host, normal_ip, parse_proc_net_tcp, plain_secret_refusal, split_unix_url

HEADER = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"


def tcp_row(sl: int, local: str, remote: str, state: str, uid: int, inode: int, cut: bool = False) -> str:
    row = f"   {sl}: {local} {remote} {state} 00000000:00000000 00:00000000 00000000 {uid:>6} 0 {inode}"
    return row + ("" if cut else " 1 0000000000000000 20 4 30 10 -1") + "\n"


little_endian = pytest.mark.skipif(socket.htonl(1) == 1, reason="the sample is a little-endian table")


@little_endian
def test_a_malformed_row_or_another_ports_row_does_not_end_the_table():
    text = (HEADER + tcp_row(0, "0100007F:1F90", "00000000:0000", "0A", 1, 11)
            + "   1: garbage\n"
            + tcp_row(9, "0100007G:1F90", "00000000:0000", "0A", 9, 19)      # a full row that does not parse
            + tcp_row(2, "0100007F:1F91", "00000000:0000", "0A", 2, 12)
            + tcp_row(3, "0100007F:1F90", "0100007F:D000", "01", 3, 13))
    assert [e.uid for e in parse_proc_net_tcp(text, v6=False)] == [1, 2, 3]
    assert [e.uid for e in parse_proc_net_tcp(text, v6=False, local_port=0x1F90)] == [1, 3]
    assert [e.uid for e in parse_proc_net_tcp(text, v6=False, local_port=0x1F91)] == [2]


@little_endian
def test_a_row_ending_at_its_inode_is_read_a_shorter_one_is_not():
    text = HEADER + tcp_row(0, "0100007F:1F90", "00000000:0000", "0A", 7, 99, cut=True)
    assert [(e.uid, e.inode) for e in parse_proc_net_tcp(text, v6=False)] == [(7, 99)]
    short = HEADER + "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000 7 0\n"
    assert parse_proc_net_tcp(short, v6=False) == []


def test_a_scoped_ipv6_address_is_its_address():
    assert normal_ip("fe80::1%eth0") == ipaddress.ip_address("fe80::1")
    assert normal_ip("::1%lo") == ipaddress.ip_address("::1")
    assert is_loopback_host("::1%lo")


@pytest.mark.parametrize("host", ["LOCALHOSTX", "xlocalhost", "localhost..x", "X127.0.0.1"])
def test_a_name_that_only_contains_localhost_is_not_loopback(host):
    assert not is_loopback_host(host)


def test_the_refusal_names_the_host_or_says_it_has_none():
    said = plain_secret_refusal("http://healer.example/heal", True)
    assert said is not None and said.startswith("a token is never sent over plain http to healer.example, ")
    said = plain_secret_refusal("http:///heal", True)
    assert said is not None and said.startswith("a token is never sent over plain http to ?, ")
    assert plain_secret_refusal("http://healer.example/heal", False) is None
    assert plain_secret_refusal("https://healer.example/heal", True) is None
    assert plain_secret_refusal("http://127.0.0.1:9/heal", True) is None


@pytest.mark.parametrize("url", ["unix:/", "unix:///", "unix:relative.sock", "unix:/:/api"])
def test_a_unix_url_names_a_socket_path_below_the_root(url):
    with pytest.raises(ValueError) as info:
        split_unix_url(url)
    assert str(info.value) == "a unix: healer URL names an absolute socket path: unix:/path/to.sock"
