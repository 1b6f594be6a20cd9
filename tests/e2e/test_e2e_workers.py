"""The real daemon with its extraction workers: scrapes go through them, a stop ends them,
and a kill -9 of the daemon leaves none behind."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from tests.support.daemon import FAST_CONFIG
from tests.support.sitepages import listing_v1, write_blueprint

WORKERS_CONFIG = FAST_CONFIG.replace("[daemon]\n", "[daemon]\nworkers = 2\n", 1)


def worker_pids(daemon_pid: int) -> list[int]:
    """The daemon's child processes running healerd.adapters.workers."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        state = stat.rsplit(")", 1)[1].split()[0]
        if ppid == daemon_pid and b"healerd.adapters.workers_main" in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_gone(pids: list[int], timeout: float = 15.0) -> list[int]:
    deadline = time.time() + timeout
    while time.time() < deadline:
        left = [p for p in pids if alive(p)]
        if not left:
            return []
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def test_scrapes_go_through_the_workers_and_a_stop_ends_them(site, daemon_factory, tmp_path):
    site.page("/list", listing_v1())
    d = daemon_factory(WORKERS_CONFIG).start()
    pids = worker_pids(d.proc.pid)
    assert len(pids) == 2
    bp = write_blueprint(tmp_path / "shop.json", site.url("/list"))
    r = d.ctl("add", "shop", "--blueprint", bp)
    assert r.returncode == 0, r.stderr
    out = d.ctl_json("run", "shop")
    assert out["ok"] is True and out["records"] > 0, out
    records = d.ctl_json("records", "shop")
    assert records, records
    assert sorted(worker_pids(d.proc.pid)) == sorted(pids)     # the same workers, still there
    assert d.stop() == 0
    assert wait_gone(pids) == []


def test_a_killed_daemon_leaves_no_worker_behind(site, daemon_factory):
    d = daemon_factory(WORKERS_CONFIG).start()
    pids = worker_pids(d.proc.pid)
    assert len(pids) == 2
    os.kill(d.proc.pid, signal.SIGKILL)
    d.proc.wait()
    assert wait_gone(pids) == []
