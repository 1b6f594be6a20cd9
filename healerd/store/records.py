"""Scraped records, newest first, kept up to a retention limit per source."""

from __future__ import annotations

import json
import time

import apsw

from healerd.core.timeutil import iso
from healerd.store.db import rows


def to_json(data) -> str:
    """One scrape's records as stored: one compact JSON document per scrape."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def insert(conn: apsw.Connection, name: str, data, version: int | None, keep: int, now: float | None = None,
           data_json: str | None = None) -> None:
    """One scrape's records in one row (`data_json`: `to_json(data)` when the caller has it already)."""
    now = time.time() if now is None else now
    with conn:
        conn.execute("INSERT INTO records (source_name, scraped_at, version, data) VALUES (?, ?, ?, ?)",
                     (name, now, version, data_json if data_json is not None else to_json(data)))
        if keep > 0:
            conn.execute(
                "DELETE FROM records WHERE source_name = ? AND id < (SELECT min(id) FROM "
                "(SELECT id FROM records WHERE source_name = ? ORDER BY id DESC LIMIT ?))", (name, name, keep))


def latest(conn: apsw.Connection, name: str, limit: int = 20) -> list[dict]:
    return [
        {"scraped_at": iso(r["scraped_at"]), "version": r["version"], "data": json.loads(r["data"])}
        for r in rows(conn, "SELECT scraped_at, version, data FROM records WHERE source_name = ? ORDER BY id DESC LIMIT ?",
                      (name, limit))
    ]


def newest(conn: apsw.Connection, name: str, limit: int = 20) -> list[dict]:
    """The newest `limit` records, newest first: a listing's items count one each (a scrape's list is
    cut to what is left of the limit), in the same shape as `latest`."""
    out: list[dict] = []
    left = limit
    for r in rows(conn, "SELECT scraped_at, version, data FROM records WHERE source_name = ? ORDER BY id DESC",
                  (name,)):
        data = json.loads(r["data"])
        if isinstance(data, list):
            if not data:
                continue
            data = data[:left]
            left -= len(data)
        else:
            left -= 1
        out.append({"scraped_at": iso(r["scraped_at"]), "version": r["version"], "data": data})
        if left <= 0:
            break
    return out


def count(conn: apsw.Connection, name: str) -> int:
    return rows(conn, "SELECT count(*) AS n FROM records WHERE source_name = ?", (name,))[0]["n"]
