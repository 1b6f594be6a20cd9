"""Local users and broken storage: files private whatever the umask, planted symlinks and
other users' directories refused, an impostor on the socket refused by healerctl, a corrupt
database stopping the daemon with exit 78 instead of running (or looping)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import apsw
import pytest

from tests.support.daemon import FAST_CONFIG, bin_cmd
from tests.support.sitepages import LISTING_BP, listing_v1, write_blueprint

OTHER_UID = 54321

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another local user")


def _mode(p: Path) -> int:
    return stat.S_IMODE(os.stat(p).st_mode)


def test_files_are_owner_only_under_umask_022(site, daemon_factory, tmp_path):
    site.page("/stats", listing_v1())
    old = os.umask(0o022)
    try:
        d = daemon_factory().start()
    finally:
        os.umask(old)
    bp = write_blueprint(tmp_path / "s.json", site.url("/stats"))
    assert d.ctl("add", "scores", "--blueprint", bp).returncode == 0
    assert ": ok" in d.ctl("run", "scores").stdout
    site.page("/stats", "<html><body>gone</body></html>")
    d.ctl("run", "scores")
    d.wait_for(lambda: (d.state / "alerts.jsonl").exists() and (d.state / "alerts.jsonl").stat().st_size > 0,
               what="an alert in alerts.jsonl")
    assert _mode(d.state) == 0o700
    for name in ("healerd.db", "healerd.db-wal", "healerd.db-shm", "alerts.jsonl"):
        assert _mode(d.state / name) == 0o600, name
    assert _mode(Path(d.socket)) == 0o600


def test_existing_files_are_tightened_at_start(daemon_factory):
    d = daemon_factory()
    d.state.mkdir(parents=True)
    (d.state / "alerts.jsonl").write_text("")
    os.chmod(d.state / "alerts.jsonl", 0o644)
    d.start()
    assert _mode(d.state / "alerts.jsonl") == 0o600 and _mode(d.state / "healerd.db") == 0o600


def _run_daemon(tmp: Path, state: Path, extra: list[str] | None = None, timeout: float = 30.0):
    cfg = tmp / "healerd.toml"
    cfg.write_text(FAST_CONFIG)
    return subprocess.run(bin_cmd("healerd") + ["run", "--config", str(cfg), "--state-dir", str(state),
                                               "--socket", str(tmp / "x.sock"), *(extra or [])],
                          cwd=tmp, capture_output=True, text=True, timeout=timeout)


@needs_root
def test_a_symlinked_state_dir_planted_by_another_user_is_refused(tmp_path):
    attacker_dir = tmp_path / "attacker"
    attacker_dir.mkdir()
    os.chown(attacker_dir, OTHER_UID, OTHER_UID)
    link = tmp_path / "healerd-state"
    link.symlink_to(attacker_dir)
    os.lchown(link, OTHER_UID, OTHER_UID)
    r = _run_daemon(tmp_path, link)
    assert r.returncode == 78, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "CRITICAL" in lines[0], r.stderr
    assert "refusing the state dir" in lines[0] and "symbolic link owned by uid 54321" in lines[0]
    assert list(attacker_dir.iterdir()) == []    # nothing was written there

    # Another user's directory (no link) is refused too.
    r = _run_daemon(tmp_path, attacker_dir)
    assert r.returncode == 78 and "belongs to uid 54321" in r.stderr

    # A log file planted as a symlink (even root's) is never written through.
    state = tmp_path / "mine"
    state.mkdir()
    victim = tmp_path / "victim-file"
    victim.write_text("precious\n")
    (state / "alerts.jsonl").symlink_to(victim)
    r = _run_daemon(tmp_path, state)
    assert r.returncode == 78 and "refusing the log file" in r.stderr and "symbolic link" in r.stderr
    assert victim.read_text() == "precious\n"


IMPOSTOR = textwrap.dedent("""
    import os, socket, sys
    os.setgid(int(sys.argv[2])); os.setuid(int(sys.argv[2]))
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(sys.argv[1]); s.listen(8)
    print("listening", flush=True)
    got = 0
    s.settimeout(30)
    while True:
        try:
            c, _ = s.accept()
        except OSError:
            break
        c.settimeout(2)
        try:
            while True:
                b = c.recv(65536)
                if not b:
                    break
                got += len(b)
                print("got", got, flush=True)
        except OSError:
            pass
        c.close()
""")


@needs_root
def test_healerctl_refuses_an_impostor_on_the_socket(tmp_path):
    # A place every local user can write to, like /tmp itself (under /tmp: the other user must
    # reach it, and pytest's own directories are root's only).
    shared = Path(tempfile.mkdtemp(prefix="healerd-shared-", dir="/tmp"))
    os.chmod(shared, 0o1777)
    try:
        _impostor(shared, tmp_path)
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def _impostor(shared: Path, tmp_path: Path) -> None:
    evil = shared / "healerd-state"
    evil.mkdir()
    os.chown(evil, OTHER_UID, OTHER_UID)
    sock = evil / "healerd.sock"
    imp = subprocess.Popen([sys.executable, "-c", IMPOSTOR, str(sock), str(OTHER_UID)], stdout=subprocess.PIPE,
                           text=True)
    try:
        assert imp.stdout.readline().strip() == "listening"
        bp = write_blueprint(tmp_path / "s.json", "http://127.0.0.1:9/x?token=T0P-s3cret")
        r = subprocess.run(bin_cmd("healerctl") + ["--socket", str(sock), "add", "x", "--blueprint", bp],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 3, (r.stdout, r.stderr)
        assert str(sock) in r.stderr and "uid 54321" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    finally:
        imp.terminate()
        out, _ = imp.communicate(timeout=10)
    assert "got" not in out      # the impostor received nothing


def _stopped_daemon_with_a_source(site, daemon_factory, tmp_path):
    site.page("/stats", listing_v1())
    d = daemon_factory().start()
    bp = write_blueprint(tmp_path / "s.json", site.url("/stats"), {**LISTING_BP, "every": "1h"})
    assert d.ctl("add", "scores", "--blueprint", bp).returncode == 0
    assert ": ok" in d.ctl("run", "scores").stdout
    assert d.stop() == 0
    conn = apsw.Connection(str(d.state / "healerd.db"))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return d


def test_a_corrupt_database_stops_the_daemon_with_exit_78(site, daemon_factory, tmp_path):
    d = _stopped_daemon_with_a_source(site, daemon_factory, tmp_path)
    db = d.state / "healerd.db"
    with open(db, "r+b") as fh:
        page = int.from_bytes(fh.read(18)[16:18], "big")
        for n in range(1, 4):                   # pages 2-4: b-tree pages of the first tables
            fh.seek(n * page)
            fh.write(b"\xff" * page)
    r = _run_daemon(d.tmp, d.state)
    assert r.returncode == 78, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "CRITICAL" in lines[0] and "not starting (exit 78)" in lines[0], r.stderr
    assert "integrity check" in lines[0] or "malformed" in lines[0]


def test_a_zeroed_header_stops_the_daemon_with_exit_78(site, daemon_factory, tmp_path):
    d = _stopped_daemon_with_a_source(site, daemon_factory, tmp_path)
    with open(d.state / "healerd.db", "r+b") as fh:
        fh.write(b"\0" * 100)
    r = _run_daemon(d.tmp, d.state)
    assert r.returncode == 78, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "CRITICAL" in lines[0] and "cannot be read" in lines[0], r.stderr
