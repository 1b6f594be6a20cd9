"""What the browser worker's process is allowed to be: its user, its files, its sandbox.

Run by the browser worker before it starts Playwright (`prepare`), and by the daemon when a
browser source is added (`write_execute_denied`):
- the worker's files (Chromium's profile, Playwright's temp files) live in a 0700 directory of
  its own under the state dir's browser/ (`w<pid>`), made by the worker (mkdir: a name found is
  never adopted) and changed only through the fd it holds (`fchmod`, `fchown`); a worker
  starting, the daemon starting and the daemon stopping cleanly remove what workers no longer
  running left there, so a killed worker leaves nothing behind for long (a retiring worker,
  still rendering, keeps its own); TMPDIR and HOME point there;
- started by root, the worker gives up root before launching anything: the directory is
  handed to nobody/nogroup, mounted over /tmp (or /var/tmp, when healerd is installed under
  /tmp) in a mount namespace of the worker's own (the state dir above it is root's 0700
  directory, which nobody cannot enter), then the worker drops to nobody/nogroup with no
  supplementary groups. Without a mount namespace (a container without CAP_SYS_ADMIN) the
  worker makes a directory of a random name in /tmp instead (mkdtemp, then fchown through
  its fd) and records its path beside its own directory, so it is removed the same way;
- Chromium's own sandbox needs user namespaces: `sandbox_problem` tries to create one in a
  child; when it cannot, the browser runs with --no-sandbox and the daemon logs why, once;
- Playwright's driver (Node) and Chromium's V8 need writable+executable memory, which
  systemd's MemoryDenyWriteExecute=yes (a seccomp filter, or the kernel's PR_SET_MDWE) denies:
  `write_execute_denied` finds that out by asking for such a page.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import mmap
import os
import shutil
import stat
import sys
import tempfile

from healerd.adapters.safe_files import new_private_dir, open_private_dir
from healerd.adapters.sandbox import unprivileged_ids

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_REC, MS_PRIVATE, MS_BIND = 0x4000, 0x40000, 0x1000
PR_GET_MDWE = 66
DROP_IN = "contrib/systemd/healerd.service.d/browser.conf"
MOUNT_TARGETS = ("/tmp", "/var/tmp")   # the first one healerd is not installed under is the worker's /tmp
OUTSIDE_PARENT = "/tmp"                # without a mount namespace: the worker's directory is made here
OUTSIDE_PREFIX = "healerd-browser-"
OUTSIDE = ".outside"                   # w<pid>.outside: the path of that directory, for its removal


def _libc():
    return ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def write_execute_denied() -> bool:
    """True when this process may not map writable+executable memory (MemoryDenyWriteExecute)."""
    try:
        if _libc().prctl(PR_GET_MDWE, 0, 0, 0, 0) > 0:
            return True
    except (OSError, AttributeError):
        pass
    try:
        page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    except PermissionError:
        return True
    except OSError as exc:
        return exc.errno in (errno.EPERM, errno.EACCES)
    page.close()
    return False


def mdwe_problem() -> str | None:
    """One line naming the drop-in when the browser cannot run in this process's confinement."""
    if write_execute_denied():
        return ("a browser fetch cannot run under MemoryDenyWriteExecute=yes (Playwright's driver and Chromium's "
                f"JavaScript engine need writable+executable memory): install {DROP_IN} "
                f"(contrib/install.sh --browser) and restart healerd")
    return None


