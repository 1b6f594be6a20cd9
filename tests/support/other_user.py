"""Another local user for a test: shell commands run as `nobody` (the test itself runs as root)."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.support.control_kit import as_nobody

NOBODY = 65534

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another local user")


def as_other_user(script: str, timeout: float = 30.0) -> subprocess.CompletedProcess:
    """`sh -c script` as nobody:nogroup; a failure fails the test with what the shell said."""
    r = subprocess.run(["sh", "-c", script], preexec_fn=as_nobody, cwd="/", capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0, f"as nobody: {script}: {r.stderr}"
    return r


def shared_dir(path: os.PathLike | str) -> str:
    """`path` made a world-writable sticky directory (like /tmp) that nobody can reach."""
    os.makedirs(path, exist_ok=True)
    os.chmod(path, 0o1777)
    p = os.path.abspath(path)
    while p != "/":   # the pytest temp dirs above it are root's 0700: let others through (not list)
        p = os.path.dirname(p)
        mode = os.stat(p).st_mode & 0o7777
        if not mode & 0o001:
            os.chmod(p, mode | 0o011)
    return str(path)
