"""What keeps a healerd process small: httpx without its command-line tool's libraries, one
malloc arena. Each check runs in a fresh interpreter, since both act on a process's first imports
and first threads."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest


def _run(code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=full_env)


@pytest.mark.skipif(importlib.util.find_spec("pygments") is None, reason="needs pygments installed (pytest brings it)")
def test_httpx_comes_without_its_command_line_libraries_and_they_stay_importable():
    out = _run(
        "import sys\n"
        "from healerd.adapters.lean_process import import_httpx\n"
        "import_httpx()\n"
        "print('httpx' in sys.modules, 'pygments' in sys.modules, 'rich' in sys.modules)\n"
        "import httpx\n"
        "with httpx.Client() as c: pass\n"
        "import pygments\n"          # released afterwards: a later import works
        "print(pygments.__name__)\n")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False", "False", "pygments"]


@pytest.mark.skipif(importlib.util.find_spec("pygments") is None, reason="needs pygments installed (pytest brings it)")
def test_a_plain_httpx_import_does_bring_them():
    # The premise of the above: without import_httpx, httpx's own tool imports pygments.
    out = _run("import sys, httpx\nprint('pygments' in sys.modules)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True"]


def test_a_library_imported_before_is_left_alone():
    out = _run(
        "import sys, click\n"
        "from healerd.adapters.lean_process import import_httpx\n"
        "import_httpx()\n"
        "print(sys.modules['click'] is click)\n")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True"]


_ARENAS = (
    "import ctypes, sys, threading\n"
    "from healerd.adapters.lean_process import limit_malloc_arenas\n"
    "print(limit_malloc_arenas(), flush=True)\n"
    "def grab():\n"
    "    keep.append(bytearray(3_000))\n"       # a malloc on this thread: glibc gives it an arena
    "    together.wait()\n"                     # all four alive at once: none takes a freed arena
    "keep = []\n"
    "together = threading.Barrier(4)\n"
    "threads = [threading.Thread(target=grab) for _ in range(4)]\n"
    "[t.start() for t in threads]\n"
    "[t.join() for t in threads]\n"
    "ctypes.CDLL(None).malloc_stats()\n"         # one 'Arena N:' block per arena, on stderr
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_threads_share_one_malloc_arena():
    out = _run(_ARENAS)
    if "Arena 0:" not in out.stderr:
        pytest.skip("not glibc's malloc")
    assert out.stdout.split() == ["True"]
    assert out.stderr.count("Arena ") == 1, out.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_the_persons_malloc_arena_max_wins():
    out = _run(_ARENAS, env={"MALLOC_ARENA_MAX": "3"})
    if "Arena 0:" not in out.stderr:
        pytest.skip("not glibc's malloc")
    assert out.stdout.split() == ["False"]
    assert out.stderr.count("Arena ") == 3, out.stderr   # the main one and two more: the person's limit
