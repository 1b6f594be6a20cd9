"""The daemon's control socket: a Unix-socket server for `healerctl` (protocol.py).

One selector loop reads requests without blocking, each connection with a deadline and
a size cap, so garbage, huge or silent clients cannot stall anyone else. Complete
requests go to a worker pool that runs the handler and sends the answer. Peers are
identified with SO_PEERCRED and checked against a policy before anything is read.

Slots are shared fairly: one user (uid) holds at most `max_per_user` connections (by default
all but an eighth of `max_connections`, so a slot is always left for everyone else). A user
at that cap who connects again makes its own oldest idle connection (one without a complete
request yet) give way, and when every slot is taken a newcomer makes the oldest idle
connection of the user holding the most give way: idle connections from one peer, however
many, never keep a real request out. `busy` is answered only when the slots are all serving.
"""

from __future__ import annotations

import errno
import grp
import logging
import os
import pwd
import re
import selectors
import socket
import stat
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from healerd.control import protocol
from healerd.control.protocol import ControlError
from healerd.core.errors import HealerdError

log = logging.getLogger("healerd.control")

_UCRED = struct.Struct("3i")
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s]+@")
_SECRET_WORDS = re.compile(r"(?i)\b(token|password|passwd|secret|cookie|authorization|bearer)\b[=: ]+\S+")
_SUN_PATH_MAX = 107  # bytes, without the terminating NUL


@dataclass(frozen=True)
class PeerCred:
    """The credentials of the process at the other end of a Unix socket."""

    pid: int
    uid: int
    gid: int


class ControlServerError(RuntimeError, HealerdError):
    """The control socket cannot be set up."""


def peer_credentials(sock: socket.socket) -> PeerCred:
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
    return PeerCred(*_UCRED.unpack(raw))


def resolve_group(group: str | int | None) -> int | None:
    """A group name or number as a gid; ControlServerError when unknown."""
    if group is None or group == "":
        return None
    if isinstance(group, int) or (isinstance(group, str) and group.isdigit()):
        return int(group)
    try:
        return grp.getgrnam(group).gr_gid
    except KeyError:
        raise ControlServerError(f"unknown group {group!r} for the control socket") from None


def user_groups(uid: int, gid: int) -> set[int]:
    """The primary and supplementary groups of `uid` (just `gid` when the user has no name)."""
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        return {gid}
    try:
        return set(os.getgrouplist(name, gid))
    except OSError:
        return {gid}


def peer_allowed(peer: PeerCred, *, own_uid: int, group_gid: int | None,
                 groups_of: Callable[[int, int], set[int]] = user_groups) -> bool:
    """The default policy: root, the daemon's own user, or a member of the socket's group."""
    if peer.uid == 0 or peer.uid == own_uid:
        return True
    if group_gid is None:
        return False
    if peer.gid == group_gid:
        return True
    return group_gid in groups_of(peer.uid, peer.gid)


def _one_line_without_secrets(text: str) -> str:
    """The first line of an error text, with URL credentials and token-like values masked."""
    first = (text.strip().splitlines() or [""])[0]
    first = _URL_CREDENTIALS.sub(r"\1***@", first)
    return _SECRET_WORDS.sub(lambda m: f"{m.group(1)}=***", first)


class _Conn:
    __slots__ = ("sock", "peer", "reader", "deadline")

    def __init__(self, sock: socket.socket, peer: PeerCred, max_request: int, deadline: float):
        self.sock = sock
        self.peer = peer
        self.reader = protocol.FrameReader(max_request)
        self.deadline = deadline


