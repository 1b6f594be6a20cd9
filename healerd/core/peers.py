"""Who may receive a request that carries a secret: the pure half of the healer's connection guard.

The external healer is sent a bearer token, the failing page and the blueprint. On this
machine any user can listen on a free loopback port (or a unix socket path) and wait for
that request, so the daemon sends it only after learning who is at the other end; over the
network a token travels only inside TLS. This module decides, over plain data:

- what a healer URL points at: a host and port, or `unix:/path/to.sock` (optionally
  followed by `:/request/path`), and the `http://` URL sent over that socket;
- which hosts are loopback (127.0.0.0/8, ::1, IPv4-mapped 127.x, `localhost`);
- that a token is never sent over plain http to a host that is not loopback;
- reading the kernel's TCP tables (`/proc/net/tcp`, `/proc/net/tcp6`): which sockets listen
  where, and which socket is the server side of a given connection, with the uid that owns it.

Reading those tables, the user database and the sockets themselves is
`healerd.adapters.peer`'s job.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
from dataclasses import dataclass
from urllib.parse import urlsplit

LISTEN = 0x0A          # TCP_LISTEN in the `st` column
UNIX_PREFIX = "unix:"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class TcpEntry:
    """One row of /proc/net/tcp or tcp6: addresses (IPv4-mapped ones as IPv4), state, owner, inode."""

    local: tuple[IPAddress, int]
    remote: tuple[IPAddress, int]
    state: int
    uid: int
    inode: int


def normal_ip(value: str | IPAddress) -> IPAddress:
    """An address as ipaddress sees it, an IPv4-mapped IPv6 address (::ffff:127.0.0.1) as its IPv4 address."""
    ip = ipaddress.ip_address(value.split("%", 1)[0] if isinstance(value, str) else value)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def is_loopback_host(host: str | None) -> bool:
    """127.0.0.0/8, ::1 (bracketed or not), ::ffff:127.x, or the name `localhost`."""
    if not host:
        return False
    h = host.strip().strip("[]").rstrip(".").lower()
    if h == "localhost":
        return True
    try:
        return normal_ip(h).is_loopback
    except ValueError:
        return False


def split_unix_url(url: str) -> tuple[str, str] | None:
    """(socket path, request path) of `unix:/path/to.sock[:/request/path]`, else None.

    The request path defaults to `/`. Raises ValueError for a `unix:` URL whose socket path is not absolute.
    """
    if not url.startswith(UNIX_PREFIX):
        return None
    rest = url[len(UNIX_PREFIX):]
    if rest.startswith("//"):           # unix:///run/x.sock, as some tools write it
        rest = rest[2:]
    path, sep, req = rest.partition(":/")
    if not path.startswith("/") or path == "/":
        raise ValueError("a unix: healer URL names an absolute socket path: unix:/path/to.sock")
    return path, ("/" + req) if sep else "/"


def request_url(url: str) -> str:
    """The http:// URL a request goes to: `url` itself, or for a unix socket `http://localhost/<request path>`."""
    unix = split_unix_url(url)
    return url if unix is None else "http://localhost" + unix[1]


def plain_secret_refusal(url: str, has_secret: bool) -> str | None:
    """Why a request carrying a secret may not go to `url` (plain http to a host that is not loopback), or None."""
    if not has_secret or url.startswith(UNIX_PREFIX):
        return None
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return None
    if parts.scheme.lower() == "http" and not is_loopback_host(host):
        return (f"a token is never sent over plain http to {host or '?'}, which is not this machine's loopback: "
                f"use https:// (or a loopback or unix: healer)")
    return None


# ---------------------------------------------------------------- the kernel's TCP tables


def _address(field: str, v6: bool) -> tuple[IPAddress, int]:
    hex_ip, _, hex_port = field.partition(":")
    # Each 32-bit word is printed in the kernel's (host) byte order.
    words = [int(hex_ip[i:i + 8], 16) for i in range(0, len(hex_ip), 8)]
    raw = b"".join(struct.pack("=I", w) for w in words)
    ip = socket.inet_ntop(socket.AF_INET6 if v6 else socket.AF_INET, raw)
    return normal_ip(ip), int(hex_port, 16)


def parse_proc_net_tcp(text: str, v6: bool, local_port: int | None = None) -> list[TcpEntry]:
    """The rows of /proc/net/tcp (`v6` False) or /proc/net/tcp6 (True), only those whose local port
    is `local_port` when given (both questions asked of the table are about one local port, and a
    busy machine has thousands of rows); malformed rows are skipped."""
    out: list[TcpEntry] = []
    for line in text.splitlines()[1:]:
        f = line.split()
        if len(f) < 10:
            continue
        try:
            if local_port is not None and int(f[1].rpartition(":")[2], 16) != local_port:
                continue
            out.append(TcpEntry(local=_address(f[1], v6), remote=_address(f[2], v6), state=int(f[3], 16),
                                uid=int(f[7]), inode=int(f[9])))
        except (ValueError, OSError, struct.error):
            continue
    return out


def _unspecified(ip: IPAddress) -> bool:
    return ip.is_unspecified


def listeners_for(entries: list[TcpEntry], ip: IPAddress, port: int) -> list[TcpEntry]:
    """The listening sockets a connection to (ip, port) could reach: bound to that address, or to
    every address of its family (0.0.0.0; and `::`, which takes IPv4 too unless IPV6_V6ONLY, which
    the table does not show, so it is counted)."""
    ip = normal_ip(ip)
    found = []
    for e in entries:
        if e.state != LISTEN or e.local[1] != port:
            continue
        addr = e.local[0]
        if addr == ip or (_unspecified(addr) and (addr.version == ip.version or addr.version == 6)):
            found.append(e)
    return found


def server_side(entries: list[TcpEntry], local: tuple[str, int], peer: tuple[str, int]) -> TcpEntry | None:
    """The row of the other end of our connection (its local address is our peer and its remote
    address is ours): present only when the server is on this machine. Its uid is the listening
    socket's owner even before the server accepted the connection."""
    ours = (normal_ip(local[0]), local[1])
    theirs = (normal_ip(peer[0]), peer[1])
    for e in entries:
        if e.local == theirs and e.remote == ours and e.state != LISTEN:
            return e
    return None
