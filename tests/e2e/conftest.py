"""Fixtures of the end-to-end tests."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest


@pytest.fixture
def small_fs():
    """A 24 MB tmpfs, unmounted afterwards; skipped where mounting is not allowed."""
    mnt = Path(f"/tmp/healerd-smallfs-{uuid.uuid4().hex[:8]}")
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m,mode=0700", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        mnt.rmdir()
        pytest.skip(f"cannot mount a small file system here: {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        mnt.rmdir()
