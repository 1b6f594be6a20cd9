"""What the browser worker's process is allowed to be: its user, its files, its sandbox.

Run by the browser worker before it starts Playwright (`prepare`), and by the daemon when a
browser source is added (`write_execute_denied`):
- the worker's files (Chromium's profile, Playwright's temp files) live in a 0700 directory of
  its own under the state dir's browser/ (`w<pid>`); a worker starting removes what workers no
  longer running left there, so a killed worker leaves nothing behind for longer than the next
  start (a retiring worker, still rendering, keeps its own); TMPDIR and HOME point there;
- started by root, the worker gives up root before launching anything: the directory is
  handed to nobody/nogroup, mounted over /tmp in a mount namespace of the worker's own (the
  state dir above it is root's 0700 directory, which nobody cannot enter), then the worker
  drops to nobody/nogroup with no supplementary groups;
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
import sys

from healerd.adapters.sandbox import unprivileged_ids

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_REC, MS_PRIVATE, MS_BIND = 0x4000, 0x40000, 0x1000
PR_GET_MDWE = 66
DROP_IN = "contrib/systemd/healerd.service.d/browser.conf"


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


def empty_dir(path: str) -> None:
    """`path` as an empty 0700 directory of this process's user (what a killed worker left is removed)."""
    if os.path.islink(path):
        os.unlink(path)
    if os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path, mode=0o700, exist_ok=True)
    os.chmod(path, 0o700)


def _running_worker(pid: int) -> bool:
    """True when `pid` is a live browser worker (a retiring one still rendering its last pages)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"healerd.adapters.browser_worker" in f.read()
    except OSError:
        return False


def own_dir(base: str) -> str:
    """This worker's directory under `base` (the state dir's browser/), emptied; what workers that
    are no longer running left there (killed ones included) is removed. A worker being retired
    keeps its own until it ends: a new worker starts beside it."""
    os.makedirs(base, mode=0o700, exist_ok=True)
    if os.path.islink(base) or not os.path.isdir(base):
        raise OSError(f"{base} is not a directory")
    os.chmod(base, 0o700)
    for name in os.listdir(base):
        if name.startswith("w") and name[1:].isdigit() and _running_worker(int(name[1:])):
            continue
        victim = os.path.join(base, name)
        if os.path.isdir(victim) and not os.path.islink(victim):
            shutil.rmtree(victim, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(victim)
    mine = os.path.join(base, f"w{os.getpid()}")
    empty_dir(mine)
    return mine


def prepare(base: str) -> dict:
    """Set this (still single-threaded) worker process up before Playwright starts; returns
    what the daemon is told: {"uid", "tmp", "private_tmp", "sandbox", "why"}."""
    path = own_dir(base)
    tmp, private_tmp = path, False
    if os.geteuid() == 0:
        uid, gid = unprivileged_ids()
        os.chown(path, uid, gid)
        try:
            if _installed_under("/tmp"):
                # Mounting over /tmp would hide the interpreter's own files and Playwright's
                # driver from this process: the fallback below instead.
                raise OSError("healerd is installed under /tmp")
            _own_tmp(path)
            tmp, private_tmp = "/tmp", True
        except OSError:
            # No mount namespace (a container without CAP_SYS_ADMIN): a 0700 directory of
            # nobody's under the system temp dir instead, emptied the same way.
            tmp = os.path.join("/tmp", f"healerd-browser-{os.getpid()}")
            empty_dir(tmp)
            os.chown(tmp, uid, gid)
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    for var in ("TMPDIR", "HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        os.environ[var] = tmp
    os.chdir(tmp)
    why = sandbox_problem()
    return {"uid": os.geteuid(), "tmp": tmp, "private_tmp": private_tmp, "sandbox": why is None, "why": why or ""}


def _installed_under(top: str) -> bool:
    """Whether the interpreter's prefix or Playwright's package (its driver) lies under `top`."""
    import playwright

    places = [sys.prefix, os.path.dirname(playwright.__file__)]
    top = os.path.realpath(top).rstrip("/") + "/"
    return any(os.path.realpath(p).startswith(top) for p in places)


def _own_tmp(path: str) -> None:
    """Mount `path` over /tmp in a new mount namespace of this process (and its children)."""
    libc = _libc()
    if libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        raise OSError(ctypes.get_errno(), "mount --make-rprivate /")
    if libc.mount(os.fsencode(path), b"/tmp", None, MS_BIND, None) != 0:
        raise OSError(ctypes.get_errno(), "mount --bind")


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
