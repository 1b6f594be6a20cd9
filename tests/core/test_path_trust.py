"""The judgement of a path's owners and modes, on made-up stat results (no files)."""

from __future__ import annotations

import stat

import pytest

from healerd.core import path_trust as pt

ME, OTHER = 1000, 65534
DIR, REG, FIFO, LNK = stat.S_IFDIR, stat.S_IFREG, stat.S_IFIFO, stat.S_IFLNK


def name(uid: int) -> str:
    return {0: "root (uid 0)", ME: "healerd (uid 1000)", OTHER: "nobody (uid 65534)"}[uid]


@pytest.mark.parametrize("uid, mode, ok", [
    (0, DIR | 0o755, True),
    (ME, DIR | 0o700, True),
    (0, DIR | 0o1777, True),            # /tmp: sticky, nobody can swap root's or healerd's entries
    (OTHER, DIR | 0o755, False),        # another user's directory
    (OTHER, DIR | 0o1777, False),       # ...even sticky
    (0, DIR | 0o777, False),            # writable by all, not sticky
    (ME, DIR | 0o770, False),           # writable by the group
    (0, REG | 0o644, False),            # not a directory
])
def test_a_directory_on_the_way(uid, mode, ok):
    problem = pt.directory_problem(uid, mode, ME, name)
    assert (problem is None) == ok, problem
    if uid == OTHER:
        assert "nobody (uid 65534)" in problem


def test_links_are_followed_only_when_root_or_the_daemon_owns_them():
    assert pt.link_problem(0, ME, name) is None and pt.link_problem(ME, ME, name) is None
    assert "owned by nobody (uid 65534)" in pt.link_problem(OTHER, ME, name)
    assert "links of root only" in pt.link_problem(OTHER, 0, name)


@pytest.mark.parametrize("uid, mode, ok", [
    (ME, REG | 0o600, True),            # a file the daemon made, on this run or an earlier one
    (ME, REG | 0o644, True),            # readable by others: tightened by the caller, not refused
    (OTHER, REG | 0o600, False),        # pre-created by another user
    (0, REG | 0o600, False),            # root's, while the daemon runs as healerd: not its own
    (ME, REG | 0o666, False),           # anyone may write lines into it
    (ME, FIFO | 0o600, False),
    (OTHER, FIFO | 0o666, False),
])
def test_a_file_appended_to(uid, mode, ok):
    problem = pt.written_file_problem(uid, mode, ME, name)
    assert (problem is None) == ok, problem
    if not ok:
        assert name(uid) in problem


def test_a_file_read_whole():
    def judge(uid, mode, size=10, link_uid=None):
        return pt.read_file_problem(uid, mode, size, 1_000_000, ME, name, link_uid)

    assert judge(OTHER, REG | 0o644) is None                   # a file in the directory, whoever wrote it
    assert "FIFO" in judge(0, FIFO | 0o644)
    assert "over the limit of 1,000,000" in judge(ME, REG | 0o600, size=1 << 30)
    assert judge(0, REG | 0o600, link_uid=0) is None            # root's link to root's file
    assert "symbolic link owned by nobody" in judge(0, REG | 0o600, link_uid=OTHER)
    assert "file of nobody" in judge(OTHER, REG | 0o600, link_uid=ME)
    assert pt.kind(stat.S_IFCHR) == "a character device" and pt.kind(LNK) == "a symbolic link"
