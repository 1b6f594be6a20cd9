"""Page snapshots per source: the last good page and the current (last failing) page, compressed
(`healerd.core.pagecodec`)."""

from __future__ import annotations

import hashlib
import json
import time

import apsw

from healerd.core.pagecodec import compress_bytes, decompress_page
from healerd.store.sql import row

LAST_GOOD = "last_good"
CURRENT = "current"


def put(conn: apsw.Connection, name: str, kind: str, url: str, html: str | None, status: int | None = 200,
        records=None, now: float | None = None, sha256: str | None = None, body_z: bytes | None = None,
        records_json: str | None = None) -> None:
    """Store a page. `sha256` is the hash of the page's bytes as fetched, when the caller has it:
    the scraper hashes what the site sent, and a page in another charset than UTF-8 must compare
    equal to itself on the next scrape (the text re-encoded here would hash differently).
    `body_z`, with `sha256`, is the page already compressed as stored here (by a worker process):
    then `html` is not needed. `records_json`: the records already as JSON."""
    now = time.time() if now is None else now
    if records_json is None and records is not None:
        records_json = json.dumps(records)
    if body_z is not None and sha256:
        with conn:
            conn.execute(
                "INSERT OR REPLACE INTO snapshots (source_name, kind, url, status_code, fetched_at, body, sha256, "
                "records) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (name, kind, url, status, now, body_z, sha256, records_json))
        return
    raw = (html or "").encode("utf-8", errors="replace")
    with conn:
        conn.execute(
            "INSERT OR REPLACE INTO snapshots (source_name, kind, url, status_code, fetched_at, body, sha256, records) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (name, kind, url, status, now, compress_bytes(raw), sha256 or hashlib.sha256(raw).hexdigest(),
             records_json),
        )


def get(conn: apsw.Connection, name: str, kind: str) -> dict | None:
    """{"url","status_code","fetched_at","html","sha256","records"} or None."""
    r = row(conn, "SELECT * FROM snapshots WHERE source_name = ? AND kind = ?", (name, kind))
    if not r:
        return None
    r["html"] = decompress_page(r.pop("body"))
    r["records"] = json.loads(r["records"]) if r["records"] else None
    return r
