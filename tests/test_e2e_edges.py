"""What a new user meets in the first hour, through the real daemon and the installed healerctl."""

from __future__ import annotations

import subprocess

from conftest import bin_cmd


def test_a_second_daemon_on_the_same_state_dir_exits_naming_the_first(site, daemon_factory, tmp_path):
    d = daemon_factory().start()
    other_socket = str(tmp_path / "other.sock")
    r = subprocess.run(bin_cmd("healerd") + ["run", "--config", str(d.config_path), "--state-dir", str(d.state),
                                             "--socket", other_socket],
                       capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert f"pid {d.proc.pid}" in lines[0] and "in use" in lines[0]
    # The first daemon still serves; the second never opened its socket.
    assert d.ctl("status").returncode == 0
    import os
    assert not os.path.exists(other_socket)
