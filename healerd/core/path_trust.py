"""Whether what `lstat`/`fstat` said of a path lets the daemon write or read there (pure).

The daemon often runs as root; another local user must not steer it through a path. The
rules, after sshd's `StrictModes`:
- every existing directory on the way to a file is owned by root or the daemon's user and is
  writable by nobody else, except a sticky directory (`/tmp`, mode 1777): there another user
  may add names but cannot rename or remove the daemon's or root's, so the entries below it
  that are checked here cannot be swapped;
- a symbolic link on the way is followed only when root or the daemon's user owns it;
- a file the daemon writes to is a regular file of the daemon's user that nobody else may
  write (one it created earlier, on an earlier run, qualifies; another user's does not);
- a file the daemon reads (a blueprint of the sources directory) is a regular file; reached
  through a symbolic link, the link and the file both belong to root or the daemon's user.

Each function answers None (fine) or the reason, one phrase naming the owner, for the
caller's one line `refusing <what> <path>: <reason>`. `name` turns a uid into words.
"""

from __future__ import annotations

import stat
from collections.abc import Callable

Namer = Callable[[int], str]

KINDS = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a character device",
         stat.S_IFBLK: "a block device", stat.S_IFDIR: "a directory", stat.S_IFLNK: "a symbolic link",
         stat.S_IFREG: "a regular file"}


def kind(mode: int) -> str:
    return KINDS.get(stat.S_IFMT(mode), "not a regular file")


def trusted(uid: int, me: int) -> bool:
    """Root and the daemon's own user: the only owners whose paths the daemon follows."""
    return uid in (0, me)


def _ours(me: int, name: Namer) -> str:
    return "root" if me == 0 else f"root or {name(me)}"


def link_problem(uid: int, me: int, name: Namer) -> str | None:
    """A symbolic link on the way (or at the end): followed only when root or the daemon's user owns it."""
    if trusted(uid, me):
        return None
    return f"it is a symbolic link owned by {name(uid)}; healerd follows links of {_ours(me, name)} only"


def directory_problem(uid: int, mode: int, me: int, name: Namer) -> str | None:
    """An existing directory on the way to a file (StrictModes, with sticky directories allowed)."""
    if not stat.S_ISDIR(mode):
        return f"it is {kind(mode)}, not a directory"
    if not trusted(uid, me):
        return f"it is a directory owned by {name(uid)}, not by {_ours(me, name)}"
    if mode & 0o022 and not mode & stat.S_ISVTX:
        who = "group and others" if mode & 0o022 == 0o022 else ("others" if mode & 0o002 else "its group")
        return (f"the directory (owned by {name(uid)}, mode {stat.S_IMODE(mode):04o}) is writable by {who}, "
                f"who could replace what is in it")
    return None


def written_file_problem(uid: int, mode: int, me: int, name: Namer) -> str | None:
    """A file opened to be appended to: a regular file of the daemon's user only it may write."""
    if not stat.S_ISREG(mode):
        return f"it is {kind(mode)} owned by {name(uid)}; healerd writes to regular files only"
    if uid != me:
        return f"the file belongs to {name(uid)}; healerd appends only to files it created ({name(me)})"
    if mode & 0o022:
        return (f"the file (owned by {name(uid)}, mode {stat.S_IMODE(mode):04o}) is writable by others; "
                f"healerd appends only to files no one else can write")
    return None


def read_file_problem(uid: int, mode: int, size: int, limit: int, me: int, name: Namer,
                      link_uid: int | None = None) -> str | None:
    """A file read whole (a blueprint): regular, at most `limit` bytes; through a link (`link_uid`
    is the link's owner) only a link and a file of root or the daemon's user."""
    if link_uid is not None:
        problem = link_problem(link_uid, me, name)
        if problem:
            return problem
    if not stat.S_ISREG(mode):
        return f"it is {kind(mode)} owned by {name(uid)}; only regular files are read"
    if link_uid is not None and not trusted(uid, me):
        return f"it is a symbolic link to a file of {name(uid)}; a link is followed to files of " \
               f"{_ours(me, name)} only"
    if size > limit:
        return f"it is {size:,} bytes, over the limit of {limit:,} (sources_max_bytes)"
    return None
