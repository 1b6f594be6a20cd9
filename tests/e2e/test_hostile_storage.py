"""A full disk is an event: one ERROR line and one alert per episode, writes backed off, and
recovery by itself once space returns, with a consistent database."""

from __future__ import annotations

import errno
import os

import apsw

from healerd.store.faults import FIRST_BACKOFF_S, MAX_BACKOFF_S, StorageFaults, is_storage_fault
from tests.support.clock import Clock
from tests.support.daemon import db_rows
from tests.support.storage_kit import daemon_on_small_disk, fill, storage_alerts


def test_storage_faults_open_one_episode_back_off_and_recover():
    clock = Clock()
    f = StorageFaults(clock)
    assert f.may_write()
    assert f.failed(apsw.FullError("database or disk is full")) is True     # opens the episode
    assert f.episode.reason == "the disk is full (SQLITE_FULL)"
    assert not f.may_write()                                                 # backing off
    clock.t += FIRST_BACKOFF_S
    assert f.may_write()
    assert f.failed(apsw.FullError("x")) is False                            # the same episode
    clock.t += FIRST_BACKOFF_S
    assert not f.may_write()                                                 # the backoff doubled
    for _ in range(20):
        f.failed(apsw.IOError("x"))
    assert f.episode.backoff == MAX_BACKOFF_S
    ended = f.succeeded()
    assert ended is not None and ended.failures == 22 and f.episode is None and f.may_write()
    assert f.succeeded() is None


def test_what_counts_as_a_storage_fault():
    assert is_storage_fault(apsw.FullError("x")) and is_storage_fault(apsw.IOError("x"))
    assert is_storage_fault(OSError(errno.ENOSPC, "No space left on device"))
    assert not is_storage_fault(apsw.ConstraintError("x")) and not is_storage_fault(ValueError("x"))
    assert not is_storage_fault(OSError(errno.ENOENT, "nope"))


def test_a_full_disk_is_one_error_one_alert_and_recovers_by_itself(site, daemon_factory, tmp_path, small_fs):
    d, logs = daemon_on_small_disk(site, daemon_factory, tmp_path, small_fs, retention=50)
    filler = small_fs / "filler"
    fill(filler)

    def storage(event):
        return storage_alerts(logs, event)

    d.wait_for(lambda: storage("SYSTEMIC_HALT"), timeout=90, what="a storage SYSTEMIC_HALT alert")
    # Let the fault go on for a while: still one line, one alert.
    before = db_rows(d, "SELECT SUM(success_count) AS n FROM source_health")[0]["n"]
    filler.unlink()
    d.wait_for(lambda: storage("RECOVERED"), timeout=90,
               what="recovery once space returned")
    d.wait_for(lambda: db_rows(d, "SELECT SUM(success_count) AS n FROM source_health")[0]["n"] > before + 4,
               timeout=60, what="scrapes stored again")
    log = d.log()
    errors = [line for line in log.splitlines() if " ERROR " in line and not line.startswith("ALERT ")]
    assert len(errors) == 1 and "storage fault" in errors[0], errors
    assert "Traceback" not in log
    assert sum("scheduler: storage fault" in line for line in log.splitlines()) <= 1
    assert len(storage("SYSTEMIC_HALT")) == 1
    assert d.stop() == 0
    conn = apsw.Connection(str(d.state / "healerd.db"))
    try:
        assert [r[0] for r in conn.execute("PRAGMA integrity_check")] == ["ok"]
    finally:
        conn.close()
    assert os.path.exists(d.state / "healerd.db")
