"""Feed cursors and the scrapes still to deliver (the `feed_cursors` table; records are read here too).

A feed's cursor is the id of the last `records` row it has dealt with: delivered, or not for
it (another source, or no change with `only_changes`). Everything above it is its backlog,
which stays in the database (records retention keeps every row above the lowest cursor), so a
feed that is down for days costs disk, never memory.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable

import apsw

from healerd.core.timeutil import iso
from healerd.store.sql import row, rows, scalar


def sync(conn: apsw.Connection, names: Iterable[str], now: float) -> list[str]:
    """Keep one cursor per configured feed: a new feed starts at the newest stored scrape (it
    delivers the scrapes made from now on); the cursors of feeds no longer configured are
    dropped (they would hold records retention back forever). Returns the new feeds' names."""
    names = list(names)
    added = []
    with conn:
        start = scalar(conn, "SELECT coalesce(max(id), 0) FROM records")
        for name in names:
            if scalar(conn, "SELECT 1 FROM feed_cursors WHERE feed = ?", (name,)) is None:
                conn.execute("INSERT INTO feed_cursors (feed, cursor, updated_at) VALUES (?, ?, ?)", (name, start, now))
                added.append(name)
        marks = ",".join("?" * len(names))
        conn.execute(f"DELETE FROM feed_cursors WHERE feed NOT IN ({marks})", names)
    return added


def get(conn: apsw.Connection, feed: str) -> dict | None:
    return row(conn, "SELECT * FROM feed_cursors WHERE feed = ?", (feed,))


def all_rows(conn: apsw.Connection) -> dict[str, dict]:
    return {r["feed"]: r for r in rows(conn, "SELECT * FROM feed_cursors")}


def pending(conn: apsw.Connection, after_id: int, limit: int, max_bytes: int = 8_000_000) -> list[dict]:
    """The next stored scrapes after `after_id`, oldest first, with their change sets (`body`
    None for a scrape stored before change sets were kept): at most `limit` of them, and no
    more once their records and changes pass `max_bytes` (at least one), so a backlog of big
    listings is read a few at a time."""
    cur = conn.execute("SELECT r.id, r.source_name, r.scraped_at, r.version, r.data, c.size, c.body "
                       "FROM records r LEFT JOIN record_changes c ON c.record_id = r.id "
                       "WHERE r.id > ? ORDER BY r.id LIMIT ?", (after_id, limit))
    out: list[dict] = []
    taken = 0
    try:
        for rid, source, at, version, data, size, body in cur:
            out.append({"id": rid, "source_name": source, "scraped_at": at, "version": version, "data": data,
                        "size": size, "body": body})
            taken += len(data) + len(body or "")
            if taken >= max_bytes:
                break
    finally:
        cur.close()
    return out


_JSON_RAW = re.compile(r"[\x7f-\x9f]")   # DEL and C1: left raw by json.dumps(ensure_ascii=False)


def payload(r: dict) -> str:
    """The object a feed delivers for one stored scrape, as JSON text (records and changes are
    spliced in as stored, not decoded and encoded again). DEL and C1 characters from a page are
    escaped (`\\u009b`: the same JSON value), so whoever tails a JSON Lines feed never gets them raw
    (C0 characters are escaped by json.dumps already)."""
    head = json.dumps({"id": r["id"], "source": r["source_name"], "scraped_at": iso(r["scraped_at"]),
                       "version": r["version"]}, ensure_ascii=False, separators=(",", ":"))
    body = r["body"] if r["body"] is not None else "null"
    text = f'{head[:-1]},"records":{r["data"]},"changes":{body}}}'
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text) if _JSON_RAW.search(text) else text


def advance(conn: apsw.Connection, feed: str, cursor: int, delivered: int, now: float,
            recovered: bool = True) -> float | None:
    """The feed dealt with every row up to `cursor`, `delivered` of them sent. With `recovered`
    (it delivered all it tried), ends an outage in progress: returns when it started (None: there
    was none)."""
    with conn:
        r = get(conn, feed)
        if r is not None:
            conn.execute("UPDATE feed_cursors SET cursor = max(cursor, ?), delivered = delivered + ?, "
                         "last_delivered_at = CASE WHEN ? > 0 THEN ? ELSE last_delivered_at END, "
                         "failing_since = CASE WHEN ? THEN NULL ELSE failing_since END, updated_at = ? "
                         "WHERE feed = ?", (cursor, delivered, delivered, now, recovered, now, feed))
    return r["failing_since"] if r is not None and recovered else None


def failed(conn: apsw.Connection, feed: str, error: str, now: float) -> bool:
    """A delivery failed (`error`: one masked line). True when this opens an outage."""
    with conn:
        r = get(conn, feed)
        if r is not None:
            conn.execute("UPDATE feed_cursors SET failing_since = coalesce(failing_since, ?), last_error = ?, "
                         "last_error_at = ?, updated_at = ? WHERE feed = ?", (now, error, now, now, feed))
    return r is not None and r["failing_since"] is None


def backlog(conn: apsw.Connection, cursor: int, wanted: Callable[[str], bool], only_changes: bool) -> int:
    """Stored scrapes above `cursor` the feed will deliver: of its sources (and changed, with
    `only_changes`)."""
    sql = ("SELECT r.source_name AS s, count(*) AS n FROM records r "
           + ("JOIN record_changes c ON c.record_id = r.id AND c.size > 0 " if only_changes else "")
           + "WHERE r.id > ? GROUP BY r.source_name")
    return sum(r["n"] for r in rows(conn, sql, (cursor,)) if wanted(r["s"]))
