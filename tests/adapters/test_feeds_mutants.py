"""The JSONL feed sink (healerd.adapters.feeds): delivered means written, flushed and fsynced.

The caller advances the feed's cursor by what `deliver` reports delivered: every line counted must
be on disk, so the last write of a batch to each file is followed by an fsync of that file.
"""

from __future__ import annotations

import json
import os

import pytest

from healerd.adapters import feeds as feeds_mod
from healerd.adapters.feeds import JsonlSink
from healerd.config import FeedSection


@pytest.fixture
def io_log(monkeypatch):
    """The sink's writes and fsyncs, in order, by the file they went to (the real calls still run)."""
    log: list[tuple[str, str]] = []
    real_write, real_fsync = os.write, os.fsync

    def name(fd: int) -> str:
        return os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))

    def write(fd, data):
        log.append(("write", name(fd)))
        return real_write(fd, data)

    def fsync(fd):
        log.append(("fsync", name(fd)))
        return real_fsync(fd)
    monkeypatch.setattr(feeds_mod.os, "write", write)
    monkeypatch.setattr(feeds_mod.os, "fsync", fsync)
    return log


def _synced_after_last_write(log: list[tuple[str, str]], file: str) -> bool:
    last_write = max(i for i, (what, f) in enumerate(log) if what == "write" and f == file)
    return any(what == "fsync" and f == file for what, f in log[last_write + 1:])


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="names the fds through /proc/self/fd")
def test_every_file_of_a_delivered_batch_is_fsynced_after_its_last_line(tmp_path, io_log):
    sink = JsonlSink(FeedSection(kind="jsonl", path=str(tmp_path / "{source}.jsonl")))
    batch = [("a", json.dumps({"n": 1})), ("b", json.dumps({"n": 2})), ("a", json.dumps({"n": 3}))]
    assert sink.deliver(batch) == (3, None)
    sink.close()
    assert _synced_after_last_write(io_log, "a.jsonl") and _synced_after_last_write(io_log, "b.jsonl"), io_log
    assert [json.loads(x)["n"] for x in (tmp_path / "a.jsonl").read_text().splitlines()] == [1, 3]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="names the fds through /proc/self/fd")
def test_a_batch_that_rotates_is_fsynced_in_the_new_file_too(tmp_path, io_log):
    sink = JsonlSink(FeedSection(kind="jsonl", path=str(tmp_path / "{source}.jsonl"), max_bytes=1024, keep=1))
    line = json.dumps({"x": "y" * 300})
    assert sink.deliver([("a", line)] * 5) == (5, None)
    sink.close()
    assert sorted(os.listdir(tmp_path)) == ["a.jsonl", "a.jsonl.1"]
    assert _synced_after_last_write(io_log, "a.jsonl"), io_log
    # the rotated file was fsynced before it was moved aside
    rotated = next(i for i, (what, _f) in enumerate(io_log) if what == "write") + 3   # three lines fit in 1024 bytes
    assert ("fsync", "a.jsonl") in io_log[rotated:rotated + 2], io_log
