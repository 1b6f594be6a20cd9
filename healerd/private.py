"""Private by default: the daemon's files are its own, whatever the umask.

The state dir holds cookies and Authorization values (in blueprints and snapshots), so:
- the daemon runs with umask 077: every file it creates (the database, its -wal and -shm,
  alerts.jsonl, the socket before its mode is set) is owner-only;
- directories it creates are 0700; files it finds are tightened to 0600 at start;
- a state dir, log dir, socket directory, socket or log file that is a symlink another user
  could have planted, or that another user owns, is refused with one line (UnsafePath).

A symlinked directory is trusted only when root owns the link (systemd's `DynamicUser=`
makes /var/lib/healerd a root-owned link to /var/lib/private/healerd); whatever it points to
must then pass the same owner check. The socket and the files are never followed as links.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from healerd.core.errors import HealerdError

PRIVATE_UMASK = 0o077
DIR_MODE = 0o700
FILE_MODE = 0o600


class UnsafePath(HealerdError):
    """A path the daemon refuses to use (a foreign symlink, another user's file)."""


def _owner(uid: int) -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (KeyError, ImportError):
        return f"uid {uid}"


def check_path(path: str | os.PathLike, what: str, root_ok: bool = False, links_ok: bool = True) -> bool:
    """Raise UnsafePath when `path` is a symlink not owned by root, or (after following a
    trusted link) is owned by a user other than this process's (or root, with `root_ok`).
    False when it does not exist."""
    p = os.fspath(path)
    me = os.geteuid()
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(st.st_mode):
        if not links_ok:
            raise UnsafePath(f"refusing the {what} {p}: it is a symbolic link; healerd writes only to a real file")
        if st.st_uid != 0:
            raise UnsafePath(f"refusing the {what} {p}: it is a symbolic link owned by {_owner(st.st_uid)}, "
                             f"not by root; use the real path")
        try:
            st = os.stat(p)
        except FileNotFoundError:
            raise UnsafePath(f"refusing the {what} {p}: it is a symbolic link to nothing") from None
    if st.st_uid != me and not (root_ok and st.st_uid == 0):
        raise UnsafePath(f"refusing the {what} {p}: it belongs to {_owner(st.st_uid)}, and healerd runs as "
                         f"{_owner(me)}")
    return True


def private_dir(path: str | os.PathLike, what: str) -> Path:
    """Make sure `path` is a directory of ours (created 0700 when missing) and return it."""
    p = Path(path)
    if not check_path(p, what):
        p.parent.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
        try:
            p.mkdir(mode=DIR_MODE)
        except FileExistsError:
            pass
        check_path(p, what)   # lost a race to someone else's symlink or directory
        os.chmod(p, DIR_MODE)
    elif not p.is_dir():
        raise UnsafePath(f"refusing the {what} {p}: it is not a directory")
    return p


def private_file(path: str | os.PathLike, what: str) -> None:
    """An existing file of ours is made owner-only (0600); a foreign one or a symlink is refused."""
    if check_path(path, what, links_ok=False):
        st = os.stat(path)
        if stat.S_IMODE(st.st_mode) & 0o077:
            os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o077 & 0o7777)


def secure_daemon_paths(state_dir: str, log_dir: str, socket_path: str, db_file: str,
                        log_files: tuple[str, ...] = ("alerts.jsonl",)) -> None:
    """Everything the daemon is about to use, checked and made private; UnsafePath on refusal.
    Sets the process umask to 077 first, so whatever is created afterwards is owner-only."""
    os.umask(PRIVATE_UMASK)
    private_dir(state_dir, "state dir")
    private_dir(log_dir, "log dir")
    sock_dir = os.path.dirname(os.path.abspath(socket_path))
    if not check_path(sock_dir, "socket directory", root_ok=True):   # /tmp or /run: root's, fine
        private_dir(sock_dir, "socket directory")
    if os.path.lexists(socket_path):
        check_path(socket_path, "socket", links_ok=False)
    for suffix in ("", "-wal", "-shm", "-journal"):
        private_file(db_file + suffix, "database file")
    for name in log_files:
        private_file(os.path.join(log_dir, name), "log file")


def expected_server_uids(socket_path: str) -> set[int]:
    """The uids `healerctl` accepts at the other end of the socket.

    root; the user running healerctl; and the owner of the socket's directory when that
    directory sits in a directory only root or this user can write to (so no other user
    could have created it there: /run/healerd under systemd, a state dir in your home).
    A socket in a directory another user made in a shared place (/tmp) is not trusted.
    """
    me = os.geteuid()
    uids = {0, me}
    sock_dir = os.path.dirname(os.path.abspath(socket_path))
    try:
        d = os.lstat(sock_dir)
        parent = os.stat(os.path.dirname(sock_dir) or "/")
    except OSError:
        return uids
    if stat.S_ISDIR(d.st_mode) and parent.st_uid in (0, me) and not parent.st_mode & 0o022:
        uids.add(d.st_uid)
    return uids
