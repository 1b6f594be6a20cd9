"""Know who listens before sending a secret: the external healer's connections, guarded.

Every connection the healer client opens goes through `GuardedBackend` (an httpcore network
backend, put under httpx's connection pools the way `adapters.fetch` bounds its fetches):

- TCP to a loopback host: before connecting, the sockets listening on that port
  (`/proc/self/net/tcp`, `tcp6`, state LISTEN; the `uid` column is the socket owner's uid)
  must all belong to an allowed user, else nothing is even connected;
- any TCP connection, once connected and before a byte is written: the server side of *this*
  connection is looked up in the same tables (its local address is our peer, its remote
  address ours). Found, it is on this machine and its owner must be allowed, which also catches a
  listener that appeared between the check and the connect; not found although the peer is
  loopback, the connection is refused (no owner to check); not found on a remote host with a
  plain-http request that carries a token, refused too;
- a unix socket (`unix:/path/to.sock`): the peer's uid from SO_PEERCRED, as healerctl checks the daemon's.

The allowed users are root, the daemon's own user and `[healer] allowed_user`. A refusal is
`PeerRefused` (one line, nothing sent); the connection is closed at once.

psutil is not used: its connection list names processes, not the socket's owner uid, and
finding them walks every process's file descriptors; the kernel table has the uid already.
"""

from __future__ import annotations

import os
import socket
import struct
import time
from collections.abc import Iterable

import httpcore
import httpx

from healerd.core.errors import HealerdError
from healerd.core.peers import (
    TcpEntry,
    is_loopback_host,
    listeners_for,
    normal_ip,
    parse_proc_net_tcp,
    server_side,
    split_unix_url,
)

# /proc/self/net, not /proc/net: systemd's ProcSubset=pid (the shipped unit) hides /proc/net but
# keeps each process's own directory, which shows the same tables of its network namespace.
PROC_TABLES = (("/proc/self/net/tcp", False), ("/proc/self/net/tcp6", True))
SERVER_SIDE_TRIES = 20            # a loopback server's row shows at once; a SYN-cookie handshake may lag a little
SERVER_SIDE_PAUSE_S = 0.005


class PeerRefused(HealerdError):
    """Nothing was sent: the other end is not a process the daemon trusts with the request."""


def resolve_user(value: str | int | None) -> int | None:
    """The uid of `[healer] allowed_user` (a user name or a uid), None when unset; ValueError for an unknown name."""
    if value is None or value == "":
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"a uid is a whole number >= 0, got {value}")
        return value
    text = str(value).strip()
    if text.isdigit():
        return int(text)
    import pwd

    try:
        return pwd.getpwnam(text).pw_uid
    except KeyError:
        raise ValueError(f"no user named {text!r} on this system") from None


def allowed_uids(allowed_user: str | int | None = None) -> frozenset[int]:
    """root, this process's user, and `allowed_user` when it names a user (an unknown one adds nobody)."""
    uids = {0, os.geteuid()}
    try:
        extra = resolve_user(allowed_user)
    except ValueError:
        extra = None
    if extra is not None:
        uids.add(extra)
    return frozenset(uids)


def describe_uid(uid: int) -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (KeyError, ImportError):
        return f"uid {uid}"


def _allowed_text() -> str:
    return f"root, healerd's user {describe_uid(os.geteuid())} or [healer] allowed_user"


def read_tcp_table(local_port: int | None = None) -> list[TcpEntry]:
    """The rows of the kernel's TCP tables (IPv4 and IPv6), only those on `local_port` when given;
    PeerRefused when there is no table to read (not Linux)."""
    entries: list[TcpEntry] = []
    read_any = False
    for path, v6 in PROC_TABLES:
        try:
            with open(path, encoding="ascii", errors="replace") as fh:
                text = fh.read()
        except OSError:
            continue            # tcp6 is missing when IPv6 is off
        read_any = True
        entries.extend(parse_proc_net_tcp(text, v6, local_port))
    if not read_any:
        raise PeerRefused("cannot tell who listens: /proc/self/net/tcp cannot be read; nothing was sent")
    return entries


def _refuse_owner(where: str, uid: int, what: str) -> PeerRefused:
    return PeerRefused(f"refused to send to {what} at {where}: the socket there belongs to {describe_uid(uid)}, "
                       f"not to {_allowed_text()}; nothing was sent")