class ControlServer:
    """Serve `handler(op, args, peer) -> result` on a Unix socket at `path`.

    The handler raises ControlError to answer an error; any other exception becomes
    an internal_error answer (and a log line) and the server carries on.
    """

    def __init__(
        self,
        path: str,
        handler: Callable[[str, dict, PeerCred], Any],
        *,
        mode: int = 0o660,
        group: str | int | None = None,
        allow: Callable[[PeerCred], bool] | None = None,
        max_request: int = protocol.MAX_REQUEST,
        read_timeout: float = 5.0,
        max_connections: int = 512,
        max_per_user: int | None = None,
        workers: int = 16,
        send_timeout: float = 10.0,
    ):
        self.path = os.path.abspath(os.fspath(path))
        self.handler = handler
        self.mode = mode
        self.group = group
        self.max_request = max_request
        self.read_timeout = read_timeout
        self.max_connections = max_connections
        if max_per_user is None:
            max_per_user = max_connections - max(1, max_connections // 8)
        self.max_per_user = max(1, min(max_per_user, max_connections))
        self.workers = workers
        self.send_timeout = send_timeout
        self._group_gid = resolve_group(group)
        self._allow = allow or self._default_allow
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._open = 0
        self._by_uid: Counter[int] = Counter()
        self._listener: socket.socket | None = None
        self._inode: tuple[int, int] | None = None
        self._thread: threading.Thread | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._stopping = threading.Event()
        self._wake_r: socket.socket | None = None
        self._wake_w: socket.socket | None = None

    # -- policy -----------------------------------------------------------------------

    def _default_allow(self, peer: PeerCred) -> bool:
        # Without a configured group only root and the daemon's own user are served: the
        # daemon's primary group may be shared by every local user (a `users` group).
        return peer_allowed(peer, own_uid=os.geteuid(), group_gid=self._group_gid)

    # -- lifecycle --------------------------------------------------------------------

    def start(self) -> None:
        """Bind the socket (replacing a stale one), set its mode and group, start serving."""
        if self._thread is not None:
            raise ControlServerError("the control server is already started")
        tmp = self.path + ".new"
        if len(os.fsencode(tmp)) > _SUN_PATH_MAX:
            raise ControlServerError(
                f"socket path too long for a Unix socket ({len(os.fsencode(self.path))} bytes; "
                f"keep it under {_SUN_PATH_MAX - 4}): {self.path}"
            )
        parent = os.path.dirname(self.path)
        try:
            os.makedirs(parent, exist_ok=True)
        except OSError as exc:
            raise ControlServerError(f"cannot create {parent} for the control socket: {exc.strerror}") from None
        self._clear_stale()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            listener.bind(tmp)
            os.chmod(tmp, self.mode)
            if self._group_gid is not None:
                os.chown(tmp, -1, self._group_gid)
            # As deep a queue as the connections served, so a burst of clients waits in it
            # instead of getting EAGAIN. The kernel caps it at net.core.somaxconn (4096 since
            # Linux 5.4, 128 before); past that the client retries on EAGAIN.
            listener.listen(max(self.max_connections, 16))
            listener.setblocking(False)
            os.rename(tmp, self.path)  # atomic: the socket appears with its final mode and group
            st = os.stat(self.path)
        except OSError as exc:
            listener.close()
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise ControlServerError(f"cannot create the control socket {self.path}: {exc.strerror or exc}") from None
        self._inode = (st.st_dev, st.st_ino)
        self._listener = listener
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._stopping.clear()
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="healerd-control")
        self._thread = threading.Thread(target=self._loop, name="healerd-control-io", daemon=True)
        self._thread.start()
        log.info("control socket listening on %s", self.path)

    def _clear_stale(self) -> None:
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return
        if not stat.S_ISSOCK(st.st_mode):
            raise ControlServerError(f"{self.path} exists and is not a socket; refusing to replace it")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.settimeout(1.0)
        try:
            probe.connect(self.path)
        except (ConnectionRefusedError, FileNotFoundError):
            pass  # stale: nobody is listening
        except OSError as exc:
            if exc.errno not in (errno.ECONNREFUSED, errno.ENOENT):
                raise ControlServerError(f"cannot check the existing socket {self.path}: {exc.strerror or exc}") from None
        else:
            raise ControlServerError(f"another healerd is listening on {self.path}")
        finally:
            probe.close()
        try:
            os.unlink(self.path)
            log.info("removed a stale control socket at %s", self.path)
        except FileNotFoundError:
            pass

    def stop(self, timeout: float | None = 30.0) -> None:
        """Stop accepting, remove the socket, and wait up to `timeout` s for running requests."""
        if self._thread is None:
            return
        self._stopping.set()
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass
        self._thread.join()
        self._thread = None
        self._pool.shutdown(wait=False)  # queued requests are answered "unavailable" by _serve
        self._pool = None
        with self._idle:
            if not self._idle.wait_for(lambda: self._open <= 0, timeout):
                log.warning("control socket: %d request(s) still running at shutdown", self._open)
        for s in (self._wake_r, self._wake_w):
            s.close()
        self._wake_r = self._wake_w = None
        try:
            st = os.stat(self.path)
            if (st.st_dev, st.st_ino) == self._inode:
                os.unlink(self.path)
        except OSError:
            pass
        self._inode = None
        log.info("control socket %s closed", self.path)

    def __enter__(self) -> ControlServer:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def open_connections(self) -> int:
        with self._lock:
            return self._open

    # -- the I/O loop -----------------------------------------------------------------

    def _loop(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self._listener, selectors.EVENT_READ, None)
        sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        conns: dict[int, _Conn] = {}
        try:
            self._run_loop(sel, conns)
        except Exception:
            log.exception("control socket: the I/O loop stopped on an unexpected error")
        finally:
            for conn in list(conns.values()):
                self._drop(sel, conns, conn)
            sel.close()
            self._listener.close()
            self._listener = None

    def _run_loop(self, sel: selectors.BaseSelector, conns: dict[int, _Conn]) -> None:
        while not self._stopping.is_set():
            timeout = None
            if conns:
                timeout = max(0.0, min(c.deadline for c in conns.values()) - time.monotonic())
            try:
                events = sel.select(timeout)
            except InterruptedError:
                continue
            for key, _ in events:
                try:
                    if key.data == "wake":
                        self._drain_wake()
                    elif key.data is None:
                        self._accept(sel, conns)
                    else:
                        self._readable(sel, conns, key.data)
                except Exception:  # never let one connection end the loop
                    log.exception("control socket: unexpected error")
                    if isinstance(key.data, _Conn):
                        self._drop(sel, conns, key.data)
            now = time.monotonic()
            for conn in [c for c in conns.values() if c.deadline <= now]:
                self._reply_and_drop(sel, conns, conn, protocol.error(
                    "timeout", f"no complete request within {self.read_timeout:g}s"))

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(64):
                pass
        except (BlockingIOError, InterruptedError):
            pass

    def _accept(self, sel: selectors.BaseSelector, conns: dict[int, _Conn]) -> None:
        for _ in range(64):  # accept a burst, then let reads run
            try:
                sock, _addr = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # EMFILE and friends: keep serving what we have
                log.warning("control socket: accept failed: %s", exc)
                return
            sock.setblocking(False)
            try:
                peer = peer_credentials(sock)
                allowed = self._allow(peer)
            except Exception:
                log.exception("control socket: cannot check the peer")
                peer, allowed = None, False
            if peer is None or not allowed:
                self._quick_reply(sock, protocol.error(
                    "forbidden", "not allowed to use the healerd control socket",
                    {"uid": peer.uid} if peer else {}))
                continue
            if not self._make_room(sel, conns, peer.uid):
                self._quick_reply(sock, protocol.error("busy", "healerd is handling too many control connections; try again"))
                continue
            with self._lock:
                self._open += 1
                self._by_uid[peer.uid] += 1
            conn = _Conn(sock, peer, self.max_request, time.monotonic() + self.read_timeout)
            conns[sock.fileno()] = conn
            sel.register(sock, selectors.EVENT_READ, conn)

    def _make_room(self, sel: selectors.BaseSelector, conns: dict[int, _Conn], uid: int) -> bool:
        """Whether a new connection from `uid` may be served, after making an idle one give way if
        needed: the user's own oldest idle connection at its cap; when every slot is taken, the
        oldest idle one of the user holding the most (if that is more than `uid` would), else the
        user's own oldest idle one. False (`busy`): no such idle connection, all are serving."""
        with self._lock:
            mine = self._by_uid[uid]
            full = self._open >= self.max_connections
            held = dict(self._by_uid)
        if mine >= self.max_per_user:
            victim_uid = uid
        elif full:
            idle = Counter(c.peer.uid for c in conns.values())
            heavy = max(idle, key=lambda u: held.get(u, 0), default=None)
            victim_uid = heavy if heavy is not None and held.get(heavy, 0) > mine + 1 else uid
        else:
            return True
        victim = next((c for c in conns.values() if c.peer.uid == victim_uid), None)   # oldest first
        if victim is None:
            return False   # all of them are being served: `busy`
        self._reply_and_drop(sel, conns, victim, protocol.error(
            "busy", "closed to make room: too many idle control connections from this user"))
        return True

    def _readable(self, sel: selectors.BaseSelector, conns: dict[int, _Conn], conn: _Conn) -> None:
        try:
            data = conn.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._drop(sel, conns, conn)
            return
        if not data:
            self._drop(sel, conns, conn)
            return
        try:
            payload = conn.reader.feed(data)
        except ControlError as exc:
            self._reply_and_drop(sel, conns, conn, protocol.error(exc.code, exc.message, exc.details))
            return
        if payload is None:
            return
        sel.unregister(conn.sock)
        del conns[conn.sock.fileno()]
        try:
            self._pool.submit(self._serve, conn.sock, conn.peer, payload)
        except RuntimeError:  # the pool is shutting down
            self._quick_reply(conn.sock, protocol.error("unavailable", "healerd is shutting down"))
            self._release(conn.peer.uid)

    # -- replies ----------------------------------------------------------------------

    def _release(self, uid: int) -> None:
        with self._idle:
            self._open -= 1
            self._by_uid[uid] -= 1
            if self._by_uid[uid] <= 0:
                del self._by_uid[uid]
            if self._open <= 0:
                self._idle.notify_all()

    def _drop(self, sel: selectors.BaseSelector, conns: dict[int, _Conn], conn: _Conn) -> None:
        fd = conn.sock.fileno()
        if conns.pop(fd, None) is not None:
            try:
                sel.unregister(conn.sock)
            except (KeyError, ValueError):
                pass
            self._release(conn.peer.uid)
        conn.sock.close()

    def _reply_and_drop(self, sel, conns, conn: _Conn, response: dict) -> None:
        self._quick_reply(conn.sock, response, close=False)
        self._drop(sel, conns, conn)

    @staticmethod
    def _quick_reply(sock: socket.socket, response: dict, close: bool = True) -> None:
        """Best-effort non-blocking send of a small answer (an error), then optionally close."""
        try:
            sock.send(protocol.encode(response))
        except OSError:
            pass
        if close:
            sock.close()

    def _serve(self, sock: socket.socket, peer: PeerCred, payload: bytes) -> None:
        try:
            if self._stopping.is_set():
                response = protocol.error("unavailable", "healerd is shutting down")
            else:
                response = self._dispatch(peer, payload)
            try:
                data = protocol.encode(response)
            except (TypeError, ValueError) as exc:
                log.error("control socket: the result of a request is not JSON: %s", exc)
                data = protocol.encode(protocol.error("internal_error", "the daemon produced a result that is not JSON"))
            sock.setblocking(True)
            sock.settimeout(self.send_timeout)
            try:
                sock.sendall(data)
            except OSError:
                pass  # the client went away or stopped reading
        except Exception:
            log.exception("control socket: unexpected error while serving a request")
        finally:
            sock.close()
            self._release(peer.uid)

    def _dispatch(self, peer: PeerCred, payload: bytes) -> dict:
        try:
            op, args = protocol.parse_request(protocol.decode(payload))
        except ControlError as exc:
            return protocol.error(exc.code, exc.message, exc.details)
        try:
            return protocol.ok(self.handler(op, args, peer))
        except ControlError as exc:
            return protocol.error(exc.code, exc.message, exc.details)
        except Exception as exc:
            first = _one_line_without_secrets(str(exc))
            log.exception("control op %r failed", op)
            message = f"{op} failed: {type(exc).__name__}" + (f": {first}" if first else "")
            return protocol.error("internal_error", message[:500])
