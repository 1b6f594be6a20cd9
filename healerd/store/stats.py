"""The rows the fleet's success metrics are computed from (healerd.core.stats), over a window.

Only what belongs to the sources registered now is read: a removed source's fix history is
deleted with it, and its audit rows (rollbacks, quarantines) and external healer calls, which
are kept, stop counting — as do those of an earlier source of the same name (the rows before
its newest `register` event)."""

from __future__ import annotations

import apsw

from healerd.store.sql import rows, scalar

# The newest registration of the source an audit row belongs to, or NULL when it is removed.
_REGISTERED_ID = ("(SELECT max(r.id) FROM source_events r JOIN sources s ON s.name = r.source_name "
                  "WHERE r.source_name = e.source_name AND r.trigger = 'register')")
_REGISTERED_AT = ("(SELECT max(r.at) FROM source_events r JOIN sources s ON s.name = r.source_name "
                  "WHERE r.source_name = c.source_name AND r.trigger = 'register')")

AUTOMATIC_ROLLBACK = "rollback"
MANUAL_ROLLBACK = "manual_rollback"


def _events(conn: apsw.Connection, trigger: str, since: float) -> int:
    return scalar(conn, f"SELECT count(*) FROM source_events e WHERE e.trigger = ? AND e.at >= ? "
                        f"AND e.id >= {_REGISTERED_ID}", (trigger, since)) or 0


def window_rows(conn: apsw.Connection, since: float) -> dict:
    """Everything healerd.core.stats.compute needs for the window starting at `since`, read in one
    read transaction so the figures agree with each other."""
    with conn:   # a read transaction: one snapshot of the database
        fixes = rows(conn, "SELECT outcome, strategy, created_at, failure_started_at, production_verdict, data_gone "
                           "FROM fix_history WHERE created_at >= ? AND source_name IN (SELECT name FROM sources)",
                     (since,))
        sources = scalar(conn, "SELECT count(*) FROM sources") or 0
        # Quarantined at any time in the window: entered it in the window, or still in it from before.
        quarantined = scalar(
            conn, "SELECT count(*) FROM source_health h WHERE h.state = 'QUARANTINED' OR EXISTS ("
                  f"SELECT 1 FROM source_events e WHERE e.source_name = h.source_name "
                  f"AND e.to_state = 'QUARANTINED' AND e.at >= ? AND e.id >= {_REGISTERED_ID})", (since,)) or 0
        calls = rows(conn, f"SELECT duration_ms, outcome FROM healer_calls c WHERE c.started_at >= ? "
                           f"AND c.started_at >= {_REGISTERED_AT}", (since,))
        rollbacks = _events(conn, AUTOMATIC_ROLLBACK, since)
        manual = _events(conn, MANUAL_ROLLBACK, since)
    return {"fixes": fixes, "sources": sources, "quarantined": quarantined, "healer_calls": calls,
            "rollbacks": rollbacks, "manual_rollbacks": manual}
