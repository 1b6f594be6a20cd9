"""Talking to the daemon's control socket, and where that socket and the state live."""

from __future__ import annotations

import errno
import os
import socket
import time

from healerd.control import protocol
from healerd.control.protocol import ControlError
from healerd.core.errors import HealerdError

# typing only for the type checker: importing it costs healerctl's light path ~10 ms of CPU
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SOCKET_NAME = "healerd.sock"
SYSTEM_SOCKET = "/run/healerd/healerd.sock"  # where the systemd unit's daemon listens


class DaemonUnreachable(HealerdError):
    """The daemon cannot be reached at `path`; `reason` says why (socket missing, ...)."""

    def __init__(self, reason: str, path: str):
        self.reason = reason
        self.path = path
        super().__init__(f"cannot reach healerd at {path}: {reason}")


def _first_dir(value: str | None) -> str | None:
    """systemd may pass several directories separated by ':'; the first is ours."""
    if not value:
        return None
    first = value.split(":")[0].strip()
    return first or None


def default_state_dir(explicit: str | None = None) -> str:
    """--state-dir, else $STATE_DIRECTORY (systemd), else $HEALERD_STATE_DIR, else ./healerd-state."""
    chosen = (
        explicit
        or _first_dir(os.environ.get("STATE_DIRECTORY"))
        or os.environ.get("HEALERD_STATE_DIR")
        or "healerd-state"
    )
    return os.path.abspath(chosen)


def default_socket_path(explicit: str | None = None, state_dir: str | None = None) -> str:
    """--socket / $HEALERD_SOCKET, else $RUNTIME_DIRECTORY/healerd.sock, else <state-dir>/healerd.sock."""
    chosen = explicit or os.environ.get("HEALERD_SOCKET")
    if chosen:
        return os.path.abspath(chosen)
    runtime = _first_dir(os.environ.get("RUNTIME_DIRECTORY"))
    if runtime:
        return os.path.join(os.path.abspath(runtime), SOCKET_NAME)
    return os.path.join(default_state_dir(state_dir), SOCKET_NAME)


def client_socket_path(explicit: str | None = None) -> str:
    """The socket `healerctl` should use.

    As default_socket_path(); in addition, when nothing names a location (no option, no
    environment) and ./healerd-state has no socket but the systemd unit's socket exists,
    that one is used, so `healerctl` works from a shell next to a system daemon.
    """
    path = default_socket_path(explicit)
    named = explicit or any(
        os.environ.get(v) for v in ("HEALERD_SOCKET", "RUNTIME_DIRECTORY", "STATE_DIRECTORY", "HEALERD_STATE_DIR")
    )
    if not named and not os.path.exists(path) and os.path.exists(SYSTEM_SOCKET):
        return SYSTEM_SOCKET
    return path


def _connect_error(exc: OSError, path: str) -> DaemonUnreachable:
    code = exc.errno
    if isinstance(exc, FileNotFoundError) or code == errno.ENOENT:
        return DaemonUnreachable("socket missing (is healerd running?)", path)
    if isinstance(exc, ConnectionRefusedError) or code == errno.ECONNREFUSED:
        return DaemonUnreachable("connection refused (no daemon is listening on this socket)", path)
    if isinstance(exc, PermissionError) or code in (errno.EACCES, errno.EPERM):
        return DaemonUnreachable("permission denied (are you in the socket's group?)", path)
    if code == errno.ENOTDIR:
        return DaemonUnreachable("socket missing (a parent of the path is not a directory)", path)
    if code == errno.EAGAIN:
        return DaemonUnreachable("the daemon's connection queue is full; try again", path)
    if isinstance(exc, TimeoutError):
        return DaemonUnreachable("timed out connecting", path)
    return DaemonUnreachable(exc.strerror or str(exc), path)


