"""Bursts of control requests against the real daemon, `healerd run` in a subprocess.

200 client threads (and a few `healerctl status --json` processes) hit the daemon at
once, more than a listen queue of 128 and more than the old limit of 128 connections:
every request must get its answer, and the daemon carries on serving.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time

from healerd.control.client import DaemonUnreachable, call
from healerd.control.protocol import ControlError
from tests.support.daemon import FAST_CONFIG, bin_cmd
from tests.support.sitepages import LISTING_BP, listing_v1, write_blueprint

N_SOURCES = 50
N_THREADS = 200
N_PROCESSES = 6


def start_threads(sock: str, results: list) -> tuple[threading.Barrier, list[threading.Thread]]:
    """N_THREADS threads, each sending one `status` as healerctl does once the barrier opens."""
    barrier = threading.Barrier(N_THREADS + 1)

    def one(i: int) -> None:
        barrier.wait(60)
        try:
            results[i] = call(sock, "status", {"table": True}, timeout=60)
        except (DaemonUnreachable, ControlError) as exc:
            results[i] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(N_THREADS)]
    for t in threads:
        t.start()
    return barrier, threads


def check_answers(results: list) -> None:
    failed = [(i, repr(r)) for i, r in enumerate(results) if not isinstance(r, dict)]
    assert not failed, f"{len(failed)} of {N_THREADS} calls failed, e.g. {failed[:3]}"
    assert all(len(r["rows"]) == N_SOURCES for r in results)


def test_bursts_of_status_requests(site, daemon_factory, tmp_path):
    site.page("/stats", listing_v1())
    folder = tmp_path / "sources.d"
    folder.mkdir()
    daily = {**LISTING_BP, "every": "24h"}  # one scrape at start, then nothing runs by itself
    for i in range(N_SOURCES):
        write_blueprint(folder / f"src{i:02d}.json", site.url("/stats"), daily)
    config = FAST_CONFIG.replace("[daemon]", f'[daemon]\nsources_dir = "{folder}"', 1)
    d = daemon_factory(config).start()

    # 1. Right after the start, while the 50 first scrapes are written: threads and processes.
    results: list = [None] * N_THREADS
    barrier, threads = start_threads(d.socket, results)
    barrier.wait(60)
    procs = [subprocess.Popen(bin_cmd("healerctl") + ["--socket", d.socket, "status", "--json"], cwd=tmp_path,
                              env=d.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(N_PROCESSES)]
    for t in threads:
        t.join(120)
    outputs = [p.communicate(timeout=120) + (p.returncode,) for p in procs]
    check_answers(results)
    for out, err, code in outputs:
        assert code == 0, err
        assert len(json.loads(out)) == N_SOURCES

    # 2. The whole burst arrives while the daemon gets no CPU (stopped), as on a loaded host:
    # all 200 connections wait in the listen queue at once, then are served together.
    results = [None] * N_THREADS
    os.kill(d.proc.pid, signal.SIGSTOP)
    try:
        barrier, threads = start_threads(d.socket, results)
        barrier.wait(60)
        time.sleep(1.0)  # the threads connect meanwhile; the daemon accepts nothing yet
    finally:
        os.kill(d.proc.pid, signal.SIGCONT)
    for t in threads:
        t.join(120)
    check_answers(results)

    # The daemon is still there and the next request is answered normally.
    assert d.proc.poll() is None
    names = sorted(s["name"] for s in d.ctl_json("status"))
    assert names == [f"src{i:02d}" for i in range(N_SOURCES)]