def check_listeners(host: str, port: int, allowed: frozenset[int], what: str = "the healer",
                    entries: list[TcpEntry] | None = None) -> None:
    """Before connecting to a loopback `host`: every socket listening where the connection could
    land belongs to an allowed user (none listening: nothing to refuse, the connect will fail)."""
    if not is_loopback_host(host):
        return
    bare = host.strip().strip("[]").rstrip(".").lower()
    targets: Iterable[str] = ("127.0.0.1", "::1") if bare == "localhost" else (bare,)
    table = read_tcp_table(port) if entries is None else entries
    for target in targets:
        for e in listeners_for(table, normal_ip(target), port):
            if e.uid not in allowed:
                raise _refuse_owner(f"{host}:{port}", e.uid, what)


def check_connected(sock: socket.socket, allowed: frozenset[int], *, plain_secret: bool = False,
                    what: str = "the healer") -> None:
    """After connecting and before writing: the server side of this connection, when it is on this
    machine, belongs to an allowed user; a loopback peer whose row cannot be found is refused; with
    `plain_secret` (plain http carrying a token) a peer that is not on this machine is refused."""
    local = sock.getsockname()[:2]
    peer = sock.getpeername()[:2]
    loopback = normal_ip(peer[0]).is_loopback
    where = f"{peer[0]}:{peer[1]}"
    found = None
    for attempt in range(SERVER_SIDE_TRIES if loopback else 1):
        if attempt:
            time.sleep(SERVER_SIDE_PAUSE_S)
        found = server_side(read_tcp_table(peer[1]), local, peer)
        if found is not None:
            break
    if found is not None:
        if found.uid not in allowed:
            raise _refuse_owner(where, found.uid, what)
        return
    if loopback:
        raise PeerRefused(f"refused to send to {what} at {where}: cannot tell who accepted the connection; "
                          f"nothing was sent")
    if plain_secret:
        raise PeerRefused(f"refused to send to {what} at {where}: a token is never sent over plain http to a "
                          f"host that is not this machine; nothing was sent")


def check_unix_peer(sock: socket.socket, allowed: frozenset[int], path: str, what: str = "the healer") -> None:
    """The process on a unix socket runs as an allowed user (SO_PEERCRED)."""
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):
        raise PeerRefused(f"refused to send to {what} at unix:{path}: this system cannot tell who serves a unix "
                          f"socket (no SO_PEERCRED); nothing was sent") from None
    _pid, uid, _gid = struct.unpack("3i", raw)
    if uid not in allowed:
        raise _refuse_owner(f"unix:{path}", uid, what)


class GuardedBackend(httpcore.NetworkBackend):
    """httpcore's sync backend, with every new connection checked (above) before it is handed back."""

    def __init__(self, allowed: frozenset[int], *, plain_secret: bool = False, what: str = "the healer",
                 inner: httpcore.NetworkBackend | None = None):
        self.allowed = allowed
        self.plain_secret = plain_secret
        self.what = what
        self._inner = inner or httpcore.SyncBackend()

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        check_listeners(host, port, self.allowed, self.what)
        stream = self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        self._checked(stream, lambda s: check_connected(s, self.allowed, plain_secret=self.plain_secret,
                                                         what=self.what))
        return stream

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        stream = self._inner.connect_unix_socket(path, timeout, socket_options)
        self._checked(stream, lambda s: check_unix_peer(s, self.allowed, path, self.what))
        return stream

    @staticmethod
    def _checked(stream: httpcore.NetworkStream, check) -> None:
        try:
            sock = stream.get_extra_info("socket")
            if sock is None:
                raise PeerRefused("refused: the connection's socket cannot be inspected; nothing was sent")
            check(sock)
        except BaseException:
            stream.close()
            raise

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def guarded_client(url: str, allowed: frozenset[int], *, plain_secret: bool, verify, what: str = "the healer",
                   follow_redirects: bool = False) -> httpx.Client:
    """An httpx client for `url` (http(s):// or unix:/path) whose every connection is guarded.

    A unix: URL gets a transport bound to that socket (and no proxy); otherwise the client is
    httpx's usual one (environment proxies included: a proxy on loopback is checked like a healer)."""
    unix = split_unix_url(url)
    if unix is not None:
        client = httpx.Client(transport=httpx.HTTPTransport(uds=unix[0], verify=verify),
                              follow_redirects=follow_redirects)
    else:
        client = httpx.Client(follow_redirects=follow_redirects, verify=verify)
    transports = [client._transport, *(t for t in client._mounts.values() if t is not None)]
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        if pool is None or not hasattr(pool, "_network_backend"):
            client.close()
            raise RuntimeError("this httpx/httpcore version keeps its network backend elsewhere; healerd cannot "
                               "check who listens before sending a secret")
        pool._network_backend = GuardedBackend(allowed, plain_secret=plain_secret, what=what)
    return client
