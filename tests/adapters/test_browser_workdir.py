"""The browser worker's work directory, where another local user (nobody) plays against root.

Without a mount namespace (root without CAP_SYS_ADMIN, as in some containers) the worker used to
fall back to `/tmp/healerd-browser-<pid>`: checked with islink, then made, chmodded and chowned
by name, so a symlink planted there in time handed a directory of root's to nobody. Now that
directory is made under a random name and changed through its fd; what a killed worker left is
removed; nothing another user planted changes owner or mode.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.httpfixture import LocalServer, page
from tests.support.other_user import NOBODY, as_other_user, needs_root
from tests.support.sitepages import ROWS

pytestmark = needs_root

PR_CAPBSET_DROP, CAP_SYS_ADMIN = 24, 21

# Runs the pool in a root process whose bounding set lacks CAP_SYS_ADMIN: no mount namespace.
CHILD = textwrap.dedent(f"""
    import ctypes, os, sys
    ctypes.CDLL(None, use_errno=True).prctl({PR_CAPBSET_DROP}, {CAP_SYS_ADMIN}, 0, 0, 0)
    os.execv(sys.executable, [sys.executable, "-c", sys.argv[2], "run", *sys.argv[3:]])
""")

POOL = textwrap.dedent("""
    import json, os, sys, psutil
    from healerd.adapters.browser import BrowserPool
    from healerd.adapters.fetch import FetchConfig, FetchError
    from healerd.config import BrowserSection
    state, url = sys.argv[2], sys.argv[3]
    pool = BrowserPool(BrowserSection(), FetchConfig(timeout=10.0, max_bytes=400_000), state)
    out = {}
    pool.fetch(url, wait_for="tr.player")
    out["first"] = pool._worker.hello["tmp"]
    out["private_tmp"] = pool._worker.hello["private_tmp"]
    out["first_files"] = os.listdir(out["first"])
    worker = psutil.Process(pool.worker_pid())
    for proc in worker.children(recursive=True) + [worker]:
        try:
            proc.kill()
        except psutil.Error:
            pass
    worker.wait(10)
    try:
        pool.fetch(url, wait_for="tr.player")
    except FetchError:   # the first may still meet the dying worker
        pool.fetch(url, wait_for="tr.player")
    out["second"] = pool._worker.hello["tmp"]
    out["first_after_kill"] = os.path.lexists(out["first"])
    pool.close()
    out["second_after_close"] = os.path.lexists(out["second"])
    out["browser_dir"] = os.listdir(os.path.join(state, "browser"))
    print(json.dumps(out))
