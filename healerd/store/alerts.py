"""The alerts table (the Alerter also writes <log-dir>/alerts.jsonl)."""

from __future__ import annotations

import json
from typing import Any

import apsw

from healerd.core.timeutil import iso
from healerd.store.sql import rows


def insert(conn: apsw.Connection, alert: dict, ts: float) -> int:
    with conn:
        conn.execute("INSERT INTO alerts (ts, level, source, event, message, details) VALUES (?, ?, ?, ?, ?, ?)",
                     (ts, alert["level"], alert.get("source"), alert["event"], alert["message"],
                      json.dumps(alert.get("details") or {}, sort_keys=True)))
        rowid = conn.last_insert_rowid()
    return rowid


def since(conn: apsw.Connection, after_id: int = 0, limit: int = 200, source: str | None = None,
          since_ts: float | None = None) -> list[dict]:
    """Alerts with id > after_id (and, with `since_ts`, raised at or after it), oldest first (the
    last `limit` of them when after_id is 0); only `source`'s with `source`."""
    where = "WHERE id > ?"
    params: list[Any] = [after_id]
    if source:
        where += " AND source = ?"
        params.append(source)
    if since_ts is not None:
        where += " AND ts >= ?"
        params.append(since_ts)
    if after_id:
        sql = f"SELECT * FROM alerts {where} ORDER BY id LIMIT ?"
    else:
        sql = f"SELECT * FROM (SELECT * FROM alerts {where} ORDER BY id DESC LIMIT ?) ORDER BY id"
    params.append(limit)
    return [
        {"id": r["id"], "ts": iso(r["ts"]), "level": r["level"], "source": r["source"], "event": r["event"],
         "message": r["message"], "details": json.loads(r["details"] or "{}")}
        for r in rows(conn, sql, params)
    ]


def unchanged_since_sent(conn: apsw.Connection, after: float) -> list[dict]:
    """The newest alert per (source, event) sent after `after` whose source has made no lifecycle
    transition since, with the source's state now: what the Alerter's dedupe must remember."""
    return rows(conn, """
        SELECT a.source, a.event, max(a.ts) AS ts, h.state
        FROM alerts a JOIN source_health h ON h.source_name = a.source
        WHERE a.ts > ?
        GROUP BY a.source, a.event
        HAVING max(a.ts) >= COALESCE((SELECT max(e.at) FROM source_events e WHERE e.source_name = a.source), 0)
    """, (after,))
