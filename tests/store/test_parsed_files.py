"""The parsed sources_dir files kept between starts (healerd/store/parsed_files.py), on real files
and a real SQLite file: a file is parsed again only when its bytes (or the rules) changed, and
what it gives is always what parsing it gives."""

from __future__ import annotations

import pytest

from healerd.core.blueprint import BlueprintError, load_file
from healerd.store import parsed_files
from healerd.store.parsed_files import ParsedFiles

TOML = '''url = "https://shop.example/list"
every = "1h"
items = "li.r"

[fields.name]
css = "b"
'''


@pytest.fixture
def parses(monkeypatch):
    """How many files were parsed (the real parse, counted)."""
    counted: list[str] = []
    real = parsed_files.parse_file_bytes

    def counting(raw, path, **kw):
        counted.append(path)
        return real(raw, path, **kw)
    monkeypatch.setattr(parsed_files, "parse_file_bytes", counting)
    return counted


def sync(state, folder, names):
    """One sources_dir sync: each file's blueprint JSON (or its error), then save."""
    cache = ParsedFiles(state)
    out = {}
    try:
        for name in names:
            path = str(folder / name)
            try:
                text, bp = cache.blueprint_json(name, path, (folder / name).read_bytes())
                out[name] = (text, ParsedFiles.blueprint(text, bp).to_json())
            except BlueprintError as exc:
                out[name] = str(exc)
        cache.save()
    finally:
        cache.close()
    return out


def test_an_unchanged_file_is_not_parsed_again_and_gives_the_same_blueprint(tmp_path, parses):
    (tmp_path / "a.toml").write_text(TOML)
    (tmp_path / "b.json").write_text('{"url": "https://shop.example/b", "fields": {"t": {"css": "h1"}}}')
    first = sync(tmp_path, tmp_path, ["a.toml", "b.json"])
    assert len(parses) == 2
    again = sync(tmp_path, tmp_path, ["a.toml", "b.json"])
    assert len(parses) == 2   # nothing parsed at the restart
    assert again == first
    assert again["a.toml"][0] == load_file(str(tmp_path / "a.toml"), require_url=True).to_json()


def test_a_file_whose_bytes_changed_is_parsed_again(tmp_path, parses):
    (tmp_path / "a.toml").write_text(TOML)
    sync(tmp_path, tmp_path, ["a.toml"])
    (tmp_path / "a.toml").write_text(TOML.replace('every = "1h"', 'every = "2h"'))   # same size
    out = sync(tmp_path, tmp_path, ["a.toml"])
    assert len(parses) == 2
    assert '"every":7200.0' in out["a.toml"][0]
    sync(tmp_path, tmp_path, ["a.toml"])
    assert len(parses) == 2   # the new bytes are the kept ones now


def test_other_rules_parse_every_file_again(tmp_path, parses, monkeypatch):
    (tmp_path / "a.toml").write_text(TOML)
    sync(tmp_path, tmp_path, ["a.toml"])
    monkeypatch.setattr(parsed_files, "rules", lambda: "another release")
    sync(tmp_path, tmp_path, ["a.toml"])
    assert len(parses) == 2


def test_a_bad_file_is_never_kept_and_says_why_each_time(tmp_path, parses):
    (tmp_path / "bad.toml").write_text(TOML.replace('css = "b"', 'css = "b[["'))
    first = sync(tmp_path, tmp_path, ["bad.toml"])
    again = sync(tmp_path, tmp_path, ["bad.toml"])
    assert isinstance(first["bad.toml"], str) and "selector" in first["bad.toml"]
    assert again == first
    assert len(parses) == 2


def test_the_entries_of_files_gone_are_dropped(tmp_path, parses):
    for n in ("a", "b"):
        (tmp_path / f"{n}.toml").write_text(TOML)
    sync(tmp_path, tmp_path, ["a.toml", "b.toml"])
    sync(tmp_path, tmp_path, ["a.toml"])   # b.toml was removed
    cache = ParsedFiles(tmp_path)
    try:
        assert set(cache.known) == {"a.toml"}
    finally:
        cache.close()
    sync(tmp_path, tmp_path, ["a.toml", "b.toml"])   # back: parsed again
    assert parses.count(str(tmp_path / "b.toml")) == 2


def test_a_cache_file_that_is_not_a_database_parses_everything(tmp_path, parses):
    (tmp_path / parsed_files.FILE_NAME).write_bytes(b"this is not a database" * 100)
    (tmp_path / "a.toml").write_text(TOML)
    out = sync(tmp_path, tmp_path, ["a.toml"])
    assert out["a.toml"][0] == load_file(str(tmp_path / "a.toml"), require_url=True).to_json()
    assert len(parses) == 1
