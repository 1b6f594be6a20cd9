"""Files and directories opened so that another local user cannot steer the daemon through them.

The judgement is `healerd.core.path_trust`'s (sshd's StrictModes); this module does the
system calls around it, so that what is judged is what is used:
- `check_parents`: every symbolic link on the way belongs to root or the daemon's user, and
  every existing directory of the resolved path passes `directory_problem`;
- `open_for_append` (a JSON Lines feed): missing directories are created 0700 one at a time
  (never adopted: each is checked again once made), the file is opened with
  O_NOFOLLOW|O_NONBLOCK (a FIFO can neither block the open nor a write) and kept only when
  `fstat` shows a regular file of the daemon's user that no one else may write;
- `new_private_dir` (a browser worker's directory): made with mkdir (fails when the name
  exists, so nothing is adopted) relative to a directory fd, opened with O_NOFOLLOW and
  changed only through that fd (`fchmod`, `fchown`);
- `read_capped` (a blueprint of the sources directory): `lstat` first, regular files only, a
  link followed only to root's or the daemon's user's file, at most `limit` bytes read.
Every refusal is `UnsafePath`, one line naming the path and its owner.
"""

from __future__ import annotations

import fcntl
import os
import stat

from healerd.core import path_trust
from healerd.private import UnsafePath

APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def owner_name(uid: int) -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (KeyError, ImportError):
        return f"uid {uid}"


def _refuse(what: str, path: str, reason: str) -> UnsafePath:
    return UnsafePath(f"refusing the {what} {path}: {reason}")


def check_parents(path: str, what: str) -> None:
    """UnsafePath unless every link and every existing directory on the way to `path` is
    trusted (see the module's doc); `path` itself is not looked at."""
    me = os.geteuid()
    absolute = os.path.abspath(path)
    current = "/"
    for part in absolute.split("/")[1:-1]:
        current = os.path.join(current, part)
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            break
        if stat.S_ISLNK(st.st_mode):
            problem = path_trust.link_problem(st.st_uid, me, owner_name)
            if problem:
                raise _refuse(what, path, f"{current}: {problem}")
    real = os.path.realpath(os.path.dirname(absolute))
    current = ""
    for part in [""] + real.split("/")[1:]:
        current = os.path.join(current, part) if current else "/"
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            break
        problem = path_trust.directory_problem(st.st_uid, st.st_mode, me, owner_name)
        if problem:
            raise _refuse(what, path, f"{current}: {problem}")


def make_parents(path: str, what: str) -> None:
    """The directories on the way to `path`, checked, and the missing ones created 0700 (then
    checked again: one another user made meanwhile is refused, never used)."""
    check_parents(path, what)
    parent = os.path.dirname(os.path.abspath(path))
    missing = []
    while not os.path.lexists(parent):
        missing.append(parent)
        parent = os.path.dirname(parent)
    if not missing:
        return
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            pass
    check_parents(path, what)


def _describe(path: str) -> str:
    """What `path` is now and whose, for a refusal (it could not be opened as a file of ours)."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return exc.strerror or str(exc)
    return f"it is {path_trust.kind(st.st_mode)} owned by {owner_name(st.st_uid)}"


def open_for_append(path: str, what: str = "feed file") -> int:
    """An fd appending to `path`, a regular file of this process's user (created 0600 when missing)."""
    make_parents(path, what)
    try:
        fd = os.open(path, APPEND_FLAGS, 0o600)
    except OSError as exc:
        # A link (ELOOP, or EACCES in a sticky directory), a FIFO without a reader (ENXIO), ...
        try:
            st = os.lstat(path)
        except OSError:
            raise exc from None
        problem = path_trust.written_file_problem(st.st_uid, st.st_mode, os.geteuid(), owner_name)
        if stat.S_ISLNK(st.st_mode):
            problem = _describe(path) + "; healerd writes to regular files only"
        if problem:
            raise _refuse(what, path, problem) from None
        raise
    try:
        st = os.fstat(fd)
        problem = path_trust.written_file_problem(st.st_uid, st.st_mode, os.geteuid(), owner_name)
        if problem:
            raise _refuse(what, path, problem)
        if st.st_mode & 0o077:
            os.fchmod(fd, 0o600)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_private_dir(path: str, what: str) -> int:
    """An fd of the directory `path` of this process's user, created 0700 when missing, mode set
    through the fd; a link, another user's directory or anything else is refused. Missing
    directories above it are made 0700 (a pool given a state dir not made yet)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), 0o700, exist_ok=True)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    try:
        fd = os.open(path, DIR_FLAGS)
    except OSError:
        if os.path.lexists(path):
            raise _refuse(what, path, _describe(path)) from None
        raise
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid():
            raise _refuse(what, path, f"it is a directory owned by {owner_name(st.st_uid)}")
        os.fchmod(fd, 0o700)
    except BaseException:
        os.close(fd)
        raise
    return fd


def new_private_dir(parent_fd: int, name: str, what: str) -> int:
    """An fd of a directory `name` made now in `parent_fd` (0700, this process's user): an
    existing name fails (FileExistsError) rather than being adopted."""
    os.mkdir(name, 0o700, dir_fd=parent_fd)
    fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid():   # never: the parent is this process's own 0700 directory
            raise _refuse(what, name, f"it is a directory owned by {owner_name(st.st_uid)}")
        os.fchmod(fd, 0o700)
    except BaseException:
        os.close(fd)
        raise
    return fd


class Refused(UnsafePath):
    """A file read was refused; `owner_trusted`: whether its owner is root or the daemon's user
    (only then may its contents or key names appear in an error)."""

    def __init__(self, message: str, owner_trusted: bool):
        super().__init__(message)
        self.owner_trusted = owner_trusted


def read_capped(path: str, limit: int, what: str = "blueprint file") -> tuple[bytes, bool]:
    """The bytes of `path` and whether its owner is root or the daemon's user; Refused for a FIFO,
    a device, a directory, an untrusted link or a file over `limit` bytes (nothing is read then)."""
    me = os.geteuid()
    st = os.lstat(path)
    link_uid = None
    if stat.S_ISLNK(st.st_mode):
        link_uid = st.st_uid
        problem = path_trust.link_problem(link_uid, me, owner_name)
        if problem:
            raise Refused(f"refusing the {what} {path}: {problem}", False)
        st = os.stat(path)
    problem = path_trust.read_file_problem(st.st_uid, st.st_mode, st.st_size, limit, me, owner_name, link_uid)
    if problem:
        raise Refused(f"refusing the {what} {path}: {problem}", path_trust.trusted(st.st_uid, me))
    fd = os.open(path, READ_FLAGS | (os.O_NOFOLLOW if link_uid is None else 0))
    try:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):   # replaced between the look and the open
            raise Refused(f"refusing the {what} {path}: it was replaced while being read", False)
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise Refused(f"refusing the {what} {path}: it grew past the limit of {limit:,} bytes (sources_max_bytes)",
                      path_trust.trusted(st.st_uid, me))
    return data, path_trust.trusted(st.st_uid, me)
