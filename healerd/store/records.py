"""Scraped records, newest first, kept up to a retention limit per source."""

from __future__ import annotations

import json
import time

import apsw

from healerd.core import changes
from healerd.core.timeutil import iso
from healerd.store.sql import rows, scalar


def to_json(data) -> str:
    """One scrape's records as stored: one compact JSON document per scrape."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


_NO_CHANGE = to_json(changes.empty())


def _change_row(prev: str | None, text: str, data, key: tuple[str, ...]) -> tuple[int, str]:
    """The change set's size and JSON text: what `to_json(changes.change_set(...))` gives, without
    decoding or encoding the records where the text says it already. The same records again (most
    scrapes) change nothing; a source's first records are all added, and their text is `text`."""
    if prev == text:
        return 0, _NO_CHANGE
    if prev is None and data and isinstance(data, (list, dict)):
        added = text if isinstance(data, list) else f"[{text}]"
        return len(changes.as_records(data)), f'{{"added":{added},"removed":[],"changed":[]}}'
    found = changes.change_set(None if prev is None else json.loads(prev), data, key)
    return changes.size(found), to_json(found)


def insert(conn: apsw.Connection, name: str, data, version: int | None, keep: int, now: float | None = None,
           data_json: str | None = None, key: tuple[str, ...] = ()) -> int:
    """One scrape's records in one row (`data_json`: `to_json(data)` when the caller has it already),
    with its change set against the source's previous stored scrape (`key`: the blueprint's).
    Returns the row's id.

    Retention keeps the newest `keep` rows of the source, and every row a feed has not dealt
    with yet (above the lowest feed cursor): a feed that is down loses nothing."""
    now = time.time() if now is None else now
    text = data_json if data_json is not None else to_json(data)
    with conn:
        prev = scalar(conn, "SELECT data FROM records WHERE source_name = ? ORDER BY id DESC LIMIT 1", (name,))
        conn.execute("INSERT INTO records (source_name, scraped_at, version, data) VALUES (?, ?, ?, ?)",
                     (name, now, version, text))
        rid = conn.last_insert_rowid()
        size, body = _change_row(prev, text, data, key)
        conn.execute("INSERT INTO record_changes (record_id, source_name, size, body) VALUES (?, ?, ?, ?)",
                     (rid, name, size, body))
        if keep > 0:
            conn.execute(
                "DELETE FROM records WHERE source_name = ? AND id < (SELECT min(id) FROM "
                "(SELECT id FROM records WHERE source_name = ? ORDER BY id DESC LIMIT ?)) "
                "AND id <= (SELECT coalesce(min(cursor), 9223372036854775807) FROM feed_cursors)",
                (name, name, keep))
    return rid


def latest(conn: apsw.Connection, name: str, limit: int = 20) -> list[dict]:
    """The newest `limit` scrapes, newest first, each whole: `limit` counts scrapes, and a scrape's
    `data` (one record, or a listing's every item) is never cut."""
    return [
        {"scraped_at": iso(r["scraped_at"]), "version": r["version"], "data": json.loads(r["data"])}
        for r in rows(conn, "SELECT scraped_at, version, data FROM records WHERE source_name = ? ORDER BY id DESC LIMIT ?",
                      (name, limit))
    ]


def newest_ids(conn: apsw.Connection, name: str, limit: int) -> list[dict]:
    """The newest `limit` scrapes, oldest of them first, each with its id (the backlog
    `records NAME --follow --limit N` prints before following)."""
    got = [
        {"id": r["id"], "scraped_at": iso(r["scraped_at"]), "version": r["version"], "data": json.loads(r["data"])}
        for r in rows(conn, "SELECT id, scraped_at, version, data FROM records WHERE source_name = ? "
                            "ORDER BY id DESC LIMIT ?", (name, limit))
    ]
    got.reverse()
    return got


def count(conn: apsw.Connection, name: str) -> int:
    return rows(conn, "SELECT count(*) AS n FROM records WHERE source_name = ?", (name,))[0]["n"]


def changes_of(conn: apsw.Connection, name: str, limit: int = 20, every: bool = False) -> list[dict]:
    """The change sets of the source's stored scrapes, newest first: only those where something
    changed, unless `every`."""
    where = "" if every else " AND c.size > 0"
    out = []
    for r in rows(conn, "SELECT r.scraped_at, r.version, c.body FROM record_changes c JOIN records r "
                        f"ON r.id = c.record_id WHERE c.source_name = ?{where} ORDER BY c.record_id DESC LIMIT ?",
                  (name, limit)):
        body = json.loads(r["body"])
        out.append({"scraped_at": iso(r["scraped_at"]), "version": r["version"], "added": body["added"],
                    "removed": body["removed"], "changed": body["changed"]})
    return out


def since(conn: apsw.Connection, name: str, after_id: int, limit: int = 100) -> list[dict]:
    """The source's stored scrapes after the row `after_id`, oldest first, each with its id."""
    return [
        {"id": r["id"], "scraped_at": iso(r["scraped_at"]), "version": r["version"], "data": json.loads(r["data"])}
        for r in rows(conn, "SELECT id, scraped_at, version, data FROM records WHERE source_name = ? AND id > ? "
                            "ORDER BY id LIMIT ?", (name, after_id, limit))
    ]


def last_id(conn: apsw.Connection) -> int:
    """The id of the newest records row of any source (0: none)."""
    return rows(conn, "SELECT coalesce(max(id), 0) AS n FROM records")[0]["n"]
