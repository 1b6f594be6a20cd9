"""Alert delivery cursors (the `alert_cursors` table): how far each alert target (the webhook)
has delivered the alerts table.

A target's cursor is the id of the last `alerts` row it has dealt with: delivered, or not for
it. Everything above it is still to deliver, oldest first, and stays in the database while the
target is down (alerts are few; they are never deleted), so an outage or a restart loses none.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import apsw

from healerd.core.timeutil import iso
from healerd.store.sql import row, rows, scalar


def sync(conn: apsw.Connection, targets: Iterable[str], since: float, now: float) -> list[str]:
    """Keep one cursor per configured target: a new target starts after the alerts raised before
    `since` (the Alerter's start: what it raises from then on is delivered, older history is not
    replayed); the cursors of targets no longer configured are dropped. Returns the new targets."""
    targets = list(targets)
    added = []
    with conn:
        start = scalar(conn, "SELECT coalesce(max(id), 0) FROM alerts WHERE ts < ?", (since,))
        for target in targets:
            if scalar(conn, "SELECT 1 FROM alert_cursors WHERE target = ?", (target,)) is None:
                conn.execute("INSERT INTO alert_cursors (target, cursor, updated_at) VALUES (?, ?, ?)",
                             (target, start, now))
                added.append(target)
        marks = ",".join("?" * len(targets))
        conn.execute(f"DELETE FROM alert_cursors WHERE target NOT IN ({marks})", targets)
    return added


def get(conn: apsw.Connection, target: str) -> dict | None:
    return row(conn, "SELECT * FROM alert_cursors WHERE target = ?", (target,))


def pending(conn: apsw.Connection, after_id: int, limit: int) -> list[dict]:
    """The next alerts after `after_id`, oldest first, each as the alert log has it (plus `id`)."""
    return [{"id": r["id"], "ts": iso(r["ts"]), "level": r["level"], "source": r["source"], "event": r["event"],
             "message": r["message"], "details": json.loads(r["details"] or "{}")}
            for r in rows(conn, "SELECT * FROM alerts WHERE id > ? ORDER BY id LIMIT ?", (after_id, limit))]


def advance(conn: apsw.Connection, target: str, cursor: int, delivered: int, now: float) -> float | None:
    """The target dealt with every alert up to `cursor`, `delivered` of them sent; a delivery ends
    an outage in progress: returns when it started (None: there was none)."""
    with conn:
        r = get(conn, target)
        if r is not None:
            conn.execute("UPDATE alert_cursors SET cursor = max(cursor, ?), delivered = delivered + ?, "
                         "last_delivered_at = CASE WHEN ? > 0 THEN ? ELSE last_delivered_at END, "
                         "failing_since = CASE WHEN ? > 0 THEN NULL ELSE failing_since END, updated_at = ? "
                         "WHERE target = ?", (cursor, delivered, delivered, now, delivered, now, target))
    return r["failing_since"] if r is not None and delivered > 0 else None


def failed(conn: apsw.Connection, target: str, error: str, now: float) -> bool:
    """A delivery failed (`error`: one masked line). True when this opens an outage."""
    with conn:
        r = get(conn, target)
        if r is not None:
            conn.execute("UPDATE alert_cursors SET failing_since = coalesce(failing_since, ?), last_error = ?, "
                         "last_error_at = ?, updated_at = ? WHERE target = ?", (now, error, now, now, target))
    return r is not None and r["failing_since"] is None
