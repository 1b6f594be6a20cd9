"""Storage fault episodes: RECOVERED only once a write went through (never while the disk is
still full), and every new episode raises its own SYSTEMIC_HALT, however soon after the last."""

from __future__ import annotations

import apsw

from healerd.store.faults import FIRST_BACKOFF_S, StorageFaults
from tests.support.clock import Clock
from tests.support.storage_kit import daemon_on_small_disk, fill, storage_alerts


def test_a_write_that_changed_nothing_does_not_end_an_episode():
    clock = Clock()
    f = StorageFaults(clock)
    assert f.failed(apsw.FullError("database or disk is full")) is True
    clock.t += FIRST_BACKOFF_S
    assert f.succeeded(wrote=False) is None          # a transaction with nothing in it proves nothing
    assert f.episode is not None and f.episode.failures == 1
    ended = f.succeeded(wrote=True)
    assert ended is not None and f.episode is None
    assert f.succeeded(wrote=True) is None           # no episode open: nothing to end


def test_each_episode_is_numbered_so_its_alerts_are_its_own():
    f = StorageFaults(Clock())
    f.failed(apsw.FullError("x"))
    first = f.episode.number
    f.succeeded(wrote=True)
    f.failed(apsw.IOError("x"))
    assert f.episode.number == first + 1


def test_two_full_disk_episodes_two_halts_and_recovery_only_once_writes_land(site, daemon_factory, tmp_path,
                                                                            small_fs):  # noqa: F811
    # Four sources keeping 20 records of a ~36 KB page stay far below the file system's size: the
    # disk is full only while the filler is there, never by the daemon's own data.
    d, logs = daemon_on_small_disk(site, daemon_factory, tmp_path, small_fs, retention=20)

    def storage(event):
        return storage_alerts(logs, event)

    filler = small_fs / "filler"
    for episode in (1, 2):
        fill(filler)
        d.wait_for(lambda n=episode: len(storage("SYSTEMIC_HALT")) == n, timeout=90,
                   what=f"episode {episode}'s own SYSTEMIC_HALT")
        # The disk stays full while the scrapes go on (each one a write tried and refused or
        # failed): no RECOVERED meanwhile.
        hits = site.hits.get("/stats", 0)
        d.wait_for(lambda h=hits: site.hits.get("/stats", 0) >= h + 24, timeout=90, what="scrapes on a full disk")
        assert len(storage("RECOVERED")) == episode - 1, storage("RECOVERED")
        filler.unlink()
        d.wait_for(lambda n=episode: len(storage("RECOVERED")) == n, timeout=90,
                   what=f"episode {episode}'s RECOVERED once space returned")
    halts = storage("SYSTEMIC_HALT")
    assert halts[0]["details"]["episode"] != halts[1]["details"]["episode"]
    assert d.proc.poll() is None
    assert d.stop() == 0
