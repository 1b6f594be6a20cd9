"""The sources directory's files read off the caller's thread: in order, capped, a stalled file skipped."""

from __future__ import annotations

import os
import threading

import pytest

from healerd.adapters import sources_reader
from healerd.adapters.sources_reader import Read, blueprint_json_of, read_files
from healerd.core.blueprint import BlueprintError
from healerd.store.parsed_files import ParsedFiles


def test_files_come_in_order_with_their_errors(tmp_path):
    (tmp_path / "a.toml").write_text('url = "http://x/"\n')
    os.mkfifo(tmp_path / "b.toml")
    (tmp_path / "c.toml").write_bytes(b"x" * 2000)
    reads = list(read_files(str(tmp_path), ["a.toml", "b.toml", "c.toml", "gone.toml"], limit=1000))
    assert [r.name for r in reads] == ["a.toml", "b.toml", "c.toml", "gone.toml"]
    assert reads[0].data == b'url = "http://x/"\n' and reads[0].owner_trusted
    assert "FIFO" in reads[1].error and "over the limit of 1,000" in reads[2].error
    assert reads[3].error.startswith("cannot read ") and reads[3].data is None


def test_a_stalled_file_is_skipped_and_the_next_ones_are_read(tmp_path, monkeypatch):
    for n in ("a", "stuck", "b"):
        (tmp_path / f"{n}.toml").write_text(n)
    release = threading.Event()
    real = sources_reader._read_one

    def read_one(folder, name, limit):
        if name == "stuck.toml":
            release.wait(60)   # a read that hangs (a dead network mount)
        return real(folder, name, limit)

    monkeypatch.setattr(sources_reader, "_read_one", read_one)
    try:
        reads = list(read_files(str(tmp_path), ["a.toml", "stuck.toml", "b.toml"], limit=100, deadline=0.5))
    finally:
        release.set()
    assert [(r.name, r.data) for r in reads] == [("a.toml", b"a"), ("stuck.toml", None), ("b.toml", b"b")]
    assert "not read within 0.5s (skipped)" in reads[1].error


def test_an_error_quotes_the_file_only_when_root_or_the_daemon_owns_it(tmp_path):
    text = b'url = "http://x/"\nsecret_key_name = 1\n'
    with pytest.raises(BlueprintError, match="secret_key_name"):
        blueprint_json_of(Read("mine.toml", text, None, True), str(tmp_path))
    with pytest.raises(BlueprintError) as caught:
        blueprint_json_of(Read("theirs.toml", text, None, False), str(tmp_path))
    assert "secret_key_name" not in str(caught.value) and "details withheld" in str(caught.value)
    _, good = blueprint_json_of(Read("g.json", b'{"url": "http://x/", "fields": {"a": {"css": "p"}}}', None, False),
                                str(tmp_path))
    assert good is not None and good.url == "http://x/"


def test_a_cache_s_parse_withholds_the_details_of_another_user_s_file_too(tmp_path):
    """The daemon parses through its cache of parsed files: that path hides another user's file too."""
    cache = ParsedFiles(tmp_path)
    text = b'url = "http://x/"\nsecret_key_name = 1\n'
    try:
        with pytest.raises(BlueprintError) as caught:
            blueprint_json_of(Read("theirs.toml", text, None, False), str(tmp_path), cache.blueprint_json)
        assert "secret_key_name" not in str(caught.value) and "details withheld" in str(caught.value)
        with pytest.raises(BlueprintError, match="secret_key_name"):
            blueprint_json_of(Read("mine.toml", text, None, True), str(tmp_path), cache.blueprint_json)
    finally:
        cache.close()


def test_more_files_than_are_read_ahead_all_come_once_in_order(tmp_path):
    names = [f"s{i:04d}.toml" for i in range(sources_reader.AHEAD * 3 + 7)]
    for n in names:
        (tmp_path / n).write_text(n)
    reads = read_files(str(tmp_path), names, limit=100)
    first = next(reads)
    assert first.data == names[0].encode()
    assert [r.data for r in reads] == [n.encode() for n in names[1:]]
