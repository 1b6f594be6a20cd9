"""Parser children this test process left running, told apart from other processes' children.

A parser child is this interpreter run as `python -I -S -c ...`. Other test processes (parallel test
workers) run parsers of their own at the same time, so "any such process on the machine" is not
this test's leftover. `adopt_orphans()` makes this process a child subreaper: a grandchild whose
parent died is re-parented here, not to init, so it is still counted among this process's own.
"""

from __future__ import annotations

import ctypes
import os
import sys

PR_SET_CHILD_SUBREAPER = 36


def adopt_orphans(on: bool = True) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1 if on else 0, 0, 0, 0)


def _parent_of(pid: str) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _descendants() -> set[str]:
    parents = {pid: _parent_of(pid) for pid in os.listdir("/proc") if pid.isdigit()}
    mine, frontier = set(), {os.getpid()}
    while frontier:
        found = {pid for pid, ppid in parents.items() if ppid in frontier and pid not in mine}
        mine |= found
        frontier = {int(p) for p in found}
    return mine


def leftover_parser_children() -> list[int]:
    """This process's descendants still running as a parser child."""
    found = []
    for pid in _descendants():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv[:3] == [sys.executable.encode(), b"-I", b"-S"]:
            found.append(int(pid))
    return found
