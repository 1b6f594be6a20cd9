"""Stored pages: compressed with zstd, and pages an earlier release stored with zlib still read."""

from __future__ import annotations

import zlib

from healerd.core.blueprint import from_dict
from healerd.core.pagecodec import compress_page, decompress_bytes, decompress_page
from healerd.store import probation, snapshots, sources
from healerd.store.db import open_db

PAGE = "<html><body>" + "".join(f"<li>Caf\u00e9 {i} \u2014 \u20ac{i}.99</li>" for i in range(500)) + "</body></html>"


def test_a_page_comes_back_as_it_went_in_and_smaller():
    blob = compress_page(PAGE)
    assert blob[:4] == b"\x28\xb5\x2f\xfd" and len(blob) < len(PAGE.encode()) / 3
    assert decompress_page(blob) == PAGE
    assert decompress_bytes(compress_page("")) == b""


def test_a_page_stored_with_zlib_by_an_earlier_release_still_reads(tmp_path):
    conn = open_db(str(tmp_path / "h.db"))
    sources.add(conn, "s", from_dict({"url": "http://x/", "fields": {"t": {"css": "li"}}}), origin="cli", now=0)
    old = zlib.compress(PAGE.encode("utf-8"), 1)
    assert decompress_page(old) == PAGE
    with conn:
        conn.execute("INSERT INTO snapshots (source_name, kind, url, status_code, fetched_at, body, sha256, records) "
                     "VALUES ('s', 'last_good', 'http://x/', 200, 0, ?, 'abc', NULL)", (old,))
    assert snapshots.get(conn, "s", "last_good")["html"] == PAGE
    snapshots.put(conn, "s", "current", "http://x/", PAGE)
    assert snapshots.get(conn, "s", "current")["html"] == PAGE
    probation.put_page(conn, "s", 1, "http://x/", PAGE)
    assert probation.get_page(conn, "s", 1)["html"] == PAGE
    conn.close()