""")


def _listing() -> str:
    rows = "".join(f'<tr class="player"><td>{n}</td><td>{s}</td></tr>' for n, s in ROWS)
    return f"<html><body><table>{rows}</table></body></html>"


def _snapshot(p: Path) -> tuple[int, int, int]:
    st = os.lstat(p)
    return st.st_uid, st.st_gid, st.st_mode


def test_no_mount_namespace_a_planted_symlink_changes_nothing_and_no_directory_is_left(tmp_path):
    src = LocalServer()
    try:
        src.route("/p", page(_listing()))
        victim = tmp_path / "victim"      # a directory of root's that nobody wants to own
        victim.mkdir(mode=0o755)
        state = tmp_path / "state"
        state.mkdir(mode=0o700)
        # nobody plants, at every name the old fallback would have used for the next pids, a link to it
        first_pid = os.getpid()
        planted = [f"/tmp/healerd-browser-{pid}" for pid in range(first_pid, first_pid + 400)
                   if not os.path.lexists(f"/tmp/healerd-browser-{pid}")]
        as_other_user(f"for p in {' '.join(planted)}; do ln -s {victim} $p; done")
        before = _snapshot(victim)
        try:
            r = subprocess.run([sys.executable, "-c", CHILD, "drop", POOL, str(state), src.url("/p")],
                               capture_output=True, text=True, timeout=300)
            assert r.returncode == 0, r.stderr
            out = json.loads(r.stdout.splitlines()[-1])
            assert out["private_tmp"] is False   # the fallback was taken, as it is in such a container
            assert _snapshot(victim) == before and os.listdir(victim) == []
            for link in planted:
                assert os.path.islink(link) and os.readlink(link) == str(victim)
                assert os.lstat(link).st_uid == NOBODY
            for d in (out["first"], out["second"]):
                assert d.startswith("/tmp/healerd-browser-") and d not in planted
            assert any("playwright" in name for name in out["first_files"])
            # the killed worker's directory went at the next start, the last one at the clean stop
            assert out["first_after_kill"] is False and out["second_after_close"] is False
            assert out["browser_dir"] == []
        finally:
            for link in planted:
                if os.path.islink(link):
                    os.unlink(link)
    finally:
        src.stop()


def test_the_worker_directory_is_made_never_adopted(tmp_path):
    """A `w<pid>` found (a link, another user's directory) is removed and made anew, through fds;
    the link's target is untouched."""
    from healerd.adapters.browser_host import own_dir

    base = tmp_path / "browser"
    base.mkdir(mode=0o700)
    target = tmp_path / "target"
    target.mkdir(mode=0o755)
    (base / f"w{os.getpid()}").symlink_to(target)
    path, fd = own_dir(str(base))
    try:
        st = os.fstat(fd)
        assert path == str(base / f"w{os.getpid()}") and not os.path.islink(path)
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (os.geteuid(), 0o700)
        assert os.stat(path).st_ino == st.st_ino
    finally:
        os.close(fd)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o755 and os.stat(target).st_uid == 0


def test_a_browser_directory_that_is_not_the_daemons_is_refused(tmp_path):
    from healerd.adapters.browser_host import own_dir
    from healerd.private import UnsafePath

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "browser").symlink_to(elsewhere)
    with pytest.raises(UnsafePath, match="symbolic link"):
        own_dir(str(tmp_path / "browser"))
    assert os.listdir(elsewhere) == []


INSTALLED_UNDER_TMP = textwrap.dedent("""
    import json, os, sys
    from healerd.adapters.browser import BrowserPool
    from healerd.adapters.fetch import FetchConfig
    from healerd.config import BrowserSection
    state, url = sys.argv[1], sys.argv[2]
    pool = BrowserPool(BrowserSection(), FetchConfig(timeout=10.0, max_bytes=400_000), state)
    pool.fetch(url, wait_for="tr")
    mine = os.path.join(state, "browser", f"w{pool.worker_pid()}")
    out = {"prefix": sys.prefix, "tmp": pool._worker.hello["tmp"], "private": pool._worker.hello["private_tmp"],
           "files": os.listdir(mine)}
    pool.close()
    out["left"] = os.listdir(os.path.join(state, "browser"))
    out["tmp_gone"] = not os.path.exists(out["tmp"])
    print(json.dumps(out))
""")


def test_installed_under_tmp_the_worker_still_gets_its_directory_under_the_state_dir(tmp_path):
    """An interpreter under /tmp (a test venv): the worker's directory is mounted over /var/tmp
    instead of a fallback in /tmp, so its profile lives under the state dir and goes with it."""
    import sysconfig
    import tempfile

    venv = Path(tempfile.mkdtemp(prefix="healerd-venv-", dir="/tmp"))
    src = LocalServer()
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
        python = venv / "bin" / "python"
        purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        Path(purelib, "host.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
        src.route("/p", page(_listing()))
        state = tmp_path / "state"
        r = subprocess.run([str(python), "-c", INSTALLED_UNDER_TMP, str(state), src.url("/p")],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout.splitlines()[-1])
        assert out["prefix"].startswith("/tmp/")
        if not os.path.realpath(sysconfig.get_paths()["purelib"]).startswith("/var/tmp/"):
            assert out["private"] is True and out["tmp"] == "/var/tmp"
            assert any("playwright" in name for name in out["files"])
        else:
            # Playwright itself lives under /var/tmp (a CI venv there) while the interpreter is under
            # /tmp: no temp dir is free to mount over. The worker's directory is then one made fresh
            # in /tmp (a random name), recorded under the state dir and removed with the worker.
            assert out["private"] is False and out["tmp"].startswith("/tmp/") and out["tmp"] != "/tmp"
            assert out["tmp_gone"] is True
        assert out["left"] == []
    finally:
        src.stop()
        import shutil

        shutil.rmtree(venv, ignore_errors=True)