# A daemon that is momentarily full (its listen queue overflows, or it answers `busy`
# before reading the request) has not seen the request: it is sent again after a short,
# growing pause with jitter, so a burst of clients spreads out instead of colliding again.
RETRY_FIRST_PAUSE = 0.005
RETRY_MAX_PAUSE = 0.25


class _QueueFull(Exception):
    """connect() failed with EAGAIN: the daemon's listen queue is full; `error` is what to raise."""

    def __init__(self, error: DaemonUnreachable):
        self.error = error
        super().__init__(str(error))


def call(socket_path: str, op: str, args: dict | None = None, timeout: float = 30.0) -> Any:
    """Send one request and return its result.

    Raises DaemonUnreachable (the daemon cannot be reached, or gave no answer within
    `timeout` seconds) or ControlError (the daemon answered with an error). A full listen
    queue or a `busy` answer is retried until `timeout` runs out, then raised.
    """
    path = os.fspath(socket_path)
    if len(os.fsencode(path)) > 107:
        raise DaemonUnreachable("the socket path is too long for a Unix socket (max 107 bytes)", path)
    request = protocol.encode({"op": op, "args": args or {}})
    deadline = time.monotonic() + timeout
    pause = RETRY_FIRST_PAUSE
    error: Exception | None = None
    while True:
        try:
            response = _exchange(path, request, deadline, timeout)
        except _QueueFull as full:
            error = full.error
        except DaemonUnreachable:
            # A try after a `busy` (or a full queue) whose answer the deadline cut off: the daemon
            # was full, and that is what the caller is told, not "no answer".
            if error is not None and time.monotonic() >= deadline:
                raise error from None
            raise
        else:
            if response.get("ok") is True:
                return response.get("result")
            error = ControlError.from_dict(response.get("error"))
            if error.code != "busy":
                raise error
        import random  # only on a retry: an answer at the first try never needs it

        wait = pause * (0.5 + random.random() / 2)
        if time.monotonic() + wait >= deadline:
            raise error
        time.sleep(wait)
        pause = min(pause * 2, RETRY_MAX_PAUSE)


def _check_server(sock: socket.socket, path: str) -> None:
    """Refuse to talk to a process that is not the expected daemon user (SO_PEERCRED): another
    local user listening first on the socket path would otherwise receive the request, tokens
    and cookies included. Who is expected: `healerd.private.expected_server_uids`."""
    import struct

    from healerd.private import expected_server_uids

    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):
        return   # no SO_PEERCRED on this platform: nothing to check with
    _pid, uid, _gid = struct.unpack("3i", raw)
    if uid not in expected_server_uids(path):
        raise DaemonUnreachable(f"the process on the socket runs as uid {uid}, not as the expected daemon user "
                                f"(root, you, or the owner of the socket's directory in a place only root or you "
                                f"can write to); nothing was sent", path)


def _exchange(path: str, request: bytes, deadline: float, timeout: float) -> dict:
    """One connection: send the framed request, return the daemon's framed answer."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(max(0.001, min(deadline - time.monotonic(), 10.0)))
        try:
            sock.connect(path)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                raise _QueueFull(_connect_error(exc, path)) from None
            raise _connect_error(exc, path) from None
        _check_server(sock, path)
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        try:
            sock.sendall(request)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the daemon answered early (busy, forbidden, too_large) and closed: read that answer
        except TimeoutError:
            raise DaemonUnreachable(f"no answer within {timeout:g}s", path) from None
        try:
            return protocol.read_frame(sock, protocol.MAX_RESPONSE, deadline)
        except TimeoutError:
            raise DaemonUnreachable(f"no answer within {timeout:g}s", path) from None
        except (EOFError, ConnectionResetError):
            raise DaemonUnreachable("the daemon closed the connection without answering", path) from None
        except ControlError as exc:
            raise ControlError("internal_error", f"unreadable answer from the daemon: {exc.message}") from None
        except OSError as exc:
            raise DaemonUnreachable(f"error reading the answer: {exc.strerror or exc}", path) from None
    finally:
        sock.close()