def _running_worker(pid: int) -> bool:
    """True when `pid` is a live browser worker (a retiring one still rendering its last pages)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"healerd.adapters.browser_worker" in f.read()
    except OSError:
        return False


def _worker_of(name: str) -> int | None:
    """The pid in `w<pid>` or `w<pid>.outside`, else None."""
    stem = name[:-len(OUTSIDE)] if name.endswith(OUTSIDE) else name
    return int(stem[1:]) if stem.startswith("w") and stem[1:].isdigit() else None


def _remove_at(dir_fd: int, name: str) -> None:
    """Remove `name` in `dir_fd` whatever it is, never following a link (rmtree works by fds)."""
    with contextlib.suppress(FileNotFoundError):
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(name, dir_fd=dir_fd)
        else:
            os.unlink(name, dir_fd=dir_fd)


def _remove_outside(dir_fd: int, record: str) -> None:
    """Remove the directory a worker without a mount namespace made in the system temp dir (its
    path is in `record`, written by that worker while it was still root)."""
    fd = os.open(record, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        path = os.read(fd, 4096).decode("utf-8", "replace")
    finally:
        os.close(fd)
    parent, name = os.path.split(path)
    if parent != OUTSIDE_PARENT or not name.startswith(OUTSIDE_PREFIX):
        return
    pfd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        _remove_at(pfd, name)
    finally:
        os.close(pfd)


def remove_leftovers(base: str) -> None:
    """Empty the browser directory `base` (the state dir's browser/, made when missing) of what
    workers left: every entry but those of workers still running (a retiring worker keeps its
    files until it ends). A killed worker's directory goes here, at the latest at
    the next worker's start, the daemon's start or its clean stop."""
    base_fd = open_private_dir(base, "browser directory")
    try:
        _clean(base_fd)
    finally:
        os.close(base_fd)


def _clean(base_fd: int) -> None:
    for name in os.listdir(base_fd):
        pid = _worker_of(name)
        if pid is not None and _running_worker(pid):
            continue
        with contextlib.suppress(OSError):
            if name.endswith(OUTSIDE):
                _remove_outside(base_fd, name)
            _remove_at(base_fd, name)


def own_dir(base: str) -> tuple[str, int]:
    """This worker's directory under `base` (the state dir's browser/), made now, and an fd of
    it; what workers that are no longer running left there (killed ones included) is removed
    first. Never a directory found: the name `w<pid>` is removed when a process of that pid
    left it, then made anew."""
    base_fd = open_private_dir(base, "browser directory")
    try:
        _clean(base_fd)
        name = f"w{os.getpid()}"
        _remove_at(base_fd, name)
        fd = new_private_dir(base_fd, name, "browser work directory")
    finally:
        os.close(base_fd)
    return os.path.join(base, name), fd


def prepare(base: str) -> dict:
    """Set this (still single-threaded) worker process up before Playwright starts; returns
    what the daemon is told: {"uid", "tmp", "private_tmp", "sandbox", "why"}."""
    path, fd = own_dir(base)
    tmp, private_tmp = path, False
    try:
        if os.geteuid() == 0:
            uid, gid = unprivileged_ids()
            os.fchown(fd, uid, gid)
            mounted = _own_tmp(path, fd)
            if mounted:
                tmp, private_tmp = mounted, True
            else:
                # No mount namespace (a container without CAP_SYS_ADMIN): a directory made now
                # under the system temp dir (a random name; a name found is never adopted),
                # handed to nobody through its fd; its path is recorded beside the worker's own
                # directory, so that it is removed with it.
                tmp = _outside_dir(base, uid, gid)
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
    finally:
        os.close(fd)
    for var in ("TMPDIR", "HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        os.environ[var] = tmp
    os.chdir(tmp)
    why = sandbox_problem()
    return {"uid": os.geteuid(), "tmp": tmp, "private_tmp": private_tmp, "sandbox": why is None, "why": why or ""}


def _outside_dir(base: str, uid: int, gid: int) -> str:
    path = tempfile.mkdtemp(prefix=OUTSIDE_PREFIX, dir=OUTSIDE_PARENT)   # mkdir: fails on any name found
    base_fd = open_private_dir(base, "browser directory")
    try:
        rfd = os.open(f"w{os.getpid()}{OUTSIDE}", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                      0o600, dir_fd=base_fd)
        try:
            os.write(rfd, path.encode())
        finally:
            os.close(rfd)
    finally:
        os.close(base_fd)
    # /tmp is sticky: no other user can rename or replace root's new directory before this open.
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if os.fstat(fd).st_uid != 0:
            raise OSError(f"{path} is not the directory just made")
        os.fchmod(fd, 0o700)
        os.fchown(fd, uid, gid)
    finally:
        os.close(fd)
    return path


def _installed_under(top: str) -> bool:
    """Whether the interpreter's prefix or Playwright's package (its driver) lies under `top`."""
    import playwright

    places = [sys.prefix, os.path.dirname(playwright.__file__)]
    top = os.path.realpath(top).rstrip("/") + "/"
    return any(os.path.realpath(p).startswith(top) for p in places)


def _own_tmp(path: str, fd: int) -> str | None:
    """Mount the directory `path` (of `fd`) over a temp dir (/tmp, else /var/tmp when healerd or Playwright
    is installed under /tmp) in a new mount namespace of this process (and its children): the
    temp dir it was mounted over, or None when this process cannot have a mount namespace."""
    target = next((t for t in MOUNT_TARGETS if os.path.isdir(t) and not os.path.islink(t)
                   and not _installed_under(t)), None)
    if target is None:
        return None
    libc = _libc()
    if libc.unshare(CLONE_NEWNS) != 0:
        return None
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return None
    # By name: an fd of the old namespace cannot be a bind's source. The name is safe (root's 0700
    # state dir above it), and what was mounted is checked to be the directory of `fd`.
    if libc.mount(os.fsencode(path), os.fsencode(target), None, MS_BIND, None) != 0:
        return None
    mine, there = os.fstat(fd), os.stat(target)
    if (mine.st_dev, mine.st_ino) != (there.st_dev, there.st_ino):
        raise OSError(f"{target} is not the worker's directory after the mount")
    return target


def sandbox_problem() -> str | None:
    """Why Chromium's sandbox cannot start here (a user namespace cannot be created), or None."""
    pid = os.fork()
    if pid == 0:   # pragma: no cover - the child only reports
        code = 0
        try:
            if _libc().unshare(CLONE_NEWUSER) != 0:
                code = ctypes.get_errno() or 1
        except Exception:
            code = 1
        os._exit(min(code, 255))
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code == 0:
        return None
    reason = os.strerror(code) if code > 0 else f"signal {-code}"
    return f"user namespaces are not available to uid {os.geteuid()} ({reason}: kernel.unprivileged_userns_clone, " \
           f"user.max_user_namespaces or the service's RestrictNamespaces=)"
